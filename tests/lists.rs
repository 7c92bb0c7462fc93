//! Lists (issue 14) against Debian's redis-server: scripted replies byte for
//! byte on 1 and 4 shards and in RESP3, random command streams over a few
//! lists compared reply by reply; random operations against a VecDeque
//! model; and OBJECT ENCODING by Redis 7.2's rules (the reference server,
//! 7.0, still says quicklist for every list).
//! Blocking commands have their own file (`tests/blocking.rs`).

mod common;

use std::collections::VecDeque;

use common::{run_resp3_script, run_scripts, show, Basalt, Raw, RedisServer, Rng};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "push-pop",
        r#"
        LPUSH l a b c
        RPUSH l d e
        LRANGE l 0 -1
        LLEN l
        LPUSHX nope a
        RPUSHX nope a
        EXISTS nope
        LPUSHX l z
        RPUSHX l y x
        LRANGE l 0 -1
        LPOP l
        RPOP l
        LPOP l 2
        RPOP l 2
        LPOP l 0
        RPOP l 0
        LRANGE l 0 -1
        LPOP l 10
        EXISTS l
        LPOP l
        LPOP l 2
        RPOP l 0
        LPOP l -1
        LPOP l x
        LPOP l 1 2
        RPOP nope 3
        LLEN nope
        LPUSH
        LPUSH l
        RPUSH l 1 2 3
        LPOP l -1
        LPOP l 1.5
        LPOP l 9223372036854775807
        EXISTS l
        "#,
    ),
    (
        "index-range-set",
        r#"
        RPUSH l a b c d e
        LINDEX l 0
        LINDEX l -1
        LINDEX l -5
        LINDEX l -6
        LINDEX l 5
        LINDEX l x
        LINDEX nope x
        LINDEX nope 0
        LRANGE l 1 3
        LRANGE l -2 -1
        LRANGE l -100 100
        LRANGE l 3 1
        LRANGE l 5 10
        LRANGE l -1 -2
        LRANGE l 0 0
        LRANGE l x 1
        LRANGE l 0 y
        LRANGE nope 0 -1
        LRANGE l -9223372036854775808 9223372036854775807
        LSET l 0 A
        LSET l -1 E
        LSET l 5 F
        LSET l -6 F
        LSET l x F
        LSET nope 0 a
        LSET nope x a
        LRANGE l 0 -1
        LINDEX l 9223372036854775807
        LINDEX l -9223372036854775808
        "#,
    ),
    (
        "trim",
        r#"
        RPUSH l 0 1 2 3 4 5 6 7 8 9
        LTRIM l 1 -2
        LRANGE l 0 -1
        LTRIM l -3 -1
        LRANGE l 0 -1
        LTRIM l 0 100
        LRANGE l 0 -1
        LTRIM l 2 1
        EXISTS l
        RPUSH l a b c
        LTRIM l 5 10
        EXISTS l
        RPUSH l a b c
        LTRIM l -100 0
        LRANGE l 0 -1
        LTRIM l x 1
        LTRIM nope 0 1
        LTRIM l 0
        "#,
    ),
    (
        "rem-insert",
        r#"
        RPUSH l a b a c a d a
        LREM l 2 a
        LRANGE l 0 -1
        LREM l -1 a
        LRANGE l 0 -1
        LREM l 0 a
        LRANGE l 0 -1
        LREM l 0 zz
        LREM nope 0 a
        LREM l x a
        LREM l 1 b
        LREM l 1 c
        LREM l 1 d
        EXISTS l
        RPUSH l a b c
        LINSERT l BEFORE b x
        LINSERT l AFTER c y
        LINSERT l after a z
        LINSERT l BEFORE a first
        LRANGE l 0 -1
        LINSERT l BEFORE nothere q
        LINSERT nope BEFORE a q
        LINSERT l MIDDLE a q
        LINSERT nope MIDDLE a q
        EXISTS nope
        RPUSH m 1 2 3 4 5 6 7 8 9 10 11 12
        LINSERT m AFTER 10 x
        LINSERT m BEFORE 2 y
        LRANGE m 0 -1
        LREM m 0 x
        LREM m 0 y
        LRANGE m 0 -1
        RPUSH big 1 x 2 x 3 x 4 x 5 x 6 x 7 x 8
        LREM big -3 x
        LRANGE big 0 -1
        LREM big 2 x
        LRANGE big 0 -1
        "#,
    ),
    (
        "lpos",
        r#"
        RPUSH l a b c 1 2 3 c c
        LPOS l c
        LPOS l c RANK 2
        LPOS l c RANK -1
        LPOS l c RANK -3
        LPOS l c RANK 4
        LPOS l c COUNT 0
        LPOS l c COUNT 2
        LPOS l c COUNT 0 RANK -1
        LPOS l c COUNT 0 MAXLEN 3
        LPOS l c RANK -1 MAXLEN 2
        LPOS l c RANK -1 MAXLEN 1
        LPOS l zz
        LPOS l zz COUNT 0
        LPOS nope a
        LPOS nope a COUNT 1
        LPOS l c RANK 0
        LPOS l c RANK x
        LPOS l c COUNT -1
        LPOS l c COUNT x
        LPOS l c MAXLEN -1
        LPOS l c MAXLEN x
        LPOS l c FOO 1
        LPOS l c RANK
        LPOS l c COUNT 1 RANK 1 MAXLEN 0
        LPOS l 1 rank 1 count 1
        "#,
    ),
    (
        "move",
        r#"
        RPUSH a 1 2 3
        LMOVE a b LEFT RIGHT
        LMOVE a b RIGHT LEFT
        LRANGE a 0 -1
        LRANGE b 0 -1
        LMOVE a a LEFT RIGHT
        RPUSH a x
        LMOVE a a RIGHT LEFT
        LRANGE a 0 -1
        LMOVE nope b LEFT LEFT
        LMOVE a b UP LEFT
        LMOVE a b LEFT DOWN
        LMOVE nope b UP LEFT
        SET s v
        LMOVE a s LEFT LEFT
        LMOVE s a LEFT LEFT
        LMOVE nope s LEFT LEFT
        LRANGE a 0 -1
        RPOPLPUSH a c
        RPOPLPUSH a c
        RPOPLPUSH a c
        EXISTS a
        LRANGE c 0 -1
        RPOPLPUSH a c
        RPOPLPUSH c s
        RPOPLPUSH c c
        LRANGE c 0 -1
        LMOVE c d LEFT LEFT
        LMOVE c e RIGHT RIGHT
        LMOVE c f left right
        EXISTS c
        LRANGE d 0 -1
        LRANGE e 0 -1
        LRANGE f 0 -1
        "#,
    ),
    (
        "mpop",
        r#"
        RPUSH b 1 2 3 4
        RPUSH c x
        LMPOP 3 a b c LEFT
        LMPOP 3 a b c RIGHT COUNT 2
        LMPOP 3 a b c LEFT COUNT 10
        LMPOP 3 a b c LEFT
        LMPOP 3 a b c LEFT
        LMPOP 0 a LEFT
        LMPOP -1 a LEFT
        LMPOP x a LEFT
        LMPOP 2 a LEFT
        LMPOP 1 a MIDDLE
        LMPOP 1 a LEFT COUNT 0
        LMPOP 1 a LEFT COUNT -1
        LMPOP 1 a LEFT COUNT x
        LMPOP 1 a LEFT COUNT 1 COUNT 1
        LMPOP 1 a LEFT FOO
        SET s v
        RPUSH t 1
        LMPOP 2 s t LEFT
        LMPOP 2 t s LEFT
        LMPOP 2 t s LEFT
        "#,
    ),
    (
        "blocking-without-waiting",
        r#"
        RPUSH a 1 2 3
        BLPOP nope a 0
        BRPOP nope a 0
        BLPOP nope 0.01
        BRPOP a nope 1
        EXISTS a
        RPUSH a 1 2 3
        BLMPOP 0 2 nope a LEFT COUNT 2
        BLMPOP 0.01 1 nope RIGHT
        BLMOVE a b LEFT LEFT 0
        RPUSH a 4
        BRPOPLPUSH a b 0
        BRPOPLPUSH nope b 0.01
        BLMOVE nope b LEFT LEFT 0.01
        LRANGE b 0 -1
        BLPOP a x
        BLPOP a -1
        BLPOP a nan
        BLPOP a ""
        BLPOP a " 1"
        BLPOP a 0x
        BLMOVE a b LEFT LEFT x
        BLMOVE a b UP LEFT 0
        BLMPOP x 1 a LEFT
        BLMPOP 0 0 a LEFT
        BLMPOP 0 1 a LEFT COUNT 0
        SET s v
        BLPOP s 0
        BLPOP nope s 0
        BLMOVE s b LEFT LEFT 0
        BLMPOP 0 1 s LEFT
        "#,
    ),
    (
        "wrong-type-and-keyspace",
        r#"
        SET s v
        LPUSH s a
        RPUSH s a
        LPUSHX s a
        LPOP s
        RPOP s 2
        LLEN s
        LINDEX s 0
        LSET s 0 a
        LRANGE s 0 -1
        LTRIM s 0 1
        LREM s 0 a
        LINSERT s BEFORE a b
        LPOS s a
        RPUSH l a b c
        GET l
        HSET l f v
        SADD l m
        TYPE l
        EXPIRE l 100
        TTL l
        PERSIST l
        RENAME l l2
        LRANGE l2 0 -1
        COPY l2 l3
        LRANGE l3 0 -1
        DEL l2
        LRANGE l2 0 -1
        EXISTS l3
        RPUSH l4 x
        PEXPIREAT l4 1
        LLEN l4
        RPUSH l4 y
        LRANGE l4 0 -1
        "#,
    ),
];

