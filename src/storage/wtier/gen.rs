//! A generation of the write tier: the latest value of each record written
//! since it began, each copied out of the batch that wrote it (a slice of
//! a batch or a turn's buffer would keep it whole), key and value, into
//! the generation's own chunks of memory (`slab`), which the tier hands on
//! to the next generations once this one is applied ([`Gen::take_chunks`]).

use ahash::AHashMap;

use super::recs::{Map, Recs, Slot};
use super::runs;
use super::slab::{Chunk, Slab, Span};
use crate::storage::keys::{self, TAG_META};

/// Memory a record of the tier takes beyond its key and value (its map
/// entry, its key's place in a run, the allocation's share), for the
/// budget.
pub(super) const RECORD_OVERHEAD: u64 = 96;

/// The chunk size of a tier whose share of the budget is `bytes`: 1/64
/// of it, from 16 KiB to 256 KiB (dirty starts draining at half the
/// share, so a generation takes at least 32 chunks).
pub(super) fn chunk_size(bytes: u64) -> usize {
    (bytes / 64).clamp(16 << 10, 256 << 10) as usize
}

/// A record of a generation: its latest value (None: deleted), and
/// whether it is known to be absent below the tier (`fresh`: its writer
/// read it missing, so no older generation, nor the families, hold it
/// live). A fresh record deleted in the generation that took it goes
/// whole, no tombstone: what is below already says it is absent. A meta
/// record also keeps the owner's copy of its key's access stamp (`stamp`,
/// 0: none; `types::access`), on the line a write of the key has just
/// loaded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Rec {
    pub(super) v: Option<Span>,
    fresh: bool,
    pub(super) stamp: u64,
}

#[cfg(test)]
impl Rec {
    pub(super) fn new(v: Option<Span>, fresh: bool) -> Rec {
        Rec { v, fresh, stamp: 0 }
    }
}

/// A [`Gen::put`]'s change: the record's key, what it held before (None
/// when the generation did not hold it), and the value it holds now
/// (None: deleted, or gone whole), which the turn's log record takes.
/// Spans of the generation's chunks, which stay while the turn's undo
/// list is kept (a generation starts draining only with it empty). A
/// value written again in place ([`Gen::put_over`]) is both the old and
/// the new value ([`Span::same`]); its old bytes wait in the turn's
/// `saved` bytes.
pub(super) type Undo = (Span, Option<Rec>, Option<Span>);

/// One generation of records: the latest value of each key (None: deleted)
/// and what classes of record it holds, for range reads that need not
/// apply it: the collections with members there (by hashed prefix, with
/// their member keys, so that a range read of one collection applies only
/// its records), whether meta records, whether anything else (the TTL
/// index). Made only with the tier's hasher ([`Gen::with_room`]): reads
/// look it up with a hash computed by that hasher (`get_hashed`).
pub(super) struct Gen {
    pub(super) map: Recs,
    colls: AHashMap<u64, Vec<Span>>,
    meta: bool,
    /// The lowest and the highest key of its other records (the TTL
    /// indexes): a scan of the due part of an index meets the generation
    /// only when one of them could be in it (active expiry scanned the
    /// index every turn, and a single flag made each scan apply the whole
    /// tier while every entry it held was 60 s ahead: a rate-limiter
    /// script's p99 was 0.3-1 s).
    other: Option<(Span, Span)>,
    /// Key and value bytes.
    bytes: u64,
    /// Its keys, sorted in runs as they arrive (`runs`). A key may be
    /// there twice, or no longer in the map: the drain takes the map's.
    pub(super) order: runs::Runs,
    /// A record left the map since the last run was sealed (only then
    /// does a seal look its keys up).
    gone: bool,
    /// Bytes of records it no longer holds (a value overwritten, a record
    /// gone): in its chunks until it is applied, so charged to the budget.
    waste: u64,
    /// The memory its keys and values are copied into.
    slab: Slab,
}

fn len(v: &Option<Span>) -> u64 {
    v.as_ref().map_or(0, |v| v.len()) as u64
}

