//! The idle write-back (`ShardStore::tier_write_back`): slice by slice,
//! the draining generation first, then dirty; nothing while staged
//! records wait for their log append.

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
