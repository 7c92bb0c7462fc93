use super::log::{own_records, own_records_past, records};
use super::*;
use crate::storage::testkit::{get, grouped, peer, put};
use crate::storage::{keys, test_opts, Engine};

mod direct;
mod in_place;
mod replay;
mod room;
mod turn;
mod view;
mod write_back;

/// An engine of `shards` shards with a meta cache of `cache` bytes, the
/// tier capped at `limit` records (0: by bytes, `bytes`), kept for the test.
fn engine(shards: usize, cache: u64, limit: usize, bytes: u64) -> (tempfile::TempDir, &'static Engine) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = test_opts(dir.path(), shards, cache);
    opts.write_tier = limit;
    opts.write_tier_bytes = bytes;
    (dir, Box::leak(Box::new(Engine::open(&opts).unwrap())))
}

/// The next append to `s`'s log fails.
fn fail_next_append(s: &ShardStore) {
    s.wtier
        .log
        .as_ref()
        .unwrap()
        .fail_next
        .store(true, std::sync::atomic::Ordering::Release);
}

/// One put of a record its writer read absent, as one batch.
fn put_new(s: &ShardStore, k: &[u8], v: &[u8]) {
    let mut b = s.batch();
    s.put_new(&mut b, k, v);
    s.write(b).unwrap();
}

/// One delete, as one batch.
fn delete(s: &ShardStore, k: &[u8]) {
    let mut b = s.batch();
    s.delete(&mut b, k);
    s.write(b).unwrap();
}

/// A transaction's delete of every meta record of db 0 (a range delete:
/// it goes past the tier).
fn delete_db0_in_tx(s: &ShardStore) {
    s.begin_tx(false);
    let mut b = s.batch();
    let (lo, hi) = keys::meta_db_range(0);
    s.delete_range(&mut b, &lo, &hi);
    s.write(b).unwrap();
    let w = s.write_own_tx();
    s.end_tx(&w);
    w.unwrap();
}

fn stores(limit: usize) -> (tempfile::TempDir, ShardStore, crate::storage::PeerStore) {
    let (dir, e) = engine(1, 1 << 20, limit, 0);
    (dir, e.shard(0).unwrap(), e.peer(0).unwrap())
}

#[test]
fn a_batch_representation_parses_into_its_records() {
    let (_d, s, _p) = stores(0);
    let mut wb = WriteBatch::default();
    wb.put_cf(s.cf, b"k1", b"v1");
    wb.delete_cf(s.sub, b"k2");
    wb.put_cf(s.sub, b"k3", vec![7u8; 300]);
    let recs = records(&Bytes::copy_from_slice(wb.data())).unwrap();
    assert_eq!(
        recs,
        vec![
            (Bytes::from_static(b"k1"), Some(Bytes::from_static(b"v1"))),
            (Bytes::from_static(b"k2"), None),
            (Bytes::from_static(b"k3"), Some(Bytes::from(vec![7u8; 300]))),
        ]
    );
    // A range delete is not a record the tier can hold.
    let mut wb = WriteBatch::default();
    wb.delete_range_cf(s.cf, b"a", b"b");
    assert_eq!(records(&Bytes::copy_from_slice(wb.data())), None);
    // Cut short: refused, not read past its end.
    let mut wb = WriteBatch::default();
    wb.put_cf(s.cf, b"key", b"value");
    let data = wb.data();
    assert_eq!(records(&Bytes::copy_from_slice(&data[..data.len() - 2])), None);
}

/// The caches' view of a batch: its column families' puts and deletes,
/// passing over range deletes and the default family's records (an
/// intent), which must not make them forget everything.
#[test]
fn each_record_passes_over_ranges_and_the_default_family() {
    let (_d, s, _p) = stores(0);
    let mut wb = WriteBatch::default();
    wb.put(b"intent", b"part");
    wb.put_cf(s.cf, b"k1", b"v1");
    wb.delete(b"gone");
    wb.delete_range_cf(s.sub, b"a", b"b");
    wb.delete_cf(s.sub, b"k2");
    wb.delete_range(b"x", b"y");
    let mut seen = Vec::new();
    assert!(each_record(wb.data(), |k, v| seen.push((k.to_vec(), v.map(<[u8]>::to_vec)))));
    assert_eq!(seen, vec![(b"k1".to_vec(), Some(b"v1".to_vec())), (b"k2".to_vec(), None)]);
    assert!(!log::each_put(wb.data(), |_, _| ()), "the tier stages plain puts and deletes only");
    let data = wb.data();
    assert!(!each_record(&data[..data.len() - 1], |_, _| ()), "cut short");
}

