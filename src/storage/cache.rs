//! The owning shard's write-through cache of meta records.
//!
//! Every command reads its key's meta record first (a string's value lives
//! in it), and most writes read it too, to keep key counts exact. In RocksDB
//! that read searches the memtables and then every level's filter, index and
//! data block: 36% of a shard's time under SET -P16 and 72% under GET -P16
//! with a million keys (tuning.md, "Meta cache"). This cache answers a hot
//! key's read with one hash lookup.
//!
//! It is exact, not a hint: only the owning shard writes its column family
//! (other shards send it messages), so every change passes through
//! [`ShardStore::write`](super::ShardStore::write), which applies the batch's
//! meta changes here once RocksDB has taken the batch. A range delete that
//! may cover meta records (FLUSHDB) empties the cache; a failed write empties
//! it too, since RocksDB may or may not hold the batch. A deleted key is
//! remembered as absent (`None`); a read that finds no key caches nothing
//! (RocksDB's bloom filters make such a read cheap already).
//!
//! Other shards read it too, through a [`PeerStore`](super::PeerStore) (a
//! GET of a key another shard owns): they look entries up but never insert
//! one, since a value a peer read from RocksDB may already be older than
//! the owner's latest write. A peer sees either the cached record from
//! before a write or the one after: what it would read from RocksDB a moment
//! earlier or later. With the write tier and several shards the owner keeps
//! the entries of keys its tier holds current too (`wtier`'s module doc).
//!
//! Eviction is quick_cache's S3-FIFO by weight: one-hit keys (a scan, a
//! random read of cold data) leave first and do not push hot keys out. The
//! cache is quick_cache's sync one (sharded read-write locks, uncontended
//! but for peers' reads).

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use quick_cache::sync::{Cache, EntryAction};
use quick_cache::Weighter;

use super::keys::TAG_META;

/// What an entry costs beyond its key and value bytes: the boxed key's and
/// the value's allocations and the cache's slot (measured: tuning.md).
const ENTRY_OVERHEAD: u64 = 96;

#[derive(Clone)]
struct Weigh;

impl Weighter<Bytes, Option<Bytes>> for Weigh {
    fn weight(&self, k: &Bytes, v: &Option<Bytes>) -> u64 {
        k.len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64) + ENTRY_OVERHEAD
    }
}

/// Hits and misses since start, for INFO.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
    pub entries: u64,
}

pub struct MetaCache {
    /// Keyed by `Bytes` (looked up by `[u8]`, hashed alike): the write
    /// tier's keys are `Bytes`, so [`MetaCache::update`] finds an entry
    /// with the tier's own key, no copy.
    map: Cache<Bytes, Option<Bytes>, Weigh, ahash::RandomState>,
    /// Counted by the owner only (peers' lookups are not), so the counters'
    /// cache line never bounces between cores.
    hits: AtomicU64,
    misses: AtomicU64,
}

/// The entries a record cache of `bytes` is sized for (about 160 bytes
/// each; quick_cache's estimate, not a cap).
pub(super) fn items_for(bytes: u64) -> usize {
    (bytes / 160).clamp(16, 1 << 26) as usize
}

/// Whether `key` is a meta record's key (`db 'M' ...`; db bytes stop at 254).
#[inline]
pub fn is_meta(key: &[u8]) -> bool {
    key.len() >= 2 && key[1] == TAG_META && key[0] != 0xFF
}

/// Whether a range delete over `[from, to)` cannot touch a meta record: both
/// ends in the same db and tag block, and that tag is not the meta tag (a
/// collection's members), or both in the 0xFF index block.
pub fn range_spares_meta(from: &[u8], to: &[u8]) -> bool {
    if from.len() < 2 || to.len() < 2 {
        return false;
    }
    (from[0] == 0xFF && to[0] == 0xFF) || (from[0] == to[0] && from[1] == to[1] && from[1] != TAG_META)
}

