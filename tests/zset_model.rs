//! Sorted sets against redis-server as the model: thousands of random
//! commands (writes with every ZADD option, pops, range removals, and the
//! reads: ranges by rank, score and lex with LIMIT and REV, ranks, counts),
//! with ties, equal scores for lex ranges and ±inf, sent to Debian's
//! redis-server and to Basalt (1 and 4 shards, RESP2 and RESP3); every reply
//! must be byte-for-byte the same. Scores are ones redis-server 7.0 and
//! Basalt (7.2's format) print alike.

mod common;

use common::{show, Basalt, Raw, RedisServer, Rng};

const SCORES: &[&str] = &["0", "1", "2", "3", "-1", "-2", "1.5", "-2.5", "10", "100", "inf", "-inf", "+inf"];
const MEMBERS: &[&str] = &["a", "b", "c", "d", "e", "f", "g", "aa", "ab", "", "x1", "x2"];
const KEYS: &[&str] = &["z1", "z2{z1}", "lex"];

fn bound(rng: &mut Rng) -> String {
    let s = rng.pick(SCORES);
    if rng.below(3) == 0 {
        format!("({s}")
    } else {
        s.to_string()
    }
}

fn lex(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => "-".into(),
        1 => "+".into(),
        2 | 3 => format!("[{}", rng.pick(MEMBERS)),
        _ => format!("({}", rng.pick(MEMBERS)),
    }
}

fn index(rng: &mut Rng) -> String {
    (rng.below(30) as i64 - 15).to_string()
}

fn command(rng: &mut Rng) -> Vec<String> {
    let key = rng.pick(KEYS).to_string();
    let mut c: Vec<String> = Vec::new();
    let s = |v: &str| v.to_string();
    match rng.below(23) {
        0..=4 => {
            c.push(s("ZADD"));
            c.push(key.clone());
            for opt in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                if rng.below(6) == 0 {
                    c.push(s(opt));
                }
            }
            let n = if c.iter().any(|x| x == "INCR") { 1 } else { 1 + rng.below(4) };
            for _ in 0..n {
                // The lex key keeps one score so lex ranges are defined.
                c.push(if key == "lex" { s("0") } else { s(rng.pick(SCORES)) });
                c.push(s(rng.pick(MEMBERS)));
            }
        }
        5 => c.extend([
            s("ZINCRBY"),
            key.clone(),
            s(if key == "lex" { "0" } else { rng.pick(SCORES) }),
            s(rng.pick(MEMBERS)),
        ]),
        6 => {
            c.extend([s("ZREM"), key.clone()]);
            for _ in 0..1 + rng.below(3) {
                c.push(s(rng.pick(MEMBERS)));
            }
        }
        7 => {
            c.extend([s(rng.pick(&["ZPOPMIN", "ZPOPMAX"])), key.clone()]);
            if rng.below(2) == 0 {
                c.push(rng.below(4).to_string());
            }
        }
        8 => c.extend([s("ZREMRANGEBYRANK"), key.clone(), index(rng), index(rng)]),
        9 => c.extend([s("ZREMRANGEBYSCORE"), key.clone(), bound(rng), bound(rng)]),
        10 => c.extend([s("ZREMRANGEBYLEX"), s("lex"), lex(rng), lex(rng)]),
        11 => {
            c.extend([s("ZRANGE"), key.clone(), index(rng), index(rng)]);
            if rng.below(2) == 0 {
                c.push(s("REV"));
            }
            if rng.below(2) == 0 {
                c.push(s("WITHSCORES"));
            }
        }
        12 | 13 => {
            let rev = rng.below(2) == 0;
            c.push(s(if rev { "ZREVRANGEBYSCORE" } else { "ZRANGEBYSCORE" }));
            c.extend([key.clone(), bound(rng), bound(rng)]);
            if rng.below(2) == 0 {
                c.push(s("WITHSCORES"));
            }
            if rng.below(2) == 0 {
                c.extend([
                    s("LIMIT"),
                    (rng.below(5) as i64 - 1).to_string(),
                    (rng.below(5) as i64 - 1).to_string(),
                ]);
            }
        }
        14 => {
            let rev = rng.below(2) == 0;
            c.push(s(if rev { "ZREVRANGEBYLEX" } else { "ZRANGEBYLEX" }));
            c.extend([s("lex"), lex(rng), lex(rng)]);
            if rng.below(2) == 0 {
                c.extend([s("LIMIT"), rng.below(4).to_string(), (rng.below(5) as i64 - 1).to_string()]);
            }
        }
        15 => c.extend([s(rng.pick(&["ZRANK", "ZREVRANK"])), key.clone(), s(rng.pick(MEMBERS))]),
        16 => c.extend([s("ZCOUNT"), key.clone(), bound(rng), bound(rng)]),
        17 => c.extend([s("ZLEXCOUNT"), s("lex"), lex(rng), lex(rng)]),
        18 => c.extend([s("ZMSCORE"), key.clone(), s(rng.pick(MEMBERS)), s(rng.pick(MEMBERS))]),
        // Stores never into `lex`, which keeps one score.
        20 | 21 => {
            let dst = s(rng.pick(&["z1", "z2{z1}"]));
            let op = rng.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
            c.extend([s(op), dst, s("2"), s(rng.pick(KEYS)), s(rng.pick(KEYS))]);
            if op != "ZDIFFSTORE" && rng.below(2) == 0 {
                c.extend([s("WEIGHTS"), s(rng.pick(&["1", "2", "-1", "0.5"])), s("1")]);
            }
        }
        22 => {
            let dst = s(rng.pick(&["z1", "z2{z1}"]));
            c.extend([s("ZRANGESTORE"), dst, key.clone(), index(rng), index(rng)]);
            if rng.below(3) == 0 {
                c.push(s("REV"));
            }
        }
        _ => c.extend([s("ZRANGE"), key.clone(), s("0"), s("-1"), s("WITHSCORES")]),
    }
    c
}

