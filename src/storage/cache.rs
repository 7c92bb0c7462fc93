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
//! The table is the shard's own (`Part`s of open addressing, linear
//! probing): a slot is the key's hash and one shared allocation holding the
//! key and the value together, so a lookup reads one slot line and one
//! record, and a reader keeps the record by its count, not by a copy.
//! quick_cache's table (control bytes, an index into a slab, the slab's
//! entry, the boxed key, the value's own shared header, allocated at its
//! first read) took 32% of GET -P16 over a million keys, a third of it
//! comparing keys it had to fetch (tuning.md, session 49). Each part is
//! behind a read-write lock: the owner writes, peers and the owner read.
//! Eviction is CLOCK by weight: an entry enters cold, an owner's read marks
//! it hot, and the hand takes the first cold entry it meets, cooling the hot
//! ones it passes, so one-hit keys (a scan, a random read of cold data, a
//! drained write nobody reads) leave first.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use super::keys::TAG_META;

/// What an entry costs beyond its key and value bytes: its allocation's
/// header (the counts, its own 3 bytes, the allocator's rounding) and its
/// slot (32 bytes) at the table's fill (tuning.md, "Meta cache").
const ENTRY_OVERHEAD: u64 = 75;

/// The table's parts (a part's lock is what a peer's read and the owner's
/// write meet on); picked by the hash's top bits.
const PARTS: usize = 16;
const PART_SHIFT: u32 = 60;
/// A slot's tag is the key's hash without this bit, which says the entry
/// was read since the hand last passed.
const HOT: u64 = 1 << 59;

/// A part's first table (slots); it doubles past 3/4 full.
const FIRST_SLOTS: usize = 256;
/// A part this long makes the table [`MetaCache::big`]: 16 parts of 4096
/// slots of 32 bytes are 2 MiB of slots, past a core's L2.
const BIG_SLOTS: usize = 4096;

/// Hits and misses since start, for INFO.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
    pub entries: u64,
}

/// A cached record: `[present][key length, 2 bytes LE][key][value]`.
#[derive(Clone)]
pub struct Cached(Arc<[u8]>);

impl Cached {
    fn new(key: &[u8], value: Option<&[u8]>) -> Cached {
        let v = value.unwrap_or_default();
        let n = 3 + key.len() + v.len();
        let fill = |d: &mut [u8]| {
            d[0] = value.is_some() as u8;
            d[1..3].copy_from_slice(&(key.len() as u16).to_le_bytes());
            d[3..3 + key.len()].copy_from_slice(key);
            d[3 + key.len()..].copy_from_slice(v);
        };
        // One allocation, the record's: a small one is laid out on the stack.
        if n <= 256 {
            let mut d = [0; 256];
            fill(&mut d[..n]);
            Cached(Arc::from(&d[..n]))
        } else {
            let mut d = vec![0; n];
            fill(&mut d);
            Cached(d.into())
        }
    }

    #[inline]
    fn klen(&self) -> usize {
        u16::from_le_bytes([self.0[1], self.0[2]]) as usize
    }

    #[inline]
    fn key(&self) -> &[u8] {
        &self.0[3..3 + self.klen()]
    }

    /// The record, or `None` for a key known absent.
    #[inline]
    pub fn value(&self) -> Option<&[u8]> {
        (self.0[0] == 1).then(|| &self.0[3 + self.klen()..])
    }

    /// An owned copy of [`Cached::value`].
    pub fn to_bytes(&self) -> Option<Bytes> {
        self.value().map(Bytes::copy_from_slice)
    }

    fn weight(&self) -> u64 {
        self.0.len() as u64 - 3 + ENTRY_OVERHEAD
    }
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cached({:?})", self.value())
    }
}

/// The most a key may weigh to be cached (its length is kept in 2 bytes).
const MAX_KEY: usize = u16::MAX as usize;