/// Bytes in the WAL files under `dir` (the tier's log segments left out).
fn wal_bytes(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if path.is_dir() {
            if path.file_name() != Some(std::ffi::OsStr::new("tier-log")) {
                n += wal_bytes(&path);
            }
        } else if path.extension() == Some(std::ffi::OsStr::new("log")) {
            n += e.metadata().unwrap().len();
        }
    }
    n
}

/// With the tier on, a write past it (here a batch over the most a lone
/// write stages) is in its WAL file before the tier's next log record,
/// which reaches its file at once: a stored collection's meta record
/// (logged) outlived its slices (in RocksDB's WAL buffer until the reply)
/// across a kill -9 between the two writes (strace: the 70-byte log
/// record, then the 238 KB WAL write). Until then it waits in the buffer
/// for the turn's one flush (a script's writes pay no write(2) each).
#[test]
fn a_write_past_the_tier_is_in_its_wal_file_before_the_next_log_record() {
    let (d, s, _p) = stores(1000);
    let before = wal_bytes(d.path());
    let mut b = s.batch();
    for i in 0..(LONE_TIER_RECORDS as u32 + 1) {
        s.put(&mut b, &keys::sub_key(0, b"big", 1, &i.to_be_bytes()), b"member");
    }
    s.write(b).unwrap();
    assert_eq!(wal_bytes(d.path()), before, "buffered until a log record or the reply");
    assert!(s.engine.unflushed());
    // The next log record's append fails, after the WAL's flush before it.
    fail_next_append(&s);
    let mut b = s.batch();
    s.put(&mut b, &keys::meta_key(0, b"big"), b"meta");
    assert!(s.write(b).is_err());
    let after = wal_bytes(d.path());
    assert!(
        after > before,
        "the WAL file holds it before the log record: {before} -> {after} bytes"
    );
    assert!(!s.engine.unflushed(), "nothing left in the WAL buffer for the reply to flush");
}

/// Records wait in the tier (the owner reads them, RocksDB does not
/// have them yet) and reach the families in one sorted apply, at the
/// limit or before a range read that could meet them.
#[test]
fn records_wait_in_the_tier_until_the_limit_or_a_range_read() {
    let (_d, s, p) = stores(4);
    let h = |f: &str| keys::sub_key(0, b"h", 1, f.as_bytes());
    let other = keys::sub_key(0, b"other", 1, b"x");
    let m = keys::meta_key(0, b"m");
    s.begin_group();
    put(&s, &h("b"), b"2");
    put(&s, &h("a"), b"1");
    put(&s, &m, b"meta");
    assert!(s.end_group().is_empty());
    assert_eq!(get(&s, &h("a")), Some(b"1".to_vec()));
    assert_eq!(peer(&p, &h("a")), None, "in the tier only");
    assert!(s.wtier.meets(&keys::sub_range(0, b"h", 1).0, &keys::sub_range(0, b"h", 1).1));
    assert!(!s
        .wtier
        .meets(&keys::sub_range(0, b"other", 1).0, &keys::sub_range(0, b"other", 1).1));
    // A scan of another collection does not apply the tier...
    let (lo, hi) = keys::sub_range(0, b"other", 1);
    s.scan(&lo, &hi, |_, _| true).unwrap();
    assert_eq!(peer(&p, &h("a")), None);
    // ...a scan of this one does, in order.
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    let mut seen = Vec::new();
    s.scan(&lo, &hi, |k, _| {
        seen.push(k.to_vec());
        true
    })
    .unwrap();
    assert_eq!(seen, vec![h("a"), h("b")]);
    assert_eq!(peer(&p, &h("b")), Some(b"2".to_vec()));
    assert_eq!(s.write_tier_size().records, 1, "the meta record stays in the tier");
    s.tier_apply().unwrap();
    // At the limit (4 records) dirty starts draining: each write of the
    // tier applies twice as many records as it adds, in key order.
    for f in ["c", "d", "e", "f"] {
        s.begin_group();
        put(&s, &h(f), f.as_bytes());
        assert!(s.end_group().is_empty());
    }
    assert_eq!(peer(&p, &h("d")), Some(b"d".to_vec()));
    assert_eq!(peer(&p, &h("e")), None);
    assert_eq!(get(&s, &h("f")), Some(b"f".to_vec()), "the owner reads the draining generation");
    assert_eq!(get(&s, &h("d")), Some(b"d".to_vec()), "and RocksDB what it applied");
    assert_eq!(s.write_tier_size().records, 2, "it let go of the 2 it applied");
    // A delete wins over the put before it (the group adds one record).
    s.begin_group();
    put(&s, &other, b"x");
    let mut b = s.batch();
    s.delete(&mut b, &other);
    s.write(b).unwrap();
    assert!(s.end_group().is_empty());
    assert_eq!(get(&s, &other), None);
    assert_eq!(peer(&p, &h("f")), Some(b"f".to_vec()), "the generation is applied");
    assert_eq!(s.write_tier_size().records, 1, "dirty holds the delete");
    s.begin_group();
    put(&s, &h("g"), b"g");
    assert!(s.end_group().is_empty());
    // A range read inside one collection writes that collection's records
    // only; one over several merges the tier's records (`view`): the
    // other collection's delete hides its member, and nothing is written.
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    s.scan(&lo, &hi, |_, _| true).unwrap();
    assert_eq!(s.write_tier_size().records, 1, "the other collection's delete stays");
    assert_eq!(peer(&p, &h("g")), Some(b"g".to_vec()));
    let (a, b) = (keys::sub_range(0, b"h", 1), keys::sub_range(0, b"other", 1));
    let (from, to) = (a.0.clone().min(b.0.clone()), a.1.max(b.1));
    let mut seen = Vec::new();
    s.scan(&from, &to, |k, _| {
        seen.push(k.to_vec());
        true
    })
    .unwrap();
    assert!(seen.contains(&h("g")) && !seen.contains(&other), "{seen:?}");
    assert_eq!(s.write_tier_size().records, 1, "merged, not written");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(peer(&p, &other), None);
    // A write that is not staged applies the tier first: order holds.
    s.begin_group();
    put(&s, &m, b"older");
    assert!(s.end_group().is_empty());
    put(&s, &m, b"newer");
    s.compact_all();
    assert_eq!(get(&s, &m), Some(b"newer".to_vec()));
    assert_eq!(peer(&p, &m), Some(b"newer".to_vec()));
}