impl MetaCache {
    /// A cache of at most `bytes` (keys, values and overhead).
    pub fn new(bytes: u64) -> MetaCache {
        MetaCache {
            map: Cache::with(items_for(bytes), bytes.max(1), Weigh, ahash::RandomState::new(), Default::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The owner's lookup. `Some(None)`: the key is known absent; `None`:
    /// not cached.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        let v = self.map.get(key);
        let counter = if v.is_some() { &self.hits } else { &self.misses };
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        v
    }

    /// A peer's lookup: not counted.
    #[inline]
    pub fn peek(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.map.get(key)
    }

    /// Only the owner inserts (see the module's notes).
    #[inline]
    pub fn insert(&self, key: impl Into<Bytes>, value: Option<Bytes>) {
        self.map.insert(key.into(), value);
    }

    /// Whether it holds `key`'s entry (the owner, before [`MetaCache::update`]).
    #[inline]
    pub fn holds(&self, key: &[u8]) -> bool {
        self.map.contains_key(key)
    }

    /// The owner: a new value for an entry it holds (checked first with
    /// [`MetaCache::holds`]: `entry` would make a placeholder for a key it
    /// does not hold), changed in place.
    #[inline]
    pub fn update(&self, key: &Bytes, value: Option<Bytes>) {
        let _ = self.map.entry(key, None, |_, v| {
            *v = value;
            EntryAction::Retain(())
        });
    }

    pub fn clear(&self) {
        self.map.clear();
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: self.map.weight(),
            entries: self.map.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_keys_and_ranges_are_told_apart() {
        let mk = super::super::keys::meta_key(3, b"k");
        assert!(is_meta(&mk));
        let (lo, hi) = super::super::keys::sub_range(3, b"k", 7);
        assert!(!is_meta(&lo));
        assert!(range_spares_meta(&lo, &hi), "a collection's members");
        let (lo, hi) = super::super::keys::db_range(3);
        assert!(!range_spares_meta(&lo, &hi), "FLUSHDB covers meta records");
        let (lo, hi) = super::super::keys::meta_db_range(3);
        assert!(!range_spares_meta(&lo, &hi));
        assert!(!is_meta(&super::super::keys::ttl_key(5, 3, b"k")));
        assert!(range_spares_meta(&[0xFF, b'T'], &[0xFF, b'U']));
        assert!(!range_spares_meta(b"", b"\xff"));
    }

    #[test]
    fn hits_misses_and_absent_keys() {
        let c = MetaCache::new(1 << 20);
        assert_eq!(c.get(b"\0Mk"), None);
        c.insert(b"\0Mk".to_vec(), None);
        assert_eq!(c.get(b"\0Mk"), Some(None));
        c.insert(b"\0Mk".to_vec(), Some(Bytes::from_static(b"v")));
        assert_eq!(c.get(b"\0Mk"), Some(Some(Bytes::from_static(b"v"))));
        assert_eq!(c.peek(b"\0Mk"), Some(Some(Bytes::from_static(b"v"))), "a peer sees it");
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries), (2, 1, 1), "peers are not counted");
        c.clear();
        assert_eq!(c.get(b"\0Mk"), None);
    }

    #[test]
    fn an_entry_held_is_updated_in_place() {
        let c = MetaCache::new(1 << 20);
        let k = Bytes::from_static(b"\0Mk");
        assert!(!c.holds(&k));
        c.insert(b"\0Mk".to_vec(), Some(Bytes::from_static(b"v")));
        assert!(c.holds(&k));
        let before = c.stats().bytes;
        c.update(&k, Some(Bytes::from_static(b"longer")));
        assert_eq!(c.peek(b"\0Mk"), Some(Some(Bytes::from_static(b"longer"))));
        assert_eq!(c.stats().bytes, before + 5, "weighed again");
        c.update(&k, None);
        assert_eq!(c.peek(b"\0Mk"), Some(None), "a deletion is remembered");
        assert_eq!(c.stats().entries, 1);
    }

    #[test]
    fn weight_stays_within_the_budget() {
        let c = MetaCache::new(64 * 1024);
        for i in 0..10_000u32 {
            c.insert(format!("\0Mkey{i}").into_bytes(), Some(Bytes::from(vec![7u8; 100])));
        }
        let s = c.stats();
        assert!(s.bytes <= 64 * 1024, "{s:?}");
        assert!(s.entries > 100, "{s:?}");
    }
}
