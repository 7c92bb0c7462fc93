//! SLOWLOG and LATENCY: the per-shard slow logs merged by entry id, the
//! process-wide latency monitor, and per-command latency histograms.

use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use hdrhistogram::Histogram;
use shards::Shard;

use super::info::command_histogram;
use crate::cmd::args::{is, text, Args};
use crate::cmd::keys::help_reply;
use crate::cmd::Conn;
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::global::Global;
use crate::resp::Reply;
use crate::shard::ShardState;

pub async fn slowlog(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    slowlog_of(c.shard, argv, r).await
}

pub async fn latency(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let sub = args.bytes()?;
    if is(sub, "histogram") {
        latency_histogram(c.shard, args.rest(), r).await;
        return Ok(());
    }
    latency_of(&c.st().global, sub, args.rest(), r)
}

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

/// `slowlog-max-len`: how many entries the merged log holds.
fn max_len(shard: &Rc<Shard<ShardState>>) -> usize {
    shard.state().global.config.slowlog_max_len.load(Ordering::Relaxed) as usize
}

/// SLOWLOG GET/LEN/RESET/HELP over every shard's log, merged by entry id.
async fn slowlog_of(shard: &Rc<Shard<ShardState>>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let raw_sub = args.bytes()?;
    let sub = text(raw_sub).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.left() > 1 => {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
                text(raw_sub)
            )));
        }
        "get" => {
            let count = match args.peek() {
                None => 10,
                // As Redis: one message for non-numbers and numbers below -1.
                Some(a) => match text(a).parse::<i64>() {
                    Ok(n) if n >= -1 => n,
                    _ => return Err(CmdError::new("ERR count should be greater than or equal to -1")),
                },
            };
            let mut entries: Vec<crate::monitor::SlowEntry> = shard
                .broadcast(|st: &ShardState| st.slowlog.borrow().iter().cloned().collect::<Vec<_>>())
                .await
                .into_iter()
                .flatten()
                .collect();
            entries.sort_by_key(|e| std::cmp::Reverse(e.id));
            // Each shard keeps `slowlog-max-len`; the log is the newest of all.
            entries.truncate(max_len(shard));
            if count >= 0 {
                entries.truncate(count as usize);
            }
            r.array(entries.len());
            for e in &entries {
                r.array(6);
                r.int(e.id as i64);
                r.int(e.unix_secs as i64);
                r.int(e.micros as i64);
                r.bulk_array(&e.args);
                r.bulk(e.addr.as_bytes());
                r.bulk(e.name.as_bytes());
            }
        }
        "len" => {
            let n: usize = shard.broadcast(|st: &ShardState| st.slowlog.borrow().len()).await.into_iter().sum();
            r.int(n.min(max_len(shard)) as i64);
        }
        "reset" => {
            shard.broadcast(|st: &ShardState| st.slowlog.borrow_mut().clear()).await;
            r.ok();
        }
        _ => help_reply(r, SLOWLOG_HELP),
    }
    Ok(())
}

const LATENCY_HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];