/// With several shards a peer that misses the meta cache leaves a key
/// the owner's tier may hold to the owner, until an apply wrote it.
#[test]
fn peers_leave_what_the_tier_holds_to_the_owner() {
    let (_dir, e) = engine(2, 0, 1000, 0);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    let (m, other) = (keys::meta_key(0, b"m"), keys::meta_key(0, b"other"));
    put(&s, &m, b"old");
    s.begin_group();
    put(&s, &m, b"new");
    s.defer_group();
    s.end_turn();
    assert_eq!(s.write_tier_size().records, 1);
    // "new" was written over "old" in place (the same length): one
    // value's bytes (`Gen::put_over`).
    assert_eq!(s.write_tier_size().bytes, m.len() as u64 + 3 + RECORD_OVERHEAD);
    assert!(s.write_tier_size().log_bytes > 0, "the log file holds it");
    assert_eq!(get(&s, &m), Some(b"new".to_vec()), "the owner reads its tier");
    assert_eq!(
        p.get_with(&m, |v| v.map(|v| v.to_vec())).unwrap(),
        None,
        "only the owner can answer"
    );
    assert_eq!(peer(&p, &other), None, "a key the tier does not hold is read from RocksDB");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(peer(&p, &m), Some(b"new".to_vec()));
}

/// A peer answers from the owner's meta cache even for a key the tier
/// holds: the owner updates an entry it holds when it stages the record,
/// a drain never puts an older value over a newer one dirty holds, and a
/// failed log append empties the cache. A key the cache does not hold is
/// left to the owner.
#[test]
fn peers_trust_the_cache_entries_the_owner_keeps_current() {
    let (_dir, e) = engine(2, 1 << 20, 1000, 0);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    let (m, other) = (keys::meta_key(0, b"m"), keys::meta_key(0, b"other"));
    let turn = |k: &[u8], v: Option<&[u8]>| grouped(&s, k, v);
    assert!(turn(&m, Some(b"v1")).is_empty());
    s.tier_apply().unwrap();
    assert_eq!(get(&s, &m), Some(b"v1".to_vec()), "read into the cache");
    assert!(turn(&m, Some(b"v2")).is_empty());
    assert!(turn(&other, Some(b"o")).is_empty());
    assert_eq!(s.write_tier_size().records, 2);
    assert_eq!(peer(&p, &m), Some(b"v2".to_vec()), "the cached entry followed the write");
    assert_eq!(p.get_with(&other, |_| ()).unwrap(), None, "not cached: the owner's to answer");
    assert!(turn(&m, None).is_empty());
    assert_eq!(peer(&p, &m), None, "a deletion too");
    // The draining generation holds v3, dirty the newer v4: applying the
    // generation leaves v4 in the cache.
    assert!(turn(&m, Some(b"v3")).is_empty());
    s.tier_start_drain();
    assert!(turn(&m, Some(b"v4")).is_empty());
    s.tier_drain(usize::MAX).unwrap();
    assert_eq!(peer(&p, &m), Some(b"v4".to_vec()));
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &m), Some(b"v4".to_vec()));
    assert_eq!(peer(&p, &other), Some(b"o".to_vec()));
    // A staged value whose log append fails never stays in the cache.
    assert_eq!(get(&s, &m), Some(b"v4".to_vec()));
    fail_next_append(&s);
    assert_eq!(turn(&m, Some(b"v5")).len(), 1, "lost");
    assert_eq!(p.get_with(&m, |_| ()).unwrap(), None, "the cache was emptied, the key is held");
    assert_eq!(get(&s, &m), Some(b"v4".to_vec()));
    assert_eq!(peer(&p, &m), Some(b"v4".to_vec()), "the owner's read cached it again");
}

