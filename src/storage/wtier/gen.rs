//! A generation of the write tier: the latest value of each record written
//! since it began, each in memory of its own (not a slice of a batch or a
//! turn's buffer, which one long-lived key would keep whole).

use ahash::AHashMap;
use bytes::Bytes;

use super::runs;
use crate::storage::keys::{self, TAG_META};

/// Memory a record of the tier takes beyond its key and value (its map
/// entry, its key's place in a run, the `Bytes` handles, the allocation's
/// header), for the budget.
pub(super) const RECORD_OVERHEAD: u64 = 96;

/// Bytes with their data inline behind the reference count (one
/// allocation; a clone is a count increment).
struct Inline<const N: usize> {
    len: usize,
    buf: [u8; N],
}

impl<const N: usize> AsRef<[u8]> for Inline<N> {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn inline<const N: usize>(parts: [&[u8]; 2]) -> Bytes {
    let mut i = Inline { len: 0, buf: [0; N] };
    for p in parts {
        i.buf[i.len..i.len + p.len()].copy_from_slice(p);
        i.len += p.len();
    }
    Bytes::from_owner(i)
}

/// `a` then `b` in one allocation of their own.
pub(super) fn owned(a: &[u8], b: &[u8]) -> Bytes {
    match a.len() + b.len() {
        0 => Bytes::new(),
        1..=40 => inline::<40>([a, b]),
        41..=104 => inline::<104>([a, b]),
        105..=232 => inline::<232>([a, b]),
        233..=488 => inline::<488>([a, b]),
        _ => Bytes::from_owner([a, b].concat()),
    }
}

/// A record of a generation: its latest value (None: deleted), and
/// whether it is known to be absent below the tier (`fresh`: its writer
/// read it missing, so no older generation, nor the families, hold it
/// live). A fresh record deleted in the generation that took it goes
/// whole, no tombstone: what is below already says it is absent.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Rec {
    pub(super) v: Option<Bytes>,
    fresh: bool,
}

/// What a record held before a [`Gen::put`]: None when the generation
/// did not hold it.
pub(super) type Undo = (Bytes, Option<Rec>);

/// One generation of records: the latest value of each key (None: deleted)
/// and what classes of record it holds, for range reads that need not
/// apply it: the collections with members there (by hashed prefix, with
/// their member keys, so that a range read of one collection applies only
/// its records), whether meta records, whether anything else (the TTL
/// index). Made only with the tier's hasher ([`Gen::with_room`]): reads
/// look it up with a hash computed by that hasher (`get_hashed`).
pub(super) struct Gen {
    pub(super) map: hashbrown::HashMap<Bytes, Rec, ahash::RandomState>,
    colls: AHashMap<u64, Vec<Bytes>>,
    meta: bool,
    /// The lowest and the highest key of its other records (the TTL
    /// indexes): a scan of the due part of an index meets the generation
    /// only when one of them could be in it (active expiry scanned the
    /// index every turn, and a single flag made each scan apply the whole
    /// tier while every entry it held was 60 s ahead: a rate-limiter
    /// script's p99 was 0.3-1 s).
    other: Option<(Bytes, Bytes)>,
    /// Key and value bytes.
    bytes: u64,
    /// Its keys, sorted in runs as they arrive (`runs`). A key may be
    /// there twice, or no longer in the map: the drain takes the map's.
    pub(super) order: runs::Runs,
    /// A record left the map since the last run was sealed (only then
    /// does a seal look its keys up).
    gone: bool,
}

fn len(v: &Option<Bytes>) -> u64 {
    v.as_ref().map_or(0, |v| v.len()) as u64
}

