//! Inside EXEC, commands read what the commands before them wrote, although
//! nothing is in RocksDB until the whole transaction is (issue 15;
//! `storage::tx`): point reads, member scans both ways, counts, range
//! deletes (DEL of a collection, FLUSHDB), on one shard and across four,
//! against Debian's redis-server; and a collection big enough to be read
//! in slices from a snapshot. (Set members are asked for one by one:
//! SMEMBERS's order is Redis's hash table order.)

mod common;

use common::{run_scripts, Basalt};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "reads-see-the-writes-before-them",
        r#"
        FLUSHALL
        HSET h0 a 1 b 2 c 3
        RPUSH l0 x y z
        SADD s0 a b c
        MULTI
        HSET h0 d 4
        HDEL h0 b
        HGETALL h0
        HLEN h0
        HGET h0 d
        HKEYS h0
        SADD s0 d
        SREM s0 b
        SCARD s0
        SMISMEMBER s0 a b c d
        SISMEMBER s0 d
        LPUSH l0 w
        RPOP l0
        LRANGE l0 0 -1
        LTRIM l0 1 -1
        LRANGE l0 0 -1
        LINDEX l0 -1
        LLEN l0
        SET k0 v
        APPEND k0 w
        GET k0
        GETRANGE k0 0 0
        STRLEN k0
        INCR n0
        INCRBY n0 5
        GET n0
        DEL h0
        HGETALL h0
        HSET h0 z 26
        HGETALL h0
        EXISTS h0 s0 l0 k0 n0
        DBSIZE
        EXEC
        HGETALL h0
        SMISMEMBER s0 a b c d
        LRANGE l0 0 -1
        MGET k0 n0
        DBSIZE
        "#,
    ),
    (
        "flushdb-inside-exec",
        r#"
        FLUSHALL
        MSET a 1 b 2 c 3
        HSET h f v
        RPUSH l 1 2
        MULTI
        GET a
        FLUSHDB
        GET a
        HGETALL h
        LRANGE l 0 -1
        DBSIZE
        EXISTS a b c h l
        SET a new
        RPUSH l 3 4 5
        LPOP l
        LRANGE l 0 -1
        HSET h g w
        HGETALL h
        MGET a b c
        DBSIZE
        EXEC
        MGET a b c
        HGETALL h
        LRANGE l 0 -1
        DBSIZE
        "#,
    ),
    (
        "moves-and-stores-inside-exec",
        r#"
        FLUSHALL
        SADD s1 a b c
        SADD s2 b c d
        RPUSH src 1 2 3
        MULTI
        SADD s1 e
        SINTERSTORE s3 s1 s2
        SMISMEMBER s3 a b c d e
        SUNIONSTORE s4 s1 s2
        SCARD s4
        SMOVE s1 s2 a
        SMISMEMBER s2 a b c d e
        LMOVE src dst LEFT RIGHT
        RPOPLPUSH src dst
        LRANGE dst 0 -1
        LRANGE src 0 -1
        RENAME dst moved
        LRANGE moved 0 -1
        EXISTS dst
        EXEC
        SMISMEMBER s1 a b c d e
        SMISMEMBER s2 a b c d e
        LRANGE moved 0 -1
        "#,
    ),
];

#[test]
fn reads_see_earlier_writes_like_redis_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn reads_see_earlier_writes_like_redis_four_shards() {
    let keys = ["h0", "l0", "s0", "k0", "a", "b", "h", "l", "s1", "s2", "src", "dst"];
    let spread = keys.map(|k| basalt::slot::owner(k.as_bytes(), 4));
    assert!(spread.iter().any(|o| *o != spread[0]), "{spread:?}");
    run_scripts(SCRIPTS, 4);
}

/// The number of elements of the array reply that starts `reply`, and
/// the rest of it.
fn array_len(reply: &[u8]) -> usize {
    let text = String::from_utf8_lossy(reply);
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix('*').and_then(|n| n.parse().ok()).unwrap_or(usize::MAX)
}

/// A hash of more than 1024 fields is read in slices from a snapshot; one
/// taken inside a transaction carries the transaction's writes. The hash
/// gets its fields inside the EXEC (across shards, with the gate, and on
/// one shard), and HGETALL, HLEN and HSCAN-free reads inside it see them.
#[test]
fn a_big_collection_read_in_slices_sees_the_transactions_writes() {
    for (shards, key) in [(2, "big"), (1, "{t}big")] {
        let b = Basalt::start(shards);
        let mut c = b.raw();
        let fields: Vec<String> = (0..1500).flat_map(|i| [format!("f{i:04}"), format!("v{i}")]).collect();
        assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
        let mut hset = vec!["HSET", key];
        hset.extend(fields.iter().map(String::as_str));
        assert_eq!(c.cmd(&hset), b"+QUEUED\r\n");
        assert_eq!(c.cmd(&["HDEL", key, "f0007"]), b"+QUEUED\r\n");
        assert_eq!(c.cmd(&["HGETALL", key]), b"+QUEUED\r\n");
        assert_eq!(c.cmd(&["HLEN", key]), b"+QUEUED\r\n");
        // Another shard's key (with two shards), so the gate is taken.
        assert_eq!(c.cmd(&["SET", "other", "1"]), b"+QUEUED\r\n");
        let reply = c.cmd(&["EXEC"]);
        let text = String::from_utf8_lossy(&reply);
        assert!(
            text.starts_with("*5\r\n:1500\r\n:1\r\n*2998\r\n"),
            "{shards} shards: {}",
            &text[..40.min(text.len())]
        );
        assert!(
            text.contains("$5\r\nf0006\r\n") && !text.contains("$5\r\nf0007\r\n"),
            "{shards} shards"
        );
        assert!(text.ends_with(":1499\r\n+OK\r\n"), "{shards} shards");
        assert_eq!(array_len(&c.cmd(&["HGETALL", key])), 2998, "{shards} shards, after EXEC");
    }
}

/// Time stands still inside EXEC, as in Redis: a key that expires while
/// the transaction runs (here during a DEBUG SLEEP) is live for every
/// command of it, and gone after. The script runs whole on one server,
/// then on the other (interleaved, one server's sleep would pass on the
/// other's clock), and the replies are compared.
#[test]
fn time_stands_still_inside_exec_like_redis() {
    let script: &[&[&str]] = &[
        &["SET", "k", "v", "PX", "150"],
        &["SET", "k2", "v", "PX", "150"],
        &["MULTI"],
        &["GET", "k"],
        &["DEBUG", "SLEEP", "0.3"],
        &["GET", "k"],
        &["EXISTS", "k", "k2"],
        &["GET", "k2"],
        &["EXEC"],
        &["GET", "k"],
        &["EXISTS", "k", "k2"],
    ];
    let run = |c: &mut common::Raw| -> Vec<String> { script.iter().map(|cmd| common::show(&c.cmd(cmd))).collect() };
    let debug = ["--enable-debug-command", "yes"];
    let redis = common::RedisServer::start_with(&debug);
    let want = run(&mut redis.raw());
    assert_eq!(
        want[8], "*5\\r\\n$1\\r\\nv\\r\\n+OK\\r\\n$1\\r\\nv\\r\\n:2\\r\\n$1\\r\\nv\\r\\n",
        "redis-server's EXEC"
    );
    for shards in [1, 4] {
        let basalt = Basalt::start_with(shards, &debug);
        assert_eq!(run(&mut basalt.raw()), want, "{shards} shards");
    }
}