/// Once both families persisted an apply's mark, the next apply cuts
/// the log below it (`file` deletes the segments wholly below it).
#[test]
fn the_log_is_cut_below_what_both_families_persisted() {
    let (_d, s, _p) = stores(1);
    let turn = |k: &[u8]| {
        s.begin_group();
        put(&s, &keys::meta_key(0, k), b"v");
        s.defer_group();
        s.end_turn();
    };
    for i in 0..6u32 {
        turn(&i.to_be_bytes());
    }
    assert_eq!(s.wtier.cut.get(), 0, "nothing persisted yet");
    assert!(s.write_tier_size().log_bytes > 0);
    s.db.flush_cf(s.cf).unwrap();
    s.db.flush_cf(s.sub).unwrap();
    turn(b"a");
    turn(b"b");
    assert_eq!(s.wtier.cut.get(), 6, "cut below the persisted mark 6");
    // The compaction filters keep the marks.
    s.compact_all();
    for cf in [s.cf, s.sub] {
        assert_eq!(s.db.get_cf(cf, MARK).unwrap(), Some(8u64.to_be_bytes().to_vec()));
    }
}

/// A batch that skips the tier carries its copy as a direct record in its
/// own batch (not in the log file), which the cut removes once the marks
/// past it are persisted.
#[test]
fn a_direct_write_carries_its_copy_in_its_own_batch() {
    let (d, s, _p) = stores(100);
    let m = keys::meta_key(0, b"m");
    s.begin_group();
    put(&s, &m, b"tier");
    s.defer_group();
    s.end_turn();
    // Past the tier, as a batch with a range delete or an intent goes (a
    // plain write outside a group goes through the tier).
    let mut wb = WriteBatch::default();
    wb.put_cf(s.cf, &m, b"direct");
    s.tier_direct(wb).unwrap();
    let copy = s.db.get_cf(s.cf, direct_key(2)).unwrap().expect("the direct record");
    assert_eq!(
        records(&Bytes::from(copy)).unwrap(),
        vec![(Bytes::from(m.clone()), Some(Bytes::from_static(b"direct")))]
    );
    let mut logged = Vec::new();
    super::file::replay(&super::log_dir(&d.path().join("db"), 0), 0, |pos, _| {
        logged.push(pos);
        Ok(())
    })
    .unwrap();
    assert_eq!(logged, vec![1], "only the tier's batch is in the file");
    s.db.flush_cf(s.cf).unwrap();
    s.db.flush_cf(s.sub).unwrap();
    s.begin_group();
    put(&s, &m, b"later");
    s.defer_group();
    s.end_turn();
    s.tier_apply().unwrap();
    assert_eq!(s.db.get_cf(s.cf, direct_key(2)).unwrap(), None, "cut below the persisted mark");
}

