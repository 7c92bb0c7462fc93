//! What each kind of parameter accepts and how it shows, with Redis's
//! error texts (the part after "CONFIG SET failed (...) - "). A value is
//! stored as CONFIG GET shows it: sizes in bytes, words in lower case,
//! `save` and `client-output-buffer-limit` in their canonical forms.

use super::Kind;

/// Parses `1gb`, `64mb`, `512k`, `1000` like Redis's `memtoll`.
pub fn parse_bytes(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let (num, mul) = [
        ("gb", 1i64 << 30),
        ("g", 1_000_000_000),
        ("mb", 1 << 20),
        ("m", 1_000_000),
        ("kb", 1 << 10),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, mul)| lower.strip_suffix(suf).map(|n| (n.to_string(), *mul)))
    .unwrap_or((lower.clone(), 1));
    num.parse::<i64>().ok()?.checked_mul(mul)
}

/// The value `value` stands for under `kind`, as CONFIG GET shows it, or
/// Redis's reason for refusing it. `current` is the value now (a partial
/// `client-output-buffer-limit` changes only the classes it names).
pub fn validate(name: &str, kind: Kind, value: &str, current: &str) -> Result<String, String> {
    match kind {
        Kind::Bytes(min, max) => match parse_bytes(value) {
            Some(v) if v >= min && v <= max => Ok(v.to_string()),
            Some(v) if v >= 0 => Err(format!("argument must be between {min} and {max} inclusive")),
            // Too big for Redis's memtoll: a range error there too.
            None if digits(value) => Err(format!("argument must be between {min} and {max} inclusive")),
            _ => Err("argument must be a memory value".into()),
        },
        Kind::UBytes => match parse_bytes(value) {
            Some(v) if v >= 0 => Ok(v.to_string()),
            None if digits(value) => Ok(u64::MAX.to_string()),
            _ => Err("argument must be a memory value".into()),
        },
        Kind::Int(min, max) => match value.parse::<i64>() {
            Ok(v) if v >= min && v <= max => Ok(v.to_string()),
            Ok(_) => Err(format!("argument must be between {min} and {max} inclusive")),
            Err(_) => Err("argument couldn't be parsed into an integer".into()),
        },
        Kind::Enum(words) => {
            let lower = value.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err("argument(s) must be one of the following: ".to_string() + &words.join(", "))
            }
        }
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" | "no" => Ok(value.to_ascii_lowercase()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Str => Ok(value.to_string()),
        Kind::Hostname => {
            if value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.') {
                Ok(value.to_string())
            } else {
                Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into())
            }
        }
        Kind::Percentiles => percentiles(name, value),
        Kind::Save => save(value),
        Kind::OutputLimits => output_limits(value, current),
        Kind::OomValues => oom_values(value),
        Kind::Events => events(value).map(events_text),
        Kind::MemOrPercent => match value.strip_suffix('%') {
            Some(p) => match p.parse::<i64>() {
                Ok(v) if v >= 0 => Ok(format!("{v}%")),
                _ => Err("argument must be a memory or percent value".into()),
            },
            None => match parse_bytes(value) {
                Some(v) if v >= 0 => Ok(v.to_string()),
                _ => Err("argument must be a memory or percent value".into()),
            },
        },
    }
}

/// A size written in digits (and a unit) that does not fit in an i64.
fn digits(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let num = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit())
}

/// `latency-tracking-info-percentiles`: Redis's two messages, not a
/// number or out of range.
fn percentiles(name: &str, value: &str) -> Result<String, String> {
    if value.split_whitespace().any(|w| w.parse::<f64>().is_err()) {
        return Err(format!("Invalid {name} parameters"));
    }
    match crate::monitor::parse_percentiles(value) {
        Some(ps) => Ok(ps.iter().map(|p| crate::monitor::percentile_name(*p)).collect::<Vec<_>>().join(" ")),
        None => Err(format!("{name} parameters should sit between [0.0,100.0]")),
    }
}

/// `save`: pairs of seconds (>= 1) and changes (>= 0), or "" for none.
fn save(value: &str) -> Result<String, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    let bad = || "Invalid save parameters".to_string();
    if !words.len().is_multiple_of(2) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let v: i64 = w.parse().map_err(|_| bad())?;
        if (i % 2 == 0 && v < 1) || v < 0 {
            return Err(bad());
        }
        out.push(v.to_string());
    }
    Ok(out.join(" "))
}

