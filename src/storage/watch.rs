//! WATCH's hook: every change of a key's records goes through its owner's
//! store (`put`, `delete`, `delete_range`), so that is where a watched key
//! learns it was changed, whatever command changed it.
//!
//! A watched key is its meta key; a member record stands for its
//! collection's meta key. A write marks the flags of the key's watchers
//! (Redis's `touchWatchedKey`) when it is staged, before it is written: a
//! write that then fails still spoils the watch, which only makes EXEC
//! refuse more often, never less. Flags are weak: a client that unwatches
//! (EXEC, DISCARD, UNWATCH, RESET, disconnect) drops its flag, and the
//! entry is pruned the next time that key is touched or watched.
//!
//! A range delete (FLUSHDB, FLUSHALL) touches the watched keys in its range
//! that exist, as Redis's `touchAllWatchedKeysInDb` does; the range deletes
//! of a collection's members always come with a write of its meta record.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use super::keys::TAG_META;
use super::{cache, keys, ShardStore};

/// The flags of one watched key's watchers.
type Watchers = Vec<Weak<AtomicBool>>;

#[derive(Default)]
pub struct Watches {
    map: RefCell<HashMap<Box<[u8]>, Watchers>>,
    /// Writes staged now touch no watch (`ShardStore::quietly`).
    quiet: std::cell::Cell<bool>,
}

/// The meta key a record changes: itself for a meta record, its
/// collection's for a member; None for index entries.
fn owner_of(k: &[u8]) -> Option<Vec<u8>> {
    if cache::is_meta(k) {
        return Some(k.to_vec());
    }
    if !keys::is_sub(k) || k.len() < 8 {
        return None;
    }
    let kl = u32::from_be_bytes(k[4..8].try_into().ok()?) as usize;
    let key = k.get(8..8 + kl)?;
    let mut mk = Vec::with_capacity(4 + kl);
    mk.extend_from_slice(&[k[0], TAG_META, k[2], k[3]]);
    mk.extend_from_slice(key);
    Some(mk)
}

impl Watches {
    #[inline]
    fn is_empty(&self) -> bool {
        self.map.borrow().is_empty()
    }

    /// Marks the watchers of meta key `mk` and forgets them.
    fn touch_meta(&self, mk: &[u8]) {
        if let Some(flags) = self.map.borrow_mut().remove(mk) {
            for f in flags.iter().filter_map(Weak::upgrade) {
                f.store(true, Ordering::SeqCst);
            }
        }
    }
}

impl ShardStore {
    /// Runs `f`, whose staged writes touch no watched key: Redis's consumer
    /// group commands (XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM) change
    /// a stream without `signalModifiedKey`, so WATCH does not see them.
    pub fn quietly<R>(&self, f: impl FnOnce() -> R) -> R {
        let was = self.watches.quiet.replace(true);
        let r = f();
        self.watches.quiet.set(was);
        r
    }

    /// A write of record `k` is being staged (see the module doc).
    #[inline]
    pub(super) fn touch(&self, k: &[u8]) {
        if self.watches.is_empty() || self.watches.quiet.get() {
            return;
        }
        if let Some(mk) = owner_of(k) {
            self.watches.touch_meta(&mk);
        }
    }

    /// A range delete of `[from, to)` is being staged: the watched keys in
    /// it that exist now are touched.
    pub(super) fn touch_range(&self, from: &[u8], to: &[u8]) {
        if self.watches.is_empty() || self.watches.quiet.get() || keys::range_families(from, to) == (false, true) {
            return;
        }
        let inside: Vec<Box<[u8]>> = self
            .watches
            .map
            .borrow()
            .keys()
            .filter(|k| k.as_ref() >= from && k.as_ref() < to)
            .cloned()
            .collect();
        for mk in inside {
            // Absent or unreadable: a read error leaves the watch spoiled.
            if self.get_with(&mk, |v| v.is_some()).unwrap_or(true) {
                self.watches.touch_meta(&mk);
            }
        }
    }

    /// SWAPDB of the physical dbs `pa` and `pb` (either order): a watch of
    /// a key in one now names the same key in the other, where that
    /// `SELECT` index's records are now; it is touched when the key exists
    /// in either db, as Redis's `touchAllWatchedKeysInDb` both ways.
    pub fn swap_watched(&self, pa: u8, pb: u8) {
        if self.watches.is_empty() || pa == pb {
            return;
        }
        let moved: Vec<(Box<[u8]>, Watchers)> = {
            let mut map = self.watches.map.borrow_mut();
            let keys: Vec<Box<[u8]>> = map.keys().filter(|k| k[0] == pa || k[0] == pb).cloned().collect();
            keys.into_iter().filter_map(|k| map.remove(&k).map(|w| (k, w))).collect()
        };
        for (mut mk, flags) in moved {
            let mut other = mk.to_vec();
            other[0] = if mk[0] == pa { pb } else { pa };
            // Absent or unreadable: a read error spoils the watch.
            let exists = |k: &[u8]| self.get_with(k, |v| v.is_some()).unwrap_or(true);
            if exists(&mk) || exists(&other) {
                for f in flags.iter().filter_map(Weak::upgrade) {
                    f.store(true, Ordering::SeqCst);
                }
                continue;
            }
            mk = other.into();
            self.watches.map.borrow_mut().entry(mk).or_default().extend(flags);
        }
    }

    /// Watches meta key `mk`: `flag` is set when a write touches it.
    pub fn watch(&self, mk: &[u8], flag: &Arc<AtomicBool>) {
        debug_assert!(cache::is_meta(mk));
        let mut map = self.watches.map.borrow_mut();
        let flags = map.entry(mk.into()).or_default();
        flags.retain(|f| f.strong_count() > 0);
        flags.push(Arc::downgrade(flag));
    }

    /// Keys watched on this shard (tests, INFO).
    pub fn watched_keys(&self) -> usize {
        self.watches.map.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{keys, test_opts, Engine};
    use super::*;

    #[test]
    fn writes_touch_the_watchers_of_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&test_opts(dir.path(), 1, 1 << 20)).unwrap()));
        let s = e.shard(0).unwrap();
        let (h, other) = (keys::meta_key(0, b"h"), keys::meta_key(0, b"other"));
        let flag = Arc::new(AtomicBool::new(false));
        s.watch(&h, &flag);
        // Another key, and an index entry: no.
        let mut b = s.batch();
        s.put(&mut b, &other, b"x");
        s.put(&mut b, &keys::ttl_key(5, 0, b"h"), b"");
        assert!(!flag.load(Ordering::SeqCst));
        // A member of h: yes, and the watch is used up.
        s.put(&mut b, &keys::sub_key(0, b"h", 3, b"f"), b"v");
        assert!(flag.load(Ordering::SeqCst));
        assert_eq!(s.watched_keys(), 0);
        s.write(b).unwrap();
        // A range delete touches only keys that exist.
        let (f1, f2) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        s.watch(&other, &f1);
        s.watch(&keys::meta_key(0, b"absent"), &f2);
        let (lo, hi) = keys::db_range(0);
        let mut b = s.batch();
        s.delete_range(&mut b, &lo, &hi);
        assert!(f1.load(Ordering::SeqCst));
        assert!(!f2.load(Ordering::SeqCst));
        // A dropped flag is pruned when its key is watched again.
        drop(f2);
        let f3 = Arc::new(AtomicBool::new(false));
        s.watch(&keys::meta_key(0, b"absent"), &f3);
        assert_eq!(s.watches.map.borrow().values().map(Vec::len).sum::<usize>(), 1);
    }
}