/// With a memory budget and no cap by count, dirty starts draining once
/// it takes half of the shard's share (records counted with their
/// overhead), and INFO's figures say so.
#[test]
fn a_memory_budget_starts_the_drain_at_half_the_shards_share() {
    let budget = 4 * (RECORD_OVERHEAD + 100);
    let (_dir, e) = engine(1, 0, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    assert_eq!(s.write_tier_size().budget, budget);
    let k = |i: u8| keys::sub_key(0, b"h", 1, &[b'f', i]);
    let turn = |i: u8| {
        s.begin_group();
        put(&s, &k(i), &[i; 60]);
        s.defer_group();
        s.end_turn();
    };
    turn(0);
    // One record (about 96 + 80 bytes) is under half of the budget.
    assert_eq!(s.write_tier_size().records, 1);
    assert_eq!(peer(&p, &k(0)), None);
    turn(1);
    turn(2);
    // The third took dirty past half: it drains, two records per write.
    assert!(s.write_tier_size().bytes <= budget);
    turn(3);
    assert_eq!(peer(&p, &k(0)), Some(vec![0; 60]));
    assert_eq!(peer(&p, &k(1)), Some(vec![1; 60]));
    assert_eq!(get(&s, &k(3)), Some(vec![3; 60]));
}

/// A hot key written again and again stays one record, but the log its
/// writes fill starts a drain at the shard's share of the budget (64 KiB
/// at least, 64 MiB at most), so that the log can be cut below it: with
/// no other trigger it grew without end.
#[test]
fn a_log_of_overwrites_starts_a_drain_and_is_cut() {
    let budget = 128 << 10;
    let (_dir, e) = engine(1, 0, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    assert_eq!(s.wtier.limit.log, budget);
    // A long key and a one-byte value, changed every turn: each turn logs
    // the record (~1 KB), and charges only the value it replaced. (The
    // same value again logs nothing, `tier_turn_record`; a long value
    // changed charges as much memory as it logs, and starts the drain at
    // half the share first.)
    let k = keys::meta_key(0, &[b'h'; 1000]);
    let turn = |i: u32| {
        s.begin_group();
        put(&s, &k, if i.is_multiple_of(2) { b"a" } else { b"b" });
        s.defer_group();
        s.end_turn();
    };
    for i in 0..100 {
        turn(i);
    }
    // About 100 KB of log, under the limit; one record (~1.1 KB) is far
    // under half the budget.
    assert_eq!(s.write_tier_size().records, 1);
    assert!(s.write_tier_size().bytes < 2000, "{:?}", s.write_tier_size());
    assert_eq!(peer(&p, &k), None, "only in the tier");
    for i in 100..140 {
        turn(i);
    }
    // The drain wrote it to the family, where a peer reads it.
    assert!(peer(&p, &k).is_some(), "drained past 128 KiB of log");
    assert_eq!(get(&s, &k), Some(b"b".to_vec()));
    assert_eq!(s.wtier.cut.get(), 0, "nothing persisted yet");
    s.db.flush_cf(s.cf).unwrap();
    s.db.flush_cf(s.sub).unwrap();
    for i in 140..300 {
        turn(i);
    }
    assert!(s.wtier.cut.get() > 0, "the next drain cut the log below the persisted mark");
    assert_eq!(get(&s, &k), Some(b"b".to_vec()));
}

/// A value overwritten by one of another length stays in its
/// generation's memory until the generation is applied (records are
/// carved from chunks the next generations reuse, `gen`): the budget
/// charges it, so a hot key written with new values drains at half the
/// share, before its log would.
#[test]
fn overwritten_values_are_charged_and_start_the_drain() {
    let budget = 128 << 10;
    let (_dir, e) = engine(1, 0, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    let k = keys::meta_key(0, b"hot");
    let value = |i: u32| vec![i as u8; 1000 + i as usize % 2];
    let turn = |i: u32| {
        s.begin_group();
        put(&s, &k, &value(i));
        s.defer_group();
        s.end_turn();
    };
    for i in 0..40 {
        turn(i);
    }
    let size = s.write_tier_size();
    assert_eq!(size.records, 1);
    assert!(size.bytes >= 39 * 1000, "the overwritten values are charged: {size:?}");
    assert_eq!(peer(&p, &k), None, "only in the tier");
    for i in 40..80 {
        turn(i);
    }
    // About 80 KB of log, under its 128 KiB limit: the charge drained it.
    assert!(peer(&p, &k).is_some(), "drained at half the budget");
    assert!(s.write_tier_size().bytes <= budget, "{:?}", s.write_tier_size());
    assert_eq!(get(&s, &k), Some(value(79)));
    // Values read from the tier stay whole while later generations reuse
    // its memory.
    for i in 80..400 {
        turn(i);
        assert_eq!(get(&s, &k), Some(value(i)));
    }
    assert!(s.write_tier_size().bytes <= budget, "{:?}", s.write_tier_size());
}

/// A plain write outside any group waits in the tier (a group of its
/// own); a later store of the same shard (intent replay's stores come
/// before the shard's own) takes log positions past the earlier one's.
#[test]
fn a_write_outside_a_group_waits_in_the_tier_and_positions_go_on() {
    let (_dir, e) = engine(1, 1 << 20, 1000, 0);
    let s = e.shard(0).unwrap();
    let k = keys::meta_key(0, b"k");
    put(&s, &k, b"v1");
    assert_eq!(s.wtier.size().0, 1, "it waits in the tier");
    assert_eq!(get(&s, &k), Some(b"v1".to_vec()));
    let last = s.wtier.pos.get();
    assert!(last > 0);
    s.write_back().unwrap();
    assert_eq!(s.wtier.size().0, 0, "written back");
    drop(s);
    let s2 = e.shard(0).unwrap();
    assert_eq!(s2.wtier.pos.get(), last, "the next store goes on from there");
    put(&s2, &k, b"v2");
    assert_eq!(s2.wtier.pos.get(), last + 1);
    assert_eq!(get(&s2, &k), Some(b"v2".to_vec()));
}

/// A group's records wait in the tier from the moment they are staged
/// (the owner reads them at once); when the group's log append fails,
/// what they replaced is back, as if they were never written, and the
/// writes are reported lost.
#[test]
fn a_staged_group_whose_log_append_fails_is_put_back() {
    let (_d, s, p) = stores(1000);
    let (m, fresh) = (keys::meta_key(0, b"m"), keys::meta_key(0, b"fresh"));
    let f = keys::sub_key(0, b"h", 1, b"f");
    s.begin_group();
    put(&s, &m, b"old");
    put(&s, &f, b"1");
    assert!(s.end_group().is_empty());
    let before = s.write_tier_size();
    s.begin_group();
    put(&s, &m, b"new");
    put(&s, &fresh, b"x");
    let mut b = s.batch();
    s.delete(&mut b, &f);
    s.write(b).unwrap();
    assert_eq!(get(&s, &m), Some(b"new".to_vec()), "the owner reads what it staged");
    assert_eq!(get(&s, &f), None);
    fail_next_append(&s);
    let lost = s.end_group();
    assert_eq!(lost.len(), 1, "the group's writes are lost");
    assert_eq!(get(&s, &m), Some(b"old".to_vec()));
    assert_eq!(get(&s, &fresh), None);
    assert_eq!(get(&s, &f), Some(b"1".to_vec()));
    let after = s.write_tier_size();
    assert_eq!(after.records, before.records);
    // What was staged stays charged until the generation is applied.
    assert!(
        after.bytes > before.bytes && after.bytes < before.bytes + 64,
        "{before:?} {after:?}"
    );
    // The apply writes what was logged, and passes over what was put back.
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &m), Some(b"old".to_vec()));
    assert_eq!(peer(&p, &fresh), None);
    assert_eq!(peer(&p, &f), Some(b"1".to_vec()));
    assert_eq!(get(&s, &fresh), None);
    // The next group writes as usual.
    s.begin_group();
    put(&s, &fresh, b"y");
    assert!(s.end_group().is_empty());
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &fresh), Some(b"y".to_vec()));
}