fn differential(shards: usize) {
    run_scripts(SCRIPTS, shards);
}

#[test]
fn same_replies_as_redis_one_shard() {
    differential(1);
}

#[test]
fn same_replies_as_redis_four_shards() {
    // The move script's lists must span shards for this run to mean much.
    let spread = ["a", "b", "c", "d", "e", "f"].map(|k| basalt::slot::owner(k.as_bytes(), 4));
    assert!(spread.iter().any(|o| *o != spread[0]), "{spread:?}");
    differential(4);
}

#[test]
fn same_resp3_replies_as_redis() {
    run_resp3_script(
        "resp3",
        r#"
        LPOP nope
        LPOP nope 2
        LMPOP 1 nope LEFT
        LPOS nope a
        LPOS nope a COUNT 0
        LINDEX nope 0
        LMOVE nope b LEFT LEFT
        BLPOP nope 0.01
        BLMOVE nope b LEFT LEFT 0.01
        BLMPOP 0.01 1 nope LEFT
        RPUSH l a b
        LPOP l 0
        BLMPOP 0 1 l RIGHT COUNT 5
        "#,
        2,
    );
}

/// Random pushes, pops, moves, inserts, removals, trims and sets over a few
/// lists (on different shards when there are several), the same stream to
/// both servers, every reply compared; then every list compared whole.
/// `pipeline` commands go out in one write (write groups, and pops that
/// read ahead between writes of the same group).
fn random_stream(shards: usize, seed: u64, pipeline: usize) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(seed);
    let keys = ["l0", "l1", "l2", "l3"];
    let values = ["a", "b", "c", "1", "22", "-7", "long-value-long-value"];
    let ends = ["LEFT", "RIGHT"];
    let mut batch: Vec<Vec<String>> = Vec::new();
    for step in 0..3000 {
        let k = rng.pick(&keys).to_string();
        let v = rng.pick(&values).to_string();
        let i = (rng.below(13) as i64 - 6).to_string();
        let j = (rng.below(13) as i64 - 6).to_string();
        let cmd: Vec<String> = match rng.below(16) {
            0 | 1 => vec!["LPUSH".into(), k, v.clone(), rng.pick(&values).into()],
            2 | 3 => vec!["RPUSH".into(), k, v],
            4 => vec!["LPOP".into(), k],
            5 => vec!["RPOP".into(), k, rng.below(4).to_string()],
            6 => vec![
                "LMOVE".into(),
                k,
                rng.pick(&keys).into(),
                rng.pick(&ends).into(),
                rng.pick(&ends).into(),
            ],
            7 => vec![
                "LINSERT".into(),
                k,
                rng.pick(&["BEFORE", "AFTER"]).into(),
                rng.pick(&values).into(),
                v,
            ],
            8 => vec!["LREM".into(), k, i, v],
            9 if step % 20 == 0 => vec!["LTRIM".into(), k, i, j],
            10 => vec!["LSET".into(), k, i, v],
            11 => vec!["LINDEX".into(), k, i],
            12 => vec!["LRANGE".into(), k, i, j],
            13 => vec![
                "LPOS".into(),
                k,
                v,
                "RANK".into(),
                rng.pick(&["1", "-1", "2", "-2"]).into(),
                "COUNT".into(),
                rng.below(3).to_string(),
            ],
            14 => vec![
                "LMPOP".into(),
                "2".into(),
                k,
                rng.pick(&keys).into(),
                rng.pick(&ends).into(),
                "COUNT".into(),
                (1 + rng.below(3)).to_string(),
            ],
            _ => vec!["RPOPLPUSH".into(), k, rng.pick(&keys).into()],
        };
        batch.push(cmd);
        if batch.len() < pipeline && step != 2999 {
            continue;
        }
        let bytes: Vec<u8> = batch.iter().flat_map(|c| Raw::encode(c)).collect();
        r.send_bytes(&bytes);
        b.send_bytes(&bytes);
        for cmd in batch.drain(..) {
            let (want, got) = (r.reply(), b.reply());
            assert_eq!(
                want,
                got,
                "[{shards} shards, seed {seed}, step {step}, pipeline {pipeline}] {cmd:?}\n redis:  {}\n basalt: {}",
                show(&want),
                show(&got)
            );
        }
    }
    for k in keys {
        let c = ["LRANGE", k, "0", "-1"];
        assert_eq!(r.cmd(&c), b.cmd(&c), "{k} at the end");
    }
}

