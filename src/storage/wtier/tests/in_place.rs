//! Values written over in place (`Gen::put_over`): a write of the same
//! length as the value dirty holds takes no new memory, unless a read
//! holds a span of the tier.

use super::*;

/// The values the log's batches past position 0 hold for `key`, in order.
fn logged_values(dir: &std::path::Path, key: &[u8]) -> Vec<Option<Bytes>> {
    let mut out = Vec::new();
    super::super::file::replay(&super::log_dir(&dir.join("db"), 0), 0, |_, b| {
        for (k, v) in records(&Bytes::copy_from_slice(b)).unwrap() {
            if k == key {
                out.push(v);
            }
        }
        Ok(())
    })
    .unwrap();
    out
}

/// A hot key written with changing values of one length keeps one
/// value's bytes in dirty however often it is written: no waste, no
/// drain, and the log holds each turn's value.
#[test]
fn a_value_of_the_same_length_is_written_over_in_place() {
    let budget = 128 << 10;
    let (d, e) = engine(1, 0, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    let k = keys::meta_key(0, b"hot");
    let turn = |i: u32| {
        s.begin_group();
        put(&s, &k, &[i as u8; 1000]);
        s.defer_group();
        s.end_turn();
    };
    turn(0);
    let one = s.write_tier_size();
    assert_eq!(one.records, 1);
    // 120 KB of writes, under the log's limit (the share, 128 KiB) and
    // past half the share, where waste would have drained it: the charge
    // stays one value's.
    for i in 1..120 {
        turn(i);
        assert_eq!(s.write_tier_size().bytes, one.bytes, "turn {i}");
        assert_eq!(get(&s, &k), Some(vec![i as u8; 1000]));
    }
    assert_eq!(peer(&p, &k), None, "never drained for its waste");
    let logged = logged_values(d.path(), &k);
    assert_eq!(logged.len(), 120, "each turn's value");
    assert_eq!(logged.last().unwrap().as_deref(), Some(&[119u8; 1000][..]));
    // Another length takes a new copy and charges the old one.
    s.begin_group();
    put(&s, &k, &[1; 999]);
    s.defer_group();
    s.end_turn();
    assert_eq!(s.write_tier_size().bytes, one.bytes + 999);
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &k), Some(vec![1; 999]));
}

/// A read that holds a value of the tier while it writes (the span it
/// reads is pinned) keeps its bytes: the write takes a new copy.
#[test]
fn a_value_a_read_holds_is_not_written_over() {
    let (_d, s, _p) = stores(1000);
    let k = keys::meta_key(0, b"k");
    grouped(&s, &k, Some(b"aaaa"));
    let before = s.write_tier_size();
    let seen = s
        .get_with(&k, |v| {
            assert!(grouped(&s, &k, Some(b"bbbb")).is_empty());
            v.map(|v| v.to_vec())
        })
        .unwrap();
    assert_eq!(seen.as_deref(), Some(&b"aaaa"[..]), "the bytes it held did not change");
    assert_eq!(get(&s, &k), Some(b"bbbb".to_vec()));
    assert_eq!(s.write_tier_size().bytes, before.bytes + 4, "a new copy, the old one charged");
    // With no read under way the next write is in place again.
    assert!(grouped(&s, &k, Some(b"cccc")).is_empty());
    assert_eq!(s.write_tier_size().bytes, before.bytes + 4);
    assert_eq!(get(&s, &k), Some(b"cccc".to_vec()));
}

/// A failed log append puts back every value its group wrote over in
/// place, in the reverse order, among changes that took new copies.
#[test]
fn a_failed_append_puts_back_the_values_written_over() {
    let (_d, s, p) = stores(1000);
    let (a, b) = (keys::meta_key(0, b"a"), keys::sub_key(0, b"h", 1, b"f"));
    s.begin_group();
    put(&s, &a, b"1111");
    put(&s, &b, b"xy");
    assert!(s.end_group().is_empty());
    let before = s.write_tier_size();
    s.begin_group();
    put(&s, &a, b"2222"); // in place
    put(&s, &b, b"pq"); // in place
    put(&s, &a, b"33333"); // a new copy
    put(&s, &a, b"44444"); // in place over the copy
    put(&s, &b, b"rs"); // in place again
    put(&s, &a, b"555"); // a new copy
    put(&s, &a, b"666"); // in place
    assert_eq!(get(&s, &a), Some(b"666".to_vec()));
    assert_eq!(get(&s, &b), Some(b"rs".to_vec()));
    fail_next_append(&s);
    assert_eq!(s.end_group().len(), 1, "the group's writes are lost");
    assert_eq!(get(&s, &a), Some(b"1111".to_vec()));
    assert_eq!(get(&s, &b), Some(b"xy".to_vec()));
    assert_eq!(s.write_tier_size().records, before.records);
    // The apply writes what was logged.
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &a), Some(b"1111".to_vec()));
    assert_eq!(peer(&p, &b), Some(b"xy".to_vec()));
    // And the next group writes over in place as usual, and is logged.
    assert!(grouped(&s, &a, Some(b"7777")).is_empty());
    assert!(grouped(&s, &a, Some(b"8888")).is_empty());
    assert_eq!(get(&s, &a), Some(b"8888".to_vec()));
    s.tier_apply().unwrap();
    assert_eq!(peer(&p, &a), Some(b"8888".to_vec()));
}
