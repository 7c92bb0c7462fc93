//! What the server tells operators about itself beyond plain counters:
//! per-command latency histograms (INFO latencystats), error counts by code
//! (INFO errorstats), the slow log (SLOWLOG) and the latency monitor
//! (LATENCY). Histograms, error counts and slow-log entries are owned by
//! each shard and gathered by the command that reports them; latency events
//! are rare and process-wide, behind one mutex.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use bytes::Bytes;
use hdrhistogram::Histogram;

/// As Redis: 1 ns .. 1 s, 2 significant figures.
const HIST_MIN_NS: u64 = 1;
const HIST_MAX_NS: u64 = 1_000_000_000;
const HIST_SIGFIG: u8 = 2;

/// A new latency histogram in nanoseconds (values above 1 s are clamped).
pub fn new_histogram() -> Option<Box<Histogram<u64>>> {
    Histogram::new_with_bounds(HIST_MIN_NS, HIST_MAX_NS, HIST_SIGFIG).ok().map(Box::new)
}

/// Records `ns` into `h`, clamped to the histogram's range.
#[inline]
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let _ = h.record(ns.clamp(HIST_MIN_NS, HIST_MAX_NS));
}

/// The code INFO errorstats files an error under: its first word
/// ("ERR", "WRONGTYPE", "NOAUTH"...), as Redis does.
pub fn error_code(msg: &str) -> &str {
    let msg = msg.strip_prefix('-').unwrap_or(msg);
    msg.split(' ').next().unwrap_or("ERR")
}

/// Formats a percentile like Redis's `%f` with trailing zeros trimmed: 50, 99.9.
pub fn percentile_name(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// `latency_percentiles_usec_<cmd>:p50=..,p99=..` values for one histogram.
pub fn percentiles_line(h: &Histogram<u64>, percentiles: &[f64]) -> String {
    percentiles
        .iter()
        .map(|p| format!("p{}={:.3}", percentile_name(*p), h.value_at_quantile(p / 100.0) as f64 / 1000.0))
        .collect::<Vec<_>>()
        .join(",")
}

/// LATENCY HISTOGRAM's buckets: (upper bound in µs, calls at or under it)
/// for power-of-two buckets starting at 1024 ns, skipping buckets that add
/// nothing, as Redis's `fillCommandCDF` does.
pub fn cumulative_log2_buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cumulative = 0u64;
    let mut previous = 0u64;
    for v in h.iter_log(1024, 2.0) {
        cumulative += v.count_since_last_iteration();
        if cumulative > previous {
            out.push((h.highest_equivalent(v.value_iterated_to()) / 1000, cumulative));
        }
        previous = cumulative;
    }
    out
}

/// Parses `latency-tracking-info-percentiles`: space-separated numbers in [0, 100].
pub fn parse_percentiles(s: &str) -> Option<Vec<f64>> {
    s.split_whitespace()
        .map(|w| w.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p)))
        .collect()
}

/// Redis's limits for a slow-log entry.
const SLOWLOG_MAX_ARGC: usize = 32;
const SLOWLOG_MAX_STRING: usize = 128;

/// One slow-log entry, as SLOWLOG GET shows it.
#[derive(Clone, Debug)]
pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Bytes>,
    pub addr: String,
    pub name: String,
}

/// The arguments a slow-log entry keeps: at most 32, each at most 128 bytes,
/// with Redis's "... (N more ...)" markers.
/// Which arguments MONITOR and the slow log show as `(redacted)`, as
/// Redis's `redactClientCommandArgument` hides them: AUTH's, the two after
/// HELLO's AUTH, ACL SETUSER's, DELUSER's and GETUSER's, and MIGRATE's
/// passwords.
pub fn redacted(argv: &[Bytes]) -> Vec<bool> {
    let mut hide = vec![false; argv.len()];
    let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
    if is(0, "auth") {
        hide.iter_mut().skip(1).for_each(|h| *h = true);
    } else if is(0, "hello") {
        let mut i = 2;
        while i < argv.len() {
            if is(i, "auth") {
                hide.iter_mut().skip(i + 1).take(2).for_each(|h| *h = true);
                i += 3;
            } else {
                i += 1;
            }
        }
    } else if is(0, "acl") && (is(1, "setuser") || is(1, "deluser") || is(1, "getuser")) {
        hide.iter_mut().skip(2).for_each(|h| *h = true);
    } else if is(0, "migrate") {
        let mut i = 6;
        while i < argv.len() {
            if is(i, "auth") {
                hide.iter_mut().skip(i + 1).take(1).for_each(|h| *h = true);
                i += 2;
            } else if is(i, "auth2") {
                hide.iter_mut().skip(i + 1).take(2).for_each(|h| *h = true);
                i += 3;
            } else if is(i, "keys") {
                break;
            } else {
                i += 1;
            }
        }
    }
    hide
}

