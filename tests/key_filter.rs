//! The key filter (`storage::keyfilter`): a read of a key that does not
//! exist answers from a shard's in-memory filter instead of RocksDB. It may
//! never hide a key that exists: every way a command makes a key is read
//! back right after a read that found it absent, against Debian's
//! redis-server, on 1 and 3 shards and in RESP3; keys made before a kill -9
//! and a restart (the filter is built again from the records at the open)
//! are all found, and INFO counts the absent reads it answered.

mod common;

use common::{run_resp3_script, run_scripts, Basalt};

/// Each block reads a key absent (the filter answers), makes it one more
/// way, and reads it back.
const MAKES: &str = r#"
    GET s
    SET s v
    GET s
    EXISTS n1 n2
    MSET n1 a n2 b
    MGET n1 n2 n3
    MSETNX n3 c n4 d
    EXISTS n3 n4
    SETNX nx 1
    GET nx
    SET sg v GET
    GET sg
    INCR ctr
    INCRBYFLOAT f 1.5
    GET f
    APPEND ap x
    STRLEN ap
    SETRANGE sr 3 y
    GET sr
    SET ex v EX 100
    TTL ex
    GETEX ex PERSIST
    TYPE h
    HSET h f v
    HSETNX h2 f v
    HGETALL h2
    HINCRBY hi f 3
    TYPE hi
    LPUSH l a
    RPUSH l2 b
    LRANGE l2 0 -1
    LPUSHX lx a
    EXISTS lx
    SADD set a
    SISMEMBER set a
    ZADD z 1 a
    ZINCRBY z2 2 b
    ZRANGE z2 0 -1 WITHSCORES
    XADD x 1-1 f v
    XLEN x
    XGROUP CREATE xg g $ MKSTREAM
    TYPE xg
    PFADD hll a b
    PFCOUNT hll
    GEOADD geo 13.361389 38.115556 p
    GEOPOS geo p
    SETBIT bits 7 1
    GET bits
    BITOP OR bo bits
    GET bo
    SUNIONSTORE su set
    SMEMBERS su
    SINTERSTORE si set
    SMEMBERS si
    ZUNIONSTORE zu 1 z
    ZRANGE zu 0 -1
    ZRANGESTORE zr z 0 -1
    ZRANGE zr 0 -1
    LMOVE l lm LEFT RIGHT
    LRANGE lm 0 -1
    RPOPLPUSH l2 rp
    LRANGE rp 0 -1
    SMOVE set sm a
    SMEMBERS sm
    SORT l2 STORE so
    LRANGE so 0 -1
    RENAME s rn
    GET rn
    RENAMENX rn rn2
    GET rn2
    COPY rn2 cp
    GET cp
    COPY rn2 cpdb DB 1
    MOVE cp 2
    SELECT 2
    GET cp
    SELECT 1
    GET cpdb
    SWAPDB 0 3
    SELECT 3
    GET rn2
    SELECT 0
    GET rn2
    SET after v
    SWAPDB 0 3
    GET after
    GET rn2
    SELECT 3
    GET after
    SELECT 0
    EVAL "return redis.call('SET', KEYS[1], 'lua')" 1 ev
    GET ev
    MULTI
    SET m1 a
    HSET m2 f v
    EXEC
    GET m1
    HGET m2 f
    DEL m1
    GET m1
    SET m1 again
    GET m1
    DBSIZE
"#;

#[test]
fn every_way_to_make_a_key_is_read_back_one_shard() {
    run_scripts(&[("key-filter-makes", MAKES)], 1);
}

#[test]
fn every_way_to_make_a_key_is_read_back_three_shards() {
    run_scripts(&[("key-filter-makes", MAKES)], 3);
}

#[test]
fn every_way_to_make_a_key_is_read_back_resp3() {
    run_resp3_script("key-filter-makes", MAKES, 1);
}

/// DUMP and RESTORE on one server (the payloads are each server's own).
#[test]
fn a_restored_key_is_found() {
    let b = Basalt::start(2);
    let mut c = b.raw();
    c.cmd(&["HSET", "src", "f", "v"]);
    let dump = c.cmd(&["DUMP", "src"]);
    let body = dump.split(|&x| x == b'\n').skip(1).collect::<Vec<_>>().join(&b'\n');
    let payload = &body[..body.len() - 2];
    assert_eq!(c.cmd(&["EXISTS", "dst"]), b":0\r\n");
    assert_eq!(c.cmd(&[&b"RESTORE"[..], b"dst", b"0", payload]), b"+OK\r\n");
    assert_eq!(c.cmd(&["HGET", "dst", "f"]), b"$1\r\nv\r\n");
}

