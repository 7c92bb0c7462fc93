//! Writes past the tier (`tier_direct`, `write_with_main`): what the tier
//! holds of the records they write never reaches the families after them,
//! and the rest stays in the tier.

use super::*;

/// A DEL of a hash (its meta deleted, its members' range deleted, in one
/// batch past the tier) writes only that hash's records first: the tier
/// keeps every other record, and neither the hash's meta nor its members
/// come back from the tier when it drains later.
#[test]
fn a_range_delete_of_one_collection_leaves_the_other_records_in_the_tier() {
    let (_d, s, p) = stores(1000);
    let other = keys::meta_key(0, b"other");
    let (m, f) = (keys::meta_key(0, b"h"), keys::sub_key(0, b"h", 1, b"f"));
    let g = keys::sub_key(0, b"g", 1, b"x");
    put(&s, &other, b"o");
    put(&s, &m, b"meta");
    put(&s, &f, b"1");
    put(&s, &g, b"gx");
    assert_eq!(s.write_tier_size().records, 4);
    let pos = s.wtier.pos.get();
    let mut b = s.batch();
    s.delete(&mut b, &m);
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    s.delete_range(&mut b, &lo, &hi);
    s.write(b).unwrap();
    assert_eq!(s.wtier.pos.get(), pos + 1, "the direct write took a position");
    assert_eq!(s.write_tier_size().records, 2, "other and g wait in the tier");
    assert_eq!(peer(&p, &other), None, "other was not applied");
    assert_eq!(peer(&p, &g), None, "nor g's member");
    assert_eq!((get(&s, &m), get(&s, &f)), (None, None));
    assert_eq!(get(&s, &other), Some(b"o".to_vec()));
    let mut seen = Vec::new();
    s.scan(&lo, &hi, |k, _| {
        seen.push(k.to_vec());
        true
    })
    .unwrap();
    assert!(seen.is_empty(), "the hash has no members: {seen:?}");
    // What the tier still holds drains after it, without the hash.
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!((peer(&p, &m), peer(&p, &f)), (None, None));
    assert_eq!(peer(&p, &other), Some(b"o".to_vec()));
    assert_eq!(peer(&p, &g), Some(b"gx".to_vec()));
}

/// A batch too big to wait in the tier (more records than a lone write
/// stages) writes its keys past it: the older values the tier held for
/// them are forgotten (in dirty and in the draining generation), the
/// others stay.
#[test]
fn a_big_batch_past_the_tier_replaces_the_values_the_tier_held() {
    let (_d, s, p) = stores(1000);
    let (a, b_key, keep) = (keys::meta_key(0, b"a"), keys::meta_key(0, b"b"), keys::meta_key(0, b"keep"));
    put(&s, &a, b"old-a");
    put(&s, &keep, b"k");
    // `a` also in a draining generation: dirty drains, `b` in the new dirty.
    s.tier_start_drain();
    put(&s, &b_key, b"old-b");
    put(&s, &a, b"older-a2");
    let mut b = s.batch();
    s.put(&mut b, &a, b"new-a");
    s.delete(&mut b, &b_key);
    for i in 0..LONE_TIER_RECORDS {
        s.put(&mut b, &keys::meta_key(0, format!("bulk{i}").as_bytes()), b"x");
    }
    s.write(b).unwrap();
    assert_eq!(get(&s, &a), Some(b"new-a".to_vec()));
    assert_eq!(get(&s, &b_key), None);
    assert_eq!(get(&s, &keep), Some(b"k".to_vec()));
    assert_eq!(peer(&p, &a), Some(b"new-a".to_vec()), "written past the tier");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(peer(&p, &a), Some(b"new-a".to_vec()), "no older value drained over it");
    assert_eq!(peer(&p, &b_key), None);
    assert_eq!(peer(&p, &keep), Some(b"k".to_vec()));
}

/// A range wider than one collection (FLUSHDB's) drops what the tier
/// holds inside it, in both generations, without writing it first; the
/// tier keeps the rest, and nothing dropped comes back when it drains.
#[test]
fn a_range_delete_over_a_database_forgets_its_records_and_keeps_the_others() {
    let (_d, s, p) = stores(1000);
    let (k0, g0) = (keys::meta_key(0, b"k"), keys::sub_key(0, b"g", 1, b"x"));
    let (k1, g1) = (keys::meta_key(1, b"k"), keys::sub_key(1, b"g", 1, b"x"));
    put(&s, &k0, b"old");
    s.tier_start_drain();
    put(&s, &k0, b"v");
    put(&s, &g0, b"gx");
    put(&s, &k1, b"v1");
    put(&s, &g1, b"gx1");
    let mut b = s.batch();
    let (lo, hi) = keys::db_range(0);
    s.delete_range(&mut b, &lo, &hi);
    s.write(b).unwrap();
    assert_eq!(s.write_tier_size().records, 2, "db 1's records wait in the tier");
    assert_eq!((peer(&p, &k0), peer(&p, &g0)), (None, None), "not written");
    assert_eq!((peer(&p, &k1), peer(&p, &g1)), (None, None), "not applied");
    assert_eq!((get(&s, &k0), get(&s, &g0)), (None, None));
    assert_eq!(get(&s, &k1), Some(b"v1".to_vec()));
    let mut seen = Vec::new();
    let (mlo, mhi) = keys::meta_db_range(0);
    s.scan(&mlo, &mhi, |k, _| {
        seen.push(k.to_vec());
        true
    })
    .unwrap();
    assert!(seen.is_empty(), "db 0 is empty: {seen:?}");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!((peer(&p, &k0), peer(&p, &g0)), (None, None), "not brought back");
    assert_eq!(peer(&p, &k1), Some(b"v1".to_vec()));
    assert_eq!(peer(&p, &g1), Some(b"gx1".to_vec()));
}

