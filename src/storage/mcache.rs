//! The owning shard's cache of clean member records (issue 52, item 1:
//! "clean records evicted by access").
//!
//! A collection command reads member records: SADD and SREM the member's,
//! HSET and HGET the field's, ZADD the member's score. While a record is in
//! the write tier the tier answers; once written back, every read of it went
//! to RocksDB (its memtables, then each level's filter, index and data
//! block): SADD -P16 of 1000 existing members after the tier had drained ran
//! at 181k/s with a third of the shard in `rocksdb::DBImpl::GetImpl`. This
//! cache answers such a read with one hash lookup.
//!
//! It is exact, as the meta cache is, under one rule: only the owner reads
//! or fills it (peers' views have none), every read looks in the write tier
//! first, and whatever writes member records to the column families removes
//! their entries once the write is done: a drain slice, a range read's
//! write-back of one collection, a write past the tier, a group or a
//! transaction written without the tier (a read in between refills an entry
//! from RocksDB, which then holds the new value). Range deletes:
//! - over a whole incarnation (a collection deleted): nothing to do. A
//!   version is never reused, so those members are never read again (the
//!   compaction filter relies on the same);
//! - inside one live collection (a list's cut, XGROUP DESTROY's records):
//!   the collection is marked cut at that moment, and its entries cached
//!   before it are stale. Entries are numbered as they are inserted, so the
//!   mark costs nothing per entry; past [`MAX_CUTS`] marks the cache is
//!   emptied instead;
//! - anything else (FLUSHDB): the cache is emptied.
//!
//! Only records found are cached: an absent member is cheap for RocksDB's
//! bloom filters, and a stream of new members would only churn the cache.
//! Eviction is quick_cache's S3-FIFO by weight, as the meta cache's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::cache::CacheStats;
use super::keys;

/// What an entry costs beyond its key and value bytes (as the meta
/// cache's, plus the number).
const ENTRY_OVERHEAD: u64 = 104;

/// Collections marked cut before the cache is emptied instead.
pub(super) const MAX_CUTS: usize = 1024;

#[derive(Clone)]
struct Weigh;

impl Weighter<Box<[u8]>, (Bytes, u64)> for Weigh {
    fn weight(&self, k: &Box<[u8]>, v: &(Bytes, u64)) -> u64 {
        k.len() as u64 + v.0.len() as u64 + ENTRY_OVERHEAD
    }
}

