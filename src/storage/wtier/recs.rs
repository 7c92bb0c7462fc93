//! A generation's records by key: hash maps that grow without a rehash.
//! A full map stays as it is and a new one twice the size of all of them
//! takes the new keys; a lookup probes the newest first. A generation is
//! made with room for as many records as the one before it held
//! ([`Recs::with_room`]), so it is one map unless its records got smaller
//! (INCR's counters after SET's 100-byte values): then a map of a million
//! records rehashed in one turn, 370 ms of INCR -P16's run (its p99.9 was
//! 398 ms), much of it the kernel zeroing the new table's pages.
//!
//! A generation starts in a small map even when a big one is at hand (the
//! applied generation's, kept in `reserve`): a few hot records in a map
//! sized for the 600k records of the LPUSHes before them each sat on a
//! page of their own, and every HSET of 1000 fields paid two misses to
//! find its field's record (`WriteTier::get_hashed` 4% of HSET -P16 on a
//! fresh shard, 11% after 600k LPUSHes). Records move into the reserve
//! once the small map is full.

use hashbrown::hash_map::RawEntryMut;

use super::gen::Rec;
use super::slab::Span;

pub(super) type Map = hashbrown::HashMap<Span, Rec, ahash::RandomState>;

/// Below this many records a full map still grows in place (its rehash
/// takes well under a millisecond).
const GROW_IN_PLACE: usize = 1 << 14;

/// The records a generation's first map has room for.
const START: usize = 1 << 12;

/// The records, in one map or more (the last one the newest, taking new
/// keys); a key is in one of them at most.
pub(super) struct Recs {
    maps: Vec<Map>,
    /// A big empty map the records move into once the first is full.
    reserve: Option<Map>,
}

impl Recs {
    /// Room for `n` records in one map, hashed by `hasher` (the tier's:
    /// readers look keys up with its hashes, [`Recs::get_hashed`]).
    #[cfg(test)]
    pub(super) fn with_room(n: usize, hasher: &ahash::RandomState) -> Recs {
        Recs::with_room_in(n, None, hasher)
    }

    /// [`Recs::with_room`] in `spare` (empty, by the same hasher) when it
    /// has room for `n`.
    pub(super) fn with_room_in(n: usize, spare: Option<Map>, hasher: &ahash::RandomState) -> Recs {
        let (map, reserve) = match spare {
            Some(m) if m.capacity() >= n && m.capacity() > 2 * START => (Map::with_capacity_and_hasher(START, hasher.clone()), Some(m)),
            Some(m) if m.capacity() >= n => (m, None),
            _ => (Map::with_capacity_and_hasher(n, hasher.clone()), None),
        };
        Recs { maps: vec![map], reserve }
    }

    /// Its biggest map, emptied (its records dropped), for another
    /// generation; None when it never held anything.
    pub(super) fn into_spare(self) -> Option<Map> {
        let mut m = self.maps.into_iter().chain(self.reserve).max_by_key(Map::capacity)?;
        m.clear();
        (m.capacity() > 0).then_some(m)
    }

    fn newest(&mut self) -> &mut Map {
        let last = self.maps.len() - 1;
        &mut self.maps[last]
    }

    pub(super) fn len(&self) -> usize {
        self.maps.iter().map(Map::len).sum()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.maps.iter().all(Map::is_empty)
    }

    /// How many maps it has (tests).
    #[cfg(test)]
    pub(super) fn maps(&self) -> usize {
        self.maps.len()
    }

    #[inline]
    pub(super) fn get(&self, k: &[u8]) -> Option<&Rec> {
        self.maps.iter().rev().find_map(|m| m.get(k))
    }

    #[inline]
    pub(super) fn get_hashed(&self, h: u64, k: &[u8]) -> Option<&Rec> {
        self.maps
            .iter()
            .rev()
            .find_map(|m| m.raw_entry().from_key_hashed_nocheck(h, k).map(|(_, r)| r))
    }

    #[inline]
    pub(super) fn get_hashed_mut(&mut self, h: u64, k: &[u8]) -> Option<&mut Rec> {
        self.maps
            .iter_mut()
            .rev()
            .find_map(|m| match m.raw_entry_mut().from_key_hashed_nocheck(h, k) {
                RawEntryMut::Occupied(e) => Some(e.into_mut()),
                RawEntryMut::Vacant(_) => None,
            })
    }

    #[inline]
    pub(super) fn get_key_value(&self, k: &[u8]) -> Option<(&Span, &Rec)> {
        self.maps.iter().rev().find_map(|m| m.get_key_value(k))
    }

