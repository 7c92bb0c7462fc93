//! Active expiration's work on a shard's keyspace (`src/expire.rs` runs
//! it): walking the TTL index and the field expiration index
//! ([`IndexWalk`]), deleting what is due in batches, the debt writes pay
//! while expiry is behind, and the long-expired keys compaction finds.
//! docs/encoding.md, "Expiry", has the whole story.

use super::keyspace::{bump, IndexWalk, Keyspace};
use crate::error::CmdResult;
use crate::storage::keys::{self, meta_key, ttl_key};
use crate::storage::meta::{Coll, KeyType, Meta};

/// Where active expiry walks an expiry index (the TTL index, the field
/// expiration index). A slice starts where the last full one stopped (the
/// cursor): the entries before it were deleted, and a scan from the index's
/// start would step over their tombstones again on every slice (quadratic
/// in a burst). A slice that is not full ends the round: the next starts
/// from the floor, not from the index's start and the tombstones of
/// everything expired so far. The floor is the time up to which the index
/// is known empty: the time of the last entry a full slice visited, or
/// the time a round that ran to its end scanned up to (every entry before
/// was deleted, and a new expiry is never in the past). A key given an
/// expiry already past (a clock that went back) can land behind it: a read
/// expires it, and compaction hands it to the shard (`storage::gc`). Only
/// the first round after a start steps over old tombstones.
impl IndexWalk {
    /// Where the next slice of the index under `prefix` starts.
    pub(super) fn start(&self, prefix: [u8; 2]) -> Vec<u8> {
        self.cursor.take().unwrap_or_else(|| {
            let mut k = prefix.to_vec();
            k.extend_from_slice(&self.floor.get().to_be_bytes());
            k
        })
    }

    /// Where an entry meant for `at` goes so that the walk still visits
    /// it: not before the floor, and noted, so that the round under way,
    /// whose cursor may be past it, ends with the floor no later than it.
    pub fn place(&self, at: u64) -> u64 {
        let at = at.max(self.floor.get());
        let p = self.pending.get().map_or(at, |p| p.min(at));
        self.pending.set(Some(p));
        at
    }

    /// A slice visited (and deleted) entries up to `last` (its time and
    /// key) out of those due at `now_ms`; `full`: it stopped at its budget,
    /// so the round goes on; else it scanned every entry up to `now_ms`.
    pub(super) fn visited(&self, last: Option<(u64, &[u8])>, full: bool, now_ms: u64) {
        match last {
            Some((at, k)) if full => {
                let mut next = k.to_vec();
                next.push(0);
                self.cursor.replace(Some(next));
                // Not past an entry placed behind the cursor this round: the
                // round's end takes the floor back no further than this.
                let at = self.pending.get().map_or(at, |p| p.min(at));
                self.floor.set(self.floor.get().max(at));
            }
            _ => {
                let end = self.pending.take().map_or(now_ms, |p| p.min(now_ms));
                self.floor.set(self.floor.get().max(end));
            }
        }
    }
}

/// Expirations each key written with an expiry owes while expiry is behind.
const DEBT_PER_KEY: u32 = 2;
/// Debt is paid in slices of this many TTL index entries (about 0.3 ms).
const DEBT_SLICE: usize = 64;
/// Debt never grows past this: it is paid as it is made.
const DEBT_MAX: u32 = 4096;

impl Keyspace {
    /// A key (or with `field`, a hash field) was written with an expiry:
    /// while active expiry is behind, it owes expirations
    /// ([`Keyspace::pay_expiry_debt`]).
    #[inline]
    pub fn owe_expiry(&self, field: bool) {
        if self.expiry_behind.get() {
            let (k, f) = self.expiry_debt.get();
            let add = |d: u32| (d + DEBT_PER_KEY).min(DEBT_MAX);
            self.expiry_debt.set(if field { (k, add(f)) } else { (add(k), f) });
        }
    }