impl Gen {
    /// An empty generation with room for `n` records (the one before
    /// held as many: a generation filling up rehashed its map each time
    /// it doubled, 4.5% of LPUSH -P16's shard).
    /// `chunk`: the size of the chunks its records are copied into
    /// ([`chunk_size`]).
    pub(super) fn with_room(n: usize, hasher: &ahash::RandomState, chunk: usize) -> Gen {
        Gen::with_room_in(n, None, hasher, chunk)
    }

    /// [`Gen::with_room`] in `spare`, an applied generation's emptied map
    /// ([`Gen::into_spare_map`]), when it has the room: its pages are
    /// the process's already (a new map's were zeroed by the kernel as
    /// records landed on them, a quarter of INCR -P16's shard).
    pub(super) fn with_room_in(n: usize, spare: Option<Map>, hasher: &ahash::RandomState, chunk: usize) -> Gen {
        Gen {
            map: Recs::with_room_in(n, spare, hasher),
            colls: AHashMap::default(),
            meta: false,
            other: None,
            bytes: 0,
            order: runs::Runs::default(),
            gone: false,
            waste: 0,
            slab: Slab::new(chunk),
        }
    }

    /// Its biggest map, emptied, for a generation after it
    /// ([`Gen::with_room_in`]).
    pub(super) fn into_spare_map(self) -> Option<Map> {
        self.map.into_spare()
    }

    /// Its chunks, once it is applied and no table of it holds a span,
    /// for the next generations ([`Gen::give_chunks`], through the tier's
    /// pins: `slab::Pins`).
    pub(super) fn take_chunks(&mut self) -> Vec<Chunk> {
        self.slab.take()
    }

    /// Chunks of a generation applied before it, kept for its records, as
    /// many as half of the shard's share of the budget takes (`budget`);
    /// the rest are freed.
    pub(super) fn give_chunks(&mut self, chunks: Vec<Chunk>, budget: u64) {
        self.slab.reuse(chunks, budget);
    }

    /// The emptied runs of a generation merged before it, for its seals:
    /// as many as half of the shard's share of the budget (`budget`) holds
    /// records of [`RECORD_OVERHEAD`] (which counts a record's place in a
    /// run), at most 256.
    pub(super) fn reuse_runs(&mut self, runs: Vec<Vec<runs::Keyed>>, budget: u64) {
        let most = (budget / 2 / (RECORD_OVERHEAD * runs::RUN as u64)).clamp(1, 256) as usize;
        self.order.reuse(runs, most);
    }

    /// Hands its spare chunks to the generation after it.
    pub(super) fn pass_spare(&mut self, next: &mut Gen) {
        self.slab.pass_spare(&mut next.slab);
        self.order.pass_spare(&mut next.order);
    }

    /// Seals the run of keys added since the last one (`runs`), leaving
    /// out those it no longer holds.
    fn seal(&mut self) {
        let map = &self.map;
        if std::mem::take(&mut self.gone) {
            self.order.seal(|k| map.contains_key(k));
        } else {
            self.order.seal(|_| true);
        }
    }

    /// Its first `n` keys in `[from, hi)` from each of its runs (its
    /// newest keys sealed into one first), into `out` ([`runs::Taken`]);
    /// a key there may no longer be in the map.
    pub(super) fn keys_in(&mut self, from: runs::Start<'_>, hi: &[u8], n: usize, out: &mut runs::Taken) {
        if self.order.has_fresh() {
            self.seal();
        }
        self.order.keys_in(from, hi, n, out);
    }

    /// The memory it takes, as the budget counts it.
    pub(super) fn charge(&self) -> u64 {
        self.bytes + self.waste + self.map.len() as u64 * RECORD_OVERHEAD
    }

    /// The part of [`Gen::charge`] that is values overwritten since it
    /// began (its chunks keep them until it is applied).
    pub(super) fn waste(&self) -> u64 {
        self.waste
    }

    /// `k`'s latest value, if it holds one (None inside: deleted).
    #[inline]
    pub(super) fn get(&self, k: &[u8]) -> Option<Option<Span>> {
        self.map.get(k).map(|r| r.v)
    }

