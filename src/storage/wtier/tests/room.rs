//! Dirty's room: half the shard's share, and half of the meta cache's
//! free room borrowed (`ShardStore::tier_set_room`).

use super::*;

/// Dirty may also take half of the meta cache's free room (beyond what
/// the draining generation will take there), and as many log bytes: a
/// working set past half the shard's share stays in one generation while
/// the cache has room, and a full cache lends nothing. (The tests above
/// run without a meta cache: the share alone.)
#[test]
fn dirty_borrows_half_of_the_meta_caches_room() {
    let (budget, cache) = (128 << 10, 1 << 20);
    let (_dir, e) = engine(1, cache, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    let (t, c) = (&s.wtier, s.cache.as_ref().unwrap());
    // An empty cache lends half of itself (the meta records' share of
    // the cache size asked).
    let lent = c.room() / 2;
    assert!(lent >= cache / 4, "{lent}");
    assert_eq!(t.room.get(), budget / 2 + lent);
    assert_eq!(t.log_room.get(), budget / 2 + lent);
    // A draining generation bigger than the cache's room: nothing lent.
    s.tier_set_room(cache + 1);
    assert_eq!((t.room.get(), t.log_room.get()), (budget / 2, t.limit.log));
    s.tier_set_room(0);
    let k = |i: u32| keys::sub_key(0, b"h", 1, format!("f{i}").as_bytes());
    let turn = |i: u32| {
        s.begin_group();
        put(&s, &k(i), &[i as u8; 1000]);
        s.defer_group();
        s.end_turn();
    };
    // ~220 KB of records, past half the share (64 KiB): all in dirty.
    for i in 0..200 {
        turn(i);
    }
    assert_eq!(s.write_tier_size().records, 200);
    assert!(s.write_tier_size().bytes > budget, "{:?}", s.write_tier_size());
    assert_eq!(peer(&p, &k(0)), None, "only in the tier");
    // A cache filled by reads lends nothing: the next write drains.
    // (Small entries: each of the cache's parts stops short of its
    // budget by less than one entry.)
    for i in 0..2000u32 {
        c.insert(&keys::meta_key(0, format!("r{i}").as_bytes()), Some(&[7; 800]));
    }
    assert!(c.room() < 32 << 10, "{}", c.room());
    s.tier_set_room(0);
    assert!(t.room.get() < budget / 2 + (16 << 10), "{}", t.room.get());
    for i in 200..260 {
        turn(i);
    }
    assert_eq!(peer(&p, &k(0)), Some(vec![0; 1000]), "drained once the room was gone");
    assert_eq!(get(&s, &k(259)), Some(vec![259u32 as u8; 1000]));
}

/// What dirty borrows of the meta cache's room holds records, not the
/// values they overwrote (with values of another length: one of the same
/// length is written over in place): those still drain it at half the
/// share.
#[test]
fn overwritten_values_do_not_take_the_borrowed_room() {
    let budget = 128 << 10;
    let (_dir, e) = engine(1, 1 << 20, 0, budget);
    let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
    assert!(s.wtier.room.get() > 2 * budget, "{}", s.wtier.room.get());
    let k = keys::sub_key(0, b"h", 1, b"hot");
    let turn = |i: u32| {
        s.begin_group();
        put(&s, &k, &[i as u8; 1000][..1000 - i as usize % 2]);
        s.defer_group();
        s.end_turn();
    };
    for i in 0..60 {
        turn(i);
    }
    assert_eq!(peer(&p, &k), None, "only in the tier");
    for i in 60..80 {
        turn(i);
    }
    // ~79 KB of overwritten values, past half the share (64 KiB), far
    // under the room: drained.
    assert!(peer(&p, &k).is_some(), "drained at half the share of waste");
    assert_eq!(get(&s, &k), Some(vec![79; 999]));
}