/// Keys made before kill -9 are found after the restart, on 1 and 2
/// shards; the filter answers reads of keys that were never made.
#[test]
fn keys_survive_a_restart_and_absent_reads_skip_rocksdb() {
    for shards in [1usize, 2] {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Basalt::start_in(dir.path(), shards, &[]);
        let mut c = b.raw();
        for i in 0..2000 {
            let k = format!("k:{i}");
            assert_eq!(c.cmd(&["GET", &k]), b"$-1\r\n");
            match i % 4 {
                0 => assert_eq!(c.cmd(&["SET", &k, "v"]), b"+OK\r\n"),
                1 => assert_eq!(c.cmd(&["HSET", &k, "f", "v"]), b":1\r\n"),
                2 => assert_eq!(c.cmd(&["RPUSH", &k, "a"]), b":1\r\n"),
                _ => assert_eq!(c.cmd(&["SADD", &k, "a"]), b":1\r\n"),
            }
        }
        let answered = c.info_u64("memory", "key_filter_absent_reads");
        assert!(answered >= if shards == 1 { 2000 } else { 1 }, "{shards} shards: {answered}");
        b.signal_and_wait("-KILL");
        let b = Basalt::start_in(dir.path(), shards, &[]);
        let mut c = b.raw();
        assert_eq!(c.info_u64("memory", "key_filter_absent_reads"), 0);
        assert!(
            c.info_u64("memory", "key_filter_keys") >= 1990,
            "built from the records at the open"
        );
        assert!(c.info_u64("memory", "key_filter_bytes") > 0);
        for i in 0..2000 {
            let k = format!("k:{i}");
            let want: &[u8] = [&b"string\r\n"[..], b"hash\r\n", b"list\r\n", b"set\r\n"][i % 4];
            let got = c.cmd(&["TYPE", &k]);
            assert_eq!(&got[1..], want, "{k} after kill -9, {shards} shards");
        }
        assert_eq!(c.cmd(&["DBSIZE"]), b":2000\r\n");
        for i in 0..500 {
            assert_eq!(c.cmd(&["GET", &format!("never:{i}")]), b"$-1\r\n");
        }
        // With 2 shards a key another shard owns is read through that
        // shard's meta cache and RocksDB (peers read no filter), so only
        // the reads of the connection's own shard's keys count.
        let answered = c.info_u64("memory", "key_filter_absent_reads");
        let least = if shards == 1 { 490 } else { 1 };
        assert!(
            answered >= least,
            "{shards} shards: {answered} reads of keys never made answered by the filter"
        );
    }
}

/// A shard started empty that grows past the million keys its filter was
/// sized for keeps one: the filter grows a layer (it used to turn itself
/// off, and every read of a new key went to RocksDB again), every key
/// written is still found, and reads of keys never made are answered.
#[test]
fn a_shard_that_grows_past_its_filters_size_keeps_one() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    let first = c.info_u64("memory", "key_filter_capacity");
    let n = first as usize + first as usize / 8;
    let per = 500;
    let mut sent = 0;
    for chunk in 0..n.div_ceil(per) {
        let mut args = vec!["MSET".to_string()];
        for i in chunk * per..((chunk + 1) * per).min(n) {
            args.push(format!("g:{i}"));
            args.push("v".into());
        }
        c.send_bytes(&common::Raw::encode(&args));
        sent += 1;
        if sent == 64 {
            for _ in 0..sent {
                assert_eq!(c.reply(), b"+OK\r\n");
            }
            sent = 0;
        }
    }
    for _ in 0..sent {
        assert_eq!(c.reply(), b"+OK\r\n");
    }
    assert_eq!(c.cmd(&["DBSIZE"]), format!(":{n}\r\n").into_bytes());
    let (bytes, keys, cap) = (
        c.info_u64("memory", "key_filter_bytes"),
        c.info_u64("memory", "key_filter_keys"),
        c.info_u64("memory", "key_filter_capacity"),
    );
    assert!(
        bytes > 0 && cap > first,
        "grew instead of turning off: {bytes} bytes, {keys} keys, {cap} sized for"
    );
    assert!(keys as usize > n - n / 100, "{keys} of {n} keys entered");
    for i in (0..n).step_by(997) {
        assert_eq!(c.cmd(&["EXISTS", &format!("g:{i}")]), b":1\r\n", "g:{i}");
    }
    let before = c.info_u64("memory", "key_filter_absent_reads");
    for i in 0..1000 {
        assert_eq!(c.cmd(&["GET", &format!("never:{i}")]), b"$-1\r\n");
    }
    let answered = c.info_u64("memory", "key_filter_absent_reads") - before;
    assert!(
        answered >= 980,
        "{answered} of 1000 reads of keys never made answered by the filter"
    );
}