/// A shared transaction's wide range delete still applies the whole tier
/// first (its part may be abandoned: the tier's records must be in the
/// families then).
#[test]
fn a_shared_transactions_wide_range_applies_the_whole_tier() {
    let (_d, s, p) = stores(1000);
    let k1 = keys::meta_key(1, b"k");
    put(&s, &k1, b"v");
    let mut wb = WriteBatch::default();
    let (lo, hi) = keys::db_range(0);
    wb.delete_range_cf(s.cf, &lo, &hi);
    s.tier_write_out(wb.data()).unwrap();
    assert_eq!(s.write_tier_size().records, 0, "applied whole");
    assert_eq!(peer(&p, &k1), Some(b"v".to_vec()));
}

/// A range delete inside a live collection (a list's trimmed end): the
/// records the tier holds inside it are written before it, so a later
/// drain never brings them back; the collection's others stay readable.
#[test]
fn a_range_delete_inside_a_live_collection_is_not_undone_by_a_drain() {
    let (_d, s, p) = stores(1000);
    let rec = |m: &[u8]| keys::sub_key(0, b"l", 1, m);
    let (a, b_key, d) = (rec(b"a1"), rec(b"b1"), rec(b"d"));
    let other = keys::meta_key(0, b"other");
    for k in [&a, &b_key, &d, &other] {
        put(&s, k, b"x");
    }
    let mut b = s.batch();
    s.delete_range(&mut b, &rec(b"a"), &rec(b"c"));
    s.write(b).unwrap();
    assert_eq!((get(&s, &a), get(&s, &b_key)), (None, None));
    assert_eq!(get(&s, &d), Some(b"x".to_vec()));
    assert_eq!(peer(&p, &other), None, "the other records wait in the tier");
    s.tier_apply().unwrap();
    assert_eq!((peer(&p, &a), peer(&p, &b_key)), (None, None), "not brought back");
    assert_eq!(peer(&p, &d), Some(b"x".to_vec()));
    assert_eq!(peer(&p, &other), Some(b"x".to_vec()));
}

/// A transaction over several shards writes out only what the tier holds
/// of its own records as it stages them: the tier keeps the others, no
/// drain writes an older value over the commit, and an abandoned
/// transaction loses nothing the tier held.
#[test]
fn a_shared_transaction_writes_out_only_its_own_keys() {
    let (_d, e) = engine(2, 1 << 20, 1000, 0);
    let (s0, s1) = (e.shard(0).unwrap(), e.shard(1).unwrap());
    // What RocksDB holds (peers leave keys the tier held to the owner).
    let in_db = |k: &[u8]| s0.db.get_cf(s0.cf, k).unwrap();
    let (k, other, gone) = (keys::meta_key(0, b"k"), keys::meta_key(0, b"other"), keys::meta_key(0, b"gone"));
    put(&s0, &k, b"old");
    put(&s0, &other, b"o");
    put(&s0, &gone, b"kept");
    assert_eq!(s0.write_tier_size().records, 3);
    s0.begin_tx(true);
    s1.begin_tx(true);
    put(&s0, &k, b"new");
    assert_eq!(s0.write_tier_size().records, 2, "k was written out");
    assert_eq!(get(&s0, &k), Some(b"new".to_vec()), "the transaction reads its own write");
    put(&s1, &keys::meta_key(0, b"k1"), b"v1");
    let w = e.write_tx();
    s0.end_tx(&w);
    s1.end_tx(&w);
    w.unwrap();
    assert_eq!(in_db(&other), None, "other waits in the tier");
    s0.tier_apply().unwrap();
    assert_eq!(in_db(&k), Some(b"new".to_vec()), "no older value drained over the commit");
    assert_eq!(in_db(&other), Some(b"o".to_vec()));
    // Abandoned: what the tier held of its keys is in the families.
    put(&s0, &gone, b"newer");
    s0.begin_tx(true);
    put(&s0, &gone, b"never");
    e.drop_tx();
    s0.end_tx(&Err(StorageError("abandoned".into())));
    assert_eq!(get(&s0, &gone), Some(b"newer".to_vec()));
    assert_eq!(in_db(&gone), Some(b"newer".to_vec()));
}