/// With the write tier on, a transaction on one shard (a script, an
/// EXEC) is staged into the tier and logged as one record, not written
/// to RocksDB: its records wait in memory, and a failed log append
/// loses the whole transaction (put back, reported). One that deletes
/// a range still goes past the tier. (tests/crash_atomic.rs restarts
/// such transactions after kill -9.)
#[test]
fn a_transaction_on_one_shard_waits_in_the_write_tier() {
    let (_d, s, p) = stores(1000);
    let (a, f) = (keys::meta_key(0, b"a"), keys::sub_key(0, b"h", 1, b"f"));
    let tx = |puts: &[(&[u8], &[u8])]| {
        s.begin_tx(false);
        for (k, v) in puts {
            put(&s, k, v);
        }
        let w = s.write_own_tx();
        s.end_tx(&w);
        w
    };
    let pos = s.wtier.pos.get();
    tx(&[(&a, b"1"), (&f, b"x")]).unwrap();
    assert_eq!(s.wtier.pos.get(), pos + 1, "one log record");
    assert_eq!(s.write_tier_size().records, 2, "both records wait in the tier");
    assert_eq!(peer(&p, &f), None, "RocksDB does not have them");
    assert_eq!((get(&s, &a), get(&s, &f)), (Some(b"1".to_vec()), Some(b"x".to_vec())));
    // A failed log append puts the whole transaction back.
    fail_next_append(&s);
    assert!(tx(&[(&a, b"2"), (&f, b"y")]).is_err());
    assert_eq!((get(&s, &a), get(&s, &f)), (Some(b"1".to_vec()), Some(b"x".to_vec())));
    // A range delete goes past the tier: what the tier holds inside its
    // range is dropped, the rest (the member `f`) stays in the tier.
    delete_db0_in_tx(&s);
    assert_eq!(get(&s, &a), None);
    assert_eq!((get(&s, &f), peer(&p, &f)), (Some(b"x".to_vec()), None), "f waits in the tier");
    assert_eq!(s.write_tier_size().records, 1);
    tx(&[(&a, b"3"), (&f, b"z")]).unwrap();
    assert_eq!((get(&s, &f), peer(&p, &f)), (Some(b"z".to_vec()), None));
    s.tier_apply().unwrap();
    assert_eq!((peer(&p, &a), peer(&p, &f)), (Some(b"3".to_vec()), Some(b"z".to_vec())));
}

