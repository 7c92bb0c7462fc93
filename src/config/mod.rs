//! Configuration: one table of parameters (`params`: every Redis 7.2
//! parameter and Basalt's own), read from the command line
//! (`basalt [file] [--name value ...]`), from a config file of `name value`
//! lines, and by `CONFIG GET/SET/REWRITE`.
//!
//! This module owns every setting. Parameters that the hot path reads
//! (query buffer limit, bulk length, timeout, maxclients, the encoding
//! thresholds) are mirrored in atomics; the rest live in a map behind a
//! mutex that only CONFIG and startup touch. A part that must react to a
//! change (the WAL's fsync mode, the disk guard) registers a hook with
//! [`Config::on_set`]; CONFIG SET runs it after the change.

mod kinds;
mod params;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

pub use kinds::{event, events, parse_bytes};
use params::PARAMS;

/// What a parameter accepts.
#[derive(Clone, Copy)]
enum Kind {
    /// A byte size: plain integer or with k/kb/m/mb/g/gb suffix, in [min, max].
    Bytes(i64, i64),
    /// A byte size up to 2^64-1 (`maxmemory`): one too big reads as 2^64-1.
    UBytes,
    /// An integer in [min, max].
    Int(i64, i64),
    /// One of the given words.
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// A host name: letters, digits, hyphens and dots.
    Hostname,
    /// yes/no.
    Bool,
    /// Space-separated numbers in [0, 100] (`latency-tracking-info-percentiles`).
    Percentiles,
    /// `save`: seconds/changes pairs.
    Save,
    /// `client-output-buffer-limit`: class, hard, soft, seconds groups.
    OutputLimits,
    /// `oom-score-adj-values`: three scores.
    OomValues,
    /// `notify-keyspace-events`: class letters.
    Events,
    /// A byte size or a percentage (`maxmemory-clients`).
    MemOrPercent,
}

/// Whether CONFIG SET may change a parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Mutable,
    /// Startup only ("can't set immutable config").
    Immutable,
    /// Only with `enable-protected-configs` ("can't set protected config").
    Protected,
    /// Protected, and startup only even then.
    ProtectedFixed,
}

struct Param {
    name: &'static str,
    /// Redis's older name for it ("" if none); CONFIG shows both.
    alias: &'static str,
    default: &'static str,
    kind: Kind,
    mode: Mode,
    /// Why Basalt accepts and shows it but does nothing with it (tuning.md,
    /// "Redis parameters with no effect"); None: it takes effect.
    inert: Option<&'static str>,
}

/// `basalt --help`: every parameter that takes effect, with its default and
/// what it accepts, straight from the table, so it cannot fall behind.
pub fn help_text() -> String {
    let mut out = String::from(
        "usage: basalt [config-file] [--name value ...]\n       basalt --help | --version\n\n\
         The config file has `name value` lines; the same names work as --name value\n\
         flags and with CONFIG GET/SET (* marks those CONFIG SET can change).\n\
         Every other Redis 7.2 parameter is accepted and shown, with no effect\n\
         (tuning.md lists them and says why).\n\n",
    );
    for p in PARAMS.iter().filter(|p| p.inert.is_none()) {
        let accepts = match p.kind {
            Kind::Bytes(lo, hi) if hi == i64::MAX => format!("bytes >= {lo} (k/kb/m/mb/g/gb suffixes)"),
            Kind::Bytes(lo, hi) => format!("bytes {lo}..{hi} (k/kb/m/mb/g/gb suffixes)"),
            Kind::UBytes => "bytes (k/kb/m/mb/g/gb suffixes)".into(),
            Kind::Int(lo, hi) => format!("integer {lo}..{hi}"),
            Kind::Enum(words) => words.join("|"),
            Kind::Str => "text".into(),
            Kind::Hostname => "host name".into(),
            Kind::Bool => "yes|no".into(),
            Kind::Percentiles => "space-separated percentiles 0..100".into(),
            Kind::Save => "seconds changes pairs".into(),
            Kind::OutputLimits => "class hard soft seconds groups".into(),
            Kind::OomValues => "three scores -2000..2000".into(),
            Kind::Events => "event class letters (Ag$lshzxeKEtmdn)".into(),
            Kind::MemOrPercent => "bytes or a percentage".into(),
        };
        let default = if p.default.is_empty() { "\"\"" } else { p.default };
        let mark = if p.mode == Mode::Mutable { "*" } else { " " };
        out.push_str(&format!("  --{:<36}{mark} default {default:<14} {accepts}\n", p.name));
        if !p.alias.is_empty() {
            out.push_str(&format!("  --{:<36}  the same, under Redis's older name\n", p.alias));
        }
    }
    out.push_str("\nAccepted and shown, with no effect on Basalt (tuning.md says why):\n");
    let mut line = String::from(" ");
    for name in PARAMS.iter().filter(|p| p.inert.is_some()).flat_map(|p| [p.name, p.alias]) {
        if name.is_empty() {
            continue;
        }
        if line.len() + name.len() > 76 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(name);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The parameter `name` (or its alias) names.
fn find(name: &str) -> Option<&'static Param> {
    PARAMS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name) || (!p.alias.is_empty() && p.alias.eq_ignore_ascii_case(name)))
}