#[test]
fn random_streams_match_redis_one_shard() {
    random_stream(1, 0x1157, 1);
}

#[test]
fn random_streams_match_redis_four_shards() {
    random_stream(4, 0xB10C, 1);
}

#[test]
fn pipelined_random_streams_match_redis() {
    random_stream(1, 0x91BE, 16);
    random_stream(4, 0xF00D, 16);
}

/// Redis's clamping of LTRIM's `start`/`stop` to a list of `len`.
fn kept(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let from_end = |i: i64| if i < 0 { len + i } else { i };
    let (from, to) = (from_end(start).max(0), from_end(stop));
    (from <= to && from < len).then_some((from as usize, to.min(len - 1) as usize))
}

/// Random pushes, pops, inserts, trims, removes, sets and moves over three
/// lists, checked after every command against a VecDeque per list.
fn deque_model(shards: usize, seed: u64) {
    let b = Basalt::start(shards);
    let mut c = b.raw();
    let mut rng = Rng(seed);
    let keys = ["m0", "m1", "m2"];
    let mut model: std::collections::HashMap<&str, VecDeque<String>> = keys.iter().map(|k| (*k, VecDeque::new())).collect();
    for step in 0..2000 {
        let k = rng.pick(&keys);
        let v = format!("v{}", rng.below(6));
        let len = model[k].len();
        let i = rng.below(len + 3) as i64 - 1 - (len as i64 / 2);
        match rng.below(8) {
            0 => {
                c.cmd(&["LPUSH", k, &v]);
                model.get_mut(k).unwrap().push_front(v);
            }
            1 => {
                c.cmd(&["RPUSH", k, &v]);
                model.get_mut(k).unwrap().push_back(v);
            }
            2 => {
                let n = rng.below(3);
                let left = rng.below(2) == 0;
                c.cmd(&[if left { "LPOP" } else { "RPOP" }, k, &n.to_string()]);
                let m = model.get_mut(k).unwrap();
                for _ in 0..n.min(m.len()) {
                    let _ = if left { m.pop_front() } else { m.pop_back() };
                }
            }
            3 => {
                let pivot = format!("v{}", rng.below(6));
                let after = rng.below(2) == 0;
                c.cmd(&["LINSERT", k, if after { "AFTER" } else { "BEFORE" }, &pivot, &v]);
                let m = model.get_mut(k).unwrap();
                if let Some(p) = m.iter().position(|x| *x == pivot) {
                    m.insert(p + after as usize, v);
                }
            }
            4 if step % 10 == 0 => {
                let j = rng.below(len + 3) as i64 - 1;
                c.cmd(&["LTRIM", k, &i.to_string(), &j.to_string()]);
                let m = model.get_mut(k).unwrap();
                match kept(i, j, m.len()) {
                    None => m.clear(),
                    Some((from, to)) => {
                        m.truncate(to + 1);
                        m.drain(..from);
                    }
                }
            }
            5 => {
                let count = rng.below(5) as i64 - 2;
                c.cmd(&["LREM", k, &count.to_string(), &v]);
                let m = model.get_mut(k).unwrap();
                let mut at: Vec<usize> = m.iter().enumerate().filter(|(_, x)| **x == v).map(|(p, _)| p).collect();
                if count < 0 {
                    at.reverse();
                }
                if count != 0 {
                    at.truncate(count.unsigned_abs() as usize);
                }
                at.sort_unstable();
                for p in at.into_iter().rev() {
                    m.remove(p);
                }
            }
            6 => {
                c.cmd(&["LSET", k, &i.to_string(), &v]);
                let m = model.get_mut(k).unwrap();
                let p = if i < 0 { m.len() as i64 + i } else { i };
                if (0..m.len() as i64).contains(&p) {
                    m[p as usize] = v;
                }
            }
            _ => {
                let dst = rng.pick(&keys);
                let (from, to) = (rng.below(2) == 0, rng.below(2) == 0);
                c.cmd(&[
                    "LMOVE",
                    k,
                    dst,
                    if from { "LEFT" } else { "RIGHT" },
                    if to { "LEFT" } else { "RIGHT" },
                ]);
                let e = model.get_mut(k).and_then(|m| if from { m.pop_front() } else { m.pop_back() });
                if let Some(e) = e {
                    let d = model.get_mut(dst).unwrap();
                    if to {
                        d.push_front(e)
                    } else {
                        d.push_back(e)
                    }
                }
            }
        }
        let want: Vec<&str> = model[k].iter().map(String::as_str).collect();
        assert_eq!(
            c.cmd(&["LRANGE", k, "0", "-1"]),
            array(&want),
            "[{shards} shards] step {step} on {k}"
        );
    }
    for k in keys {
        let want: Vec<&str> = model[k].iter().map(String::as_str).collect();
        assert_eq!(c.cmd(&["LRANGE", k, "0", "-1"]), array(&want), "{k} at the end");
        assert_eq!(c.cmd(&["LLEN", k]), format!(":{}\r\n", want.len()).into_bytes());
    }
}

