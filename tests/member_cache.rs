//! Issue 52, item 1: clean member records stay in the owning shard's memory
//! (`storage/mcache.rs`). Random collection commands against redis-server
//! and Basalt, with a write tier so small that every record is written back
//! to RocksDB at once: reads then go through the member cache, and every
//! way a member changes (a write, a list's cut of many positions reused by
//! the next push, a stream group destroyed and made again, a sorted set's
//! range removals, a collection deleted and made again) must leave no
//! stale entry. Every reply must be Redis's.

mod common;

use common::{show, Basalt, Rng};

const KEYS: &[&str] = &["l", "h", "s", "z", "x", "{l}2"];
const FIELDS: &[&str] = &["f1", "f2", "f3", "f4", "f5", "f6"];

/// One random command on collections; `id` numbers stream entries.
fn command(rng: &mut Rng, id: &mut u64) -> Vec<String> {
    let f = rng.pick(FIELDS).to_string();
    let v = rng.below(50).to_string();
    let n = (1 + rng.below(120)).to_string();
    let i = (rng.below(160) as i64 - 80).to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match rng.below(34) {
        // Lists: pushes of many elements and cuts of more than the 64
        // positions a list deletes one by one.
        0 | 1 => {
            let mut c = s(&[if rng.below(2) == 0 { "RPUSH" } else { "LPUSH" }, "l"]);
            for e in 0..(1 + rng.below(100)) {
                c.push(format!("e{e}:{v}"));
            }
            c
        }
        2 => s(&["LPOP", "l", &n]),
        3 => s(&["RPOP", "l", &n]),
        4 => s(&["LTRIM", "l", &(rng.below(100)).to_string(), &i]),
        5 => s(&["LINDEX", "l", &i]),
        6 => s(&["LRANGE", "l", "0", "-1"]),
        7 => s(&["LSET", "l", &i, &v]),
        8 => s(&["LLEN", "l"]),
        9 => s(&["LMOVE", "l", "{l}2", "LEFT", "RIGHT"]),
        10 => s(&["LINDEX", "{l}2", &i]),
        // Hashes.
        11 => s(&["HSET", "h", &f, &v]),
        12 => s(&["HGET", "h", &f]),
        13 => s(&["HMGET", "h", "f1", "f2", "f3", "f4", "f5", "f6"]),
        14 => s(&["HDEL", "h", &f]),
        15 => s(&["HINCRBY", "h", &f, "3"]),
        16 => s(&["HSETNX", "h", &f, &v]),
        // Sets.
        17 => s(&["SADD", "s", &f, &v]),
        18 => s(&["SREM", "s", &f]),
        19 => s(&["SMISMEMBER", "s", "f1", "f2", "f3", "f4", "f5", "f6", "1", "2"]),
        20 => s(&["SCARD", "s"]),
        // Sorted sets.
        21 => s(&["ZADD", "z", &v, &f]),
        22 => s(&["ZINCRBY", "z", "2", &f]),
        23 => s(&["ZMSCORE", "z", "f1", "f2", "f3", "f4", "f5", "f6"]),
        24 => s(&["ZREMRANGEBYSCORE", "z", "0", &v]),
        25 => s(&["ZREMRANGEBYRANK", "z", "0", "1"]),
        26 => s(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        // Streams: a group destroyed and made again must not see the old
        // group's pending entries or consumers.
        27 => {
            *id += 1;
            s(&["XADD", "x", &format!("{id}-1"), "f", &v])
        }
        28 => s(&["XGROUP", "CREATE", "x", "g", "0", "MKSTREAM"]),
        29 => s(&[
            "XREADGROUP",
            "GROUP",
            "g",
            &format!("c{}", rng.below(2)),
            "COUNT",
            "2",
            "STREAMS",
            "x",
            ">",
        ]),
        30 => s(&["XPENDING", "x", "g"]),
        31 => s(&["XGROUP", "DESTROY", "x", "g"]),
        32 => s(&["XGROUP", "DELCONSUMER", "x", "g", "c0"]),
        // Whole collections deleted (and made again by the next write).
        _ => s(&["DEL", rng.pick(KEYS)]),
    }
}

fn against_redis(shards: usize) {
    let redis = common::RedisServer::start();
    let basalt = Basalt::start_with(shards, &["--write-tier-memory", "4096"]);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    for seed in 1..=6u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        assert_eq!(r.cmd(&["FLUSHALL"]), b.cmd(&["FLUSHALL"]));
        let mut history: Vec<String> = Vec::new();
        let mut id = 0;
        for step in 0..600 {
            let args = command(&mut rng, &mut id);
            history.push(args.join(" ").chars().take(120).collect());
            let (want, got) = (r.cmd(&args), b.cmd(&args));
            assert_eq!(
                show(&want),
                show(&got),
                "reply differs at seed {seed} step {step}; last commands:\n  {}",
                history[history.len().saturating_sub(8)..].join("\n  ")
            );
        }
    }
    // The member cache answered reads: the test exercised it.
    let hits = b.info_u64("stats", "member_cache_hits");
    assert!(hits > 100, "member cache hits: {hits}");
}

#[test]
fn random_collection_commands_through_the_member_cache() {
    against_redis(1);
}

#[test]
fn random_collection_commands_through_the_member_cache_on_four_shards() {
    against_redis(4);
}