    /// [`Gen::get`] with `k`'s hash by the tier's hasher (the map's) at hand.
    #[inline]
    pub(super) fn get_hashed(&self, h: u64, k: &[u8]) -> Option<Option<Span>> {
        self.map.get_hashed(h, k).map(|r| r.v)
    }

    /// The access stamp copy of `k`'s record (hashed `h`), if it holds
    /// one: `f` sees it (0: none yet) and returns the one to keep (None:
    /// unchanged).
    #[inline]
    pub(super) fn with_stamp(&mut self, h: u64, k: &[u8], f: impl FnOnce(u64) -> Option<u64>) -> bool {
        let Some(r) = self.map.get_hashed_mut(h, k) else { return false };
        if let Some(w) = f(r.stamp) {
            r.stamp = w;
        }
        true
    }

    /// `k` and its latest value, if it holds one.
    #[inline]
    pub(super) fn get_key_value(&self, k: &[u8]) -> Option<(Span, Option<Span>)> {
        self.map.get_key_value(k).map(|(k, r)| (*k, r.v))
    }

    /// Sets `k`'s latest value to a copy of `v` (None: deleted), one probe
    /// of the map: a key it holds keeps its key, takes a new value; a new
    /// one takes a copy of both. `fresh`: the writer read
    /// `k` absent (kept by a new record only; a record it holds keeps what
    /// it was). A delete of a fresh record forgets it. What it held before,
    /// for [`Gen::restore`]; None when it held `v` already (nothing to
    /// undo; a collection's meta record is often written unchanged).
    pub(super) fn put(&mut self, k: &[u8], v: Option<&[u8]>, fresh: bool, hasher: &ahash::RandomState) -> Option<Undo> {
        self.put_with(k, v, fresh, hasher, None)
    }

    /// [`Gen::put`], and a value of the same length as the one it replaces
    /// is written over it in place: the old bytes are appended to `saved`
    /// (for [`Gen::restore`]) and the generation takes no new memory. A
    /// SET of a changing value over a million keys left its old value in
    /// the chunks each time, and the waste drained a generation long
    /// before it held the working set (tuning.md, session 63).
    ///
    /// Only while no read holds a span of the tier (`slab::Pins::free`):
    /// a reader's value must not change under it.
    pub(super) fn put_over(
        &mut self,
        k: &[u8],
        v: Option<&[u8]>,
        fresh: bool,
        hasher: &ahash::RandomState,
        saved: &mut Vec<u8>,
    ) -> Option<Undo> {
        self.put_with(k, v, fresh, hasher, Some(saved))
    }

    fn put_with(
        &mut self,
        k: &[u8],
        v: Option<&[u8]>,
        fresh: bool,
        hasher: &ahash::RandomState,
        saved: Option<&mut Vec<u8>>,
    ) -> Option<Undo> {
        let mut e = match self.map.slot(hasher.hash_one(k), k) {
            Slot::Held(e) => e,
            Slot::Vacant(at) => {
                let key = self.slab.copy(k);
                let value = v.map(|v| self.slab.copy(v));
                let fresh = fresh && value.is_some();
                at.insert(key, Rec { v: value, fresh, stamp: 0 });
                let whole = key.len() as u64 + len(&value);
                return Some(self.added(k, key, whole, hasher, value));
            }
        };
        if e.get().v.as_deref() == v {
            // Written again unchanged (a collection's meta record when a
            // member is replaced): no new copy.
            return None;
        }
        if v.is_none() && e.get().fresh {
            // Nothing below holds it: gone whole.
            let (key, was) = e.remove_entry();
            self.left(key.len() as u64 + len(&was.v));
            return Some((key, Some(was), None));
        }
        if let (Some(saved), Some(v), Some(old)) = (saved, v, e.get().v) {
            if old.len() == v.len() {
                saved.extend_from_slice(&old);
                // SAFETY: `old` is this generation's own value (dirty's:
                // only dirty takes puts), and `put_over`'s caller holds no
                // pin: no read holds a span of it; `v` is the caller's.
                unsafe { old.overwrite(v) };
                return Some((*e.key(), Some(*e.get()), Some(old)));
            }
        }
        let new = v.map(|v| self.slab.copy(v));
        let (key, added) = (*e.key(), len(&new));
        let rec = e.get_mut();
        let was = std::mem::replace(&mut rec.v, new);
        let (old, fresh, stamp) = (len(&was), rec.fresh, rec.stamp);
        self.bytes = (self.bytes + added).saturating_sub(old);
        self.waste += old;
        Some((key, Some(Rec { v: was, fresh, stamp }), new))
    }