#[test]
fn random_operations_match_a_deque_one_shard() {
    deque_model(1, 0xDE0E);
}

#[test]
fn random_operations_match_a_deque_four_shards() {
    deque_model(4, 0xDE1E);
}

fn encoding(c: &mut Raw, key: &str) -> String {
    String::from_utf8_lossy(&c.cmd(&["OBJECT", "ENCODING", key]))
        .trim_end()
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .to_string()
}

/// The RESP2 array of bulk strings `items`.
fn array(items: &[&str]) -> Vec<u8> {
    Raw::encode(items)
}

/// OBJECT ENCODING as Redis 7.2 reports lists: a listpack while one
/// listpack under `list-max-listpack-size` holds it (by count when the
/// size is positive, by bytes when negative), a quicklist after.
#[test]
fn object_encoding_follows_redis_7_2() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    c.cmd(&["RPUSH", "small", "a", "b", "1"]);
    assert_eq!(encoding(&mut c, "small"), "listpack");
    // The default -2: 8 KiB. 100 elements of 100 bytes are ~10 KiB.
    let big = "x".repeat(100);
    for _ in 0..100 {
        c.cmd(&["RPUSH", "big", &big]);
    }
    assert_eq!(encoding(&mut c, "big"), "quicklist");
    for _ in 0..30 {
        c.cmd(&["RPOP", "big"]);
    }
    assert_eq!(encoding(&mut c, "big"), "listpack", "70 x 103 bytes fit 8 KiB again");
    assert_eq!(c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "3"]), b"+OK\r\n");
    assert_eq!(encoding(&mut c, "small"), "listpack");
    c.cmd(&["RPUSH", "small", "c"]);
    assert_eq!(encoding(&mut c, "small"), "quicklist");
    assert_eq!(c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "-1"]), b"+OK\r\n");
    assert_eq!(encoding(&mut c, "small"), "listpack");
    assert_eq!(encoding(&mut c, "big"), "quicklist", "70 x 103 bytes exceed 4 KiB");
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "list-max-ziplist-size"]),
        array(&["list-max-ziplist-size", "-1"])
    );
}

