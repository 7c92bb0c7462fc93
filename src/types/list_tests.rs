//! `types::list`'s tests: the list model against a deque, in every packing.

use super::*;
use crate::types::keyspace::for_test as keyspace;
use std::collections::VecDeque;

fn check(ks: &Keyspace, model: &VecDeque<Vec<u8>>) {
    let l = List::open(ks, 0, b"l", 1, false).unwrap();
    match l {
        None => assert!(model.is_empty()),
        Some(l) => {
            assert_eq!(l.len(), model.len() as u64);
            let all = l.range(0, u64::MAX).unwrap();
            assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
            let mut back = Vec::new();
            l.walk_back(|_, v| {
                back.push(v.to_vec());
                true
            })
            .unwrap();
            back.reverse();
            assert_eq!(back, all);
        }
    }
}

/// Opens `l` for a change, a new list packed by `shift`.
fn open_packed<'k>(ks: &'k Keyspace, shift: u8) -> List<'k> {
    let mut l = List::open(ks, 0, b"l", 1, true).unwrap().unwrap();
    if !l.existed() {
        (l.shift, l.c.chunk_shift, l.orig.chunk_shift) = (shift, shift, shift);
    }
    l
}

#[test]
fn operations_agree_with_a_deque() {
    for shift in [lchunk::SHIFT, 0, 1] {
        agree_with_a_deque(shift, 3000, 1);
    }
}

/// Many elements a command: pushes, pops and trims over many chunks
/// (range deletes), in lists packed each way.
#[test]
fn long_operations_agree_with_a_deque() {
    for shift in [lchunk::SHIFT, 0, 2] {
        agree_with_a_deque(shift, 400, 150);
    }
}

fn agree_with_a_deque(shift: u8, steps: u64, many: u64) {
    let dir = tempfile::tempdir().unwrap();
    let ks = keyspace(dir.path());
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n.max(1)
    };
    for step in 0..steps {
        let v = format!("v{}", rnd(20)).into_bytes();
        let mut l = open_packed(&ks, shift);
        assert_eq!(l.shift, if l.existed() { l.orig.chunk_shift } else { shift });
        match rnd(9) {
            0 => {
                for i in 0..1 + rnd(many) {
                    let v = format!("{}-{i}", rnd(1000)).into_bytes();
                    l.push(End::Left, &v).unwrap();
                    model.push_front(v);
                }
            }
            1 | 2 => {
                for i in 0..1 + rnd(many) {
                    let v = format!("{}-{i}", rnd(1000)).into_bytes();
                    l.push(End::Right, &v).unwrap();
                    model.push_back(v);
                }
            }
            3 => assert_eq!(l.pop(End::Left).unwrap(), model.pop_front()),
            4 => assert_eq!(l.pop(End::Right).unwrap(), model.pop_back()),
            5 => {
                let at = rnd(model.len() as u64 + 1);
                l.insert(at, &v).unwrap();
                model.insert(at as usize, v);
            }
            6 => {
                let gone: Vec<u64> = (0..model.len() as u64).filter(|_| rnd(4) == 0).collect();
                l.remove(&gone).unwrap();
                for &g in gone.iter().rev() {
                    model.remove(g as usize);
                }
            }
            7 if step % (50 / many.min(50)) == 0 => {
                let len = model.len() as u64;
                let keep = span(rnd(len + 2) as i64 - 1, rnd(len + 2) as i64 - 1, len);
                l.trim(keep).unwrap();
                match keep {
                    None => model.clear(),
                    Some((from, to)) => {
                        model.truncate(to as usize + 1);
                        model.drain(..from as usize);
                    }
                }
            }
            _ => {
                let n = rnd(4 * many);
                let end = if rnd(2) == 0 { End::Left } else { End::Right };
                let got = l.pop_many(end, n).unwrap();
                let want: Vec<_> = (0..n.min(model.len() as u64))
                    .filter_map(|_| if end == End::Left { model.pop_front() } else { model.pop_back() })
                    .collect();
                assert_eq!(got, want);
            }
        }
        l.commit().unwrap();
        if step % (100 / many.min(100)) == 0 {
            check(&ks, &model);
        }
    }
    check(&ks, &model);
    if let Some(l) = List::open(&ks, 0, b"l", 1, false).unwrap() {
        for (i, want) in model.iter().enumerate() {
            assert_eq!(l.get(i as u64).unwrap().as_ref(), Some(want), "shift {shift}, element {i}");
        }
        assert_eq!(l.get(model.len() as u64).unwrap(), None);
    }
}

#[test]
fn long_trims_and_pops_use_range_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let ks = keyspace(dir.path());
    let mut l = List::open(&ks, 0, b"l", 1, true).unwrap().unwrap();
    for i in 0..1000u32 {
        l.push(End::Right, &i.to_be_bytes()).unwrap();
    }
    l.commit().unwrap();
    let mut l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
    l.trim(span(100, -101, 1000)).unwrap();
    l.commit().unwrap();
    let mut l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
    assert_eq!(l.len(), 800);
    assert_eq!(l.get(0).unwrap(), Some(100u32.to_be_bytes().to_vec()));
    let got = l.pop_many(End::Right, 500).unwrap();
    assert_eq!(got[0], 899u32.to_be_bytes().to_vec());
    l.commit().unwrap();
    let l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
    assert_eq!(l.range(0, u64::MAX).unwrap().len(), 300);
}

#[test]
fn index_rules_like_redis() {
    assert_eq!(position(-1, 3), Some(2));
    assert_eq!(position(-4, 3), None);
    assert_eq!(position(3, 3), None);
    assert_eq!(position(i64::MIN, 3), None);
    assert_eq!(span(0, -1, 3), Some((0, 2)));
    assert_eq!(span(-100, 100, 3), Some((0, 2)));
    assert_eq!(span(2, 1, 3), None);
    assert_eq!(span(5, 10, 3), None);
    assert_eq!(span(0, 0, 0), None);
    assert_eq!(span(i64::MIN, i64::MAX, 3), Some((0, 2)));
    assert_eq!(span(0, -6, 1), None);
    assert_eq!(span(-1, -3, 1), None);
    assert_eq!(span(-5, -3, 3), Some((0, 0)));
}