fn weigh(key: &[u8], value: Option<&[u8]>) -> u64 {
    key.len() as u64 + value.map_or(0, |v| v.len() as u64) + ENTRY_OVERHEAD
}

#[derive(Default)]
struct Slot {
    /// The key's hash, with [`HOT`] set by reads.
    tag: AtomicU64,
    /// The owner's copy of the key's access stamp (`types::access`; 0:
    /// none yet), on the line a read of the key loads anyway
    /// ([`MetaCache::with_stamp`]).
    stamp: AtomicU64,
    entry: Option<Cached>,
}

#[derive(Default)]
struct Part {
    /// Empty, or a power of two long.
    slots: Vec<Slot>,
    len: usize,
    weight: u64,
    /// The CLOCK hand.
    hand: usize,
}

impl Part {
    /// The slot where `hash`'s probe starts (none while the table is empty).
    #[inline]
    fn home(&self, hash: u64) -> Option<&Slot> {
        self.slots.get(hash as usize & self.slots.len().wrapping_sub(1))
    }

    /// The slot holding `key`, if any.
    #[inline]
    fn find(&self, hash: u64, key: &[u8]) -> Option<usize> {
        self.probe(hash, |e| e.key() == key)
    }

    /// The first slot on `hash`'s probe chain with that hash whose entry
    /// `is` accepts.
    #[inline]
    fn probe(&self, hash: u64, is: impl Fn(&Cached) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = &self.slots[i];
            match &s.entry {
                None => return None,
                Some(e) if s.tag.load(Ordering::Relaxed) & !HOT == hash && is(e) => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// Puts a new entry (its key not in the table).
    fn put(&mut self, hash: u64, entry: Cached) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i].entry.is_some() {
            i = (i + 1) & mask;
        }
        self.weight += entry.weight();
        self.slots[i] = Slot {
            tag: AtomicU64::new(hash),
            stamp: AtomicU64::new(0),
            entry: Some(entry),
        };
        self.len += 1;
    }

    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, (0..n).map(|_| Slot::default()).collect());
        let mask = n - 1;
        for mut s in old {
            if s.entry.is_some() {
                let mut i = (*s.tag.get_mut() & !HOT) as usize & mask;
                while self.slots[i].entry.is_some() {
                    i = (i + 1) & mask;
                }
                self.slots[i] = s;
            }
        }
        self.hand &= mask;
    }

    /// Takes the entry at `i` out, shifting the probe chain behind it back
    /// (no tombstones).
    fn remove_at(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        if let Some(e) = self.slots[i].entry.take() {
            self.weight -= e.weight();
            self.len -= 1;
        }
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            if self.slots[j].entry.is_none() {
                return;
            }
            let home = (*self.slots[j].tag.get_mut() & !HOT) as usize & mask;
            // The entry at j may move to i unless its home lies cyclically
            // in (i, j].
            let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
            if !stays {
                self.slots[i] = std::mem::take(&mut self.slots[j]);
                i = j;
            }
        }
    }

    /// Evicts cold entries until the part weighs at most `budget`.
    fn evict(&mut self, budget: u64) {
        let n = self.slots.len();
        // Two passes cool and then take every entry: the bound is a guard.
        let mut steps = 2 * n + 1;
        while self.weight > budget && self.len > 0 && steps > 0 {
            steps -= 1;
            let h = self.hand;
            let s = &mut self.slots[h];
            let tag = s.tag.get_mut();
            if s.entry.is_none() {
                self.hand = (h + 1) & (n - 1);
            } else if *tag & HOT != 0 {
                *tag &= !HOT;
                self.hand = (h + 1) & (n - 1);
            } else {
                // The chain behind shifts into `h`: look at it again.
                self.remove_at(h);
            }
        }
    }
}

