//! Active field expiration of big hashes, and the meta read of a hash
//! that may have no live field left.
//!
//! A hash of at most [`ACTIVE_REPAIR_MAX`] fields is repaired whole when its
//! field expiration index entry is due (`hash::repair`, one scan). A bigger
//! one is *swept*: a slice of [`SWEEP_SLICE`] fields at a time, from a
//! cursor kept in its meta (`storage::meta::Sweep`), each slice one batch
//! that deletes the expired fields it met, lowers `size` by as many and
//! leaves an index entry for the next slice, due at once. The sweep keeps
//! its own TTL bounds, widened by the live TTL fields it visits and, like
//! the hash's, by every write that gives a field a TTL (`hash::transition`):
//! at the end they cover every live TTL field, so they replace the hash's
//! bounds. docs/encoding.md, "Hash fields", has the costs.

use super::hash::{
    decode_value, expired, fast_len, notify_emptied, repair, stage_repair_at, widen_bounds, FastLen, ACTIVE_REPAIR_EVERY_MS,
    ACTIVE_REPAIR_MAX,
};
use super::notify::class;
use crate::error::{CmdResult, CORRUPT};
use crate::storage::keys;
use crate::storage::meta::{Coll, KeyType, Meta, Sweep};
use crate::types::keyspace::Keyspace;

/// Fields one slice of a sweep visits.
pub const SWEEP_SLICE: usize = 256;

/// A sweep with no slice for this long has lost its own index entries (a
/// RENAME carried its meta to another key): a new entry takes it up.
pub const SWEEP_ORPHAN_MS: u64 = 1000;

/// A meta read of a hash that may have no live field left
/// (`keyspace::Repair`): a hash of at most [`ACTIVE_REPAIR_MAX`] fields is
/// repaired; a bigger one is only probed up to its first live field (its
/// sweep fixes the metadata in slices), and deleted when none is live.
pub fn settle(ks: &Keyspace, db: u8, key: &[u8], raw: &[u8], now: u64) -> CmdResult<Option<Vec<u8>>> {
    let m = Meta::decode(raw).ok_or(CORRUPT)?;
    let Some(c) = m.coll() else { return Ok(Some(raw.to_vec())) };
    if c.size <= ACTIVE_REPAIR_MAX || fast_len(&c, now) == FastLen::Gone {
        return repair(ks, db, key, raw, now);
    }
    let (lo, hi) = keys::sub_range(db, key, c.version);
    let (mut live, mut dead, mut bad) = (false, 0u64, false);
    ks.store.scan(&lo, &hi, |_, v| {
        match decode_value(c.hfe.is_some(), v) {
            Some((ttl, _)) if expired(ttl, now) => dead += 1,
            Some(_) => live = true,
            None => bad = true,
        }
        !live && !bad
    })?;
    if bad {
        return Err(CORRUPT);
    }
    if live {
        return Ok(Some(raw.to_vec()));
    }
    let mut b = ks.store.batch();
    ks.stage_delete(&mut b, db, key, &m);
    ks.store.write(b)?;
    // Every field counted is gone: the dead ones met and the ghosts
    // (expired fields compaction dropped).
    let expired_fields = &ks.stats.expired_fields;
    expired_fields.set(expired_fields.get() + dead.max(c.size));
    notify_emptied(ks, db, key);
    Ok(None)
}

