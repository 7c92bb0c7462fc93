//! The two on-disk layouts (docs/encoding.md, "A database per shard"): a
//! data dir written under one opens under the other, and under another
//! shard count, with every key intact, through the real server.

mod common;

use std::path::Path;

use common::{Basalt, Raw};

/// Writes strings, a hash, a list, a set and a sorted set, and one EXEC
/// over several shards.
fn fill(c: &mut Raw) {
    for i in 0..200 {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]), b"+OK\r\n");
    }
    for f in 0..50 {
        c.cmd(&["HSET", "h", &format!("f{f}"), "x"]);
    }
    for e in 0..30 {
        c.cmd(&["RPUSH", "l", &format!("e{e}")]);
    }
    c.cmd(&["SADD", "s", "a", "b", "c"]);
    c.cmd(&["ZADD", "z", "1", "one", "2", "two"]);
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    c.cmd(&["SET", "tx:a", "1"]);
    c.cmd(&["SET", "tx:b", "2"]);
    c.cmd(&["MSET", "tx:c", "3", "tx:d", "4"]);
    assert_eq!(c.cmd(&["EXEC"]), b"*3\r\n+OK\r\n+OK\r\n+OK\r\n");
}

fn check(c: &mut Raw, extra: usize) {
    assert_eq!(c.cmd(&["DBSIZE"]), format!(":{}\r\n", 208 + extra).into_bytes());
    for i in [0, 77, 199] {
        let v = format!("v{i}");
        assert_eq!(c.cmd(&["GET", &format!("k{i}")]), format!("${}\r\n{v}\r\n", v.len()).into_bytes());
    }
    assert_eq!(c.cmd(&["HLEN", "h"]), b":50\r\n");
    assert_eq!(c.cmd(&["LLEN", "l"]), b":30\r\n");
    assert_eq!(c.cmd(&["LINDEX", "l", "-1"]), b"$3\r\ne29\r\n");
    assert_eq!(c.cmd(&["SCARD", "s"]), b":3\r\n");
    assert_eq!(c.cmd(&["ZSCORE", "z", "two"]), b"$1\r\n2\r\n");
    assert_eq!(
        c.cmd(&["MGET", "tx:a", "tx:b", "tx:c", "tx:d"]),
        b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n"
    );
}

fn shard_dbs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("shard-"))
        .collect();
    v.sort();
    v
}

#[test]
fn data_moves_between_the_layouts_and_shard_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let mut b = Basalt::start_in_env(dir, 2, &[], &[("BASALT_SPLIT", "0")]);
        let mut c = b.raw();
        fill(&mut c);
        check(&mut c, 0);
        assert!(shard_dbs(dir).is_empty(), "one database: {:?}", shard_dbs(dir));
        b.signal_and_wait("-TERM");
    }
    {
        // The default: a database per shard, here three.
        let mut b = Basalt::start_in(dir, 3, &[]);
        let mut c = b.raw();
        check(&mut c, 0);
        assert_eq!(shard_dbs(dir), ["shard-0", "shard-1", "shard-2"]);
        // A cross-shard write and an EXEC over shards, then kill -9.
        assert_eq!(c.cmd(&["MSET", "m:1", "a", "m:2", "b", "m:3", "c"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
        c.cmd(&["SET", "m:4", "d"]);
        c.cmd(&["RENAME", "m:1", "m:5"]);
        assert_eq!(c.cmd(&["EXEC"]), b"*2\r\n+OK\r\n+OK\r\n");
        b.signal_and_wait("-KILL");
    }
    {
        let mut b = Basalt::start_in(dir, 2, &[]);
        let mut c = b.raw();
        check(&mut c, 4);
        assert_eq!(
            c.cmd(&["MGET", "m:1", "m:2", "m:3", "m:4", "m:5"]),
            b"*5\r\n$-1\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\na\r\n"
        );
        assert_eq!(shard_dbs(dir), ["shard-0", "shard-1"], "the third shard's database is gone");
        b.signal_and_wait("-TERM");
    }
    let b = Basalt::start_in_env(dir, 1, &[], &[("BASALT_SPLIT", "0")]);
    let mut c = b.raw();
    check(&mut c, 4);
    assert_eq!(c.cmd(&["GET", "m:5"]), b"$1\r\na\r\n");
    assert!(shard_dbs(dir).is_empty(), "back in one database: {:?}", shard_dbs(dir));
}