pub fn slowlog_args(argv: &[Bytes]) -> Vec<Bytes> {
    let keep = if argv.len() > SLOWLOG_MAX_ARGC {
        SLOWLOG_MAX_ARGC - 1
    } else {
        argv.len()
    };
    let hide = redacted(argv);
    let mut out: Vec<Bytes> = argv[..keep]
        .iter()
        .zip(hide)
        .map(|(a, hide)| {
            if hide {
                Bytes::from_static(b"(redacted)")
            } else if a.len() > SLOWLOG_MAX_STRING {
                let mut v = a[..SLOWLOG_MAX_STRING].to_vec();
                v.extend_from_slice(format!("... ({} more bytes)", a.len() - SLOWLOG_MAX_STRING).as_bytes());
                Bytes::from(v)
            } else {
                // Own the bytes: an entry must not pin the whole read chunk.
                Bytes::copy_from_slice(a)
            }
        })
        .collect();
    if argv.len() > SLOWLOG_MAX_ARGC {
        out.push(Bytes::from(format!("... ({} more arguments)", argv.len() - keep)));
    }
    out
}

/// Appends `e` to a shard's slow log, keeping at most `max_len` entries.
pub fn slowlog_push(log: &mut VecDeque<SlowEntry>, e: SlowEntry, max_len: usize) {
    log.push_front(e);
    log.truncate(max_len);
}

/// How many samples LATENCY HISTORY keeps per event, as Redis.
const LATENCY_HISTORY_LEN: usize = 160;

#[derive(Default, Debug)]
struct EventSeries {
    /// (unix seconds, ms), oldest first.
    samples: VecDeque<(u64, u64)>,
    max: u64,
}

/// The latency monitor: per event, the latest spikes above the threshold.
#[derive(Default)]
pub struct LatencyMonitor {
    events: Mutex<BTreeMap<String, EventSeries>>,
}

impl LatencyMonitor {
    /// Records a spike of `ms` for `event` at `unix_secs`; spikes in the same
    /// second merge (the larger wins), as Redis does.
    pub fn add(&self, event: &str, unix_secs: u64, ms: u64) {
        let Ok(mut m) = self.events.lock() else { return };
        let s = m.entry(event.to_string()).or_default();
        s.max = s.max.max(ms);
        match s.samples.back_mut() {
            Some(last) if last.0 == unix_secs => last.1 = last.1.max(ms),
            _ => {
                s.samples.push_back((unix_secs, ms));
                if s.samples.len() > LATENCY_HISTORY_LEN {
                    s.samples.pop_front();
                }
            }
        }
    }

    /// LATENCY LATEST: (event, time of the latest spike, its ms, all-time max).
    pub fn latest(&self) -> Vec<(String, u64, u64, u64)> {
        let Ok(m) = self.events.lock() else { return Vec::new() };
        m.iter()
            .filter_map(|(k, s)| s.samples.back().map(|(t, ms)| (k.clone(), *t, *ms, s.max)))
            .collect()
    }

    /// LATENCY HISTORY: (time, ms) samples of one event, oldest first.
    pub fn history(&self, event: &str) -> Vec<(u64, u64)> {
        let Ok(m) = self.events.lock() else { return Vec::new() };
        m.get(event).map(|s| s.samples.iter().copied().collect()).unwrap_or_default()
    }