    /// Books a new record `key` (`k`), of `whole` bytes.
    fn added(&mut self, k: &[u8], key: Span, whole: u64, hasher: &ahash::RandomState, now: Option<Span>) -> Undo {
        match keys::coll_prefix_len(k) {
            Some(n) => self.colls.entry(hasher.hash_one(&k[..n])).or_default().push(key),
            None if k.len() >= 2 && k[0] != 0xFF && k[1] == TAG_META => self.meta = true,
            None => match &mut self.other {
                Some((lo, hi)) => {
                    if key < *lo {
                        *lo = key;
                    } else if key > *hi {
                        *hi = key;
                    }
                }
                None => self.other = Some((key, key)),
            },
        }
        self.bytes += whole;
        if self.order.add(key) {
            self.seal();
        }
        (key, None, now)
    }

    /// Its keys in key order, for its drain (the records it no longer
    /// holds left out of the last ones).
    pub(super) fn take_order(&mut self) -> runs::Merge {
        self.seal();
        std::mem::take(&mut self.order).merge()
    }

    /// Puts back what `k` held before a [`Gen::put`] (its answer, `undo`;
    /// undone in the reverse order of the puts). A key it forgets stays in
    /// `order`: the drain passes over keys the map does not hold. A value
    /// written over in place comes back from the end of `saved` as a new
    /// copy (a read may hold the span now: it keeps the bytes it has).
    pub(super) fn restore(&mut self, undo: Undo, saved: &mut Vec<u8>) {
        let (k, mut prev, now) = undo;
        if let (Some(p), Some(now)) = (&mut prev, now) {
            if let Some(was) = p.v.filter(|was| was.same(&now)) {
                let from = saved.len().saturating_sub(was.len());
                p.v = Some(self.slab.copy(&saved[from..]));
                saved.truncate(from);
            }
        }
        let held = match self.map.remove(&k) {
            Some(n) => {
                self.bytes = self.bytes.saturating_sub(k.len() as u64 + len(&n.v));
                self.waste += len(&n.v);
                self.gone = true;
                true
            }
            None => false,
        };
        if let Some(p) = prev {
            self.bytes += k.len() as u64 + len(&p.v);
            self.map.insert(k, p);
            // Back after it left whole: a seal since may have left its key
            // out of `order` (twice there is harmless).
            if !held && self.order.add(k) {
                self.seal();
            }
        }
    }

    /// Forgets `k`'s record: a write past the tier replaces it
    /// ([`ShardStore::tier_clear_for`](crate::storage::ShardStore)); the
    /// drain passes over its key.
    pub(super) fn forget(&mut self, k: &[u8]) {
        if let Some((key, r)) = self.map.remove_entry(k) {
            self.left(key.len() as u64 + len(&r.v));
        }
    }

    /// Counts records of `freed` bytes that left the map (their bytes
    /// stay in its chunks until it is applied).
    fn left(&mut self, freed: u64) {
        if freed > 0 {
            self.gone = true;
            self.bytes = self.bytes.saturating_sub(freed);
            self.waste += freed;
        }
    }

    /// Forgets every record with a key in `[from, to)` (a range delete
    /// wider than one collection, FLUSHDB's, writes past the tier and
    /// replaces them all). The drain passes over their
    /// keys; `colls` and the flags may still name them (a read that
    /// consults them then finds nothing: harmless).
    pub(super) fn forget_range(&mut self, from: &[u8], to: &[u8]) {
        let mut freed = 0u64;
        self.map.retain(|k, r| {
            let inside = k.as_ref() >= from && k.as_ref() < to;
            if inside {
                freed += k.len() as u64 + len(&r.v);
            }
            !inside
        });
        self.left(freed);
    }

