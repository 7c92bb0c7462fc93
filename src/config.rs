//! Configuration: one table of parameters, read from the command line
//! (`basalt [file] [--name value ...]`), from a config file of `name value`
//! lines, and by `CONFIG GET/SET/REWRITE`.
//!
//! Parameters that the hot path reads (query buffer limit, bulk length,
//! timeout, maxclients) are mirrored in atomics; the rest live in a map
//! behind a mutex that only CONFIG and startup touch.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// What a parameter accepts.
#[derive(Clone, Copy)]
enum Kind {
    /// A byte size: plain integer or with k/kb/m/mb/g/gb suffix, in [min, max].
    Bytes(i64, i64),
    /// An integer in [min, max].
    Int(i64, i64),
    /// One of the given words.
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// yes/no.
    Bool,
    /// Space-separated numbers in [0, 100] (`latency-tracking-info-percentiles`).
    Percentiles,
}

struct Param {
    name: &'static str,
    default: &'static str,
    kind: Kind,
    /// Settable at run time with CONFIG SET.
    mutable: bool,
}

const PARAMS: &[Param] = &[
    Param {
        name: "port",
        default: "6379",
        kind: Kind::Int(0, 65535),
        mutable: false,
    },
    Param {
        name: "bind",
        default: "127.0.0.1",
        kind: Kind::Str,
        mutable: false,
    },
    Param {
        name: "dir",
        default: "./basalt-data",
        kind: Kind::Str,
        mutable: false,
    },
    Param {
        name: "shards",
        default: "0",
        kind: Kind::Int(0, 1024),
        mutable: false,
    },
    Param {
        name: "databases",
        default: "16",
        kind: Kind::Int(1, 254),
        mutable: false,
    },
    Param {
        name: "requirepass",
        default: "",
        kind: Kind::Str,
        mutable: true,
    },
    Param {
        name: "protected-mode",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
    },
    Param {
        name: "appendfsync",
        default: "everysec",
        kind: Kind::Enum(&["always", "everysec", "no"]),
        mutable: true,
    },
    Param {
        name: "appendonly",
        default: "yes",
        kind: Kind::Bool,
        mutable: false,
    },
    Param {
        name: "maxclients",
        default: "10000",
        kind: Kind::Int(1, 1_000_000),
        mutable: true,
    },
    Param {
        name: "timeout",
        default: "0",
        kind: Kind::Int(0, i32::MAX as i64),
        mutable: true,
    },
    Param {
        name: "loglevel",
        default: "notice",
        kind: Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        mutable: true,
    },
    Param {
        name: "logfile",
        default: "",
        kind: Kind::Str,
        mutable: false,
    },
    Param {
        name: "proto-max-bulk-len",
        default: "536870912",
        kind: Kind::Bytes(1024 * 1024, i64::MAX),
        mutable: true,
    },
    Param {
        name: "client-query-buffer-limit",
        default: "1073741824",
        kind: Kind::Bytes(1024 * 1024, i64::MAX),
        mutable: true,
    },
    Param {
        name: "save",
        default: "",
        kind: Kind::Str,
        mutable: true,
    },
    Param {
        name: "min-free-disk",
        default: "134217728",
        kind: Kind::Bytes(0, i64::MAX),
        mutable: true,
    },
    Param {
        name: "maxmemory",
        default: "0",
        kind: Kind::Bytes(0, i64::MAX),
        mutable: false,
    },
    Param {
        name: "block-cache-size",
        default: "268435456",
        kind: Kind::Bytes(1 << 20, i64::MAX),
        mutable: false,
    },
    Param {
        name: "meta-cache-size",
        default: "268435456",
        kind: Kind::Bytes(0, i64::MAX),
        mutable: false,
    },
    Param {
        name: "write-buffer-size",
        default: "67108864",
        kind: Kind::Bytes(1 << 20, 1 << 34),
        mutable: false,
    },
    Param {
        name: "bottommost-compression",
        default: "zstd",
        kind: Kind::Enum(&["zstd", "lz4", "none"]),
        mutable: false,
    },
    Param {
        name: "disk-read-threads",
        default: "16",
        kind: Kind::Int(0, 1024),
        mutable: false,
    },
    Param {
        name: "shard-spin-us",
        default: "0",
        kind: Kind::Int(0, 100_000),
        mutable: false,
    },
    Param {
        name: "cores",
        default: "",
        kind: Kind::Str,
        mutable: false,
    },
    Param {
        name: "listen-shards",
        default: "",
        kind: Kind::Str,
        mutable: false,
    },
    Param {
        name: "hz",
        default: "10",
        kind: Kind::Int(1, 500),
        mutable: true,
    },
    Param {
        name: "slowlog-log-slower-than",
        default: "10000",
        kind: Kind::Int(i64::MIN, i64::MAX),
        mutable: true,
    },
    Param {
        name: "slowlog-max-len",
        default: "128",
        kind: Kind::Int(0, i64::MAX),
        mutable: true,
    },
    Param {
        name: "latency-monitor-threshold",
        default: "0",
        kind: Kind::Int(0, i64::MAX),
        mutable: true,
    },
    Param {
        name: "latency-tracking",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
    },
    Param {
        name: "latency-tracking-info-percentiles",
        default: "50 99 99.9",
        kind: Kind::Percentiles,
        mutable: true,
    },
    Param {
        name: "enable-debug-command",
        default: "no",
        kind: Kind::Enum(&["no", "yes", "local"]),
        mutable: false,
    },
];