/// Active field expiration of hash `key` (meta value `raw`) for its due
/// index entry `(entry, value)` (`keyspace::Visit`). A hash of at most
/// [`ACTIVE_REPAIR_MAX`] fields is repaired whole; a bigger one gets one
/// slice of its sweep ([`sweep_slice`]). An entry a slice left (value
/// `c`) only carries its sweep on; a write's entry (empty value) starts a
/// sweep, or takes up one whose entries were lost (a RENAME carries the
/// sweep in the meta, not its entries): while the sweep ran a slice in the
/// last [`SWEEP_ORPHAN_MS`] it is put off until then.
pub fn visit_due(ks: &Keyspace, db: u8, key: &[u8], raw: &[u8], entry: (&[u8], &[u8]), now: u64) -> CmdResult<(usize, bool)> {
    let m = Meta::decode(raw).ok_or(CORRUPT)?;
    let c = m.coll().ok_or(CORRUPT)?;
    let h = c.hfe.clone().ok_or(CORRUPT)?;
    let continues = !entry.1.is_empty();
    let drop_entry = || -> CmdResult<(usize, bool)> {
        let mut b = ks.store.batch();
        ks.store.delete(&mut b, entry.0);
        ks.store.write(b)?;
        Ok((0, false))
    };
    match h.sweep {
        None if continues => drop_entry(),
        None if c.size <= ACTIVE_REPAIR_MAX => {
            repair(ks, db, key, raw, now)?;
            drop_entry()?;
            Ok((c.size as usize, false))
        }
        Some(s) if !continues && now < s.touched_ms.saturating_add(SWEEP_ORPHAN_MS) => {
            // The sweep may still have its own entries: look again when it
            // would be an orphan (entries deferred so fall together).
            let mut b = ks.store.batch();
            ks.store.delete(&mut b, entry.0);
            let at = ks.field_walk.place(s.touched_ms.saturating_add(SWEEP_ORPHAN_MS));
            ks.store.put(&mut b, &keys::field_ttl_key(at, db, key), b"");
            ks.store.write(b)?;
            Ok((0, false))
        }
        _ => sweep_slice(ks, db, key, &m, c, entry.0, now),
    }
}

/// One slice of a sweep: active field expiration of a hash too big to
/// repair at once. From the sweep's cursor (the first field when none is
/// under way) it visits up to [`SWEEP_SLICE`] fields, deletes the expired
/// ones (`size` drops by as many, exactly) and widens the sweep's bounds
/// with the live TTLs. Writes between slices widen those bounds too, so at
/// the end they cover every live TTL field and become the hash's bounds
/// (none seen: the TTL candidates left are gone, `size = persist`). One
/// batch holds the deletes, the meta, the delete of `entry` and the entry
/// of the next slice (due now) or, at the end, of the next sweep.
fn sweep_slice(ks: &Keyspace, db: u8, key: &[u8], m: &Meta<'_>, mut c: Coll, entry: &[u8], now: u64) -> CmdResult<(usize, bool)> {
    let mut h = c.hfe.ok_or(CORRUPT)?;
    let mut s = h.sweep.take().map_or_else(|| Sweep::start(now), |s| *s);
    let (lo, hi) = keys::sub_range(db, key, c.version);
    let start_at = |cursor: &[u8], exact: bool| {
        let mut k = lo.clone();
        k.extend_from_slice(cursor);
        if exact {
            k.push(0);
        }
        k
    };
    let from = start_at(s.cursor(), s.exact);
    let (mut visited, mut dead, mut bad) = (0, Vec::new(), false);
    let mut next: Option<Vec<u8>> = None;
    ks.store.scan(&from, &hi, |k, v| {
        let Some((ttl, _)) = decode_value(true, v) else {
            bad = true;
            return false;
        };
        visited += 1;
        if expired(ttl, now) {
            dead.push(k.to_vec());
        } else if ttl != 0 {
            widen_bounds(&mut s.lower, &mut s.upper, ttl);
        }
        if visited < SWEEP_SLICE {
            return true;
        }
        // Stop where the next slice starts further on (a cut cursor of a
        // long name may not, while fields share its prefix).
        let name = &k[lo.len()..];
        let mut at = Sweep::start(now);
        at.set_cursor(name);
        if start_at(at.cursor(), at.exact) > from {
            next = Some(name.to_vec());
            return false;
        }
        true
    })?;
    if bad {
        return Err(CORRUPT);
    }
    let mut b = ks.store.batch();
    ks.store.delete(&mut b, entry);
    for k in &dead {
        ks.store.delete(&mut b, k);
    }
    let expired_fields = &ks.stats.expired_fields;
    expired_fields.set(expired_fields.get() + dead.len() as u64);
    c.size = c.size.saturating_sub(dead.len() as u64);
    h.persist = h.persist.min(c.size);
    match &next {
        Some(name) => {
            s.touched_ms = now;
            s.set_cursor(name);
            h.sweep = Some(Box::new(s));
        }
        None if s.lower == 0 && s.upper == 0 => {
            // The TTL fields counted but not met are ghosts: expired fields
            // compaction dropped (`storage::gc`). They expired all the same.
            expired_fields.set(expired_fields.get() + (c.size - h.persist));
            c.size = h.persist;
            h.sweep = None;
        }
        None => {
            (h.lower, h.upper) = (s.lower, s.upper);
            h.sweep = None;
        }
    }
    if c.size == h.persist {
        (h.lower, h.upper, h.sweep) = (0, 0, None);
    }
    let (goes_on, lower) = (h.sweep.is_some(), h.lower);
    c.hfe = Some(h);
    if c.size == 0 {
        ks.stage_delete(&mut b, db, key, m);
        ks.store.write(b)?;
        notify_emptied(ks, db, key);
        return Ok((visited, false));
    }
    let fixed = c.encode(KeyType::Hash, m.expire_ms);
    ks.stage_put(&mut b, db, key, &fixed, Some(m.expire_ms));
    if goes_on {
        let at = ks.field_walk.place(now);
        ks.store.put(&mut b, &keys::field_ttl_key(at, db, key), SWEEP_ENTRY);
    } else {
        stage_repair_at(ks, &mut b, db, key, &c, lower.max(now + ACTIVE_REPAIR_EVERY_MS));
    }
    ks.store.write(b)?;
    if !dead.is_empty() {
        ks.notify(class::HASH, "hexpired", db, key);
    }
    Ok((visited, goes_on))
}