    pub(super) fn contains_key(&self, k: &[u8]) -> bool {
        self.maps.iter().any(|m| m.contains_key(k))
    }

    pub(super) fn remove(&mut self, k: &[u8]) -> Option<Rec> {
        self.remove_entry(k).map(|(_, r)| r)
    }

    pub(super) fn remove_entry(&mut self, k: &[u8]) -> Option<(Span, Rec)> {
        self.maps.iter_mut().rev().find_map(|m| m.remove_entry(k))
    }

    /// Keeps the records `keep` answers true for.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Span, &mut Rec) -> bool) {
        for m in &mut self.maps {
            m.retain(&mut keep);
        }
    }

    /// A new map for the next keys when the newest is full and big
    /// enough that growing it would stall the turn.
    fn make_room(&mut self) {
        let m = self.newest();
        if m.len() < m.capacity() {
            return;
        }
        if let Some(mut big) = self.reserve.take() {
            // The small first map is full: its records move (one map:
            // the reserve is only kept while there is one).
            for m in self.maps.drain(..) {
                big.extend(m);
            }
            self.maps.push(big);
            return;
        }
        let m = self.newest();
        if m.capacity() < GROW_IN_PLACE {
            return;
        }
        let hasher = m.hasher().clone();
        let n = self.len();
        self.maps.push(Map::with_capacity_and_hasher(2 * n, hasher));
    }

    /// `k`'s record where a map holds it, else where a new one goes (the
    /// newest map). `h` is `k`'s hash by the maps' hasher.
    pub(super) fn slot(&mut self, h: u64, k: &[u8]) -> Slot<'_> {
        self.make_room();
        let (newest, older) = match self.maps.split_last_mut() {
            Some(s) => s,
            None => unreachable!("a Recs has a map"),
        };
        let vacant = match newest.raw_entry_mut().from_key_hashed_nocheck(h, k) {
            RawEntryMut::Occupied(e) => return Slot::Held(Held { map: e }),
            RawEntryMut::Vacant(v) => v,
        };
        for m in older.iter_mut().rev() {
            if let RawEntryMut::Occupied(e) = m.raw_entry_mut().from_key_hashed_nocheck(h, k) {
                return Slot::Held(Held { map: e });
            }
        }
        Slot::Vacant(Vacant { map: vacant, h })
    }

    /// Puts `rec` back under `k` (none of its maps holds `k`).
    pub(super) fn insert(&mut self, k: Span, rec: Rec) {
        self.make_room();
        self.newest().insert(k, rec);
    }
}

/// Where [`Recs::slot`] found `k`, or where it goes.
pub(super) enum Slot<'a> {
    Held(Held<'a>),
    Vacant(Vacant<'a>),
}

/// Where a new record goes ([`Recs::slot`]).
pub(super) struct Vacant<'a> {
    map: hashbrown::hash_map::RawVacantEntryMut<'a, Span, Rec, ahash::RandomState>,
    h: u64,
}

impl Vacant<'_> {
    pub(super) fn insert(self, k: Span, rec: Rec) {
        self.map.insert_hashed_nocheck(self.h, k, rec);
    }
}

/// A record one of the maps holds ([`Recs::slot`]).
pub(super) struct Held<'a> {
    map: hashbrown::hash_map::RawOccupiedEntryMut<'a, Span, Rec, ahash::RandomState>,
}

