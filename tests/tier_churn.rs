//! Short-lived members through the write tier (`storage::wtier`): a
//! record its writer read absent and deleted while the tier still holds
//! it leaves no tombstone (`ShardStore::put_new`). A queue's elements
//! pushed and popped, sorted-set scores replaced again and again, set and
//! hash members added and removed, stream entries added and deleted: the
//! same commands on redis-server and Basalt give the same replies, before
//! and after kill -9, with generations that drain during the churn (a
//! small `BASALT_TIER`) and with the default tier, where the churn stays
//! in memory.

mod common;

use common::{show, Basalt, Raw, RedisServer};

/// The churn as commands, pipelined in chunks; every reply compared.
fn churn(round: usize) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut c = |a: &[&str]| out.push(a.iter().map(|s| s.to_string()).collect());
    for i in 0..3000usize {
        let n = (i * 7919 + round * 104_729) % 1000;
        let (is, ns) = (i.to_string(), n.to_string());
        // A queue: two pushes, one pop (left in, right out), and now and
        // then a pop from the left (the newest element).
        c(&["LPUSH", "q", &format!("j{round}:{i}")]);
        if i % 2 == 1 {
            c(&["RPOP", "q"]);
        }
        if i % 17 == 0 {
            c(&["LPOP", "q"]);
        }
        // Scores replaced over 200 members, some removed and added back.
        c(&["ZADD", "z", &ns, &format!("m{}", i % 200)]);
        if i % 13 == 0 {
            c(&["ZREM", "z", &format!("m{}", (i * 3) % 200)]);
        }
        c(&["ZINCRBY", "z", "1.5", &format!("m{}", (i * 11) % 200)]);
        // Members in and out.
        c(&["SADD", "s", &format!("e{}", i % 50)]);
        c(&["SREM", "s", &format!("e{}", (i + 25) % 50)]);
        c(&["HSET", "h", &format!("f{}", i % 60), &is]);
        c(&["HDEL", "h", &format!("f{}", (i * 7) % 60)]);
        // Entries added, most deleted soon after (IDs are explicit).
        let id = format!("{}-{}", round * 10_000 + i + 1, 1);
        c(&["XADD", "x", &id, "f", &is]);
        if i % 4 != 0 {
            c(&["XDEL", "x", &id]);
        }
    }
    out
}

/// What is read back: the whole of each key.
fn reads() -> Vec<Vec<String>> {
    [
        vec!["LRANGE", "q", "0", "-1"],
        vec!["LLEN", "q"],
        vec!["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        vec!["ZCARD", "z"],
        vec!["ZRANK", "z", "m7"],
        vec!["ZRANGEBYSCORE", "z", "100", "300", "WITHSCORES"],
        vec!["SORT", "s", "ALPHA"],
        vec!["SCARD", "s"],
        vec!["HLEN", "h"],
        vec!["HGET", "h", "f3"],
        vec!["SORT", "h", "BY", "nosort"],
        vec!["XLEN", "x"],
        vec!["XRANGE", "x", "-", "+"],
        vec!["XREVRANGE", "x", "+", "-", "COUNT", "5"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect()
}

fn run(c: &mut Raw, cmds: &[Vec<String>]) -> Vec<String> {
    let mut got = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(64) {
        let mut req = Vec::new();
        for cmd in chunk {
            req.extend(Raw::encode(cmd));
        }
        c.send_bytes(&req);
        for _ in chunk {
            got.push(show(&c.reply()));
        }
    }
    got
}

fn same(what: &str, cmds: &[Vec<String>], want: &[String], got: &[String]) {
    for ((cmd, w), g) in cmds.iter().zip(want).zip(got) {
        assert_eq!(g, w, "{what}: {cmd:?}");
    }
}

#[test]
fn short_lived_members_agree_with_redis_across_kill_9() {
    let redis = RedisServer::start();
    let mut r = redis.raw();
    for (tier, env) in [("small generations", Some("97")), ("the default tier", None)] {
        assert_eq!(r.cmd(&["FLUSHALL"]), b"+OK\r\n");
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let envs: Vec<(&str, &str)> = env.map(|e| ("BASALT_TIER", e)).into_iter().collect();
        for round in 0..3 {
            let mut b = Basalt::start_in_env(&dir, 1, &[], &envs);
            let mut c = b.raw();
            let reads = reads();
            same(
                &format!("{tier}, after kill -9 {round}"),
                &reads,
                &run(&mut r, &reads),
                &run(&mut c, &reads),
            );
            let cmds = churn(round);
            let want = run(&mut r, &cmds);
            same(&format!("{tier}, round {round}"), &cmds, &want, &run(&mut c, &cmds));
            if env.is_none() {
                // The churn's short-lived records left nothing in the tier
                // (the pops' read-ahead applies the queue's, the other keys'
                // wait there): ~600 records, ~2500 when every delete of a
                // new record stayed a tombstone.
                let held = c.info_u64("memory", "wtier_records");
                assert!(held < 1500, "{tier}: the tier holds {held} records");
            }
            same(
                &format!("{tier}, round {round} read back"),
                &reads,
                &run(&mut r, &reads),
                &run(&mut c, &reads),
            );
            b.signal_and_wait("-KILL");
        }
        let b = Basalt::start_in_env(&dir, 1, &[], &envs);
        let reads = reads();
        same(
            &format!("{tier}, at the end"),
            &reads,
            &run(&mut r, &reads),
            &run(&mut b.raw(), &reads),
        );
    }
}
