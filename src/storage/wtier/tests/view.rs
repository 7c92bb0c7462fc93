//! Range reads over the meta records merge what the tier holds (`view`);
//! a range read inside one collection writes only its records.

use std::collections::BTreeMap;

use super::*;

fn del(s: &ShardStore, k: &[u8]) {
    let mut b = s.batch();
    s.delete(&mut b, k);
    s.write(b).unwrap();
}

/// The records of `[from, to)` a scan visits, past `after` when given,
/// at most `n`.
fn scan(s: &ShardStore, from: &[u8], after: Option<&[u8]>, to: &[u8], n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    s.scan_from(None, from, after, to, |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        out.len() < n
    })
    .unwrap();
    out
}

/// Keys in RocksDB, in the draining generation and in dirty (sealed runs
/// and keys not yet sorted), overwritten and deleted across them: a scan
/// of the db's meta records sees each key's latest value once, in key
/// order, without writing the tier to RocksDB; a scan resumed past a key
/// goes on from there.
#[test]
fn a_meta_scan_merges_the_tier_without_applying_it() {
    let (_d, s, p) = stores(1 << 20);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let key = |i: u32| keys::meta_key(0, format!("k{i:05}").as_bytes());
    let mut set = |s: &ShardStore, i: u32, v: &str| {
        put(s, &key(i), v.as_bytes());
        model.insert(key(i), v.as_bytes().to_vec());
    };
    for i in (0..3000).step_by(3) {
        set(&s, i, "disk");
    }
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &key(0)), Some(b"disk".to_vec()));
    // The draining generation: more than a run of keys (sealed runs).
    for i in (1..12000).step_by(2) {
        set(&s, i, "drain");
    }
    s.tier_start_drain();
    // Dirty: over the drain and the disk, and keys of its own, the
    // newest not yet sorted into a run.
    for i in (0..9000).step_by(5) {
        set(&s, i, "dirty");
    }
    for i in (0..3000).step_by(7) {
        del(&s, &key(i));
        model.remove(&key(i));
    }
    let records = s.write_tier_size().records;
    // Dirty's writes applied ~4500 of the drain's 6000 (twice as many as
    // they added), and it let go of those.
    assert!(records > 3000, "the tier holds the drain's and dirty's records: {records}");
    let (lo, hi) = keys::meta_db_range(0);
    let all = scan(&s, &lo, None, &hi, usize::MAX);
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len());
    assert!(all == want, "the scan is the model");
    assert_eq!(s.write_tier_size().records, records, "nothing was applied");

    // Resumed in steps of 10, as SCAN's cursor does.
    let mut got = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    loop {
        let step = scan(&s, &lo, after.as_deref(), &hi, 10);
        let Some(last) = step.last() else { break };
        after = Some(last.0.clone());
        got.extend(step);
    }
    assert!(got == want, "resumed scans see each key once");
    // The drain goes on under the scans and the result holds.
    s.tier_apply().unwrap();
    assert!(scan(&s, &lo, None, &hi, usize::MAX) == want);
}

/// A read inside a transaction (its overlay) and a scan of one
/// collection's members still have the tier written first.
#[test]
fn other_range_reads_still_write_what_they_meet() {
    let (_d, s, p) = stores(1 << 20);
    let f = keys::sub_key(0, b"h", 1, b"f");
    put(&s, &f, b"1");
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    assert_eq!(scan(&s, &lo, None, &hi, 10), vec![(f.clone(), b"1".to_vec())]);
    assert_eq!(peer(&p, &f), Some(b"1".to_vec()), "the collection was written");
}

/// A snapshot for one collection's sliced read writes only that
/// collection's records first: the tier keeps the rest, and the
/// snapshot reads the collection as it was, whatever comes after.
#[test]
fn a_snapshot_of_one_collection_writes_only_its_records() {
    let (_d, s, p) = stores(1 << 20);
    let (a, b_key) = (keys::sub_key(0, b"h", 1, b"a"), keys::sub_key(0, b"h", 1, b"b"));
    let (other, m) = (keys::sub_key(0, b"g", 1, b"x"), keys::meta_key(0, b"k"));
    for k in [&a, &b_key, &other, &m] {
        put(&s, k, b"1");
    }
    let (lo, hi) = keys::sub_range(0, b"h", 1);
    assert_eq!(s.write_tier_size().records, 4, "all four wait in the tier");
    let snap = s.snapshot_of(&lo, &hi);
    assert_eq!(s.write_tier_size().records, 2, "g's member and k wait in the tier");
    assert_eq!((peer(&p, &other), peer(&p, &m)), (None, None));
    put(&s, &a, b"2");
    del(&s, &b_key);
    let mut seen = Vec::new();
    s.scan_from(Some(&snap), &lo, None, &hi, |k, v| {
        seen.push((k.to_vec(), v.to_vec()));
        true
    })
    .unwrap();
    assert_eq!(seen, vec![(a.clone(), b"1".to_vec()), (b_key.clone(), b"1".to_vec())]);
    assert_eq!(
        scan(&s, &lo, None, &hi, 10),
        vec![(a, b"2".to_vec())],
        "the live read sees the later writes"
    );
}