/// The client classes of `client-output-buffer-limit`, in Redis's order.
const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// `client-output-buffer-limit`: `<class> <hard> <soft> <soft seconds>`
/// groups; the classes not named keep their limits. Shown for all three.
fn output_limits(value: &str, current: &str) -> Result<String, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut limits: Vec<[i64; 3]> = CLASSES.iter().map(|c| class_limits(current, c).unwrap_or([0, 0, 0])).collect();
    for g in words.chunks(4) {
        let class = match g[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => return Err("Invalid client class specified in buffer limit configuration.".into()),
        };
        let bad = || "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string();
        let hard = parse_bytes(g[1]).filter(|v| *v >= 0).ok_or_else(bad)?;
        let soft = parse_bytes(g[2]).filter(|v| *v >= 0).ok_or_else(bad)?;
        let secs = g[3].parse::<i64>().ok().filter(|v| *v >= 0).ok_or_else(bad)?;
        limits[class] = [hard, soft, secs];
    }
    Ok(CLASSES
        .iter()
        .zip(limits)
        .map(|(c, [h, s, t])| format!("{c} {h} {s} {t}"))
        .collect::<Vec<_>>()
        .join(" "))
}

pub(super) fn class_limits(shown: &str, class: &str) -> Option<[i64; 3]> {
    let words: Vec<&str> = shown.split_whitespace().collect();
    let g = words.chunks(4).find(|g| g[0] == class && g.len() == 4)?;
    Some([g[1].parse().ok()?, g[2].parse().ok()?, g[3].parse().ok()?])
}

/// `oom-score-adj-values`: three scores in [-2000, 2000].
fn oom_values(value: &str) -> Result<String, String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut out = Vec::with_capacity(3);
    for w in words {
        match w.parse::<i64>() {
            Ok(v) if (-2000..=2000).contains(&v) => out.push(v.to_string()),
            _ => return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into()),
        }
    }
    Ok(out.join(" "))
}

/// Keyspace notification classes (Redis's NOTIFY_* bits).
pub mod event {
    pub const KEYSPACE: u32 = 1 << 0;
    pub const KEYEVENT: u32 = 1 << 1;
    pub const GENERIC: u32 = 1 << 2;
    pub const STRING: u32 = 1 << 3;
    pub const LIST: u32 = 1 << 4;
    pub const SET: u32 = 1 << 5;
    pub const HASH: u32 = 1 << 6;
    pub const ZSET: u32 = 1 << 7;
    pub const EXPIRED: u32 = 1 << 8;
    pub const EVICTED: u32 = 1 << 9;
    pub const STREAM: u32 = 1 << 10;
    pub const KEY_MISS: u32 = 1 << 11;
    pub const MODULE: u32 = 1 << 12;
    pub const NEW: u32 = 1 << 13;
    /// What `A` stands for: every class but key misses and new keys.
    pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The classes of a `notify-keyspace-events` value.
pub fn events(value: &str) -> Result<u32, String> {
    use event::*;
    let mut flags = 0;
    for c in value.chars() {
        flags |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        };
    }
    Ok(flags)
}

/// Classes as Redis spells them back (`A` when all of `ALL` are set).
pub fn events_text(flags: u32) -> String {
    use event::*;
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_values() {
        assert_eq!(parse_bytes("1gb"), Some(1 << 30));
        assert_eq!(parse_bytes("5k"), Some(5000));
        assert_eq!(parse_bytes("12"), Some(12));
        assert_eq!(parse_bytes("x"), None);
    }

    #[test]
    fn special_formats_show_as_redis_shows_them() {
        assert_eq!(save("3600 1 300 100").unwrap(), "3600 1 300 100");
        assert_eq!(save("").unwrap(), "");
        assert!(save("0 1").is_err() && save("10").is_err() && save("10 -1").is_err());
        let cur = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";
        assert_eq!(
            output_limits("pubsub 1mb 2mb 3", cur).unwrap(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 3"
        );
        assert_eq!(
            output_limits("master 1 1 1", cur).unwrap_err(),
            "Invalid client class specified in buffer limit configuration."
        );
        assert_eq!(events_text(events("KEA").unwrap()), "AKE");
        assert_eq!(events_text(events("xgE").unwrap()), "gxE");
        assert_eq!(events_text(events("Am").unwrap()), "Am");
        assert!(events("Q").is_err());
        assert_eq!(oom_values("0 200 800").unwrap(), "0 200 800");
        assert!(oom_values("0 200 8000").is_err());
    }
}