/// A write into the tier leaves the meta cache alone; the apply tells it
/// the record's value, so a read after the tier let it go is not stale.
#[test]
fn the_meta_cache_learns_a_record_when_the_tier_applies_it() {
    let (_d, s, p) = stores(1000);
    let m = keys::meta_key(0, b"m");
    s.begin_group();
    put(&s, &m, b"v1");
    assert!(s.end_group().is_empty());
    s.tier_apply().unwrap();
    assert_eq!(get(&s, &m), Some(b"v1".to_vec()), "read into the cache");
    s.begin_group();
    put(&s, &m, b"v2");
    assert!(s.end_group().is_empty());
    assert_eq!(get(&s, &m), Some(b"v2".to_vec()), "the tier comes before the cache");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(get(&s, &m), Some(b"v2".to_vec()), "the cache learned the applied value");
    assert_eq!(peer(&p, &m), Some(b"v2".to_vec()));
    // A write past the tier while a group is open (a range delete rides
    // with it) tells the cache its meta records from the batch itself.
    s.begin_group();
    let mut b = s.batch();
    s.put(&mut b, &m, b"v3");
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    s.delete_range(&mut b, &lo, &hi);
    s.write(b).unwrap();
    assert!(s.end_group().is_empty());
    assert_eq!(s.write_tier_size().records, 0, "written past the tier");
    assert_eq!(get(&s, &m), Some(b"v3".to_vec()));
    assert_eq!(peer(&p, &m), Some(b"v3".to_vec()));
}

/// The owner's copy of a key's access stamp (`ShardStore::with_meta_stamp`)
/// sits on its record in dirty while dirty holds it, kept by a new value;
/// once applied, on the meta cache's slot, which starts without one (the
/// value it learned is new); a set reaches both places.
#[test]
fn a_stamp_copy_follows_the_record_from_the_tier_to_the_cache() {
    let (_d, s, _p) = stores(1000);
    let m = keys::meta_key(0, b"m");
    let h = s.key_hasher().hash_one(&m[..]);
    let read = |s: &ShardStore| {
        let got = std::cell::Cell::new(None);
        s.with_meta_stamp(h, &m, false, |w| {
            got.set(Some(w));
            None
        })
        .then(|| got.get())
        .flatten()
    };
    assert_eq!(read(&s), None, "no record, no copy");
    s.begin_group();
    put(&s, &m, b"v1");
    assert!(s.end_group().is_empty());
    assert_eq!(read(&s), Some(0), "in dirty, none yet");
    assert!(s.with_meta_stamp(h, &m, false, |_| Some(41)));
    assert_eq!(read(&s), Some(41));
    s.begin_group();
    put(&s, &m, b"v2");
    assert!(s.end_group().is_empty());
    assert_eq!(read(&s), Some(41), "a new value keeps it");
    s.tier_apply().unwrap();
    assert_eq!(get(&s, &m), Some(b"v2".to_vec()));
    assert_eq!(read(&s), Some(0), "the cache's entry is new");
    assert!(s.with_meta_stamp(h, &m, false, |_| Some(7)));
    // Written again: dirty holds it (no copy), the cache still has its own.
    s.begin_group();
    put(&s, &m, b"v3");
    assert!(s.end_group().is_empty());
    assert_eq!(read(&s), Some(0), "dirty's record is read first");
    s.with_meta_stamp(h, &m, true, |_| Some(99));
    assert_eq!(read(&s), Some(99));
    s.tier_apply().unwrap();
    assert_eq!(get(&s, &m), Some(b"v3".to_vec()));
    assert_eq!(read(&s), Some(0), "the applied value's entry starts over");
}