pub struct MetaCache {
    parts: Box<[RwLock<Part>]>,
    /// Each part's share of the budget.
    part_budget: u64,
    hasher: ahash::RandomState,
    /// Whether some part's table outgrew the core's caches: a pipeline's
    /// lookups are prefetched only then ([`MetaCache::prefetch_slot`]).
    big: AtomicBool,
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
            parts: (0..PARTS).map(|_| RwLock::new(Part::default())).collect(),
            part_budget: (bytes / PARTS as u64).max(1),
            hasher: ahash::RandomState::new(),
            big: AtomicBool::new(false),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key) & !HOT
    }

    /// The hasher of its table: the write tier's maps and the access table
    /// hash with it too, so one hash of a key serves all three.
    pub fn hasher(&self) -> &ahash::RandomState {
        &self.hasher
    }

    /// Whether its table is past what the core's caches hold.
    #[inline]
    pub fn big(&self) -> bool {
        self.big.load(Ordering::Relaxed)
    }

    #[inline]
    fn read(&self, hash: u64) -> RwLockReadGuard<'_, Part> {
        self.parts[(hash >> PART_SHIFT) as usize]
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    fn write(&self, hash: u64) -> RwLockWriteGuard<'_, Part> {
        self.parts[(hash >> PART_SHIFT) as usize]
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    fn lookup(&self, key: &[u8], touch: bool) -> Option<Cached> {
        self.lookup_hashed(self.hash(key), key, touch)
    }

    #[inline]
    fn lookup_hashed(&self, hash: u64, key: &[u8], touch: bool) -> Option<Cached> {
        let hash = hash & !HOT;
        let part = self.read(hash);
        let i = part.find(hash, key)?;
        let s = &part.slots[i];
        if touch && s.tag.load(Ordering::Relaxed) & HOT == 0 {
            s.tag.fetch_or(HOT, Ordering::Relaxed);
        }
        s.entry.clone()
    }

    /// The owner's copy of the access stamp of the key hashed `hash` (by
    /// [`MetaCache::hasher`]), when it holds an entry of that hash: `f`
    /// sees the copy (0: none yet) and returns the one to keep (None:
    /// unchanged). False when no entry has the hash. Keyed by the hash
    /// alone, as the access table is (two keys of one 63-bit hash would
    /// share a stamp, which only blurs an estimate).
    #[inline]
    pub fn with_stamp(&self, hash: u64, f: impl FnOnce(u64) -> Option<u64>) -> bool {
        let hash = hash & !HOT;
        let part = self.read(hash);
        let Some(i) = part.probe(hash, |_| true) else { return false };
        let s = &part.slots[i];
        if let Some(w) = f(s.stamp.load(Ordering::Relaxed)) {
            s.stamp.store(w, Ordering::Relaxed);
        }
        true
    }

    /// The owner's lookup: `None` when not cached, else the entry (whose
    /// [`Cached::value`] is `None` for a key known absent).
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Cached> {
        self.get_hashed(self.hash(key), key)
    }

    /// [`MetaCache::get`] of a key hashed by [`MetaCache::hasher`].
    #[inline]
    pub fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<Cached> {
        let v = self.lookup_hashed(hash, key, true);
        let counter = if v.is_some() { &self.hits } else { &self.misses };
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        v
    }

    /// A peer's lookup: not counted, and it leaves the entry's heat alone.
    #[inline]
    pub fn peek(&self, key: &[u8]) -> Option<Cached> {
        self.lookup(key, false)
    }

    /// Asks the CPU for `key`'s home slot ahead of a write of it (a drain's
    /// slice prefetches before RocksDB's write, inserts after it).
    #[inline]
    pub fn prefetch_slot(&self, key: &[u8]) {
        self.prefetch_slot_hashed(self.hash(key))
    }

    /// [`MetaCache::prefetch_slot`] by the key's hash.
    #[inline]
    pub fn prefetch_slot_hashed(&self, hash: u64) {
        let hash = hash & !HOT;
        if let Some(s) = self.read(hash).home(hash) {
            prefetch(s);
        }
    }

    /// Then for the entry in `key`'s home slot, if that slot (fetched by
    /// [`MetaCache::prefetch_slot`]) holds a key of its hash.
    #[inline]
    pub fn prefetch_entry(&self, key: &[u8]) -> bool {
        self.prefetch_entry_hashed(self.hash(key))
    }

    /// [`MetaCache::prefetch_entry`] by the key's hash: whether the home
    /// slot held a key of that hash (else the key is likely not cached).
    #[inline]
    pub fn prefetch_entry_hashed(&self, hash: u64) -> bool {
        let hash = hash & !HOT;
        let part = self.read(hash);
        if let Some(s) = part.home(hash) {
            if let Some(e) = s.entry.as_ref().filter(|_| s.tag.load(Ordering::Relaxed) & !HOT == hash) {
                prefetch(e.0.as_ptr());
                return true;
            }
        }
        false
    }

    /// Only the owner inserts (see the module's notes). An entry heavier
    /// than a part's budget is not kept, and the key's older entry leaves.
    #[inline]
    pub fn insert(&self, key: &[u8], value: Option<&[u8]>) {
        let hash = self.hash(key);
        let fits = weigh(key, value) <= self.part_budget && key.len() <= MAX_KEY;
        let mut part = self.write(hash);
        match part.find(hash, key) {
            Some(i) if !fits => part.remove_at(i),
            Some(i) => {
                Self::replace(&mut part, i, Cached::new(key, value));
                part.evict(self.part_budget);
            }
            None if !fits => {}
            None => {
                part.put(hash, Cached::new(key, value));
                part.evict(self.part_budget);
                if part.slots.len() >= BIG_SLOTS && !self.big() {
                    self.big.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// A new value for the entry at `i`: its stamp copy goes too (a key
    /// written is touched through the write tier's copy meanwhile, so
    /// the one here may be behind the access table's).
    fn replace(part: &mut Part, i: usize, new: Cached) {
        part.slots[i].stamp.store(0, Ordering::Relaxed);
        let w = new.weight();
        if let Some(old) = part.slots[i].entry.replace(new) {
            part.weight = part.weight - old.weight() + w;
        }
    }

    /// Whether it holds `key`'s entry (the owner, before [`MetaCache::update`]).
    #[inline]
    pub fn holds(&self, key: &[u8]) -> bool {
        let hash = self.hash(key);
        self.read(hash).find(hash, key).is_some()
    }

    /// The owner: a new value for an entry it holds (a key it does not hold
    /// stays out).
    #[inline]
    pub fn update(&self, key: &[u8], value: Option<&[u8]>) {
        let hash = self.hash(key);
        let mut part = self.write(hash);
        if let Some(i) = part.find(hash, key) {
            if weigh(key, value) <= self.part_budget {
                Self::replace(&mut part, i, Cached::new(key, value));
                part.evict(self.part_budget);
            } else {
                part.remove_at(i);
            }
        }
    }

    pub fn clear(&self) {
        self.big.store(false, Ordering::Relaxed);
        for p in self.parts.iter() {
            // Dropped outside the lock: a peer's read does not wait for
            // a million frees.
            let old = std::mem::take(&mut *p.write().unwrap_or_else(PoisonError::into_inner));
            drop(old);
        }
    }

    /// What its entries may take beyond what they take now (bytes; a
    /// write tier borrows from it, `wtier`'s `tier_set_room`).
    pub fn room(&self) -> u64 {
        (self.part_budget * PARTS as u64).saturating_sub(self.stats().bytes)
    }

    pub fn stats(&self) -> CacheStats {
        let (mut bytes, mut entries) = (0, 0);
        for p in self.parts.iter() {
            let p = p.read().unwrap_or_else(PoisonError::into_inner);
            bytes += p.weight;
            entries += p.len as u64;
        }
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes,
            entries,
        }
    }
}

/// A hint to load `p`'s line; nothing on targets without one.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    // SAFETY: SSE is part of x86_64's baseline; a prefetch never faults,
    // whatever the address.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
