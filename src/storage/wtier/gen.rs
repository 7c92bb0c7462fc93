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

/// One generation of records: the latest value of each key (None: deleted)
/// and what classes of record it holds, for range reads that need not
/// apply it: the collections with members there (by hashed prefix, with
/// their member keys, so that a range read of one collection applies only
/// its records), whether meta records, whether anything else (the TTL
/// index).
#[derive(Default)]
pub(super) struct Gen {
    pub(super) map: hashbrown::HashMap<Bytes, Option<Bytes>, ahash::RandomState>,
    colls: AHashMap<u64, Vec<Bytes>>,
    meta: bool,
    other: bool,
    /// Key and value bytes.
    bytes: u64,
    /// Its keys, sorted in runs as they arrive (`runs`).
    pub(super) order: runs::Runs,
}

fn len(v: &Option<Bytes>) -> u64 {
    v.as_ref().map_or(0, |v| v.len()) as u64
}

impl Gen {
    /// The memory it takes, as the budget counts it.
    pub(super) fn charge(&self) -> u64 {
        self.bytes + self.map.len() as u64 * RECORD_OVERHEAD
    }

    /// Sets `k`'s latest value to a copy of `v` (None: deleted): a key it
    /// holds keeps its key, takes a new value; a new one takes key and
    /// value in one allocation. Its key, and what it held before (None:
    /// nothing), for [`Gen::restore`]; None when it held `v` already
    /// (nothing to undo: restoring it was a no-op that took two reference
    /// counts; a collection's meta record is often written unchanged).
    pub(super) fn put(&mut self, k: &[u8], v: Option<&[u8]>, hasher: &ahash::RandomState) -> Option<(Bytes, Option<Option<Bytes>>)> {
        if let Some((key, slot)) = self.map.get_key_value_mut(k) {
            if slot.as_deref() == v {
                // Written again unchanged (a collection's meta record when
                // a member is replaced): no new copy.
                return None;
            }
            let new = v.map(|v| owned(v, &[]));
            self.bytes = (self.bytes + len(&new)).saturating_sub(len(slot));
            return Some((key.clone(), Some(std::mem::replace(slot, new))));
        }
        let mut rec = owned(k, v.unwrap_or_default());
        let whole = rec.len() as u64;
        // The allocation's front is the key, its rest the value (a split
        // takes one reference count where two slices took two and let go
        // of one).
        let key = rec.split_to(k.len());
        let value = v.map(|_| rec);
        match keys::coll_prefix_len(k) {
            Some(n) => self.colls.entry(hasher.hash_one(&k[..n])).or_default().push(key.clone()),
            None if k.len() >= 2 && k[0] != 0xFF && k[1] == TAG_META => self.meta = true,
            None => self.other = true,
        }
        self.bytes += whole;
        self.map.insert(key.clone(), value);
        self.order.add(key.clone());
        Some((key, None))
    }

    /// Puts back what `k` held before a [`Gen::put`] (its answer). A key
    /// it forgets stays in `order`: the drain passes over keys the map
    /// does not hold.
    pub(super) fn restore(&mut self, k: &Bytes, prev: Option<Option<Bytes>>) {
        match prev {
            Some(p) => {
                if let Some(slot) = self.map.get_mut(k) {
                    self.bytes = (self.bytes + len(&p)).saturating_sub(len(slot));
                    *slot = p;
                }
            }
            None => {
                if let Some(n) = self.map.remove(k) {
                    self.bytes = self.bytes.saturating_sub(k.len() as u64 + len(&n));
                }
            }
        }
    }

    /// The records of the collection hashed `coll` (member records only),
    /// in no order.
    pub(super) fn coll_records(&self, coll: u64) -> impl Iterator<Item = (&Bytes, &Option<Bytes>)> {
        self.colls
            .get(&coll)
            .into_iter()
            .flatten()
            .filter_map(|k| self.map.get_key_value(k))
    }

    /// Forgets the records of the collection hashed `coll` (written to the
    /// families by [`ShardStore::tier_apply_range`]); the drain passes over
    /// their keys.
    pub(super) fn drop_coll(&mut self, coll: u64) {
        for k in self.colls.remove(&coll).into_iter().flatten() {
            if let Some(v) = self.map.remove(&k) {
                self.bytes = self.bytes.saturating_sub(k.len() as u64 + len(&v));
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
            return self.other;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut g = Gen::default();
        let (k, prev) = g.put(b"\x00Mkey", Some(b"v1"), &h).unwrap();
        assert_eq!(prev, None);
        assert_eq!(g.bytes, 7);
        let (k2, prev) = g.put(b"\x00Mkey", Some(b"longer"), &h).unwrap();
        assert_eq!(k2, k);
        assert_eq!(prev, Some(Some(Bytes::from_static(b"v1"))));
        assert_eq!(g.bytes, 11);
        // Written again unchanged: nothing to undo, nothing counted.
        assert!(g.put(b"\x00Mkey", Some(b"longer"), &h).is_none());
        assert_eq!(g.bytes, 11);
        let (_, p2) = g.put(b"\x00Mkey", None, &h).unwrap();
        assert_eq!(g.bytes, 5);
        g.restore(&k, p2);
        assert_eq!(g.map.get(&b"\x00Mkey"[..]), Some(&Some(Bytes::from_static(b"longer"))));
        assert_eq!(g.bytes, 11);
        g.restore(&k, prev);
        assert_eq!(g.bytes, 7);
        g.restore(&k, None);
        assert!(g.map.is_empty());
        assert_eq!(g.bytes, 0);
    }
}
