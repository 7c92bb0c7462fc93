//! Pipelines whose commands go to several shards run as one message per
//! shard, all shards at once (issue 11). The replies must come back in
//! command order, exactly as redis-server gives them, with reads seeing the
//! writes before them in the pipeline (each shard's part is one write
//! group: `dispatch::group`), connection commands (PING, MGET,
//! SELECT) as barriers, errors in place, and big replies that stream from
//! the connection (`Ctx::later`) spliced where they belong.

mod common;

use common::{show, Basalt, Raw, RedisServer, Rng};

/// A random pipeline of `n` commands over keys spread across shards.
fn pipeline(rng: &mut Rng, n: usize) -> Vec<Vec<String>> {
    let keys: Vec<String> = (0..12).map(|i| format!("p:{i}")).collect();
    (0..n)
        .map(|i| {
            let k = keys[rng.below(keys.len())].clone();
            let k2 = keys[rng.below(keys.len())].clone();
            let v = rng.below(1000).to_string();
            let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            match rng.below(26) {
                0 | 1 => s(&["SET", &k, &v]),
                2 | 3 => s(&["GET", &k]),
                4 => s(&["INCR", &k]),
                5 => s(&["APPEND", &k, &v]),
                6 => s(&["STRLEN", &k]),
                7 => s(&["HSET", &k, "f", &v]),
                8 => s(&["HGET", &k, "f"]),
                9 => s(&["SADD", &k, &v]),
                10 => s(&["SCARD", &k]),
                11 => s(&["DEL", &k]),
                12 => s(&["EXISTS", &k]),
                13 => s(&["TYPE", &k]),
                14 => s(&["PING"]),
                15 => s(&["MGET", &k, &k2]),
                16 => s(&["SELECT", ["0", "1"][rng.below(2)]]),
                17 => s(&["GETSET", &k, &format!("g{i}")]),
                18 => s(&["NOSUCHCMD", &k]),
                // Member records: reads of what the same group staged.
                19 => s(&["HDEL", &k, "f"]),
                20 => s(&["HLEN", &k]),
                21 => s(&["SISMEMBER", &k, &v]),
                22 => s(&["SREM", &k, &v]),
                23 => s(&["HINCRBY", &k, "n", "3"]),
                24 => s(&["GETRANGE", &k, "0", "2"]),
                _ => s(&["EXPIRE", &k, "1000"]),
            }
        })
        .collect()
}

/// Sends the whole pipeline in one write and reads one reply per command.
fn run(c: &mut Raw, cmds: &[Vec<String>]) -> Vec<Vec<u8>> {
    let bytes: Vec<u8> = cmds.iter().flat_map(|a| Raw::encode(a)).collect();
    c.send_bytes(&bytes);
    cmds.iter().map(|_| c.reply()).collect()
}

#[test]
fn spread_pipelines_answer_like_redis_in_order() {
    let redis = RedisServer::start();
    // 1 shard: every run is local (one write group per run between
    // awaits); 2 and 3: each shard's share is one group.
    for shards in [1, 2, 3] {
        let basalt = Basalt::start(shards);
        let (mut r, mut b) = (redis.raw(), basalt.raw());
        for db in ["1", "0"] {
            r.cmd(&["SELECT", db]);
            r.cmd(&["FLUSHDB"]);
        }
        let mut rng = Rng(0x0051_57AD + shards as u64);
        for round in 0..40 {
            let n = 1 + rng.below(120);
            let cmds = pipeline(&mut rng, n);
            let (want, got) = (run(&mut r, &cmds), run(&mut b, &cmds));
            for (k, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(show(w), show(g), "{shards} shards, round {round}, command {k}: {:?}", cmds[k]);
            }
        }
    }
}