    /// While active expiry is behind (its cycles hit their CPU cap with keys
    /// still due, so writes of keys with an expiry outpace it), every key or
    /// hash field written with an expiry owes [`DEBT_PER_KEY`] expirations,
    /// paid here in slices of [`DEBT_SLICE`] index entries after the
    /// commands that owe them (called once a connection's commands have
    /// run): expiry then keeps pace with any write rate, at the writers'
    /// cost, as Redis's expiry effort grows with the share of expired keys
    /// it samples.
    pub fn pay_expiry_debt(&self, now_ms: u64) {
        let (keys, fields) = self.expiry_debt.get();
        if keys < DEBT_SLICE as u32 && fields < DEBT_SLICE as u32 {
            return;
        }
        if !self.expiry_behind.get() || crate::pause::holds_expiry(now_ms) {
            self.expiry_debt.set((0, 0));
            return;
        }
        let pay = |owed: u32, f: &dyn Fn() -> CmdResult<usize>| -> u32 {
            if owed < DEBT_SLICE as u32 {
                return owed;
            }
            match f() {
                Ok(n) if n == DEBT_SLICE => owed - DEBT_SLICE as u32,
                // Nothing more is due: caught up.
                Ok(_) => 0,
                Err(e) => {
                    tracing::error!(error = %e.0, "expiring keys owed by writes failed");
                    0
                }
            }
        };
        let keys = pay(keys, &|| self.expire_due(now_ms, DEBT_SLICE));
        let fields = pay(fields, &|| self.expire_fields_due(now_ms, DEBT_SLICE));
        self.expiry_debt.set((keys, fields));
    }

    /// Active expiration: deletes keys whose TTL index entry is due, visiting
    /// at most `budget` entries. Returns how many entries it visited.
    pub fn expire_due(&self, now_ms: u64, budget: usize) -> CmdResult<usize> {
        let lo = self.ttl_walk.start(keys::TTL_PREFIX);
        let hi = ttl_key(now_ms.saturating_add(1), 0, b"");
        let mut due: Vec<(u64, u8, Vec<u8>, Vec<u8>)> = Vec::new();
        self.store.scan(&lo, &hi, |k, _| {
            if let Some((at, db, key)) = keys::split_ttl_key(k) {
                due.push((at, db, key.to_vec(), k.to_vec()));
            }
            due.len() < budget
        })?;
        self.ttl_walk
            .visited(due.last().map(|(at, _, _, k)| (*at, &k[..])), due.len() >= budget, now_ms);
        // Meta records deleted in key order, then the index entries in
        // theirs: RocksDB's memtable inserts a sorted run next to the one
        // before (its skip list search was 28% of a shard in a burst).
        let mks: Vec<Vec<u8>> = due.iter().map(|(_, db, key, _)| meta_key(*db, key)).collect();
        let mut order: Vec<usize> = (0..due.len()).collect();
        order.sort_unstable_by(|&x, &y| mks[x].cmp(&mks[y]));
        let mut b = self.store.batch();
        let mut gone = vec![false; due.len()];
        for i in order {
            let (at, db, key, _) = &due[i];
            gone[i] = self
                .store
                .get_with(&mks[i], |v| {
                    v.and_then(Meta::decode).filter(|m| m.expire_ms == *at).map(|m| {
                        self.stage_delete_meta(&mut b, *db, key, &m);
                    })
                })?
                .is_some();
        }
        for (_, _, _, entry) in &due {
            self.store.delete(&mut b, entry);
        }
        self.store.write(b)?;
        for (i, (_, db, key, _)) in due.iter().enumerate() {
            if gone[i] {
                bump(&self.stats.expired_keys);
                self.notify(super::notify::class::EXPIRED, "expired", *db, key);
            }
        }
        Ok(due.len())
    }

    /// Deletes up to `budget` of the long-expired keys the compaction
    /// filter met (see `storage::gc`) that are still there and still
    /// expired. Returns how many it looked at.
    pub fn expire_found(&self, now_ms: u64, budget: usize) -> CmdResult<usize> {
        let found = self.store.take_found_expired(budget);
        for (db, key) in &found {
            self.lookup(*db, key, now_ms, |_| ())?;
        }
        Ok(found.len())
    }

