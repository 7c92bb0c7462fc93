//! The turn's log record: each key a group changed, once, at its last
//! value (`ShardStore::tier_turn_record`).

use super::*;

/// The log's batches past position 0, in order, as (key, value) lists.
fn logged(dir: &std::path::Path) -> Vec<Vec<(Bytes, Option<Bytes>)>> {
    let mut out = Vec::new();
    super::super::file::replay(&super::log_dir(&dir.join("db"), 0), 0, |_, b| {
        out.push(records(&Bytes::copy_from_slice(b)).unwrap());
        Ok(())
    })
    .unwrap();
    out
}

fn b(s: &[u8]) -> Bytes {
    Bytes::copy_from_slice(s)
}

#[test]
fn a_turn_logs_each_key_it_changed_once_at_its_last_value() {
    let (d, s, _p) = stores(100_000);
    let (hot, cold) = (keys::meta_key(0, b"hot"), keys::meta_key(0, b"cold"));
    let m = |i: u32| keys::sub_key(0, b"z", 1, format!("m{i}").as_bytes());
    let put_new = |key: &[u8], v: &[u8]| put_new(&s, key, v);
    let delete = |key: &[u8]| delete(&s, key);
    let turn = |f: &dyn Fn()| {
        s.begin_group();
        f();
        s.defer_group();
        s.end_turn();
    };
    // One turn: `hot` three times, a new member put and deleted (gone
    // whole: nothing below holds it), another new member put, deleted and
    // put again, `cold` once.
    turn(&|| {
        put(&s, &hot, b"1");
        put(&s, &hot, b"2");
        put_new(&m(1), b"a");
        delete(&m(1));
        put_new(&m(2), b"b");
        delete(&m(2));
        put_new(&m(2), b"c");
        put(&s, &cold, b"x");
        put(&s, &hot, b"3");
    });
    let log = logged(d.path());
    assert_eq!(log.len(), 1);
    // In the order of each key's last change; m1's delete is logged (a
    // delete of nothing). m2 gone whole and put again is two records of
    // the tier: both last changes, the put after the delete.
    assert_eq!(
        log[0],
        vec![
            (b(&m(1)), None),
            (b(&m(2)), None),
            (b(&m(2)), Some(b(b"c"))),
            (b(&cold), Some(b(b"x"))),
            (b(&hot), Some(b(b"3"))),
        ]
    );
    // A turn that writes only what dirty holds already adds no record.
    turn(&|| {
        put(&s, &hot, b"3");
        put(&s, &cold, b"x");
    });
    assert_eq!(logged(d.path()).len(), 1);
    // A record new in dirty, logged, then deleted: gone from dirty, its
    // delete is logged (else a replay would bring the put back).
    turn(&|| delete(&m(2)));
    let log = logged(d.path());
    assert_eq!(log.len(), 2);
    assert_eq!(log[1], vec![(b(&m(2)), None)]);
    assert_eq!(get(&s, &m(2)), None);
    assert_eq!(get(&s, &hot), Some(b"3".to_vec()));
}

/// What the deduplicated log replays is what the turns left: its
/// batches applied in order give every key its last value.
#[test]
fn the_log_replayed_in_order_gives_the_last_values() {
    let (d, s, _p) = stores(100_000);
    let k = |i: u32| keys::meta_key(0, format!("k{i}").as_bytes());
    for t in 0..20u32 {
        s.begin_group();
        for i in 0..50u32 {
            put(&s, &k(i % 7), format!("{t}-{i}").as_bytes());
            if i.is_multiple_of(5) {
                delete(&s, &k(100 + t));
                put(&s, &k(100 + t + 1), b"next");
            }
        }
        s.defer_group();
        s.end_turn();
    }
    let mut state = std::collections::BTreeMap::new();
    let log = logged(d.path());
    assert_eq!(log.len(), 20);
    for batch in log {
        let mut keys: Vec<&Bytes> = batch.iter().map(|(k, _)| k).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), batch.len(), "each key once a turn");
        for (key, v) in batch {
            state.insert(key, v);
        }
    }
    for i in (0..7).chain(100..=120) {
        let want = state.get(&b(&k(i))).cloned().flatten().map(|v| v.to_vec());
        assert_eq!(get(&s, &k(i)), want, "k{i}");
    }
    assert_eq!(get(&s, &k(3)), Some(b"19-45".to_vec()));
    assert_eq!(get(&s, &k(110)), None);
    assert_eq!(get(&s, &k(120)), Some(b"next".to_vec()));
}
