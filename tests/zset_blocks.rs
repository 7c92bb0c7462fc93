//! Count blocks (docs/encoding.md, "Sorted sets: count blocks") through
//! the real server: a few thousand members written in random batches,
//! score changes, removals and pops, checked against a local model (a
//! sorted Vec of (score, member)) by ZRANK/ZREVRANK, rank ranges, ZCOUNT
//! and whole reads; then again after a restart (the layouts reloaded from
//! disk), after kill -9 (the counts written in the members' batches),
//! through DUMP/RESTORE, RENAME across shards and the stores.

mod common;

use std::collections::BTreeMap;

use common::{show, Basalt, Raw, Rng};

/// The model: member -> score, and the order.
#[derive(Default)]
struct Model {
    scores: BTreeMap<String, i64>,
}

impl Model {
    fn order(&self) -> Vec<(i64, String)> {
        let mut v: Vec<(i64, String)> = self.scores.iter().map(|(m, s)| (*s, m.clone())).collect();
        v.sort();
        v
    }
}

fn int(reply: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(reply);
    s.trim_start_matches(':')
        .trim_end()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer: {s:?}"))
}

fn members(reply: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(reply).to_string();
    s.split("\r\n")
        .skip(2)
        .step_by(2)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Checks every rank-based read of `key` against the model.
fn check(c: &mut Raw, key: &str, m: &Model, rng: &mut Rng, what: &str) {
    let order = m.order();
    let n = order.len() as i64;
    assert_eq!(int(&c.cmd(&["ZCARD", key])), n, "{what}: ZCARD");
    let all = members(&c.cmd(&["ZRANGE", key, "0", "-1"]));
    let want: Vec<String> = order.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(all, want, "{what}: the whole order");
    for _ in 0..60 {
        let i = rng.below(order.len().max(1)) as i64;
        if n > 0 {
            let (_, mem) = &order[i as usize];
            assert_eq!(int(&c.cmd(&["ZRANK", key, mem])), i, "{what}: ZRANK {mem}");
            assert_eq!(int(&c.cmd(&["ZREVRANK", key, mem])), n - 1 - i, "{what}: ZREVRANK {mem}");
        }
        let len = rng.below(8) as i64;
        let got = members(&c.cmd(&["ZRANGE", key, &i.to_string(), &(i + len).to_string()]));
        let want: Vec<String> = order.iter().skip(i as usize).take(len as usize + 1).map(|x| x.1.clone()).collect();
        assert_eq!(got, want, "{what}: ZRANGE {i} {}", i + len);
        let got = members(&c.cmd(&["ZRANGE", key, &i.to_string(), &(i + len).to_string(), "REV"]));
        let want: Vec<String> = order
            .iter()
            .rev()
            .skip(i as usize)
            .take(len as usize + 1)
            .map(|x| x.1.clone())
            .collect();
        assert_eq!(got, want, "{what}: ZRANGE {i} {} REV", i + len);
        let (lo, hi) = (rng.below(1200) as i64 - 100, rng.below(1200) as i64 - 100);
        let (lo_open, hi_open) = (rng.below(2) == 0, rng.below(2) == 0);
        let want = order
            .iter()
            .filter(|(s, _)| if lo_open { *s > lo } else { *s >= lo })
            .filter(|(s, _)| if hi_open { *s < hi } else { *s <= hi })
            .count() as i64;
        let b = |v: i64, open: bool| if open { format!("({v}") } else { v.to_string() };
        assert_eq!(
            int(&c.cmd(&["ZCOUNT", key, &b(lo, lo_open), &b(hi, hi_open)])),
            want,
            "{what}: ZCOUNT"
        );
    }
}

/// Random writes: adds in batches, score changes, removals, pops.
fn churn(c: &mut Raw, key: &str, m: &mut Model, rng: &mut Rng, steps: usize) {
    for _ in 0..steps {
        match rng.below(10) {
            0..=3 => {
                let mut cmd = vec!["ZADD".to_string(), key.to_string()];
                for _ in 0..1 + rng.below(40) {
                    // A member named twice takes its last score, in both.
                    let (mem, s) = (format!("m{}", rng.below(4000)), rng.below(1000) as i64);
                    cmd.extend([s.to_string(), mem.clone()]);
                    m.scores.insert(mem, s);
                }
                c.cmd(&cmd);
            }
            4..=6 => {
                let mem = format!("m{}", rng.below(4000));
                let by = rng.below(21) as i64 - 10;
                c.cmd(&["ZINCRBY", key, &by.to_string(), &mem]);
                *m.scores.entry(mem).or_insert(0) += by;
            }
            7 | 8 => {
                let mut cmd = vec!["ZREM".to_string(), key.to_string()];
                for _ in 0..1 + rng.below(30) {
                    let mem = format!("m{}", rng.below(4000));
                    m.scores.remove(&mem);
                    cmd.push(mem);
                }
                c.cmd(&cmd);
            }
            _ => {
                let n = rng.below(20);
                let max = rng.below(2) == 0;
                c.cmd(&[if max { "ZPOPMAX" } else { "ZPOPMIN" }, key, &n.to_string()]);
                let order = m.order();
                let gone: Vec<&(i64, String)> = if max {
                    order.iter().rev().take(n).collect()
                } else {
                    order.iter().take(n).collect()
                };
                for (_, mem) in gone {
                    m.scores.remove(mem);
                }
            }
        }
    }
}

#[test]
fn count_blocks_stay_exact_through_writes_restarts_and_copies() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut rng = Rng(0xB10C);
    let mut m = Model::default();
    {
        let b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.raw();
        churn(&mut c, "lb", &mut m, &mut rng, 400);
        assert!(m.scores.len() > 1000, "the set grew past many blocks: {}", m.scores.len());
        check(&mut c, "lb", &m, &mut rng, "after writes");
        churn(&mut c, "lb", &mut m, &mut rng, 300);
        check(&mut c, "lb", &m, &mut rng, "after more writes");
    }
    // A restart reloads the layouts from the head records.
    let mut b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.raw();
    check(&mut c, "lb", &m, &mut rng, "after a restart");
    churn(&mut c, "lb", &mut m, &mut rng, 200);
    check(&mut c, "lb", &m, &mut rng, "written after the restart");
    // kill -9 right after acknowledged writes: the counts came with them.
    churn(&mut c, "lb", &mut m, &mut rng, 200);
    b.signal_and_wait("-KILL");
    let b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.raw();
    check(&mut c, "lb", &m, &mut rng, "after kill -9");
    // DUMP/RESTORE carries the blocks; a payload whose counts lie is refused.
    let payload = c.cmd(&["DUMP", "lb"]);
    let body = &payload[payload.iter().position(|&x| x == b'\n').expect("bulk") + 1..payload.len() - 2];
    assert_eq!(show(&c.cmd(&[&b"RESTORE"[..], b"copy", b"0", body])), show(b"+OK\r\n"));
    check(&mut c, "copy", &m, &mut rng, "restored");
    // RENAME (across shards too), the stores and ZRANGESTORE.
    for (i, dst) in ["moved-a", "moved-b", "moved-c"].iter().enumerate() {
        c.cmd(&["RENAME", if i == 0 { "copy" } else { ["moved-a", "moved-b"][i - 1] }, dst]);
    }
    check(&mut c, "moved-c", &m, &mut rng, "renamed");
    assert_eq!(int(&c.cmd(&["ZUNIONSTORE", "u", "1", "lb"])), m.scores.len() as i64);
    check(&mut c, "u", &m, &mut rng, "stored by ZUNIONSTORE");
    churn(&mut c, "u", &mut m, &mut rng, 150);
    check(&mut c, "u", &m, &mut rng, "a stored set written");
    c.cmd(&["ZRANGESTORE", "r", "u", "0", "-1"]);
    check(&mut c, "r", &m, &mut rng, "stored by ZRANGESTORE");
    c.cmd(&["ZRANGESTORE", "rr", "u", "0", "-1", "REV"]);
    check(&mut c, "rr", &m, &mut rng, "stored by ZRANGESTORE REV");
}