/// A big collection's records leave the tier a part at a time
/// (`write_out_part`, before a big RENAME's snapshot), the older
/// generation's first: what each part took is in the families, the other
/// records wait in the tier, and a key both generations held ends with
/// dirty's value.
#[test]
fn a_collections_records_are_written_out_a_part_at_a_time() {
    let (_d, s, p) = stores(100_000);
    let rec = |i: usize| keys::sub_key(0, b"s", 1, format!("m{i:03}").as_bytes());
    for i in 0..10 {
        put(&s, &rec(i), b"old");
    }
    s.tier_start_drain();
    for i in 5..15 {
        put(&s, &rec(i), b"new");
    }
    let other = keys::meta_key(0, b"other");
    put(&s, &other, b"o");
    let (lo, hi) = keys::sub_range(0, b"s", 1);
    let mut parts = 1;
    while !s.write_out_part(&lo, &hi, 4).unwrap() {
        parts += 1;
        assert!(parts < 20, "it ends");
    }
    assert!(parts >= 3, "dirty's 10 records alone take three parts of 4: {parts}");
    let want = |i: usize| Some(if i < 5 { b"old".to_vec() } else { b"new".to_vec() });
    for i in 0..15 {
        assert_eq!(peer(&p, &rec(i)), want(i), "{i} written");
        assert_eq!(get(&s, &rec(i)), want(i));
    }
    assert_eq!(peer(&p, &other), None, "other waits in the tier");
    assert!(s.write_out_part(&lo, &hi, 4).unwrap(), "nothing left");
    s.tier_apply().unwrap();
    for i in 0..15 {
        assert_eq!(peer(&p, &rec(i)), want(i), "{i}: no older value drained over it");
    }
    assert_eq!(peer(&p, &other), Some(b"o".to_vec()));
}

/// Transactions over several shards write past the tier with direct
/// records. While the tier holds nothing the marks follow them, so once
/// the families persist the marks the log's cut removes those records.
/// Unmarked, a shard written only by such transactions (or scripts behind
/// the gate) kept every direct record, and each restart loaded them all
/// into its tier (tests/script_atomic.rs: 449, 1063, 1830... batches).
#[test]
fn shared_transactions_move_the_marks_and_their_direct_records_are_cut() {
    let (_d, e) = engine(2, 1 << 20, 1000, 0);
    let (s0, s1) = (e.shard(0).unwrap(), e.shard(1).unwrap());
    let mark = |s: &ShardStore| {
        s.db.get_cf(s.cf, MARK)
            .unwrap()
            .map(|v| u64::from_be_bytes(v[..8].try_into().unwrap()))
    };
    let directs = |s: &ShardStore| {
        let mut it = s.db.raw_iterator_cf(s.cf);
        it.seek(direct_key(0));
        let mut n = 0;
        while it.key().is_some_and(|k| k.starts_with(DIRECT)) {
            n += 1;
            it.next();
        }
        n
    };
    let tx = |i: usize| {
        s0.begin_tx(true);
        s1.begin_tx(true);
        put(&s0, &keys::meta_key(0, b"a"), i.to_string().as_bytes());
        put(&s1, &keys::meta_key(0, b"b"), i.to_string().as_bytes());
        let w = e.write_tx();
        s0.end_tx(&w);
        s1.end_tx(&w);
        w.unwrap();
    };
    for i in 0..100 {
        tx(i);
    }
    assert_eq!(s0.wtier.last_pos(), 100, "a position a part");
    assert_eq!(mark(&s0), Some(100), "the marks follow the parts");
    assert_eq!(mark(&s1), Some(100));
    assert_eq!(directs(&s0), 100, "not persisted yet: nothing is cut");
    for s in [&s0, &s1] {
        s.db.flush_cf(s.cf).unwrap();
        s.db.flush_cf(s.sub).unwrap();
    }
    for i in 100..130 {
        tx(i);
    }
    assert!(directs(&s0) <= 30, "cut below the persisted marks: {}", directs(&s0));
    assert!(directs(&s1) <= 30, "{}", directs(&s1));
    assert_eq!(get(&s0, &keys::meta_key(0, b"a")), Some(b"129".to_vec()));
    // A record the tier holds keeps the marks where they are (its drain
    // moves them).
    put(&s0, &keys::meta_key(0, b"other"), b"o");
    let before = mark(&s0);
    tx(130);
    assert_eq!(mark(&s0), before);
    assert_eq!(mark(&s1), Some(s1.wtier.last_pos()));
}