/// The parameters with no effect on Basalt, each with its reason.
pub fn inert_params() -> impl Iterator<Item = (&'static str, &'static str)> {
    PARAMS.iter().filter_map(|p| p.inert.map(|why| (p.name, why)))
}

/// The encoding thresholds OBJECT ENCODING (and a small collection's
/// whole-reply HSCAN/SSCAN) follow, as Redis's listpack/intset rules.
#[derive(Clone, Copy, Debug)]
pub struct Encodings {
    pub hash_entries: u64,
    pub hash_value: u64,
    pub set_intset_entries: u64,
    pub set_entries: u64,
    pub set_value: u64,
    pub zset_entries: u64,
    pub zset_value: u64,
    /// `list-max-listpack-size`: N > 0 entries, or -1..-5 for 4..64 KiB.
    pub list_size: i64,
    /// `stream-node-max-entries` and `stream-node-max-bytes` (0: no limit).
    pub stream_node_entries: u64,
    pub stream_node_bytes: u64,
}

/// A change hook: runs after CONFIG SET changed its parameter, with the
/// new value.
pub type Hook = Box<dyn Fn(&str) + Send + Sync>;

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
    /// `protected-mode yes`: with no password, only loopback clients.
    pub protected_mode: AtomicBool,
    /// Commands at least this slow (µs) go to the slow log; negative: none.
    pub slowlog_slower_than: AtomicI64,
    pub slowlog_max_len: AtomicU64,
    /// A script running longer than this (ms) is busy: other clients get
    /// -BUSY and SCRIPT KILL may stop it; 0: never.
    pub busy_reply_threshold: AtomicU64,
    /// Spikes at least this long (ms) go to the latency monitor; 0: off.
    pub latency_monitor_threshold: AtomicU64,
    pub latency_tracking: AtomicBool,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog longer turns dense.
    pub hll_sparse_max_bytes: AtomicU64,
    /// `client-output-buffer-limit pubsub`: hard bytes, soft bytes, soft seconds.
    pubsub_limits: [AtomicU64; 3],
    /// `notify-keyspace-events` classes (`event` bits), shared with every
    /// shard's keyspace (`types::notify`).
    pub notify_flags: std::sync::Arc<std::sync::atomic::AtomicU32>,
    enc: [AtomicU64; 9],
    list_size: std::sync::atomic::AtomicI64,
    hooks: Mutex<Vec<(&'static str, Hook)>>,
    /// The `user` lines of the config file and `--user` options (each what
    /// follows the keyword: a name and its ACL rules), applied at start.
    pub users: Vec<String>,
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
                let mut saves: Option<usize> = None;
                for line in text.lines() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let (k, v) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                    let v = v.trim().trim_matches('"');
                    // As Redis: the file's `save` lines add up.
                    if k.eq_ignore_ascii_case("save") {
                        if let Some(at) = saves {
                            let joined = format!("{} {v}", pairs[at].1);
                            pairs[at].1 = joined.trim().to_string();
                            continue;
                        }
                        saves = Some(pairs.len());
                    }
                    pairs.push((k.to_string(), v.to_string()));
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
        let mut cfg = Config::defaults(file);
        for (k, v) in pairs {
            if k.eq_ignore_ascii_case("user") {
                cfg.users.push(v);
                continue;
            }
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
            protected_mode: AtomicBool::new(true),
            slowlog_slower_than: AtomicI64::new(10_000),
            slowlog_max_len: AtomicU64::new(128),
            busy_reply_threshold: AtomicU64::new(5000),
            latency_monitor_threshold: AtomicU64::new(0),
            latency_tracking: AtomicBool::new(true),
            hll_sparse_max_bytes: AtomicU64::new(3000),
            pubsub_limits: Default::default(),
            notify_flags: Default::default(),
            enc: Default::default(),
            list_size: Default::default(),
            hooks: Mutex::new(Vec::new()),
            users: Vec::new(),
        };
        cfg.mirror();
        cfg
    }

    fn set_at_startup(&self, name: &str, value: &str) -> Result<(), String> {
        let p = find(name).ok_or_else(|| format!("Bad directive or wrong number of arguments: unknown option '{name}'"))?;
        let current = self.get(p.name);
        let v = kinds::validate(p.name, p.kind, value, &current).map_err(|e| format!("invalid value for '{name}': {e}"))?;
        self.lock().insert(p.name, v);
        self.mirror();
        Ok(())
    }

    /// Registers `hook` to run after CONFIG SET changes `name`.
    pub fn on_set(&self, name: &'static str, hook: Hook) {
        self.hooks.lock().unwrap_or_else(|e| e.into_inner()).push((name, hook));
    }

    /// The encoding thresholds now.
    pub fn encodings(&self) -> Encodings {
        let e = |i: usize| self.enc[i].load(Ordering::Relaxed);
        Encodings {
            hash_entries: e(0),
            hash_value: e(1),
            set_intset_entries: e(2),
            set_entries: e(3),
            set_value: e(4),
            zset_entries: e(5),
            zset_value: e(6),
            list_size: self.list_size.load(Ordering::Relaxed),
            stream_node_entries: e(7),
            stream_node_bytes: e(8),
        }
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
        self.protected_mode
            .store(m.get("protected-mode").is_none_or(|v| v == "yes"), Ordering::Relaxed);
        self.slowlog_slower_than.store(int("slowlog-log-slower-than"), Ordering::Relaxed);
        self.slowlog_max_len.store(int("slowlog-max-len").max(0) as u64, Ordering::Relaxed);
        self.busy_reply_threshold
            .store(int("busy-reply-threshold").max(0) as u64, Ordering::Relaxed);
        self.latency_monitor_threshold
            .store(int("latency-monitor-threshold").max(0) as u64, Ordering::Relaxed);
        self.latency_tracking
            .store(m.get("latency-tracking").is_none_or(|v| v == "yes"), Ordering::Relaxed);
        self.hll_sparse_max_bytes
            .store(int("hll-sparse-max-bytes").max(0) as u64, Ordering::Relaxed);
        let names = [
            "hash-max-listpack-entries",
            "hash-max-listpack-value",
            "set-max-intset-entries",
            "set-max-listpack-entries",
            "set-max-listpack-value",
            "zset-max-listpack-entries",
            "zset-max-listpack-value",
            "stream-node-max-entries",
            "stream-node-max-bytes",
        ];
        for (slot, name) in self.enc.iter().zip(names) {
            slot.store(int(name).max(0) as u64, Ordering::Relaxed);
        }
        self.list_size.store(int("list-max-listpack-size"), Ordering::Relaxed);
        let limits = m
            .get("client-output-buffer-limit")
            .and_then(|v| kinds::class_limits(v, "pubsub"))
            .unwrap_or([0, 0, 0]);
        for (slot, v) in self.pubsub_limits.iter().zip(limits) {
            slot.store(v.max(0) as u64, Ordering::Relaxed);
        }
        let events = m.get("notify-keyspace-events").and_then(|v| kinds::events(v).ok()).unwrap_or(0);
        self.notify_flags.store(events, Ordering::Relaxed);
    }

    /// `client-output-buffer-limit pubsub` now.
    pub fn pubsub_limits(&self) -> crate::pubsub::Limits {
        let l = |i: usize| self.pubsub_limits[i].load(Ordering::Relaxed);
        crate::pubsub::Limits {
            hard: l(0),
            soft: l(1),
            soft_secs: l(2),
        }
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

    /// CONFIG GET: every (name, value) whose name matches one of the glob
    /// patterns; a parameter with an old alias shows under both names, as
    /// Redis 7 does.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(&'static str, String)> {
        let m = self.lock();
        let hit = |name: &str| !name.is_empty() && patterns.iter().any(|pat| crate::glob::matches(pat, name.as_bytes(), true));
        let mut out = Vec::new();
        for p in PARAMS {
            for name in [p.name, p.alias] {
                if hit(name) {
                    out.push((name, m.get(p.name).cloned().unwrap_or_default()));
                }
            }
        }
        out
    }

    /// CONFIG SET of several pairs, all or nothing; then the change hooks
    /// of the parameters that changed. Errors are Redis's whole error text.
    pub fn set_many(&self, pairs: &[(String, String)]) -> Result<(), String> {
        let failed = |k: &str, why: &str| format!("ERR CONFIG SET failed (possibly related to argument '{k}') - {why}");
        let protected_ok = self.get("enable-protected-configs") != "no";
        let mut checked: Vec<(&'static str, String)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let Some(p) = find(k) else {
                return Err(format!("ERR Unknown option or number of arguments for CONFIG SET - '{k}'"));
            };
            match p.mode {
                Mode::Protected | Mode::ProtectedFixed if !protected_ok => return Err(failed(k, "can't set protected config")),
                Mode::Immutable | Mode::ProtectedFixed => return Err(failed(k, "can't set immutable config")),
                Mode::Mutable | Mode::Protected => {}
            }
            if checked.iter().any(|(n, _)| *n == p.name) {
                return Err(failed(k, "duplicate parameter"));
            }
            let v = kinds::validate(p.name, p.kind, v, &self.get(p.name)).map_err(|e| failed(k, &e))?;
            checked.push((p.name, v));
        }
        let mut changed = Vec::new();
        {
            let mut m = self.lock();
            for (k, v) in checked {
                if m.get(k) != Some(&v) {
                    changed.push((k, v.clone()));
                }
                m.insert(k, v);
            }
        }
        self.mirror();
        let hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        for (k, v) in &changed {
            for (_, hook) in hooks.iter().filter(|(n, _)| n == k) {
                hook(v);
            }
        }
        Ok(())
    }

    /// CONFIG REWRITE, as Redis does it: the config file keeps its
    /// comments and the lines of parameters still at the values they set;
    /// a parameter whose value changed gets its line rewritten in place (its
    /// other lines dropped), one back at its default loses its lines, and
    /// the rest are appended after a "# Generated by CONFIG REWRITE" line.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("The server is running without a config file".into());
        };
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let m = self.lock();
        let line_of = |p: &Param| {
            let v = m.get(p.name).cloned().unwrap_or_default();
            (v != p.default).then(|| format!("{} {}", p.name, quote(&v)))
        };
        let mut written: Vec<&str> = Vec::new();
        let mut out = String::new();
        for line in old.lines() {
            let t = line.trim();
            if t == GENERATED {
                continue;
            }
            let name = t.split_whitespace().next().unwrap_or("");
            let p = if t.starts_with('#') { None } else { find(name) };
            let Some(p) = p else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            if written.contains(&p.name) {
                continue;
            }
            written.push(p.name);
            if let Some(l) = line_of(p) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        let mut generated = false;
        for p in PARAMS.iter().filter(|p| !written.contains(&p.name)) {
            if let Some(l) = line_of(p) {
                if !generated {
                    out.push_str(GENERATED);
                    out.push('\n');
                    generated = true;
                }
                out.push_str(&l);
                out.push('\n');
            }
        }
        let tmp = path.with_extension("rewrite.tmp");
        std::fs::write(&tmp, out)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| format!("Rewriting config file: {e}"))
    }
}