impl Gen {
    /// An empty generation with room for `n` records (the one before
    /// held as many: a generation filling up rehashed its map each time
    /// it doubled, 4.5% of LPUSH -P16's shard).
    pub(super) fn with_room(n: usize, hasher: &ahash::RandomState) -> Gen {
        Gen {
            map: hashbrown::HashMap::with_capacity_and_hasher(n, hasher.clone()),
            colls: AHashMap::default(),
            meta: false,
            other: None,
            bytes: 0,
            order: runs::Runs::default(),
            gone: false,
        }
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

    /// The memory it takes, as the budget counts it.
    pub(super) fn charge(&self) -> u64 {
        self.bytes + self.map.len() as u64 * RECORD_OVERHEAD
    }

    /// `k`'s latest value, if it holds one (None inside: deleted).
    #[inline]
    pub(super) fn get(&self, k: &[u8]) -> Option<&Option<Bytes>> {
        self.map.get(k).map(|r| &r.v)
    }

    /// [`Gen::get`] with `k`'s hash by the tier's hasher (the map's) at hand.
    #[inline]
    pub(super) fn get_hashed(&self, h: u64, k: &[u8]) -> Option<&Option<Bytes>> {
        self.map.raw_entry().from_key_hashed_nocheck(h, k).map(|(_, r)| &r.v)
    }

    /// `k` and its latest value, if it holds one.
    #[inline]
    pub(super) fn get_key_value(&self, k: &[u8]) -> Option<(&Bytes, &Option<Bytes>)> {
        self.map.get_key_value(k).map(|(k, r)| (k, &r.v))
    }

    /// Sets `k`'s latest value to a copy of `v` (None: deleted), one probe
    /// of the map: a key it holds keeps its key, takes a new value; a new
    /// one takes key and value in one allocation. `fresh`: the writer read
    /// `k` absent (kept by a new record only; a record it holds keeps what
    /// it was). A delete of a fresh record forgets it. What it held before,
    /// for [`Gen::restore`]; None when it held `v` already (nothing to
    /// undo: restoring it was a no-op that took two reference counts; a
    /// collection's meta record is often written unchanged).
    pub(super) fn put(&mut self, k: &[u8], v: Option<&[u8]>, fresh: bool, hasher: &ahash::RandomState) -> Option<Undo> {
        use hashbrown::hash_map::EntryRef;
        let vacant = match self.map.entry_ref(k) {
            EntryRef::Occupied(mut e) => {
                if e.get().v.as_deref() == v {
                    // Written again unchanged (a collection's meta record
                    // when a member is replaced): no new copy.
                    return None;
                }
                if v.is_none() && e.get().fresh {
                    // Nothing below holds it: gone whole.
                    let (key, was) = e.remove_entry();
                    self.gone = true;
                    self.bytes = self.bytes.saturating_sub(key.len() as u64 + len(&was.v));
                    return Some((key, Some(was)));
                }
                let new = v.map(|v| owned(v, &[]));
                let key = e.key().clone();
                let rec = e.get_mut();
                self.bytes = (self.bytes + len(&new)).saturating_sub(len(&rec.v));
                let was = std::mem::replace(&mut rec.v, new);
                return Some((key, Some(Rec { v: was, fresh: rec.fresh })));
            }
            EntryRef::Vacant(e) => e,
        };
        let mut rec = owned(k, v.unwrap_or_default());
        let whole = rec.len() as u64;
        // The allocation's front is the key, its rest the value (a split
        // takes one reference count where two slices took two and let go
        // of one).
        let key = rec.split_to(k.len());
        let value = v.map(|_| rec);
        let fresh = fresh && value.is_some();
        vacant.insert_with_key(key.clone(), Rec { v: value, fresh });
        match keys::coll_prefix_len(k) {
            Some(n) => self.colls.entry(hasher.hash_one(&k[..n])).or_default().push(key.clone()),
            None if k.len() >= 2 && k[0] != 0xFF && k[1] == TAG_META => self.meta = true,
            None => match &mut self.other {
                Some((lo, hi)) => {
                    if key < *lo {
                        *lo = key.clone();
                    } else if key > *hi {
                        *hi = key.clone();
                    }
                }
                None => self.other = Some((key.clone(), key.clone())),
            },
        }
        self.bytes += whole;
        if self.order.add(key.clone()) {
            self.seal();
        }
        Some((key, None))
    }

    /// Its keys in key order, for its drain (the records it no longer
    /// holds left out of the last ones).
    pub(super) fn take_order(&mut self) -> runs::Merge {
        self.seal();
        std::mem::take(&mut self.order).merge()
    }

    /// Puts back what `k` held before a [`Gen::put`] (its answer). A key
    /// it forgets stays in `order`: the drain passes over keys the map
    /// does not hold.
    pub(super) fn restore(&mut self, k: &Bytes, prev: Option<Rec>) {
        let held = match self.map.remove(k) {
            Some(n) => {
                self.bytes = self.bytes.saturating_sub(k.len() as u64 + len(&n.v));
                self.gone = true;
                true
            }
            None => false,
        };
        if let Some(p) = prev {
            self.bytes += k.len() as u64 + len(&p.v);
            self.map.insert(k.clone(), p);
            // Back after it left whole: a seal since may have left its key
            // out of `order` (twice there is harmless).
            if !held && self.order.add(k.clone()) {
                self.seal();
            }
        }
    }

    /// The records of the collection hashed `coll` (member records only),
    /// in no order.
    pub(super) fn coll_records(&self, coll: u64) -> impl Iterator<Item = (&Bytes, &Option<Bytes>)> {
        self.colls.get(&coll).into_iter().flatten().filter_map(|k| self.get_key_value(k))
    }

    /// Forgets the records of the collection hashed `coll` (written to the
    /// families by [`ShardStore::tier_apply_range`]); the drain passes over
    /// their keys.
    pub(super) fn drop_coll(&mut self, coll: u64) {
        for k in self.colls.remove(&coll).into_iter().flatten() {
            if let Some(r) = self.map.remove(&k) {
                self.gone = true;
                self.bytes = self.bytes.saturating_sub(k.len() as u64 + len(&r.v));
            }
        }
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
        let mut g = Gen::with_room(0, &hasher);
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
        let mut f = Gen::with_room(0, &hasher);
        f.put(&keys::field_ttl_key(now, 0, b"h"), Some(b""), false, &hasher);
        assert!(!f.meets(&lo, &hi, &hasher), "the field index is not the TTL index");
        assert!(f.meets(&keys::FIELD_TTL_PREFIX, &keys::ttl_key(0, 0, b""), &hasher));
    }

    #[test]
    fn owned_bytes_hold_both_parts_at_every_size() {
        for n in [0usize, 1, 39, 40, 41, 104, 105, 232, 488, 489, 5000] {
            let a: Vec<u8> = (0..n / 2).map(|i| i as u8).collect();
            let b: Vec<u8> = (0..n - n / 2).map(|i| (i * 7) as u8).collect();
            let o = owned(&a, &b);
            assert_eq!(o.len(), n);
            assert_eq!(&o[..a.len()], &a[..]);
            assert_eq!(&o[a.len()..], &b[..]);
            let c = o.clone();
            drop(o);
            assert_eq!(c.len(), n);
        }
    }

    #[test]
    fn put_and_restore_keep_the_byte_count() {
        let h = ahash::RandomState::new();
        let mut g = Gen::with_room(0, &h);
        let (k, prev) = g.put(b"\x00Mkey", Some(b"v1"), false, &h).unwrap();
        assert_eq!(prev, None);
        assert_eq!(g.bytes, 7);
        let (k2, prev) = g.put(b"\x00Mkey", Some(b"longer"), false, &h).unwrap();
        assert_eq!(k2, k);
        assert_eq!(prev.as_ref().map(|r| r.v.clone()), Some(Some(Bytes::from_static(b"v1"))));
        assert_eq!(g.bytes, 11);
        // Written again unchanged: nothing to undo, nothing counted.
        assert!(g.put(b"\x00Mkey", Some(b"longer"), false, &h).is_none());
        assert_eq!(g.bytes, 11);
        let (_, p2) = g.put(b"\x00Mkey", None, false, &h).unwrap();
        assert_eq!(g.bytes, 5);
        assert_eq!(g.get(b"\x00Mkey"), Some(&None), "a record not known fresh leaves a tombstone");
        g.restore(&k, p2);
        assert_eq!(g.get(b"\x00Mkey"), Some(&Some(Bytes::from_static(b"longer"))));
        assert_eq!(g.bytes, 11);
        g.restore(&k, prev);
        assert_eq!(g.bytes, 7);
        g.restore(&k, None);
        assert!(g.map.is_empty());
        assert_eq!(g.bytes, 0);
    }

    #[test]
    fn a_fresh_record_deleted_in_its_generation_goes_whole_and_comes_back_on_undo() {
        let h = ahash::RandomState::new();
        let mut g = Gen::with_room(0, &h);
        let sub = keys::sub_key(0, b"zk", 1, b"m");
        let k = &sub[..];
        let (key, prev) = g.put(k, Some(b"1"), true, &h).unwrap();
        assert_eq!(prev, None);
        // Overwritten, it stays fresh: the delete after it still leaves nothing.
        let (_, over) = g.put(k, Some(b"22"), false, &h).unwrap();
        let (_, del) = g.put(k, None, false, &h).unwrap();
        assert_eq!(g.get(k), None, "no tombstone for a record nothing below holds");
        assert_eq!(g.bytes, 0);
        assert_eq!(g.coll_records(h.hash_one(&k[..keys::coll_prefix_len(k).unwrap()])).count(), 0);
        // A failed log append puts it back, fresh still.
        g.restore(&key, del);
        assert_eq!(g.get(k), Some(&Some(Bytes::from_static(b"22"))));
        assert_eq!(g.bytes, k.len() as u64 + 2);
        g.restore(&key, over);
        assert_eq!(g.get(k), Some(&Some(Bytes::from_static(b"1"))));
        g.put(k, None, false, &h).unwrap();
        assert_eq!(g.get(k), None);
        // A delete first is a tombstone; a fresh put over it is not fresh.
        g.put(k, None, false, &h).unwrap();
        g.put(k, Some(b"3"), true, &h).unwrap();
        g.put(k, None, false, &h).unwrap();
        assert_eq!(g.get(k), Some(&None));
    }
}