/// `basalt --help`: every parameter with its default and what it accepts,
/// straight from the table, so it cannot fall behind.
pub fn help_text() -> String {
    let mut out = String::from(
        "usage: basalt [config-file] [--name value ...]\n       basalt --help | --version\n\n\
         The config file has `name value` lines; the same names work as --name value\n\
         flags and with CONFIG GET/SET (* marks those CONFIG SET can change).\n\n",
    );
    for p in PARAMS {
        let accepts = match p.kind {
            Kind::Bytes(lo, hi) if hi == i64::MAX => format!("bytes >= {lo} (k/kb/m/mb/g/gb suffixes)"),
            Kind::Bytes(lo, hi) => format!("bytes {lo}..{hi} (k/kb/m/mb/g/gb suffixes)"),
            Kind::Int(lo, hi) => format!("integer {lo}..{hi}"),
            Kind::Enum(words) => words.join("|"),
            Kind::Str => "text".into(),
            Kind::Bool => "yes|no".into(),
            Kind::Percentiles => "space-separated percentiles 0..100".into(),
        };
        let default = if p.default.is_empty() { "\"\"" } else { p.default };
        let mark = if p.mutable { "*" } else { " " };
        out.push_str(&format!("  --{:<36}{mark} default {default:<14} {accepts}\n", p.name));
    }
    out
}

fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

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

fn validate(p: &Param, value: &str) -> Result<String, String> {
    match p.kind {
        Kind::Bytes(min, max) => match parse_bytes(value) {
            Some(v) if v >= min && v <= max => Ok(v.to_string()),
            Some(_) => Err(format!("argument must be between {min} and {max} inclusive")),
            None => Err("argument must be a memory value".into()),
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
        Kind::Percentiles => {
            // Redis's two messages: not a number, or out of range.
            let words: Vec<&str> = value.split_whitespace().collect();
            if words.iter().any(|w| w.parse::<f64>().is_err()) {
                return Err("Invalid latency-tracking-info-percentiles parameters".into());
            }
            match crate::monitor::parse_percentiles(value) {
                Some(ps) => Ok(ps.iter().map(|p| crate::monitor::percentile_name(*p)).collect::<Vec<_>>().join(" ")),
                None => Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into()),
            }
        }
    }
}

/// The running configuration.
pub struct Config {
    values: Mutex<BTreeMap<&'static str, String>>,
    /// The file it was read from, for CONFIG REWRITE.
    pub file: Option<PathBuf>,
    pub proto_max_bulk_len: AtomicI64,
    pub query_buffer_limit: AtomicU64,
    pub maxclients: AtomicU64,
    pub timeout_secs: AtomicU64,
    pub hz: AtomicU64,
    /// `requirepass` is not empty.
    pub requirepass_set: AtomicBool,
    /// `protected-mode yes`: with no password, only loopback clients.
    pub protected_mode: AtomicBool,
    /// Commands at least this slow (µs) go to the slow log; negative: none.
    pub slowlog_slower_than: AtomicI64,
    pub slowlog_max_len: AtomicU64,
    /// Spikes at least this long (ms) go to the latency monitor; 0: off.
    pub latency_monitor_threshold: AtomicU64,
    pub latency_tracking: AtomicBool,
}