/// A member record its writer read absent (`put_new`) and deleted while
/// the generation that took it still holds it goes whole: no tombstone
/// waits in the tier for the families. One put back after a failed log
/// append (the delete undone) is written by the drain even when its
/// generation sorted its keys in between.
#[test]
fn a_new_record_deleted_in_its_generation_leaves_no_tombstone() {
    let (_d, s, p) = stores(100_000);
    let k = |i: usize| keys::sub_key(0, b"z", 1, format!("m{i}").as_bytes());
    let put_new = |key: &[u8], v: &[u8]| put_new(&s, key, v);
    let delete = |key: &[u8]| delete(&s, key);
    // One written the usual way reaches the families; its delete is a
    // tombstone the tier keeps for them.
    assert!(grouped(&s, &k(0), Some(b"old")).is_empty());
    s.tier_apply().unwrap();
    assert!(grouped(&s, &k(0), None).is_empty());
    assert_eq!(s.write_tier_size().records, 1);
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &k(0)), None);
    // New ones put and deleted: nothing left.
    s.begin_group();
    put_new(&k(1), b"1");
    put_new(&k(2), b"2");
    delete(&k(1));
    assert!(s.end_group().is_empty());
    assert_eq!(get(&s, &k(1)), None);
    assert_eq!(s.write_tier_size().records, 1, "only m2");
    // Overwritten first, still new: its delete leaves nothing either.
    s.begin_group();
    put_new(&k(3), b"3");
    put(&s, &k(3), b"33");
    delete(&k(3));
    delete(&k(2));
    assert!(s.end_group().is_empty());
    assert_eq!(s.write_tier_size().records, 0);
    // A key the tier holds a tombstone for is not new again: the delete
    // after a put over it stays a tombstone.
    assert!(grouped(&s, &k(0), None).is_empty());
    s.begin_group();
    put_new(&k(0), b"again");
    delete(&k(0));
    assert!(s.end_group().is_empty());
    assert_eq!(s.write_tier_size().records, 1);
    s.tier_apply().unwrap();
    // A record put back by a failed append after its generation sorted
    // its keys (a run of new keys filled in the same group) is applied.
    let many = super::runs::RUN - 10;
    s.begin_group();
    put_new(&k(9), b"9");
    for i in 0..many {
        put_new(&k(100 + i), b"x");
    }
    assert!(s.end_group().is_empty());
    s.begin_group();
    delete(&k(9));
    for i in 0..20 {
        put_new(&k(100_000 + i), b"y");
    }
    fail_next_append(&s);
    assert_eq!(s.end_group().len(), 1, "the group's writes are lost");
    assert_eq!(get(&s, &k(9)), Some(b"9".to_vec()));
    assert_eq!(get(&s, &k(100_000)), None);
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &k(9)), Some(b"9".to_vec()), "written back after it was put back");
    assert_eq!(peer(&p, &k(100)), Some(b"x".to_vec()));
    assert_eq!(peer(&p, &k(100_000)), None);
}

/// A read with the key's hash by the store's hasher finds what a plain
/// read finds, in the tier or past it.
#[test]
fn a_read_by_hash_finds_the_tier_records() {
    let (_d, s, _p) = stores(2);
    let (a, b, c) = (keys::meta_key(0, b"a"), keys::meta_key(0, b"b"), keys::meta_key(0, b"c"));
    let by_hash = |k: &[u8]| {
        let h = s.key_hasher().hash_one(k);
        s.get_with_hash(k, h, |v| v.map(<[u8]>::to_vec)).unwrap()
    };
    assert!(grouped(&s, &a, Some(b"1")).is_empty());
    assert!(grouped(&s, &b, Some(b"2")).is_empty());
    // At the limit (2 records) dirty starts draining: `c` waits in the
    // new dirty, `a` and `b` went on to the families.
    assert!(grouped(&s, &c, Some(b"3")).is_empty());
    for (k, v) in [(&a, b"1"), (&b, b"2"), (&c, b"3")] {
        assert_eq!(by_hash(k), Some(v.to_vec()));
        assert_eq!(by_hash(k), get(&s, k));
    }
    assert_eq!(by_hash(&keys::meta_key(0, b"none")), None);
}
