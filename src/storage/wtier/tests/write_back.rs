//! The idle write-back (`ShardStore::tier_write_back`): slice by slice,
//! the draining generation first, then dirty; nothing while staged
//! records wait for their log append. And what a read of the tier holds
//! while the tier is written back.

use super::*;

#[test]
fn an_idle_write_back_empties_the_tier_a_slice_at_a_time() {
    let (_d, s, p) = stores(1000);
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::Done, "an empty tier");
    let k = |i: usize| keys::sub_key(0, b"h", 1, format!("f{i:02}").as_bytes());
    s.begin_group();
    for i in 0..10 {
        put(&s, &k(i), b"v");
    }
    // Staged, not logged yet: nothing is written back.
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::Wait);
    assert_eq!(s.write_tier_size().records, 10);
    assert!(s.end_group().is_empty());
    // Nor while a transaction is open here (a multi-shard EXEC's part).
    s.begin_tx(true);
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::Wait);
    s.end_tx(&Ok(()));
    assert_eq!(s.write_tier_size().records, 10);
    // Dirty becomes the draining generation, applied 4 records a call in
    // key order; the owner reads every record all along.
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::More);
    assert_eq!(peer(&p, &k(3)), Some(b"v".to_vec()));
    assert_eq!(peer(&p, &k(4)), None);
    // A write meanwhile goes to the new dirty generation, and is written
    // back after the draining one.
    s.begin_group();
    put(&s, &k(0), b"new");
    assert!(s.end_group().is_empty());
    assert_eq!(get(&s, &k(0)), Some(b"new".to_vec()));
    assert_eq!(peer(&p, &k(5)), Some(b"v".to_vec()), "the write's own pace: 2 records");
    assert_eq!(peer(&p, &k(6)), None);
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::More, "dirty's record is left");
    assert_eq!(peer(&p, &k(9)), Some(b"v".to_vec()));
    assert_eq!(peer(&p, &k(0)), Some(b"v".to_vec()), "not yet the newer value");
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::Done);
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(peer(&p, &k(0)), Some(b"new".to_vec()));
    assert_eq!(get(&s, &k(0)), Some(b"new".to_vec()));
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::Done);
}

/// A value read from the tier stays as it was while the read's own code
/// writes, has the generation holding it applied, and fills the memory it
/// was in with later records: that generation's chunks wait until the read
/// is over, and the next logged turn after it hands them on.
#[test]
fn a_value_read_from_the_tier_outlives_the_drain_its_reader_causes() {
    let (_d, s, _p) = stores(1000);
    let k = |i: usize| keys::sub_key(0, b"h", 1, format!("f{i:04}").as_bytes());
    for i in 0..100 {
        put(&s, &k(i), &[b'a'; 200]);
    }
    let seen = s
        .get_with(&k(7), |v| {
            let v = v.expect("in the tier");
            s.tier_apply().unwrap();
            assert_eq!(s.write_tier_size().records, 0, "applied");
            assert!(s.wtier.pins.waiting() > 0, "its chunks wait for the read");
            for i in 0..200 {
                put(&s, &k(1000 + i), &[b'z'; 200]);
            }
            assert!(s.wtier.pins.waiting() > 0, "still: the read is not over");
            v.to_vec()
        })
        .unwrap();
    assert_eq!(seen, vec![b'a'; 200]);
    put(&s, &k(5000), b"x");
    assert_eq!(s.wtier.pins.waiting(), 0, "handed on once no read holds them");
    assert_eq!(get(&s, &k(7)), Some(vec![b'a'; 200]));
    assert_eq!(get(&s, &k(1100)), Some(vec![b'z'; 200]));
}

/// The draining generation keeps the records it applied to its end: a
/// read finds there what RocksDB now holds, a later write wins over them
/// (dirty is read first), and a range delete past the tier forgets them
/// (a read after it finds nothing, not the applied value).
#[test]
fn applied_records_stay_readable_and_a_delete_past_the_tier_forgets_them() {
    let (_d, s, p) = stores(1000);
    let k = |i: usize| keys::meta_key(0, format!("k{i:02}").as_bytes());
    for i in 0..10 {
        put(&s, &k(i), b"v");
    }
    assert_eq!(s.tier_write_back(4).unwrap(), WriteBack::More);
    assert_eq!(s.write_tier_size().records, 6, "4 applied, not counted");
    assert_eq!(get(&s, &k(2)), Some(b"v".to_vec()));
    put(&s, &k(1), b"newer");
    assert_eq!(get(&s, &k(1)), Some(b"newer".to_vec()), "dirty's over the applied record");
    // A transaction's range delete goes past the tier.
    delete_db0_in_tx(&s);
    for i in 0..10 {
        assert_eq!(get(&s, &k(i)), None, "k{i} deleted");
    }
    put(&s, &k(3), b"again");
    s.tier_apply().unwrap();
    assert_eq!(s.write_tier_size().records, 0);
    assert_eq!(
        (get(&s, &k(3)), peer(&p, &k(3))),
        (Some(b"again".to_vec()), Some(b"again".to_vec()))
    );
    assert_eq!((get(&s, &k(2)), peer(&p, &k(2))), (None, None));
}
