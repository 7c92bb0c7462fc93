//! The scripts EVAL and SCRIPT LOAD have seen, process-wide (every shard's
//! interpreter compiles them from here on first use), and what a script's
//! shebang line declares.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha1::{Digest, Sha1};

/// Lower-case hex SHA1 of `data`, as EVALSHA names scripts.
pub fn sha1_hex(data: &[u8]) -> [u8; 40] {
    let digest = Sha1::digest(data);
    let mut out = [0u8; 40];
    for (i, b) in digest.iter().enumerate() {
        out[2 * i] = b"0123456789abcdef"[(b >> 4) as usize];
        out[2 * i + 1] = b"0123456789abcdef"[(b & 15) as usize];
    }
    out
}

/// EVALSHA's argument as a key of the store: 40 hex digits, lower-cased.
pub fn sha_arg(arg: &[u8]) -> Option<[u8; 40]> {
    let mut out = [0u8; 40];
    if arg.len() != 40 {
        return None;
    }
    for (o, &b) in out.iter_mut().zip(arg) {
        if !b.is_ascii_hexdigit() {
            return None;
        }
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

/// A script's flags (`#!lua flags=...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// The script has a shebang line: without one it runs in Redis 6's
    /// compatible mode (may write, any keys).
    pub shebang: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl Flags {
    /// Sets flag `name`; false for a name Redis does not know.
    pub fn set(&mut self, name: &[u8]) -> bool {
        match name {
            b"no-writes" => self.no_writes = true,
            b"allow-oom" => self.allow_oom = true,
            b"allow-stale" => self.allow_stale = true,
            b"no-cluster" => self.no_cluster = true,
            b"allow-cross-slot-keys" => self.allow_cross_slot_keys = true,
            _ => return false,
        }
        true
    }

    /// The flags set, by Redis's names, in Redis's order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.no_writes, "no-writes"),
            (self.allow_oom, "allow-oom"),
            (self.allow_stale, "allow-stale"),
            (self.no_cluster, "no-cluster"),
            (self.allow_cross_slot_keys, "allow-cross-slot-keys"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// Whether the script may write: a shebang without `no-writes` says so,
    /// and a script without shebang may.
    pub fn may_write(&self) -> bool {
        !self.no_writes
    }
}

/// Parses a script's shebang (Redis's `evalExtractShebangFlags`): its
/// flags, and where the code to compile starts (the line's newline is kept,
/// so line numbers stay right). A body without `#!` has no flags.
pub fn shebang(body: &[u8]) -> Result<(Flags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::default(), 0));
    }
    let Some(end) = memchr::memchr(b'\n', body) else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = &body[..end];
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or(b"#!");
    if engine != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            crate::resp::reply::raw_text(engine)
        ));
    }
    let mut flags = Flags {
        shebang: true,
        ..Flags::default()
    };
    for part in parts {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {}", crate::resp::reply::raw_text(part)));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            if !flags.set(name) {
                return Err(format!(
                    "ERR Unexpected flag in script shebang: {}",
                    crate::resp::reply::raw_text(name)
                ));
            }
        }
    }
    Ok((flags, end))
}

/// One script of the store.
pub struct Script {
    pub body: Bytes,
    pub flags: Flags,
    /// Where the code after the shebang starts.
    pub code_at: usize,
}

impl Script {
    /// The code an interpreter compiles.
    pub fn code(&self) -> &[u8] {
        &self.body[self.code_at..]
    }
}

/// Every script loaded, by SHA1.
#[derive(Default)]
pub struct Scripts {
    map: Mutex<ahash::AHashMap<[u8; 40], Arc<Script>>>,
    /// Bumped by SCRIPT FLUSH: an interpreter that saw an older epoch drops
    /// what it compiled.
    epoch: AtomicU64,
}

impl Scripts {
    pub fn get(&self, sha: &[u8; 40]) -> Option<Arc<Script>> {
        self.map.lock().ok()?.get(sha).cloned()
    }

    /// Adds a script whose body was checked (shebang, compiled once).
    pub fn insert(&self, sha: [u8; 40], script: Script) -> Arc<Script> {
        let s = Arc::new(script);
        if let Ok(mut m) = self.map.lock() {
            return m.entry(sha).or_insert(s).clone();
        }
        s
    }

    /// SCRIPT FLUSH.
    pub fn flush(&self) {
        if let Ok(mut m) = self.map.lock() {
            m.clear();
        }
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// (scripts, bytes of their bodies): INFO's number_of_cached_scripts
    /// and used_memory_scripts_eval.
    pub fn stats(&self) -> (usize, usize) {
        self.map
            .lock()
            .map_or((0, 0), |m| (m.len(), m.values().map(|s| s.body.len() + 40).sum()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_empty_and_args() {
        assert_eq!(&sha1_hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha_arg(b"DA39A3EE5E6B4B0D3255BFEF95601890AFD80709"), Some(sha1_hex(b"")));
        assert_eq!(sha_arg(b"abc"), None);
    }

    #[test]
    fn shebangs_as_redis_reads_them() {
        assert_eq!(shebang(b"return 1").unwrap(), (Flags::default(), 0));
        let (f, at) = shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.shebang && f.no_writes && f.allow_oom && !f.no_cluster);
        assert_eq!(at, 31);
        assert_eq!(shebang(b"#!lua").unwrap_err(), "ERR Invalid script shebang");
        assert_eq!(shebang(b"#!js\n").unwrap_err(), "ERR Unexpected engine in script shebang: #!js");
        assert_eq!(shebang(b"#!lua x=y\n").unwrap_err(), "ERR Unknown lua shebang option: x=y");
        assert_eq!(
            shebang(b"#!lua flags=a,,b\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: a"
        );
        assert_eq!(
            shebang(b"#!lua flags=no-writes,,allow-oom\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: "
        );
        assert!(shebang(b"#!lua flags=\n").unwrap().0.shebang);
    }
}