fn run(shards: usize, resp3: bool, seed: u64, steps: usize) {
    run_with(shards, resp3, seed, steps, &[]);
}

fn run_with(shards: usize, resp3: bool, seed: u64, steps: usize, extra: &[&str]) {
    let redis = RedisServer::start();
    let basalt = Basalt::start_with(shards, extra);
    let (mut r, mut b): (Raw, Raw) = (redis.raw(), basalt.raw());
    if resp3 {
        r.cmd(&["HELLO", "3"]);
        b.cmd(&["HELLO", "3"]);
    }
    let mut rng = Rng(seed);
    let mut biggest = 0;
    for step in 0..steps {
        let cmd = command(&mut rng);
        let (want, got) = (r.cmd(&cmd), b.cmd(&cmd));
        assert_eq!(
            show(&got),
            show(&want),
            "step {step} (seed {seed}, {shards} shards, resp3 {resp3}): {cmd:?}"
        );
        // Every so often, the whole sets.
        if step % 50 == 0 {
            for key in KEYS {
                let all = ["ZRANGE", key, "0", "-1", "WITHSCORES"];
                assert_eq!(show(&b.cmd(&all)), show(&r.cmd(&all)), "step {step}: {key}");
                let card = b.cmd(&["ZCARD", key]);
                assert_eq!(show(&card), show(&r.cmd(&["ZCARD", key])));
                biggest = biggest.max(String::from_utf8_lossy(&card[1..card.len() - 2]).parse::<usize>().unwrap_or(0));
            }
        }
    }
    assert!(biggest >= 6, "the sets never grew: {biggest}");
}

#[test]
fn random_commands_match_redis_on_one_shard() {
    run(1, false, 0x5EED_0001, 4000);
}

#[test]
fn random_commands_match_redis_on_four_shards_in_resp3() {
    run(4, true, 0x5EED_0002, 4000);
}

/// Count blocks of two members: every set past four members keeps blocks,
/// and the writes split, empty and join them all the time; ranks, rank
/// ranges and counts go through them.
#[test]
fn random_commands_match_redis_with_count_blocks_of_two() {
    run_with(1, false, 0x5EED_0003, 6000, &["--zset-rank-block", "2"]);
    run_with(4, true, 0x5EED_0004, 3000, &["--zset-rank-block", "2"]);
}