/// Where Redis 7.2+ (the behaviour Basalt follows) answers otherwise than
/// the 7.0 reference server: LREM's count and LPOS's RANK are read in
/// -LONG_MAX..LONG_MAX (7.0 took LONG_MIN and then negated it), and a
/// blocking timeout past LLONG_MAX milliseconds is "out of range" (7.0
/// converted it to a negative number).
#[test]
fn newer_redis_range_checks() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    c.cmd(&["RPUSH", "l", "a"]);
    assert_eq!(
        c.cmd(&["LREM", "l", "-9223372036854775808", "a"]),
        b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
    );
    assert_eq!(
        c.cmd(&["LPOS", "l", "a", "RANK", "-9223372036854775808"]),
        b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
    );
    assert_eq!(c.cmd(&["LPOS", "l", "a", "RANK", "-9223372036854775807"]), b"$-1\r\n");
    assert_eq!(c.cmd(&["LREM", "l", "-9223372036854775807", "a"]), b":1\r\n");
    for t in ["1e400", "inf", "99999999999999999999", "1e20", "9223372036854775.807"] {
        assert_eq!(c.cmd(&["BLPOP", "l", t]), b"-ERR timeout is out of range\r\n", "{t}");
    }
}

/// A list survives a restart, DUMP/RESTORE and FLUSHALL as any key does.
#[test]
fn lists_persist_and_restore() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dumped;
    {
        let b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.raw();
        c.cmd(&["RPUSH", "l", "a", "b", "c"]);
        c.cmd(&["LPUSH", "l", "z"]);
        c.cmd(&["LPOP", "l"]);
        c.cmd(&["LINSERT", "l", "AFTER", "a", "a2"]);
        dumped = c.cmd(&["DUMP", "l"]);
    }
    let b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), array(&["a", "a2", "b", "c"]));
    let body = &dumped[dumped.iter().position(|&x| x == b'\n').map_or(0, |p| p + 1)..dumped.len() - 2];
    assert_eq!(c.cmd(&[&b"RESTORE"[..], b"l2", b"0", body]), b"+OK\r\n");
    assert_eq!(c.cmd(&["LRANGE", "l2", "0", "-1"]), array(&["a", "a2", "b", "c"]));
    assert_eq!(c.cmd(&["FLUSHALL"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["LLEN", "l"]), b":0\r\n");
    assert_eq!(c.cmd(&["RPUSH", "l", "new"]), b":1\r\n");
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), array(&["new"]));
}