    /// The records of the collection hashed `coll` (member records only),
    /// in no order.
    #[cfg(test)]
    pub(super) fn coll_records(&self, coll: u64) -> impl Iterator<Item = (Span, Option<Span>)> + '_ {
        self.colls.get(&coll).into_iter().flatten().filter_map(|k| self.get_key_value(k))
    }

    /// Whether it holds records of the collection hashed `coll`.
    pub(super) fn holds_coll(&self, coll: u64) -> bool {
        self.colls.contains_key(&coll)
    }

    /// Up to `max` records of the collection hashed `coll` (member
    /// records), with how many of its keys they are (the last ones of its
    /// list), for [`Gen::drop_coll_keys`] once they are written.
    pub(super) fn coll_part(&self, coll: u64, max: usize) -> (Vec<(Span, Option<Span>)>, usize) {
        let Some(keys) = self.colls.get(&coll) else {
            return (Vec::new(), 0);
        };
        let n = keys.len().min(max);
        let part = keys[keys.len() - n..].iter().filter_map(|k| self.get_key_value(k)).collect();
        (part, n)
    }

    /// Forgets the last `n` keys of the collection hashed `coll` (written
    /// to the families by [`ShardStore::tier_write_coll`]); true when it
    /// holds none of it after. The drain passes over their keys.
    pub(super) fn drop_coll_keys(&mut self, coll: u64, n: usize) -> bool {
        let Some(keys) = self.colls.get_mut(&coll) else { return true };
        let mut freed = 0u64;
        for k in keys.drain(keys.len().saturating_sub(n)..) {
            if let Some(r) = self.map.remove(&k) {
                freed += k.len() as u64 + len(&r.v);
            }
        }
        let empty = keys.is_empty();
        if empty {
            self.colls.remove(&coll);
        }
        self.left(freed);
        empty
    }

    /// Forgets the records of the collection hashed `coll` in `[from,
    /// to)`: a range delete inside it writes past the tier and replaces
    /// them (the drain passes over their keys).
    pub(super) fn forget_coll_range(&mut self, coll: u64, from: &[u8], to: &[u8]) {
        let Gen { colls, map, .. } = self;
        let Some(keys) = colls.get_mut(&coll) else { return };
        let mut freed = 0u64;
        keys.retain(|k| {
            if k.as_ref() < from || k.as_ref() >= to {
                return true;
            }
            if let Some(r) = map.remove(k) {
                freed += k.len() as u64 + len(&r.v);
            }
            false
        });
        if keys.is_empty() {
            colls.remove(&coll);
        }
        self.left(freed);
    }

    /// The collection a range read of `[from, to)` stays inside (hashed,
    /// as `colls` keeps it), if it does.
    pub(super) fn coll_of_range(from: &[u8], to: &[u8], hasher: &ahash::RandomState) -> Option<u64> {
        let n = keys::coll_prefix_len(from)?;
        let same_key = to.len() >= n && to[..n - 8] == from[..n - 8];
        let version = |k: &[u8]| u64::from_be_bytes(k[n - 8..n].try_into().unwrap_or([0xFF; 8]));
        (same_key && version(to) <= version(from).saturating_add(1)).then(|| hasher.hash_one(&from[..n]))
    }

    /// Whether a range read of `[from, to)` may meet one of its records.
    pub(super) fn meets(&self, from: &[u8], to: &[u8], hasher: &ahash::RandomState) -> bool {
        if self.map.is_empty() {
            return false;
        }
        if keys::coll_prefix_len(from).is_some() {
            // Inside one collection: up to the next version's prefix.
            return match Gen::coll_of_range(from, to, hasher) {
                Some(c) => self.colls.contains_key(&c),
                None => true,
            };
        }
        let meta_block = |k: &[u8], db: u8| k.len() >= 2 && k[0] == db && (k[1] == TAG_META || (k[1] == TAG_META + 1 && k.len() == 2));
        if from.len() >= 2 && from[0] != 0xFF && from[1] == TAG_META && meta_block(to, from[0]) {
            return self.meta;
        }
        if from.first() == Some(&0xFF) && to.first() == Some(&0xFF) {
            // Some key it held (held once: a bound is never taken back) in
            // [from, to).
            return self.other.as_ref().is_some_and(|(lo, hi)| lo.as_ref() < to && hi.as_ref() >= from);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan of the TTL index's due part meets a generation only when a
    /// key it holds could be there: entries a minute ahead leave active
    /// expiry's scan alone; one due, or a range over them, meets it.
    #[test]
    fn an_index_range_meets_only_a_generation_holding_a_key_in_it() {
        let hasher = ahash::RandomState::new();
        let mut g = Gen::with_room(0, &hasher, chunk_size(u64::MAX));
        let now = 1_000_000u64;
        let due = |at: u64| (keys::TTL_PREFIX.to_vec(), keys::ttl_key(at + 1, 0, b""));
        let (lo, hi) = due(now);
        assert!(!g.meets(&lo, &hi, &hasher), "empty");
        g.put(&keys::ttl_key(now + 60_000, 0, b"a"), Some(b""), false, &hasher);
        g.put(&keys::ttl_key(now + 61_000, 0, b"b"), Some(b""), false, &hasher);
        g.put(&keys::meta_key(0, b"a"), Some(b"m"), false, &hasher);
        assert!(!g.meets(&lo, &hi, &hasher), "nothing held is due");
        let (lo2, hi2) = due(now + 60_000);
        assert!(g.meets(&lo2, &hi2, &hasher), "a's entry is due then");
        let after = keys::ttl_key(now + 61_500, 0, b"");
        assert!(!g.meets(&after, &[0xFF, b'U'], &hasher), "past the highest");
        assert!(g.meets(&keys::ttl_key(now + 60_500, 0, b""), &after, &hasher), "b between");
        // A key held below the others (a deleted entry: a bound stays).
        g.put(&keys::ttl_key(now - 5, 0, b"c"), None, false, &hasher);
        assert!(g.meets(&lo, &hi, &hasher));
        // Another index, below the TTL one, moves the low bound too.
        let mut f = Gen::with_room(0, &hasher, chunk_size(u64::MAX));
        f.put(&keys::field_ttl_key(now, 0, b"h"), Some(b""), false, &hasher);
        assert!(!f.meets(&lo, &hi, &hasher), "the field index is not the TTL index");
        assert!(f.meets(&keys::FIELD_TTL_PREFIX, &keys::ttl_key(0, 0, b""), &hasher));
    }

    /// Records are copied into chunks; a generation applied hands its
    /// chunks to the next one, which copies its records into the same
    /// memory; a record over an eighth of a chunk has memory of its own,
    /// freed with the generation.
    #[test]
    fn chunks_pass_to_the_next_generation() {
        let h = ahash::RandomState::new();
        let chunk = chunk_size(0);
        assert_eq!(chunk, 16 << 10);
        let mut a = Gen::with_room(0, &h, chunk);
        for i in 0..400u32 {
            a.put(&keys::meta_key(0, &i.to_be_bytes()), Some(&[7; 100]), false, &h);
        }
        let (used, _) = a.slab.counts();
        assert!(used >= 3, "{used} chunks");
        let first = a.get(&keys::meta_key(0, &0u32.to_be_bytes())).flatten().unwrap();
        assert_eq!(&first[..], &[7; 100]);
        a.put(b"\x00Mbig", Some(&[1; 4000]), false, &h);
        assert_eq!(a.get(b"\x00Mbig").flatten().map(|v| v.len()), Some(4000));
        let chunks = a.take_chunks();
        assert_eq!(chunks.len(), used + 1, "the big record's allocation too");
        drop(a);
        let mut b = Gen::with_room(0, &h, chunk);
        b.give_chunks(chunks, u64::MAX);
        assert_eq!(b.slab.counts(), (0, used), "every chunk-sized one kept");
        b.put(b"\x00Mnew", Some(b"v"), false, &h);
        assert_eq!(b.slab.counts(), (1, used - 1), "copied into a reused chunk");
        assert_eq!(b.get(b"\x00Mnew").flatten().as_deref(), Some(&b"v"[..]));
        // At most half the budget's worth of chunks is kept.
        let mut c = Gen::with_room(0, &h, chunk);
        c.give_chunks(b.take_chunks(), 4 * chunk as u64);
        assert_eq!(c.slab.counts(), (0, 3));
    }

    #[test]
    fn put_and_restore_keep_the_byte_count() {
        let h = ahash::RandomState::new();
        let mut g = Gen::with_room(0, &h, chunk_size(u64::MAX));
        let (k, prev, _) = g.put(b"\x00Mkey", Some(b"v1"), false, &h).unwrap();
        assert_eq!(prev, None);
        assert_eq!(g.bytes, 7);
        let (k2, prev, now) = g.put(b"\x00Mkey", Some(b"longer"), false, &h).unwrap();
        assert_eq!(k2, k);
        assert_eq!(now.as_deref(), Some(&b"longer"[..]));
        assert_eq!(prev.and_then(|r| r.v).as_deref(), Some(&b"v1"[..]));
        assert_eq!(g.bytes, 11);
        // Written again unchanged: nothing to undo, nothing counted.
        assert!(g.put(b"\x00Mkey", Some(b"longer"), false, &h).is_none());
        assert_eq!(g.bytes, 11);
        let (_, p2, now) = g.put(b"\x00Mkey", None, false, &h).unwrap();
        assert_eq!(now, None);
        assert_eq!(g.bytes, 5);
        assert_eq!(g.get(b"\x00Mkey"), Some(None), "a record not known fresh leaves a tombstone");
        g.restore((k, p2, None), &mut Vec::new());
        assert_eq!(g.get(b"\x00Mkey").flatten().as_deref(), Some(&b"longer"[..]));
        assert_eq!(g.bytes, 11);
        g.restore((k, prev, None), &mut Vec::new());
        assert_eq!(g.bytes, 7);
        g.restore((k, None, None), &mut Vec::new());
        assert!(g.map.is_empty());
        assert_eq!(g.bytes, 0);
    }

    #[test]
    fn a_fresh_record_deleted_in_its_generation_goes_whole_and_comes_back_on_undo() {
        let h = ahash::RandomState::new();
        let mut g = Gen::with_room(0, &h, chunk_size(u64::MAX));
        let sub = keys::sub_key(0, b"zk", 1, b"m");
        let k = &sub[..];
        let (key, prev, _) = g.put(k, Some(b"1"), true, &h).unwrap();
        assert_eq!(prev, None);
        // Overwritten, it stays fresh: the delete after it still leaves nothing.
        let (_, over, _) = g.put(k, Some(b"22"), false, &h).unwrap();
        let (_, del, gone) = g.put(k, None, false, &h).unwrap();
        assert_eq!(gone, None);
        assert_eq!(g.get(k), None, "no tombstone for a record nothing below holds");
        assert_eq!(g.bytes, 0);
        assert_eq!(g.coll_records(h.hash_one(&k[..keys::coll_prefix_len(k).unwrap()])).count(), 0);
        // A failed log append puts it back, fresh still.
        g.restore((key, del, None), &mut Vec::new());
        assert_eq!(g.get(k).flatten().as_deref(), Some(&b"22"[..]));
        assert_eq!(g.bytes, k.len() as u64 + 2);
        g.restore((key, over, None), &mut Vec::new());
        assert_eq!(g.get(k).flatten().as_deref(), Some(&b"1"[..]));
        g.put(k, None, false, &h).unwrap();
        assert_eq!(g.get(k), None);
        // A delete first is a tombstone; a fresh put over it is not fresh.
        g.put(k, None, false, &h).unwrap();
        g.put(k, Some(b"3"), true, &h).unwrap();
        g.put(k, None, false, &h).unwrap();
        assert_eq!(g.get(k), Some(None));
    }
}
