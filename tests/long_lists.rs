//! Long lists against Debian's redis-server: Basalt packs 8 positions a
//! record (`types/lchunk.rs`), so every command that reaches into a list
//! crosses record edges. Random streams over lists of hundreds of elements
//! (variadic pushes, counted pops, LTRIM, LINSERT and LREM in the middle,
//! LSET, LINDEX, LRANGE, LPOS, LMOVE between them) compared reply by reply
//! on 1 and 4 shards; DUMP of a long list restored on both servers; and
//! MEMORY USAGE growing with the list.

mod common;

use common::{show, Basalt, RedisServer, Rng};

fn long_stream(shards: usize, seed: u64) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(seed);
    let keys = ["ll0", "ll1", "ll2"];
    let values = ["a", "b", "7", "-1", "", "xyzzy-long-value-of-some-bytes"];
    let ends = ["LEFT", "RIGHT"];
    let mut longest = 0u64;
    for step in 0..2500 {
        let k = rng.pick(&keys).to_string();
        let v = rng.pick(&values).to_string();
        let idx = |rng: &mut Rng| (rng.below(700) as i64 - 350).to_string();
        let cmd: Vec<String> = match rng.below(17) {
            0..=2 => {
                let mut c = vec![rng.pick(&["LPUSH", "RPUSH"]).to_string(), k];
                for _ in 0..1 + rng.below(40) {
                    c.push(rng.pick(&values).into());
                }
                c
            }
            3 => vec![rng.pick(&["LPOP", "RPOP"]).into(), k, rng.below(30).to_string()],
            4 => vec![rng.pick(&["LPOP", "RPOP"]).into(), k],
            5 if step % 15 == 0 => vec!["LTRIM".into(), k, idx(&mut rng), idx(&mut rng)],
            6 => vec![
                "LINSERT".into(),
                k,
                rng.pick(&["BEFORE", "AFTER"]).into(),
                rng.pick(&values).into(),
                v,
            ],
            7 => vec!["LREM".into(), k, (rng.below(9) as i64 - 4).to_string(), v],
            8 => vec!["LSET".into(), k, idx(&mut rng), v],
            9 => vec!["LINDEX".into(), k, idx(&mut rng)],
            10 | 11 => vec!["LRANGE".into(), k, idx(&mut rng), idx(&mut rng)],
            12 => vec![
                "LPOS".into(),
                k,
                v,
                "RANK".into(),
                rng.pick(&["1", "-1", "3", "-3"]).into(),
                "COUNT".into(),
                rng.below(5).to_string(),
            ],
            13 => vec![
                "LMOVE".into(),
                k,
                rng.pick(&keys).into(),
                rng.pick(&ends).into(),
                rng.pick(&ends).into(),
            ],
            14 => vec![
                "LMPOP".into(),
                "2".into(),
                k,
                rng.pick(&keys).into(),
                rng.pick(&ends).into(),
                "COUNT".into(),
                (1 + rng.below(20)).to_string(),
            ],
            15 => vec!["LLEN".into(), k],
            _ => vec!["RPOPLPUSH".into(), k, rng.pick(&keys).into()],
        };
        let (want, got) = (r.cmd(&cmd), b.cmd(&cmd));
        assert_eq!(
            want,
            got,
            "[{shards} shards, seed {seed}, step {step}] {cmd:?}\n redis:  {}\n basalt: {}",
            show(&want),
            show(&got)
        );
        if step % 50 == 0 {
            let n = String::from_utf8(r.cmd(&["LLEN", keys[0]])).unwrap();
            longest = longest.max(n.trim_start_matches(':').trim().parse().unwrap());
        }
    }
    for k in keys {
        let c = ["LRANGE", k, "0", "-1"];
        assert_eq!(r.cmd(&c), b.cmd(&c), "{k} at the end");
    }
    assert!(longest > 200, "the lists stayed short: {longest}");
}

#[test]
fn long_lists_match_redis_one_shard() {
    long_stream(1, 0x10C6);
}

#[test]
fn long_lists_match_redis_four_shards() {
    long_stream(4, 0x5EED);
}

/// A 1000-element list's DUMP restores on redis-server, and redis-server's
/// on Basalt, element for element; RESTORE makes a list every command
/// reads and changes as it would a pushed one.
#[test]
fn long_lists_dump_and_restore_both_ways() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(1);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut push = vec!["RPUSH".to_string(), "big".into()];
    push.extend((0..1000).map(|i| format!("element-{i}")));
    assert_eq!(r.cmd(&push), b.cmd(&push));
    let all = ["LRANGE", "big", "0", "-1"];
    // Basalt's DUMP restored on redis-server, then redis-server's on Basalt.
    for basalt_first in [true, false] {
        let (from, to) = if basalt_first { (&mut b, &mut r) } else { (&mut r, &mut b) };
        let dump = from.cmd(&["DUMP", "big"]);
        // A bulk string: `$<len>\r\n<payload>\r\n`.
        let start = dump.iter().position(|&c| c == b'\n').unwrap() + 1;
        let payload = &dump[start..dump.len() - 2];
        let restore: Vec<&[u8]> = vec![b"RESTORE", b"copy", b"0", payload, b"REPLACE"];
        assert_eq!(to.cmd(&restore), b"+OK\r\n".to_vec());
        assert_eq!(to.cmd(&["LRANGE", "copy", "0", "-1"]), from.cmd(&all));
    }
    // The restored copy on Basalt takes every kind of change.
    for c in [
        vec!["LPUSH", "copy", "x", "y"],
        vec!["RPOP", "copy", "3"],
        vec!["LINSERT", "copy", "BEFORE", "element-500", "mid"],
        vec!["LSET", "copy", "-10", "set"],
        vec!["LREM", "copy", "0", "element-7"],
        vec!["LTRIM", "copy", "3", "-40"],
        vec!["LRANGE", "copy", "0", "-1"],
        vec!["LINDEX", "copy", "250"],
        vec!["LPOS", "copy", "mid"],
    ] {
        assert_eq!(r.cmd(&c), b.cmd(&c), "{c:?}");
    }
}

/// MEMORY USAGE of a list grows with its elements, sampled or whole, and
/// the sample stands for the whole within a few percent.
#[test]
fn memory_usage_of_a_long_list() {
    let basalt = Basalt::start(1);
    let mut b = basalt.raw();
    let int = |v: Vec<u8>| -> i64 { String::from_utf8(v).unwrap().trim_start_matches(':').trim().parse().unwrap() };
    let mut push = vec!["RPUSH".to_string(), "m".into()];
    push.extend((0..100).map(|_| "v".repeat(100)));
    b.cmd(&push);
    let small = int(b.cmd(&["MEMORY", "USAGE", "m", "SAMPLES", "0"]));
    for _ in 0..9 {
        b.cmd(&push);
    }
    let (all, sampled) = (
        int(b.cmd(&["MEMORY", "USAGE", "m", "SAMPLES", "0"])),
        int(b.cmd(&["MEMORY", "USAGE", "m"])),
    );
    assert!(small > 10_000 && all > 9 * small && all < 11 * small, "{small} {all}");
    assert!(sampled * 10 > all * 9 && sampled * 10 < all * 11, "{sampled} against {all}");
}