/// Active expiry's scan of the TTL index's due part merges the entries
/// the tier holds (new ones, deleted ones) without writing the tier.
#[test]
fn a_ttl_index_scan_merges_the_tier_without_applying_it() {
    let (_d, s, _p) = stores(1 << 20);
    let now = 1_000_000u64;
    let entry = |at: u64, k: &str| keys::ttl_key(at, 0, k.as_bytes());
    put(&s, &entry(now - 10, "a"), b"");
    put(&s, &entry(now - 5, "b"), b"");
    s.tier_apply().unwrap();
    put(&s, &entry(now - 7, "c"), b"");
    put(&s, &entry(now + 60_000, "later"), b"");
    put(&s, &keys::meta_key(0, b"m"), b"v");
    del(&s, &entry(now - 5, "b"));
    let records = s.write_tier_size().records;
    assert_eq!(records, 4);
    let due = scan(&s, &keys::TTL_PREFIX, None, &keys::ttl_key(now + 1, 0, b""), usize::MAX);
    let due: Vec<Vec<u8>> = due.into_iter().map(|(k, _)| k).collect();
    assert_eq!(due, vec![entry(now - 10, "a"), entry(now - 7, "c")]);
    assert_eq!(s.write_tier_size().records, records, "nothing was applied");
}

/// A range read of one collection writes only its records (both
/// generations', the older first) and leaves the rest in the tier; the
/// drain later passes over what it took.
#[test]
fn a_range_read_of_one_collection_writes_only_its_records() {
    let (_d, s, p) = stores(11);
    let z = |f: &str| keys::sub_key(0, b"z", 1, f.as_bytes());
    let b = |i: usize| keys::sub_key(0, b"b", 1, &[b'0' + i as u8]);
    let bv = |i: usize| format!("b{i}").into_bytes();
    let group = |recs: Vec<(Vec<u8>, Option<Vec<u8>>)>| {
        s.begin_group();
        let mut bt = s.batch();
        for (k, v) in recs {
            match v {
                Some(v) => s.put(&mut bt, &k, &v),
                None => s.delete(&mut bt, &k),
            }
        }
        s.write(bt).unwrap();
        assert!(s.end_group().is_empty());
    };
    // Eleven records: dirty becomes the draining generation (z's x and y,
    // which sort after b's, among its records not yet applied), and z's
    // records are written again in the new dirty.
    let mut first = vec![(z("x"), Some(b"1".to_vec())), (z("y"), Some(b"2".to_vec()))];
    first.extend((1..=8).map(|i| (b(i), Some(bv(i)))));
    group(first);
    group(vec![(b(9), Some(bv(9)))]);
    group(vec![(z("x"), Some(b"new".to_vec())), (z("y"), None)]);
    assert_eq!(peer(&p, &z("x")), None, "not applied yet");
    assert_eq!(get(&s, &z("x")), Some(b"new".to_vec()));
    let (lo, hi) = keys::sub_range(0, b"z", 1);
    let mut seen = Vec::new();
    s.scan(&lo, &hi, |k, v| {
        seen.push((k.to_vec(), v.to_vec()));
        true
    })
    .unwrap();
    assert_eq!(seen, vec![(z("x"), b"new".to_vec())], "the newer generation wins");
    assert_eq!(peer(&p, &z("x")), Some(b"new".to_vec()));
    assert_eq!(peer(&p, &z("y")), None);
    // b's records not drained yet are still only in the tier.
    assert_eq!(peer(&p, &b(9)), None, "b stays in the tier");
    for i in 1..=9 {
        assert_eq!(get(&s, &b(i)), Some(bv(i)));
    }
    // The rest drains as usual, passing over z's keys.
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    for i in 1..=9 {
        assert_eq!(peer(&p, &b(i)), Some(bv(i)));
    }
    assert_eq!(peer(&p, &z("x")), Some(b"new".to_vec()));
    assert_eq!(peer(&p, &z("y")), None);
}

/// A range read that cannot meet what a held group staged leaves the
/// group unwritten (no log append for it); one that can meet it logs the
/// group first, then writes that collection's records.
#[test]
fn a_range_read_logs_the_held_group_only_when_it_meets_it() {
    let (_d, s, p) = stores(1000);
    let a = keys::sub_key(0, b"a", 1, b"f");
    s.begin_group();
    put(&s, &a, b"1");
    s.defer_group();
    let before = s.write_tier_size().log_bytes;
    let (lo, hi) = keys::sub_range(0, b"other", 1);
    s.scan(&lo, &hi, |_, _| true).unwrap();
    assert_eq!(s.write_tier_size().log_bytes, before, "not logged by an unrelated read");
    assert_eq!(peer(&p, &a), None);
    let (lo, hi) = keys::sub_range(0, b"a", 1);
    let mut n = 0;
    s.scan(&lo, &hi, |_, _| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 1);
    assert!(s.write_tier_size().log_bytes > before, "logged before it was written");
    assert_eq!(peer(&p, &a), Some(b"1".to_vec()));
    s.end_turn();
    assert!(s.lost_since(0).is_empty());
}