/// The value of an index entry a sweep slice leaves for its next slice.
const SWEEP_ENTRY: &[u8] = b"c";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::coll::{hash_len, view, View};
    use crate::types::keyspace::for_test;
    use crate::types::writer::Writer;

    fn fill(ks: &Keyspace, key: &[u8], n: usize, now: u64, ttl: impl Fn(usize) -> u64) {
        let mut w = Writer::open(ks, 0, key, KeyType::Hash, now, true).unwrap().unwrap();
        for i in 0..n {
            w.put(format!("f{i:05}").as_bytes(), ttl(i), b"v").unwrap();
        }
        w.commit().unwrap();
    }

    fn fields_on_disk(ks: &Keyspace, key: &[u8], version: u64) -> usize {
        let (lo, hi) = keys::sub_range(0, key, version);
        let mut n = 0;
        ks.store
            .scan(&lo, &hi, |_, _| {
                n += 1;
                true
            })
            .unwrap();
        n
    }

    /// Active field expiration until nothing more is due at `now`; the
    /// number of calls it took.
    fn expire_all(ks: &Keyspace, now: u64) -> usize {
        let mut calls = 1;
        while ks.expire_fields_due(now, 32).unwrap() == 32 {
            calls += 1;
            assert!(calls < 10_000, "a sweep that never ends");
        }
        calls
    }

    fn meta(ks: &Keyspace, key: &[u8], now: u64) -> Option<View> {
        view(ks, 0, key, KeyType::Hash, now).unwrap()
    }

    #[test]
    fn a_big_hash_is_swept_in_slices_to_exact_counts_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        // 1000 persistent fields, 1000 due at 2000, 3000 at 5002..=9999.
        let ttl = |i: usize| match i % 5 {
            0 => 0,
            1 => 2_000,
            _ => 5_000 + i as u64,
        };
        fill(&ks, b"h", 5_000, 1_000, ttl);
        let version = meta(&ks, b"h", 1_000).unwrap().c.version;
        assert_eq!(expire_all(&ks, 1_500), 1, "nothing due yet");
        let calls = expire_all(&ks, 2_500);
        assert!(calls >= 5, "a slice at a time: {calls} calls");
        let v = meta(&ks, b"h", 2_500).unwrap();
        let h = v.c.hfe.unwrap();
        assert_eq!((v.c.size, h.persist, h.lower, h.upper, h.sweep), (4_000, 1_000, 5_002, 9_999, None));
        assert_eq!(fields_on_disk(&ks, b"h", version), 4_000);
        assert_eq!(ks.stats.expired_fields.get(), 1_000);
        // The next sweep comes at the new lower bound, by itself.
        assert_eq!(expire_all(&ks, 5_001), 1);
        assert_eq!(meta(&ks, b"h", 5_001).unwrap().c.size, 4_000);
        expire_all(&ks, 20_000);
        let v = meta(&ks, b"h", 20_000).unwrap();
        let h = v.c.hfe.unwrap();
        assert_eq!((v.c.size, h.persist, h.lower, h.upper), (1_000, 1_000, 0, 0));
        assert_eq!(fields_on_disk(&ks, b"h", version), 1_000);
        assert_eq!(ks.stats.expired_fields.get(), 4_000);
        // A hash of TTL fields only goes as a key when its sweep empties it.
        fill(&ks, b"g", 6_000, 20_000, |i| 30_000 + i as u64 % 7);
        assert_eq!(ks.count(0), 2);
        expire_all(&ks, 40_000);
        assert!(meta(&ks, b"g", 40_000).is_none());
        assert_eq!(ks.count(0), 1);
        assert_eq!(ks.stats.expired_fields.get(), 10_000);
    }

    #[test]
    fn writes_between_slices_stay_inside_the_new_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        fill(&ks, b"h", 5_000, 1_000, |i| if i == 0 { 2_000 } else { 10_000 });
        // One slice: f00000 goes, the cursor stops past f00255.
        assert_eq!(ks.expire_fields_due(3_000, 32).unwrap(), 32, "the sweep goes on");
        let v = meta(&ks, b"h", 3_000).unwrap();
        let s = v.c.hfe.unwrap().sweep.expect("a sweep under way");
        assert_eq!(s.cursor(), b"f00255");
        // Behind the cursor: a visited field gets a TTL inside the old
        // bounds (the hash's meta does not change), a new field gets one.
        let mut w = Writer::open(&ks, 0, b"h", KeyType::Hash, 3_000, false).unwrap().unwrap();
        w.put(b"f00001", 4_000, b"v").unwrap();
        w.put(b"f00000x", 9_000, b"v").unwrap();
        w.commit().unwrap();
        expire_all(&ks, 3_000);
        let v = meta(&ks, b"h", 3_000).unwrap();
        let h = v.c.hfe.clone().unwrap();
        assert_eq!((v.c.size, h.lower, h.upper, h.sweep), (5_000, 4_000, 10_000, None));
        // HLEN at 4500 must see f00001 gone (a bound of 9000 would let it
        // answer 5000 from the meta).
        assert_eq!(hash_len(&ks, 0, b"h", &v, 4_500).unwrap(), 4_999);
    }

    #[test]
    fn long_names_sharing_a_cut_cursor_still_end_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        let mut w = Writer::open(&ks, 0, b"h", KeyType::Hash, 1_000, true).unwrap().unwrap();
        for (group, n) in [("a", 2_000), ("b", 2_000)] {
            for i in 0..n {
                let name = format!("{}{i:06}", group.repeat(60));
                w.put(name.as_bytes(), if i % 2 == 0 { 2_000 } else { 50_000 }, b"v").unwrap();
            }
        }
        w.put(b"keep", 0, b"v").unwrap();
        w.commit().unwrap();
        let calls = expire_all(&ks, 3_000);
        assert!(calls <= 8, "{calls} calls");
        let v = meta(&ks, b"h", 3_000).unwrap();
        let h = v.c.hfe.unwrap();
        assert_eq!((v.c.size, h.persist, h.lower, h.upper, h.sweep), (2_001, 1, 50_000, 50_000, None));
        assert_eq!(fields_on_disk(&ks, b"h", v.c.version), 2_001);
    }

    #[test]
    fn a_sweep_that_lost_its_entries_is_taken_up_and_ghosts_are_counted_away() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        fill(&ks, b"h", 5_000, 1_000, |i| if i < 3_000 { 2_000 } else { 0 });
        assert_eq!(ks.expire_fields_due(3_000, 32).unwrap(), 32);
        // Drop the sweep's own entry (as a RENAME leaves the new name
        // without one) and drop fields behind the sweep's back (TTL ghosts,
        // as compaction leaves).
        let v = meta(&ks, b"h", 3_000).unwrap();
        let mut b = ks.store.batch();
        ks.store
            .scan(&keys::FIELD_TTL_PREFIX, &[0xFF, keys::FIELD_TTL_PREFIX[1] + 1], |k, _| {
                ks.store.delete(&mut b, k);
                true
            })
            .unwrap();
        for i in 2_000..3_000 {
            ks.store
                .delete(&mut b, &keys::sub_key(0, b"h", v.c.version, format!("f{i:05}").as_bytes()));
        }
        ks.store.write(b).unwrap();
        // A write's entry (a new lowest TTL) while the sweep is fresh is
        // put off...
        let mut w = Writer::open(&ks, 0, b"h", KeyType::Hash, 3_000, false).unwrap().unwrap();
        w.put(b"new", 1_900, b"v").unwrap();
        w.commit().unwrap();
        assert_eq!(expire_all(&ks, 3_000), 1);
        let swept = meta(&ks, b"h", 3_000).unwrap().c;
        assert_eq!(swept.hfe.unwrap().sweep.map(|s| s.cursor().to_vec()), Some(b"f00255".to_vec()));
        // ... and takes the sweep up once it is an orphan.
        let later = 3_000 + SWEEP_ORPHAN_MS;
        assert_eq!(expire_all(&ks, later - 1), 1);
        let calls = expire_all(&ks, later);
        assert!(calls >= 3, "{calls} calls, {:?}", meta(&ks, b"h", later).map(|v| v.c));
        // That sweep's bounds still hold the TTL "new" was written with (a
        // write widens them whatever it gives); the next sweep, 100 ms on,
        // sees no TTL field left: every TTL field is gone (expired or a
        // ghost), size is persist.
        let v = meta(&ks, b"h", later).unwrap();
        assert_eq!((v.c.size, v.c.hfe.unwrap().lower), (3_000, 1_900));
        let later = later + ACTIVE_REPAIR_EVERY_MS;
        expire_all(&ks, later);
        let v = meta(&ks, b"h", later).unwrap();
        let h = v.c.hfe.unwrap();
        assert_eq!((v.c.size, h.persist, h.lower, h.upper, h.sweep), (2_000, 2_000, 0, 0, None));
        assert_eq!(fields_on_disk(&ks, b"h", v.c.version), 2_000);
        // Each TTL field counts as expired once: 2,000 met, 1,000 ghosts
        // and "new".
        assert_eq!(ks.stats.expired_fields.get(), 3_001);
    }

    #[test]
    fn a_meta_read_of_a_big_hash_probes_instead_of_repairing() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        // No persistent field, the lower bound due: a read must check.
        fill(&ks, b"h", 5_000, 1_000, |i| if i == 4_999 { 9_000 } else { 2_000 });
        let before = meta(&ks, b"h", 1_000).unwrap();
        let v = meta(&ks, b"h", 3_000).unwrap();
        assert_eq!(v.c, before.c, "a live field was found: the meta stays as it was");
        assert_eq!(ks.stats.expired_fields.get(), 0);
        // Every field expired: the read deletes the key, with its members.
        assert!(meta(&ks, b"h", 9_500).is_none());
        assert_eq!(ks.count(0), 0);
        assert_eq!(fields_on_disk(&ks, b"h", v.c.version), 0);
        assert_eq!(ks.stats.expired_fields.get(), 5_000);
    }

    /// A hash's fields that compaction dropped once expired (ghosts)
    /// count as expired when active expiry finds them gone, whether a
    /// repair (a small hash) or a probing read deletes the key.
    #[test]
    fn ghosts_count_as_expired_fields() {
        let dir = tempfile::tempdir().unwrap();
        let ks = for_test(dir.path());
        let drop_fields = |key: &[u8], range: std::ops::Range<usize>| {
            let v = meta(&ks, key, 1_000).unwrap();
            let mut b = ks.store.batch();
            for i in range {
                ks.store
                    .delete(&mut b, &keys::sub_key(0, key, v.c.version, format!("f{i:05}").as_bytes()));
            }
            ks.store.write(b).unwrap();
        };
        // A small hash: 10 fields, 6 due at 2,000 of which 4 are ghosts.
        fill(&ks, b"small", 10, 1_000, |i| if i < 6 { 2_000 } else { 0 });
        drop_fields(b"small", 0..4);
        expire_all(&ks, 2_000);
        assert_eq!(ks.stats.expired_fields.get(), 6);
        assert_eq!(meta(&ks, b"small", 2_000).unwrap().c.size, 4);
        // A big hash with every field due, half of them ghosts, its upper
        // bound still later (a TTL shortened): a read probes, finds none
        // live and deletes the key, counting all.
        fill(&ks, b"big", 5_000, 1_000, |i| if i == 0 { 9_000 } else { 3_000 });
        let mut w = Writer::open(&ks, 0, b"big", KeyType::Hash, 1_000, false).unwrap().unwrap();
        w.put(b"f00000", 3_000, b"v").unwrap();
        w.commit().unwrap();
        let c = meta(&ks, b"big", 1_000).unwrap().c;
        assert_eq!(fast_len(&c, 3_000), FastLen::Scan);
        drop_fields(b"big", 0..2_500);
        assert!(meta(&ks, b"big", 3_000).is_none());
        assert_eq!(ks.stats.expired_fields.get(), 6 + 5_000);
    }
}