/// A collection big enough to stream its reply from the connection
/// (left to the connection) in the middle of a spread pipeline lands in its place.
#[test]
fn streamed_replies_keep_their_place_in_a_spread_pipeline() {
    let basalt = Basalt::start(2);
    let mut c = basalt.raw();
    let mut hset = vec!["HSET".to_string(), "big".to_string()];
    for i in 0..3000 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    assert_eq!(c.cmd(&hset), b":3000\r\n");
    let whole = c.cmd(&["HGETALL", "big"]);
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for i in 0..40 {
        cmds.push(vec!["SET".into(), format!("k:{i}"), i.to_string()]);
        if i % 10 == 5 {
            cmds.push(vec!["HGETALL".into(), "big".into()]);
            cmds.push(vec!["HKEYS".into(), "big".into()]);
        }
        cmds.push(vec!["GET".into(), format!("k:{i}")]);
    }
    let replies = run(&mut c, &cmds);
    let keys = c.cmd(&["HKEYS", "big"]);
    for (cmd, reply) in cmds.iter().zip(&replies) {
        match cmd[0].as_str() {
            "SET" => assert_eq!(reply, b"+OK\r\n"),
            "GET" => assert_eq!(show(reply), format!("${}\\r\\n{}\\r\\n", cmd[1][2..].len(), &cmd[1][2..])),
            "HGETALL" => assert!(reply == &whole, "HGETALL out of place"),
            _ => assert!(reply == &keys, "HKEYS out of place"),
        }
    }
}

/// A GET of another shard's key is read from here, without a hop; it must
/// answer exactly as the owner would: values, missing and expired keys
/// (left for the owner to delete), WRONGTYPE, big strings, a hash whose
/// fields all expired, and a value written just before on the same
/// connection.
#[test]
fn cross_shard_get_reads_like_the_owner() {
    // Only shard 0 accepts: keys tagged {a} live on shard 1 of 2.
    let basalt = Basalt::start_with(2, &["--listen-shards", "0"]);
    let mut c = basalt.raw();
    let big = "x".repeat(300 * 1024);
    for _ in 0..3 {
        assert_eq!(c.cmd(&["SET", "{a}s", "v1"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["GET", "{a}s"]), b"$2\r\nv1\r\n");
        assert_eq!(c.cmd(&["GET", "{a}missing"]), b"$-1\r\n");
        assert_eq!(c.cmd(&["SADD", "{a}set", "m"]), b":1\r\n");
        assert_eq!(
            show(&c.cmd(&["GET", "{a}set"])),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\\r\\n"
        );
        assert_eq!(c.cmd(&["SET", "{a}big", &big]), b"+OK\r\n");
        assert_eq!(c.cmd(&["GET", "{a}big"]), format!("${}\r\n{big}\r\n", big.len()).into_bytes());
        assert_eq!(c.cmd(&["SET", "{a}ttl", "t", "PX", "30"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["HSET", "{a}h", "f", "v"]), b":1\r\n");
        assert_eq!(c.cmd(&["HPEXPIRE", "{a}h", "30", "FIELDS", "1", "f"]), b"*1\r\n:1\r\n");
        std::thread::sleep(std::time::Duration::from_millis(60));
        assert_eq!(c.cmd(&["GET", "{a}ttl"]), b"$-1\r\n");
        assert_eq!(c.cmd(&["GET", "{a}h"]), b"$-1\r\n");
        // Pipelined: each GET sees the SET before it.
        let mut p = Vec::new();
        for i in 0..50 {
            p.extend(Raw::encode(&["SET", "{a}p", &i.to_string()]));
            p.extend(Raw::encode(&["GET", "{a}p"]));
        }
        c.send_bytes(&p);
        for i in 0..50 {
            assert_eq!(c.reply(), b"+OK\r\n");
            assert_eq!(show(&c.reply()), format!("${}\\r\\n{i}\\r\\n", i.to_string().len()));
        }
        assert_eq!(c.cmd(&["DEL", "{a}s", "{a}set", "{a}big", "{a}p"]), b":4\r\n");
    }
    // Reads made here are counted like the owner's: per round two single
    // GET hits, 50 pipelined ones, and the GET of a set (found, if of the
    // wrong type: a hit, as in Redis); misses: missing, expired, the hash.
    let stats = String::from_utf8_lossy(&c.cmd(&["INFO", "stats"])).to_string();
    let field = |name: &str| stats.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
    assert_eq!(field("keyspace_hits:").as_deref(), Some("159"), "{stats}");
    assert_eq!(field("keyspace_misses:").as_deref(), Some("9"), "{stats}");
    // A key the owner deleted reads as missing here too: the owner's meta
    // cache remembers it absent, and this shard reads that cache.
    assert_eq!(c.cmd(&["SET", "{a}gone", "v"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "{a}gone"]), b"$1\r\nv\r\n");
    assert_eq!(c.cmd(&["DEL", "{a}gone"]), b":1\r\n");
    assert_eq!(c.cmd(&["GET", "{a}gone"]), b"$-1\r\n");
}