impl Config {
    /// Builds the configuration from process arguments (without argv[0]).
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut rest = args;
        let mut file = None;
        if let Some(first) = rest.first() {
            // As redis-server: a first argument that is not an option is the
            // config file; `-p 7000` is a mistake, not a file called "-p".
            if !first.starts_with('-') {
                let path = PathBuf::from(first);
                let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read config file {first}: {e}"))?;
                for (n, line) in text.lines().enumerate() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let (k, v) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                    let v = v.trim().trim_matches('"');
                    pairs.push((k.to_string(), v.to_string()));
                    let _ = n;
                }
                file = Some(path);
                rest = &rest[1..];
            }
        }
        let mut i = 0;
        while i < rest.len() {
            let Some(name) = rest[i].strip_prefix("--") else {
                return Err(format!(
                    "unexpected argument '{}': options are --name value (e.g. --port 7000); see basalt --help",
                    rest[i]
                ));
            };
            let value = rest.get(i + 1).ok_or_else(|| format!("option --{name} needs a value"))?;
            pairs.push((name.to_string(), value.clone()));
            i += 2;
        }
        let cfg = Config::defaults(file);
        for (k, v) in pairs {
            cfg.set_at_startup(&k, &v)?;
        }
        Ok(cfg)
    }

    fn defaults(file: Option<PathBuf>) -> Config {
        let values = PARAMS.iter().map(|p| (p.name, p.default.to_string())).collect();
        let cfg = Config {
            values: Mutex::new(values),
            file,
            proto_max_bulk_len: AtomicI64::new(0),
            query_buffer_limit: AtomicU64::new(0),
            maxclients: AtomicU64::new(0),
            timeout_secs: AtomicU64::new(0),
            hz: AtomicU64::new(10),
            requirepass_set: AtomicBool::new(false),
            protected_mode: AtomicBool::new(true),
            slowlog_slower_than: AtomicI64::new(10_000),
            slowlog_max_len: AtomicU64::new(128),
            latency_monitor_threshold: AtomicU64::new(0),
            latency_tracking: AtomicBool::new(true),
        };
        cfg.mirror();
        cfg
    }

    fn set_at_startup(&self, name: &str, value: &str) -> Result<(), String> {
        let p = find(name).ok_or_else(|| format!("Bad directive or wrong number of arguments: unknown option '{name}'"))?;
        let v = validate(p, value).map_err(|e| format!("invalid value for '{name}': {e}"))?;
        self.lock().insert(p.name, v);
        self.mirror();
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, String>> {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mirror(&self) {
        let m = self.lock();
        let int = |k: &str| m.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        self.proto_max_bulk_len.store(int("proto-max-bulk-len"), Ordering::Relaxed);
        self.query_buffer_limit
            .store(int("client-query-buffer-limit") as u64, Ordering::Relaxed);
        self.maxclients.store(int("maxclients") as u64, Ordering::Relaxed);
        self.timeout_secs.store(int("timeout") as u64, Ordering::Relaxed);
        self.hz.store(int("hz").max(1) as u64, Ordering::Relaxed);
        self.requirepass_set
            .store(m.get("requirepass").is_some_and(|p| !p.is_empty()), Ordering::Relaxed);
        self.protected_mode
            .store(m.get("protected-mode").is_none_or(|v| v == "yes"), Ordering::Relaxed);
        self.slowlog_slower_than.store(int("slowlog-log-slower-than"), Ordering::Relaxed);
        self.slowlog_max_len.store(int("slowlog-max-len").max(0) as u64, Ordering::Relaxed);
        self.latency_monitor_threshold
            .store(int("latency-monitor-threshold").max(0) as u64, Ordering::Relaxed);
        self.latency_tracking
            .store(m.get("latency-tracking").is_none_or(|v| v == "yes"), Ordering::Relaxed);
    }

    /// Whether a parameter still has its built-in default (the memory
    /// budget sizes such parts itself).
    pub fn is_default(&self, name: &str) -> bool {
        find(name).is_some_and(|p| self.lock().get(p.name).is_none_or(|v| v == p.default))
    }

    /// Records the value a startup decision gave a parameter (CONFIG GET
    /// then shows what runs).
    pub fn set_effective(&self, name: &str, value: String) {
        if let Some(p) = find(name) {
            self.lock().insert(p.name, value);
            self.mirror();
        }
    }

    /// A parameter's current value ("" if unknown).
    pub fn get(&self, name: &str) -> String {
        find(name).and_then(|p| self.lock().get(p.name).cloned()).unwrap_or_default()
    }

    pub fn get_int(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(0)
    }

    /// CONFIG GET: every (name, value) whose name matches one of the glob patterns.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        let m = self.lock();
        PARAMS
            .iter()
            .filter(|p| patterns.iter().any(|pat| crate::glob::matches(pat, p.name.as_bytes(), true)))
            .map(|p| (p.name, m.get(p.name).cloned().unwrap_or_default()))
            .collect()
    }

    /// CONFIG SET of several pairs, all or nothing. Errors are Redis's whole
    /// error text.
    pub fn set_many(&self, pairs: &[(String, String)]) -> Result<Vec<(&'static str, String)>, String> {
        let failed = |k: &str, why: &str| format!("ERR CONFIG SET failed (possibly related to argument '{k}') - {why}");
        let mut checked = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let Some(p) = find(k) else {
                return Err(format!("ERR Unknown option or number of arguments for CONFIG SET - '{k}'"));
            };
            if !p.mutable {
                return Err(failed(k, "can't set immutable config"));
            }
            if checked.iter().any(|(n, _): &(&str, String)| *n == p.name) {
                return Err(failed(k, "duplicate parameter"));
            }
            let v = validate(p, v).map_err(|e| failed(k, &e))?;
            checked.push((p.name, v));
        }
        {
            let mut m = self.lock();
            for (k, v) in &checked {
                m.insert(k, v.clone());
            }
        }
        self.mirror();
        Ok(checked)
    }

    /// CONFIG REWRITE: writes every non-default parameter to the config file.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("The server is running without a config file".into());
        };
        let m = self.lock();
        let mut out = String::from("# Written by CONFIG REWRITE\n");
        for p in PARAMS {
            let v = m.get(p.name).cloned().unwrap_or_default();
            if v != p.default {
                out.push_str(&format!("{} \"{}\"\n", p.name, v));
            }
        }
        std::fs::write(path, out).map_err(|e| format!("Rewriting config file: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_and_file_and_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("b.conf");
        std::fs::write(&f, "# comment\nport 7000\nmaxclients 5\n").unwrap();
        let mut a = args(&["--port", "7001", "--proto-max-bulk-len", "2mb"]);
        a.insert(0, f.display().to_string());
        let c = Config::from_args(&a).unwrap();
        assert_eq!(c.get("port"), "7001");
        assert_eq!(c.get("maxclients"), "5");
        assert_eq!(c.get("databases"), "16");
        assert_eq!(c.proto_max_bulk_len.load(Ordering::Relaxed), 2 << 20);
        assert!(Config::from_args(&args(&["--nope", "1"])).is_err());
        assert!(Config::from_args(&args(&["--port", "x"])).is_err());
        assert!(Config::from_args(&args(&["--port"])).is_err());
    }

    #[test]
    fn set_many_is_all_or_nothing() {
        let c = Config::from_args(&[]).unwrap();
        let bad = c.set_many(&[("maxclients".into(), "7".into()), ("port".into(), "1".into())]);
        assert_eq!(
            bad.unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"
        );
        assert_eq!(c.get("maxclients"), "10000");
        c.set_many(&[("maxclients".into(), "7".into()), ("appendfsync".into(), "ALWAYS".into())])
            .unwrap();
        assert_eq!(c.get("appendfsync"), "always");
        assert_eq!(c.maxclients.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn memory_values() {
        assert_eq!(parse_bytes("1gb"), Some(1 << 30));
        assert_eq!(parse_bytes("5k"), Some(5000));
        assert_eq!(parse_bytes("12"), Some(12));
        assert_eq!(parse_bytes("x"), None);
    }
}