pub struct MemberCache {
    map: Cache<Box<[u8]>, (Bytes, u64), Weigh, ahash::RandomState>,
    /// The last number given to an inserted entry.
    seq: AtomicU64,
    /// Collections cut (hash of their prefix) and the number up to which
    /// their entries are stale; `any_cuts` keeps the lookup's fast path
    /// free of the lock.
    cuts: Mutex<ahash::AHashMap<u64, u64>>,
    any_cuts: AtomicBool,
    /// Whether an entry went in since it was last emptied: a drain's
    /// removal of each member record it writes back skips the lookup while
    /// nothing was ever cached (LPUSH, XADD and new members read none:
    /// 1.2% of LPUSH -P16's instructions were removes from an empty cache).
    filled: AtomicBool,
    hasher: ahash::RandomState,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl MemberCache {
    /// A cache of at most `bytes` (keys, values and overhead).
    pub fn new(bytes: u64) -> MemberCache {
        MemberCache {
            map: Cache::with(
                super::cache::items_for(bytes),
                bytes.max(1),
                Weigh,
                ahash::RandomState::new(),
                Default::default(),
            ),
            seq: AtomicU64::new(0),
            cuts: Mutex::new(Default::default()),
            any_cuts: AtomicBool::new(false),
            filled: AtomicBool::new(false),
            hasher: ahash::RandomState::new(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn count(c: &AtomicU64) {
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The cached record of `key`, if any (None: read the families).
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Bytes> {
        let Some((v, n)) = self.map.get(key) else {
            Self::count(&self.misses);
            return None;
        };
        if self.any_cuts.load(Ordering::Relaxed) && self.cut_since(key, n) {
            self.map.remove(key);
            Self::count(&self.misses);
            return None;
        }
        Self::count(&self.hits);
        Some(v)
    }

    /// Whether `key`'s collection was cut after entry number `n` went in.
    fn cut_since(&self, key: &[u8], n: u64) -> bool {
        let Some(p) = keys::coll_prefix_len(key) else { return false };
        let h = self.hasher.hash_one(&key[..p]);
        let cuts = self.cuts.lock().unwrap_or_else(|e| e.into_inner());
        cuts.get(&h).is_some_and(|&cut| n <= cut)
    }

    /// Caches `key`'s record as the families hold it now.
    #[inline]
    pub fn insert(&self, key: &[u8], value: Bytes) {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.filled.store(true, Ordering::Relaxed);
        self.map.insert(key.into(), (value, n));
    }

    /// Forgets `key` (its record was just written to the families).
    #[inline]
    pub fn remove(&self, key: &[u8]) {
        if self.filled.load(Ordering::Relaxed) {
            self.map.remove(key);
        }
    }

    /// A range delete of `[from, to)` was just written (see the module's
    /// notes for what each kind costs).
    pub fn cut(&self, from: &[u8], to: &[u8]) {
        let Some(n) = keys::coll_prefix_len(from) else {
            return self.clear();
        };
        let whole = from.len() == n && to.len() == n && to[..n - 8] == from[..n - 8] && {
            let version = |k: &[u8]| k[n - 8..n].try_into().map_or(0, u64::from_be_bytes);
            version(to) == version(from).wrapping_add(1)
        };
        if whole {
            return;
        }
        if to.len() < n || to[..n] != from[..n] {
            return self.clear();
        }
        let h = self.hasher.hash_one(&from[..n]);
        let mut cuts = self.cuts.lock().unwrap_or_else(|e| e.into_inner());
        if cuts.len() >= MAX_CUTS && !cuts.contains_key(&h) {
            cuts.clear();
            self.any_cuts.store(false, Ordering::Relaxed);
            drop(cuts);
            return self.map.clear();
        }
        cuts.insert(h, self.seq.load(Ordering::Relaxed));
        self.any_cuts.store(true, Ordering::Relaxed);
    }

    /// Empties the cache.
    pub fn clear(&self) {
        self.filled.store(false, Ordering::Relaxed);
        self.map.clear();
        self.cuts.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.any_cuts.store(false, Ordering::Relaxed);
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

impl super::ShardStore {
    /// The member cache's counters, if this store has one.
    pub fn member_cache_stats(&self) -> Option<CacheStats> {
        self.members.as_ref().map(|c| c.stats())
    }

    /// Forgets what both record caches knew (a write RocksDB may or may
    /// not hold).
    pub(super) fn forget_cached(&self) {
        if let Some(c) = &self.cache {
            c.clear();
        }
        if let Some(m) = &self.members {
            m.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(key: &[u8], version: u64, sub: &[u8]) -> Vec<u8> {
        keys::sub_key(0, key, version, sub)
    }

    #[test]
    fn hits_misses_and_removal() {
        let c = MemberCache::new(1 << 20);
        let k = member(b"s", 7, b"a");
        assert_eq!(c.get(&k), None);
        c.insert(&k, Bytes::from_static(b"1"));
        assert_eq!(c.get(&k), Some(Bytes::from_static(b"1")));
        c.remove(&k);
        assert_eq!(c.get(&k), None);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 2, 0));
    }

    /// Removes skip the lookup only while nothing went in since the cache
    /// was emptied: an entry cached after a clear is still removed.
    #[test]
    fn removal_after_a_clear_and_a_new_entry() {
        let c = MemberCache::new(1 << 20);
        let k = member(b"s", 7, b"a");
        c.remove(&k);
        c.insert(&k, Bytes::from_static(b"1"));
        c.clear();
        c.remove(&k);
        assert_eq!(c.get(&k), None);
        c.insert(&k, Bytes::from_static(b"2"));
        assert_eq!(c.get(&k), Some(Bytes::from_static(b"2")));
        c.remove(&k);
        assert_eq!(c.get(&k), None);
    }

    #[test]
    fn a_cut_inside_a_collection_stales_what_was_cached_before_it_only() {
        let c = MemberCache::new(1 << 20);
        let (a, b) = (member(b"l", 7, b"\x00\x01"), member(b"l", 7, b"\x00\x02"));
        let other = member(b"m", 7, b"\x00\x01");
        c.insert(&a, Bytes::from_static(b"old-a"));
        c.insert(&b, Bytes::from_static(b"old-b"));
        c.insert(&other, Bytes::from_static(b"o"));
        c.cut(&member(b"l", 7, b"\x00\x00"), &member(b"l", 7, b"\x00\x09"));
        assert_eq!(c.get(&a), None, "cached before the cut");
        assert_eq!(c.get(&other), Some(Bytes::from_static(b"o")), "another collection");
        c.insert(&b, Bytes::from_static(b"new-b"));
        assert_eq!(c.get(&b), Some(Bytes::from_static(b"new-b")), "cached after the cut");
    }

    #[test]
    fn a_whole_incarnation_needs_nothing_and_other_ranges_empty_it() {
        let c = MemberCache::new(1 << 20);
        let a = member(b"h", 7, b"f");
        c.insert(&a, Bytes::from_static(b"v"));
        let (lo, hi) = keys::sub_range(0, b"h", 9);
        c.cut(&lo, &hi);
        assert_eq!(c.get(&a), Some(Bytes::from_static(b"v")), "another version's members");
        let (lo, hi) = keys::db_range(0);
        c.cut(&lo, &hi);
        assert_eq!(c.get(&a), None, "FLUSHDB");
        c.insert(&a, Bytes::from_static(b"v"));
        let (lo, _) = keys::sub_range(0, b"h", 7);
        let (_, hi) = keys::sub_range(0, b"h", 8);
        c.cut(&lo, &hi);
        assert_eq!(c.get(&a), None, "two incarnations at once: not one collection");
    }

    #[test]
    fn too_many_cuts_empty_the_cache() {
        let c = MemberCache::new(1 << 20);
        let keep = member(b"k", 1, b"x");
        c.insert(&keep, Bytes::from_static(b"v"));
        for i in 0..MAX_CUTS as u64 {
            c.cut(&member(b"l", i + 10, b"\x00"), &member(b"l", i + 10, b"\x09"));
        }
        assert_eq!(c.get(&keep), Some(Bytes::from_static(b"v")), "{MAX_CUTS} marks kept");
        c.cut(&member(b"l", 1, b"\x00"), &member(b"l", 1, b"\x09"));
        assert_eq!(c.stats().entries, 0, "one more empties it");
        c.insert(&keep, Bytes::from_static(b"v"));
        assert_eq!(c.get(&keep), Some(Bytes::from_static(b"v")), "and the marks went with it");
    }

    #[test]
    fn weight_stays_within_the_budget() {
        let c = MemberCache::new(64 * 1024);
        for i in 0..10_000u32 {
            c.insert(&member(b"s", 1, format!("m{i}").as_bytes()), Bytes::from(vec![7u8; 100]));
        }
        let s = c.stats();
        assert!(s.bytes <= 64 * 1024, "{s:?}");
        assert!(s.entries > 100, "{s:?}");
    }

    // Through a shard's store: every way a member record reaches the
    // families leaves no stale entry behind.

    use crate::storage::testkit::{get, peer, put};
    use crate::storage::{test_opts, Engine, ShardStore};

    fn store(tier: usize) -> (tempfile::TempDir, &'static Engine, ShardStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = test_opts(dir.path(), 1, 4 << 20);
        opts.write_tier = tier;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        (dir, e, e.shard(0).unwrap())
    }

    fn hits(s: &ShardStore) -> u64 {
        s.member_cache_stats().unwrap().hits
    }

    fn grouped(s: &ShardStore, k: &[u8], v: Option<&[u8]>) {
        assert!(super::super::testkit::grouped(s, k, v).is_empty());
    }

    #[test]
    fn the_tier_writing_a_member_back_drops_its_entry() {
        let (_d, _e, s) = store(1000);
        let k = member(b"s", 1, b"a");
        grouped(&s, &k, Some(b"v1"));
        s.tier_apply().unwrap();
        assert_eq!(get(&s, &k), Some(b"v1".to_vec()), "read from RocksDB");
        let before = hits(&s);
        assert_eq!(get(&s, &k), Some(b"v1".to_vec()));
        assert_eq!(hits(&s), before + 1, "then from the cache");
        grouped(&s, &k, Some(b"v2"));
        assert_eq!(get(&s, &k), Some(b"v2".to_vec()), "the tier comes first");
        s.tier_apply().unwrap();
        assert_eq!(s.write_tier_size().records, 0);
        assert_eq!(get(&s, &k), Some(b"v2".to_vec()), "drained: the entry went");
        grouped(&s, &k, None);
        s.tier_apply().unwrap();
        assert_eq!(get(&s, &k), None, "a drained delete");
    }

    #[test]
    fn a_range_read_writing_one_collection_back_drops_its_entries() {
        let (_d, _e, s) = store(1000);
        let k = member(b"h", 1, b"f");
        grouped(&s, &k, Some(b"v1"));
        s.tier_apply().unwrap();
        assert_eq!(get(&s, &k), Some(b"v1".to_vec()));
        grouped(&s, &k, Some(b"v2"));
        let (lo, hi) = keys::sub_range(0, b"h", 1);
        let mut seen = Vec::new();
        s.scan(&lo, &hi, |_, v| {
            seen.push(v.to_vec());
            true
        })
        .unwrap();
        assert_eq!(seen, vec![b"v2".to_vec()]);
        assert_eq!(s.write_tier_size().records, 0, "written back by the range read");
        assert_eq!(get(&s, &k), Some(b"v2".to_vec()));
    }

    #[test]
    fn writes_without_the_tier_drop_their_entries() {
        let (_d, e, s) = store(0);
        let p = e.peer(0).unwrap();
        let k = member(b"s", 1, b"a");
        put(&s, &k, b"v1");
        assert_eq!(get(&s, &k), Some(b"v1".to_vec()));
        put(&s, &k, b"v2");
        assert_eq!(get(&s, &k), Some(b"v2".to_vec()), "a direct write");
        grouped(&s, &k, Some(b"v3"));
        assert_eq!(get(&s, &k), Some(b"v3".to_vec()), "a group");
        s.begin_tx(false);
        put(&s, &k, b"v4");
        assert_eq!(get(&s, &k), Some(b"v4".to_vec()), "the journal");
        let w = s.write_own_tx();
        s.end_tx(&w);
        w.unwrap();
        assert_eq!(get(&s, &k), Some(b"v4".to_vec()), "a transaction");
        assert_eq!(peer(&p, &k), Some(b"v4".to_vec()));
        let mut b = s.batch();
        s.delete(&mut b, &k);
        s.write(b).unwrap();
        assert_eq!(get(&s, &k), None);
        assert_eq!(p.store().member_cache_stats(), None, "a peer's view has no member cache");
    }

    #[test]
    fn a_range_delete_inside_a_collection_hides_what_was_cached() {
        for tier in [0, 1000] {
            let (_d, _e, s) = store(tier);
            let at = |i: u8| member(b"l", 1, &[0, i]);
            for i in 0..4 {
                put(&s, &at(i), &[b'a' + i]);
            }
            s.tier_apply().unwrap();
            for i in 0..4 {
                assert_eq!(get(&s, &at(i)), Some(vec![b'a' + i]));
            }
            // A list's cut of positions 0..3, in a batch of its own.
            let mut b = s.batch();
            s.delete_range(&mut b, &at(0), &at(3));
            s.write(b).unwrap();
            for i in 0..3 {
                assert_eq!(get(&s, &at(i)), None, "tier {tier}: position {i} was cut");
            }
            assert_eq!(get(&s, &at(3)), Some(b"d".to_vec()));
            // In a transaction.
            s.begin_tx(false);
            let mut b = s.batch();
            s.delete_range(&mut b, &at(3), &at(4));
            s.write(b).unwrap();
            let w = s.write_own_tx();
            s.end_tx(&w);
            w.unwrap();
            assert_eq!(get(&s, &at(3)), None, "tier {tier}: cut in a transaction");
        }
    }

    #[test]
    fn dropping_the_caches_empties_it() {
        let (_d, e, s) = store(0);
        let k = member(b"s", 1, b"a");
        put(&s, &k, b"v");
        assert_eq!(get(&s, &k), Some(b"v".to_vec()));
        assert_eq!(s.member_cache_stats().unwrap().entries, 1);
        e.drop_caches().unwrap();
        assert_eq!(s.member_cache_stats().unwrap().entries, 0);
    }
}