impl Held<'_> {
    pub(super) fn key(&self) -> &Span {
        self.map.key()
    }

    pub(super) fn get(&self) -> &Rec {
        self.map.get()
    }

    pub(super) fn get_mut(&mut self) -> &mut Rec {
        self.map.get_mut()
    }

    pub(super) fn remove_entry(self) -> (Span, Rec) {
        self.map.remove_entry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: &[u8]) -> Rec {
        Rec::new(Some(Span::leaked(v)), false)
    }

    fn put(r: &mut Recs, hasher: &ahash::RandomState, k: &[u8], v: &[u8]) -> bool {
        match r.slot(hasher.hash_one(k), k) {
            Slot::Held(mut held) => {
                *held.get_mut() = rec(v);
                false
            }
            Slot::Vacant(at) => {
                at.insert(Span::leaked(k), rec(v));
                true
            }
        }
    }

    #[test]
    fn a_full_map_stays_and_a_new_one_takes_the_new_keys() {
        let hasher = ahash::RandomState::new();
        let mut r = Recs::with_room(GROW_IN_PLACE, &hasher);
        let first = r.maps[0].capacity();
        let key = |i: usize| format!("key:{i}").into_bytes();
        let n = 3 * first + 5;
        for i in 0..n {
            assert!(put(&mut r, &hasher, &key(i), b"a"), "{i} is new");
        }
        assert!(r.maps() >= 2, "{} maps", r.maps());
        assert_eq!(r.maps[0].capacity(), first, "the first map never grew");
        assert_eq!(r.len(), n);
        // Every key found, by either lookup, and updated where it is.
        for i in 0..n {
            let k = key(i);
            assert!(!put(&mut r, &hasher, &k, b"b"), "{i} is held");
            assert_eq!(r.get(&k).and_then(|x| x.v).as_deref(), Some(&b"b"[..]));
            let (kk, _) = r.get_key_value(&k).unwrap();
            assert_eq!(kk.as_ref(), &k[..]);
            assert!(r.get_hashed(hasher.hash_one(&k[..]), &k).is_some());
        }
        assert_eq!(r.len(), n, "updates added nothing");
        // Removal and retain reach every map.
        assert!(r.remove(&key(0)).is_some());
        assert!(r.remove(&key(n - 1)).is_some());
        assert!(!r.contains_key(&key(0)) && !r.contains_key(&key(n - 1)));
        r.retain(|k, _| !k.ends_with(b"7"));
        assert!((1..n - 1).all(|i| r.contains_key(&key(i)) != i.to_string().ends_with('7')));
        r.insert(Span::leaked(&key(0)), rec(b"c"));
        assert_eq!(r.get(&key(0)).and_then(|x| x.v).as_deref(), Some(&b"c"[..]));
        r.retain(|_, _| false);
        assert!(r.is_empty());
    }

    #[test]
    fn an_applied_generations_map_is_reused_when_it_has_the_room() {
        let hasher = ahash::RandomState::new();
        let mut r = Recs::with_room(1000, &hasher);
        for i in 0..1000 {
            put(&mut r, &hasher, format!("k{i}").as_bytes(), b"v");
        }
        let spare = r.into_spare().unwrap();
        assert!(spare.is_empty() && spare.capacity() >= 1000);
        let room = spare.capacity();
        assert!(Map::with_capacity_and_hasher(100, hasher.clone()).capacity() < room);
        let again = Recs::with_room_in(100, Some(spare), &hasher);
        assert_eq!(again.maps[0].capacity(), room, "the spare's table");
        let spare = again.into_spare().unwrap();
        let bigger = Recs::with_room_in(spare.capacity() + 1, Some(spare), &hasher);
        assert!(bigger.maps[0].capacity() > 1000, "a new map when the spare is too small");
        assert!(Recs::with_room(0, &hasher).into_spare().is_none(), "nothing to hand on");
    }

    #[test]
    fn a_big_spare_waits_until_the_small_first_map_is_full() {
        let hasher = ahash::RandomState::new();
        let big = Map::with_capacity_and_hasher(8 * START, hasher.clone());
        let room = big.capacity();
        let mut r = Recs::with_room_in(4 * START, Some(big), &hasher);
        assert!(r.maps[0].capacity() < room && r.reserve.is_some(), "starts small");
        let key = |i: usize| format!("k{i}").into_bytes();
        let first = r.maps[0].capacity();
        for i in 0..first {
            assert!(put(&mut r, &hasher, &key(i), b"v"));
        }
        assert_eq!((r.maps(), r.maps[0].capacity()), (1, first), "full, not moved yet");
        assert!(put(&mut r, &hasher, &key(first), b"v"));
        assert_eq!((r.maps(), r.maps[0].capacity()), (1, room), "moved into the reserve");
        assert!(r.reserve.is_none());
        for i in 0..=first {
            assert!(!put(&mut r, &hasher, &key(i), b"w"), "{i} is held");
            assert_eq!(r.get(&key(i)).and_then(|x| x.v).as_deref(), Some(&b"w"[..]));
        }
        assert_eq!(r.len(), first + 1);
        // Unused, the reserve is still what is handed on.
        let r = Recs::with_room_in(4 * START, Some(Map::with_capacity_and_hasher(8 * START, hasher.clone())), &hasher);
        assert_eq!(r.into_spare().map(|m| m.capacity()), Some(room));
    }

    #[test]
    fn a_small_map_grows_in_place() {
        let hasher = ahash::RandomState::new();
        let mut r = Recs::with_room(0, &hasher);
        for i in 0..GROW_IN_PLACE / 2 {
            put(&mut r, &hasher, format!("k{i}").as_bytes(), b"v");
        }
        assert_eq!(r.maps(), 1);
        assert_eq!(r.len(), GROW_IN_PLACE / 2);
    }
}