    /// LATENCY RESET: forgets the named events (all when none); returns how many existed.
    pub fn reset(&self, events: &[String]) -> usize {
        let Ok(mut m) = self.events.lock() else { return 0 };
        if events.is_empty() {
            let n = m.len();
            m.clear();
            return n;
        }
        events.iter().filter(|e| m.remove(e.as_str()).is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_are_redacted() {
        let args = |a: &[&str]| a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect::<Vec<_>>();
        assert_eq!(redacted(&args(&["AUTH", "user", "pass"])), vec![false, true, true]);
        let hide = redacted(&args(&["hello", "3", "AUTH", "u", "p", "SETNAME", "n"]));
        assert_eq!(hide, vec![false, false, false, true, true, false, false]);
        assert_eq!(redacted(&args(&["get", "auth"])), vec![false, false]);
        assert_eq!(redacted(&args(&["acl", "SETUSER", "u", ">pw"])), vec![false, false, true, true]);
        assert_eq!(redacted(&args(&["acl", "whoami"])), vec![false, false]);
        let m = redacted(&args(&["migrate", "h", "1", "", "0", "10", "AUTH2", "u", "p", "KEYS", "auth"]));
        assert_eq!(m, vec![false, false, false, false, false, false, false, true, true, false, false]);
        let s = slowlog_args(&args(&["AUTH", "secret"]));
        assert_eq!(s[1], Bytes::from_static(b"(redacted)"));
    }

    use super::*;

    #[test]
    fn error_codes_are_the_first_word() {
        assert_eq!(error_code("ERR syntax error"), "ERR");
        assert_eq!(error_code("WRONGTYPE Operation against a key"), "WRONGTYPE");
        assert_eq!(error_code("-NOAUTH Authentication required."), "NOAUTH");
    }

    #[test]
    fn percentile_names_trim_like_redis() {
        assert_eq!(percentile_name(50.0), "50");
        assert_eq!(percentile_name(99.9), "99.9");
        assert_eq!(percentile_name(99.99), "99.99");
        assert_eq!(parse_percentiles("50 99 99.9"), Some(vec![50.0, 99.0, 99.9]));
        assert_eq!(parse_percentiles("50 101"), None);
        assert_eq!(parse_percentiles("x"), None);
        assert_eq!(parse_percentiles(""), Some(vec![]));
    }

    #[test]
    fn percentiles_come_from_the_histogram_in_usec() {
        let mut h = new_histogram().unwrap();
        for i in 1..=1000u64 {
            record_ns(&mut h, i * 1000);
        }
        let line = percentiles_line(&h, &[50.0, 99.0]);
        assert!(line.starts_with("p50=50"), "{line}");
        assert!(line.contains(",p99=99"), "{line}");
        // Out-of-range values are clamped, not dropped.
        record_ns(&mut h, u64::MAX);
        assert_eq!(h.len(), 1001);
    }

    #[test]
    fn histogram_buckets_are_cumulative_powers_of_two() {
        let mut h = new_histogram().unwrap();
        for ns in [500, 900, 3_000, 3_500, 100_000] {
            record_ns(&mut h, ns);
        }
        let b = cumulative_log2_buckets(&h);
        // 2 calls under ~1 µs, 4 under ~4 µs, all 5 under ~131 µs.
        assert_eq!(b.first().map(|x| x.1), Some(2));
        assert!(b.iter().any(|&(us, n)| (3..=4).contains(&us) && n == 4), "{b:?}");
        assert_eq!(b.last().map(|x| x.1), Some(5));
        assert!(b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{b:?}");
    }

    #[test]
    fn slowlog_args_are_capped_like_redis() {
        let long = Bytes::from(vec![b'a'; 200]);
        let args = slowlog_args(&[Bytes::from_static(b"SET"), long]);
        assert_eq!(&args[1][..], [&[b'a'; 128][..], b"... (72 more bytes)"].concat().as_slice());
        let many: Vec<Bytes> = (0..40).map(|i| Bytes::from(i.to_string())).collect();
        let args = slowlog_args(&many);
        assert_eq!(args.len(), 32);
        assert_eq!(&args[31][..], b"... (9 more arguments)");
        let mut log = VecDeque::new();
        for id in 0..5 {
            let e = SlowEntry {
                id,
                unix_secs: 0,
                micros: 1,
                args: vec![],
                addr: String::new(),
                name: String::new(),
            };
            slowlog_push(&mut log, e, 3);
        }
        assert_eq!(log.iter().map(|e| e.id).collect::<Vec<_>>(), vec![4, 3, 2]);
    }

    #[test]
    fn latency_events_merge_per_second_and_reset() {
        let m = LatencyMonitor::default();
        m.add("command", 10, 5);
        m.add("command", 10, 7);
        m.add("command", 11, 3);
        m.add("wal-fsync", 12, 20);
        assert_eq!(m.history("command"), vec![(10, 7), (11, 3)]);
        assert_eq!(m.latest(), vec![("command".into(), 11, 3, 7), ("wal-fsync".into(), 12, 20, 20)]);
        assert_eq!(m.reset(&["nope".into(), "command".into()]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.latest().is_empty());
    }
}