/// LATENCY LATEST/HISTORY/RESET/DOCTOR/HELP over the process-wide monitor.
/// Events: "command" (a command at least `latency-monitor-threshold` ms),
/// "wal-fsync" (the everysec WAL sync), "write-stall" (RocksDB stopped or
/// delayed writes).
fn latency_of(g: &Global, sub: &[u8], rest: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = text(sub).to_ascii_lowercase();
    match sub.as_str() {
        "latest" => {
            let latest = g.latency.latest();
            r.array(latest.len());
            for (event, t, ms, max) in latest {
                r.array(4);
                r.bulk(event.as_bytes());
                r.int(t as i64);
                r.int(ms as i64);
                r.int(max as i64);
            }
        }
        "history" => {
            let h = g.latency.history(&text(rest.first().ok_or(SYNTAX)?));
            r.array(h.len());
            for (t, ms) in h {
                r.array(2);
                r.int(t as i64);
                r.int(ms as i64);
            }
        }
        "graph" => {
            let event = text(rest.first().ok_or(SYNTAX)?);
            let h = g.latency.history(&event);
            if h.is_empty() {
                return Err(CmdError::new(format!("ERR No samples available for event '{event}'")));
            }
            r.verbatim(&graph(&event, &h));
        }
        "reset" => {
            let events: Vec<String> = rest.iter().map(|a| text(a)).collect();
            r.int(g.latency.reset(&events) as i64);
        }
        "doctor" => {
            let latest = g.latency.latest();
            let mut report = String::new();
            if g.config.latency_monitor_threshold.load(Ordering::Relaxed) == 0 {
                report.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Basalt instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n");
            } else if latest.is_empty() {
                report.push_str(
                    "Dave, no latency spike was observed during the lifetime of this Basalt instance, not in the slightest bit.\n",
                );
            } else {
                for (event, _, ms, max) in latest {
                    let _ = writeln!(report, "{event}: latest spike {ms} ms, worst {max} ms.");
                }
            }
            r.verbatim(&report);
        }
        _ => help_reply(r, LATENCY_HELP),
    }
    Ok(())
}

/// LATENCY GRAPH's text: Redis's header, then one column per sample, as
/// high as its latency against the highest (four rows of `#`), and under
/// it how many seconds ago it was (at most the last 80 samples).
fn graph(event: &str, h: &[(u64, u64)]) -> String {
    let h = &h[h.len().saturating_sub(80)..];
    let (high, low) = (h.iter().map(|s| s.1).max().unwrap_or(0), h.iter().map(|s| s.1).min().unwrap_or(0));
    let mut out = format!("{event} - high {high} ms, low {low} ms (all time high {high} ms)\n");
    out.push_str(&"-".repeat(80));
    out.push('\n');
    for row in (1..=4u64).rev() {
        let line: String = h.iter().map(|s| if s.1 * 4 >= row * high.max(1) { '#' } else { ' ' }).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    let now = crate::clock::now_ms() / 1000;
    let ago: Vec<String> = h.iter().map(|s| format!("{}s", now.saturating_sub(s.0))).collect();
    let width = ago.iter().map(String::len).max().unwrap_or(0);
    for i in 0..width {
        let line: String = ago.iter().map(|a| a.chars().nth(i).unwrap_or(' ')).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// LATENCY HISTOGRAM [command ...]: per command, its calls and the
/// cumulative count of calls at or under each power-of-two bucket of
/// microseconds, as Redis replies it (a map of maps). Unknown commands and
/// commands never called are left out.
async fn latency_histogram(shard: &Rc<Shard<ShardState>>, names: &[Bytes], r: &mut Reply) {
    let wanted: Vec<usize> = if !names.is_empty() {
        names.iter().flat_map(|a| crate::cmd::stat_slots_named(a)).collect()
    } else {
        (0..crate::cmd::stat_count()).collect()
    };
    let per_shard = shard.broadcast(|st: &ShardState| st.latency.borrow().clone()).await;
    let mut found: Vec<(usize, Box<Histogram<u64>>)> = Vec::new();
    for i in wanted {
        if found.iter().any(|(j, _)| *j == i) {
            continue;
        }
        if let Some(h) = command_histogram(per_shard.iter(), i) {
            found.push((i, h));
        }
    }
    let found: Vec<(String, Box<Histogram<u64>>)> = found
        .into_iter()
        .filter_map(|(i, h)| crate::cmd::stat_name(i).map(|n| (n, h)))
        .collect();
    r.map(found.len());
    for (name, h) in &found {
        r.bulk(name.as_bytes());
        r.map(2);
        r.bulk(b"calls");
        r.int(h.len() as i64);
        r.bulk(b"histogram_usec");
        let buckets = crate::monitor::cumulative_log2_buckets(h);
        r.map(buckets.len());
        for (usec, cumulative) in buckets {
            r.int(usec as i64);
            r.int(cumulative as i64);
        }
    }
}