const GENERATED: &str = "# Generated by CONFIG REWRITE";

/// A value as a config line holds it: quoted when empty or spaced.
fn quote(v: &str) -> String {
    if v.is_empty() || v.contains(char::is_whitespace) || v.contains('"') {
        format!("\"{v}\"")
    } else {
        v.to_string()
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
    fn aliases_show_under_both_names_and_set_the_one_value() {
        let c = Config::from_args(&[]).unwrap();
        let got = c.matching(&[b"hash-max-*-entries"]);
        assert_eq!(
            got,
            vec![
                ("hash-max-listpack-entries", "512".to_string()),
                ("hash-max-ziplist-entries", "512".to_string())
            ]
        );
        c.set_many(&[("hash-max-ziplist-entries".into(), "7".into())]).unwrap();
        assert_eq!(c.get("hash-max-listpack-entries"), "7");
        assert_eq!(c.encodings().hash_entries, 7);
        let err = c.set_many(&[
            ("hash-max-ziplist-entries".into(), "1".into()),
            ("hash-max-listpack-entries".into(), "2".into()),
        ]);
        assert!(err.unwrap_err().ends_with("duplicate parameter"));
    }

    #[test]
    fn hooks_run_once_per_change() {
        use std::sync::Arc;
        let c = Config::from_args(&[]).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        c.on_set("appendfsync", Box::new(move |v| s2.lock().unwrap().push(v.to_string())));
        c.set_many(&[("appendfsync".into(), "always".into())]).unwrap();
        c.set_many(&[("appendfsync".into(), "always".into())]).unwrap();
        c.set_many(&[("maxclients".into(), "9".into())]).unwrap();
        assert_eq!(*seen.lock().unwrap(), vec!["always".to_string()]);
    }

    #[test]
    fn protected_and_immutable_refusals_are_redis_texts() {
        let c = Config::from_args(&[]).unwrap();
        let e = |k: &str, v: &str| c.set_many(&[(k.into(), v.into())]).unwrap_err();
        assert!(e("dir", "/tmp").ends_with("can't set protected config"));
        assert!(e("daemonize", "no").ends_with("can't set immutable config"));
        assert!(e("maxmemory", "-1").ends_with("argument must be a memory value"));
        assert!(e("hz", "x").ends_with("argument couldn't be parsed into an integer"));
        assert_eq!(e("nope", "1"), "ERR Unknown option or number of arguments for CONFIG SET - 'nope'");
        c.set_many(&[("notify-keyspace-events".into(), "KEA".into())]).unwrap();
        assert_eq!(c.get("notify-keyspace-events"), "AKE");
    }

    #[test]
    fn every_inert_parameter_is_explained_in_tuning_md() {
        let tuning = include_str!("../../tuning.md");
        let missing: Vec<&str> = inert_params()
            .map(|(n, _)| n)
            .filter(|n| !tuning.contains(&format!("`{n}`")))
            .collect();
        assert!(missing.is_empty(), "tuning.md does not name {missing:?}");
        // Not empty by mistake (cluster mode made eight of them live).
        assert!(inert_params().count() > 120);
    }

    #[test]
    fn rewrite_keeps_comments_and_changes_lines_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("b.conf");
        std::fs::write(&f, "# keep me\nmaxclients 5\nsave 100 1\nsave 200 2\n# end\n").unwrap();
        let c = Config::from_args(&[f.display().to_string()]).unwrap();
        assert_eq!(c.get("save"), "100 1 200 2");
        c.set_many(&[
            ("maxclients".into(), "6".into()),
            ("hz".into(), "20".into()),
            ("save".into(), "".into()),
        ])
        .unwrap();
        c.rewrite().unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert_eq!(text, "# keep me\nmaxclients 6\n# end\n# Generated by CONFIG REWRITE\nhz 20\n");
    }
}