    /// Active field expiration: visits the hashes whose field expiration
    /// index entry is due (`types::hash::visit_due`: a small hash is
    /// repaired, a big one gets a slice of its sweep), at most `budget`
    /// entries and about [`FIELD_WORK`] fields. Entries left behind by
    /// later writes are stale and just dropped. Returns the entries visited,
    /// or `budget` when more is due now (a full slice, a stop at the work
    /// limit, or a sweep that goes on).
    pub fn expire_fields_due(&self, now_ms: u64, budget: usize) -> CmdResult<usize> {
        let lo = self.field_walk.start(keys::FIELD_TTL_PREFIX);
        let hi = keys::field_ttl_key(now_ms.saturating_add(1), 0, b"");
        // (at, db, key, entry, entry value)
        type Due = (u64, u8, Vec<u8>, Vec<u8>, Vec<u8>);
        let mut due: Vec<Due> = Vec::new();
        self.store.scan(&lo, &hi, |k, v| {
            if let Some((at, db, key)) = keys::split_ttl_key(k) {
                due.push((at, db, key.to_vec(), k.to_vec(), v.to_vec()));
            }
            due.len() < budget
        })?;
        let mut work = 0;
        let mut done = 0;
        let mut goes_on = false;
        for (_, db, key, entry, value) in &due {
            let raw = self.store.get_with(&meta_key(*db, key), |v| v.map(<[u8]>::to_vec))?;
            let wanted = raw.as_deref().and_then(Meta::decode).is_some_and(|m| {
                !m.is_expired(now_ms)
                    && m.ty == KeyType::Hash
                    && matches!(m.coll(), Some(Coll { size, hfe: Some(h), .. }) if size > h.persist && now_ms >= h.lower)
            });
            match (wanted, raw) {
                (true, Some(raw)) => {
                    let (fields, more) = (self.hooks.visit)(self, *db, key, &raw, (entry, value), now_ms)?;
                    work += fields;
                    goes_on |= more;
                }
                _ => {
                    let mut b = self.store.batch();
                    self.store.delete(&mut b, entry);
                    self.store.write(b)?;
                }
            }
            done += 1;
            if work >= FIELD_WORK {
                break;
            }
        }
        let stopped = done < due.len();
        let last = due[..done].last().map(|(at, _, _, k, _)| (*at, &k[..]));
        self.field_walk.visited(last, stopped || done >= budget, now_ms);
        Ok(if stopped || goes_on { budget } else { done })
    }
}

/// Fields active field expiration visits per call before it lets the
/// caller yield (a big hash's sweep slice is 256 of them).
pub const FIELD_WORK: usize = 256;

#[cfg(test)]
mod tests {
    use super::super::keyspace::{for_test, Keyspace};
    /// TTL index entries of the keyspace.
    fn ttl_entries(ks: &Keyspace) -> usize {
        let mut n = 0;
        ks.store
            .scan(&super::keys::TTL_PREFIX, &[0xFF, b'T' + 1], |_, _| {
                n += 1;
                true
            })
            .unwrap();
        n
    }

    #[test]
    fn an_expiry_change_leaves_no_stale_index_entry() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        let far = 4_000_000_000_000;
        ks.put_string(0, b"k", far, b"v", None).unwrap();
        for i in 1..100 {
            let stored = ks.get(0, b"k", 1).unwrap().unwrap();
            ks.set_expire(0, b"k", &stored, far + i).unwrap();
        }
        assert_eq!(ttl_entries(&ks), 1);
        let stored = ks.get(0, b"k", 1).unwrap().unwrap();
        ks.set_expire(0, b"k", &stored, 0).unwrap();
        assert_eq!(ttl_entries(&ks), 0, "PERSIST drops the entry");
        ks.put_string(0, b"d", far, b"v", None).unwrap();
        assert!(ks.delete(0, b"d", 1).unwrap());
        assert_eq!(ttl_entries(&ks), 0, "a deleted key's entry goes with it");
    }

    #[test]
    fn a_lazily_expired_key_takes_its_index_entry_along() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        ks.put_string(0, b"k", 1_000, b"v", None).unwrap();
        assert_eq!(ttl_entries(&ks), 1);
        assert!(ks.get(0, b"k", 2_000).unwrap().is_none());
        assert_eq!(ttl_entries(&ks), 0);
        assert_eq!((ks.count(0), ks.expires(0)), (0, 0));
    }

    #[test]
    fn compaction_drops_stale_entries_and_dead_members_and_finds_missed_keys() {
        use crate::storage::meta::{Coll, KeyType};
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        let far = 4_000_000_000_000;
        let now = crate::clock::wall_ms();
        // A stale entry of a missing key, and one of a live key whose expiry moved.
        ks.put_string(0, b"live", far, b"v", None).unwrap();
        let mut b = ks.store.batch();
        ks.store.put(&mut b, &super::ttl_key(far - 5, 0, b"live"), b"");
        ks.store.put(&mut b, &super::ttl_key(far - 5, 0, b"gone"), b"");
        ks.store.write(b).unwrap();
        assert_eq!(ttl_entries(&ks), 3);
        // A set that expired long ago, with members, whose index entry was lost.
        let dead_at = now - 2 * crate::storage::gc::EXPIRED_GRACE_MS;
        let mut c = Coll::new(77, false);
        c.size = 2;
        ks.put(0, b"dead", &c.encode(KeyType::Set, dead_at), None).unwrap();
        let mut b = ks.store.batch();
        for m in [&b"a"[..], b"b"] {
            ks.store.put(&mut b, &super::keys::sub_key(0, b"dead", 77, m), b"");
        }
        ks.store.delete(&mut b, &super::ttl_key(dead_at, 0, b"dead"));
        ks.store.write(b).unwrap();
        assert_eq!((ks.count(0), ks.expires(0)), (2, 2));
        ks.store.compact_all();
        assert_eq!(ttl_entries(&ks), 1, "only the live key's entry is left");
        let (lo, hi) = super::keys::sub_range(0, b"dead", 77);
        let mut members = 0;
        ks.store
            .scan(&lo, &hi, |_, _| {
                members += 1;
                true
            })
            .unwrap();
        assert_eq!(members, 0, "a long-expired collection's members go in compaction");
        // Its meta record is the shard's to delete, with the counts.
        assert_eq!(ks.expire_found(now, 128).unwrap(), 1);
        assert_eq!((ks.count(0), ks.expires(0)), (1, 1));
        assert_eq!(ks.stats.expired_keys.get(), 1);
        assert!(ks.get(0, b"live", now).unwrap().is_some());
    }

    #[test]
    fn expiry_starts_at_its_floor() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        ks.put_string(0, b"a", 1_000, b"v", None).unwrap();
        ks.put_string(0, b"b", 2_000, b"v", None).unwrap();
        assert_eq!(ks.expire_due(2_500, 128).unwrap(), 2);
        assert_eq!(ks.count(0), 0);
        // The round scanned up to 2500: a key given an expiry behind that
        // (a clock gone back) is not visited; a read expires it.
        ks.put_string(0, b"c", 1_500, b"v", None).unwrap();
        ks.put_string(0, b"d", 2_600, b"v", None).unwrap();
        assert_eq!(ks.expire_due(2_700, 128).unwrap(), 1, "d only");
        assert_eq!(ks.count(0), 1);
        assert!(ks.get(0, b"c", 2_700).unwrap().is_none());
        assert_eq!((ks.count(0), ks.stats.expired_keys.get()), (0, 4));
        // A full slice moves the floor to its last entry, a round's end to
        // the time it scanned up to.
        for i in 0..10u64 {
            ks.put_string(0, format!("k{i}").as_bytes(), 3_000 + i, b"v", None).unwrap();
        }
        assert_eq!(ks.expire_due(4_000, 4).unwrap(), 4);
        assert_eq!(ks.ttl_walk.floor.get(), 3_003);
        assert_eq!(ks.expire_due(4_000, 100).unwrap(), 6);
        assert_eq!(ks.ttl_walk.floor.get(), 4_000);
        assert_eq!(ks.count(0), 0);
    }

    /// An entry placed behind the cursor (a sweep's next slice, due in the
    /// millisecond the round is in) is visited by the next round, however
    /// far later full slices of this round got: they once raised the
    /// floor past it, and the hash's sweep stopped for good.
    #[test]
    fn an_entry_placed_behind_the_cursor_is_visited_next_round() {
        let walk = super::IndexWalk::default();
        walk.visited(Some((127, b"all")), true, 127);
        assert_eq!(walk.place(127), 127);
        walk.visited(Some((128, b"big")), true, 128);
        assert_eq!(walk.floor.get(), 127);
        assert_eq!(walk.start(*b"xF"), b"big\0".to_vec(), "the round goes on from its cursor");
        walk.visited(None, false, 130);
        assert_eq!(walk.floor.get(), 127);
        let mut from = b"xF".to_vec();
        from.extend_from_slice(&127u64.to_be_bytes());
        assert_eq!(walk.start(*b"xF"), from, "the next round starts where the entry is");
    }
}
