//! Differential tests: the same command scripts, error cases included, go to
//! Debian's redis-server and to Basalt (with 1 shard and with 4 shards), and
//! every reply must be byte-for-byte the same. Hashes, sets and the
//! commands common to every type are in `differential_types.rs`.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_scripts, show, split, Basalt, Raw, RedisServer};

const SCRIPTS: &[(&str, &str)] = &[
    (
        // Options and their errors, as the argument cursor reads them
        // (issue 13): missing values, unknown words, leftovers, numbers.
        "option-grammar",
        r#"
        SET k v
        GETEX k PERSIST EX 1
        GETEX k EX
        GETEX k FOO
        GETEX k PERSIST
        HSET h f v
        HRANDFIELD h 1 FOO
        HRANDFIELD h 1 WITHVALUES x
        HRANDFIELD h x
        SADD s a
        SRANDMEMBER s 1 2
        SRANDMEMBER s x
        SPOP s 1 2
        SPOP s -1
        SPOP s x
        COPY k k2 DB
        COPY k k2 FOO
        COPY k k
        COPY k k2 DB 99
        LCS k k2 MINMATCHLEN
        LCS k k2 FOO
        LCS k k2 LEN IDX
        LCS k k2 MINMATCHLEN x
        SCAN 0 MATCH
        SCAN 0 COUNT 0
        SCAN 0 COUNT x
        SCAN 0 FOO bar
        SCAN x
        SSCAN s 0 NOVALUES
        SSCAN s 0 COUNT 0
        SSCAN s 0 MATCH
        HSCAN h 0 TYPE string
        FLUSHDB FOO
        FLUSHDB SYNC x
        HELLO 3 AUTH
        HELLO 3 AUTH default
        HELLO 3 SETNAME
        CLIENT LIST TYPE
        HELLO 4
        HELLO x
        CLIENT NO-EVICT maybe
        CLIENT LIST ID x
        CLIENT LIST TYPE foo
        CLIENT LIST FOO
        OBJECT ENCODING missing
        OBJECT FOO k
        SINTERCARD 1 s LIMIT
        SINTERCARD 1 s LIMIT -1
        SINTERCARD 0 s
        SINTERCARD 2 s
        EXPIRE k 10 NX XX
        EXPIRE k 10 GT LT
        EXPIRE k x NX
        EXPIRE k 10 FOO
        INCRBY k 1.5
        SETRANGE k -1 x
        GETRANGE k 0 x
        HINCRBY h f x
        HINCRBYFLOAT h f x
        PING a b
        AUTH a b c
        SELECT x
        SELECT 99
        "#,
    ),
    (
        "get-set",
        r#"
        GET missing
        SET k v
        GET k
        SET k v2 NX
        SET k v3 XX
        GET k
        SET n1 v XX
        SET k v4 GET
        SET n2 v GET
        SET k v NX XX
        SET k v EX 0
        SET k v EX -5
        SET k v EX abc
        SET k v PX 10 EX 10
        SET k v KEEPTTL EX 10
        SET k v FOO
        SET k v EX
        SET k v EX 100 GET
        TTL k
        SET k v KEEPTTL
        TTL k
        SET k v
        TTL k
        SET k v EXAT 1
        GET k
        EXISTS k
        SET k v EX 9223372036854775807
        SET k v PX 9223372036854775807
        SETNX k v
        SETNX k2 v
        GET k2
        SETEX k3 100 v
        TTL k3
        SETEX k3 0 v
        SETEX k3 x v
        PSETEX k4 100000 v
        PSETEX k4 -1 v
        GETSET k2 new
        GETSET nope new
        GETDEL k2
        GETDEL k2
        STRLEN nope
        "#,
    ),
    (
        "getex",
        r#"
        SET k v
        GETEX k
        GETEX k EX 100
        TTL k
        GETEX k PERSIST
        TTL k
        GETEX k PX 50000
        PTTL nope
        GETEX k EX 0
        GETEX k FOO
        GETEX k PERSIST EX 10
        GETEX nope EX 10
        GETEX k EXAT 1
        EXISTS k
        "#,
    ),
    (
        "counters",
        r#"
        INCR c
        INCR c
        INCRBY c 10
        DECR c
        DECRBY c 5
        INCRBY c abc
        INCRBY c 1.5
        SET c 9223372036854775807
        INCR c
        SET c -9223372036854775808
        DECR c
        DECRBY c -9223372036854775808
        SET s hello
        INCR s
        SET s " 1"
        INCR s
        SET s 01
        INCR s
        INCRBYFLOAT f 10.5
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f -5
        INCRBYFLOAT f 5.0e3
        INCRBYFLOAT f abc
        SET f 1
        INCRBYFLOAT f 0.2
        INCRBYFLOAT s 1
        INCRBYFLOAT f inf
        SET e 3.0e3
        INCRBYFLOAT e 1
        "#,
    ),
    (
        "append-ranges",
        r#"
        APPEND a Hello
        APPEND a " World"
        GET a
        STRLEN a
        GETRANGE a 0 4
        GETRANGE a -5 -1
        GETRANGE a 0 -1
        GETRANGE a 100 200
        GETRANGE a 5 2
        GETRANGE a -100 -50
        GETRANGE a x 1
        GETRANGE nope 0 -1
        SUBSTR a 0 2
        SETRANGE a 6 Redis
        GET a
        SETRANGE b 5 x
        GET b
        SETRANGE c 0 ""
        EXISTS c
        SETRANGE a 0 ""
        SETRANGE a -1 x
        SETRANGE a 536870912 x
        "#,
    ),
    (
        "mget-mset",
        r#"
        MSET a 1 b 2 c 3 {t}x 4 {t}y 5
        MGET a b c nope {t}x {t}y
        MSET a
        MSET a 1 b
        MSETNX a 9 newkey 1
        GET newkey
        MSETNX n1 1 n2 2 n3 3
        MGET n1 n2 n3
        MSET dup 1 dup 2
        GET dup
        SET l 1
        MGET a l
        "#,
    ),
    (
        "keys-and-expire",
        r#"
        SET a 1
        SET b 2
        SET c 3
        DEL a b nope
        EXISTS a b c c
        UNLINK c
        EXISTS c
        SET k v
        TYPE k
        TYPE nope
        EXPIRE k 100
        TTL k
        EXPIRE k 100 NX
        EXPIRE k 200 XX
        TTL k
        EXPIRE k 50 GT
        EXPIRE k 500 GT
        TTL k
        EXPIRE k 1000 LT
        EXPIRE k 10 LT
        TTL k
        EXPIRE k 10 NX XX
        EXPIRE k 10 GT LT
        EXPIRE k 10 FOO
        EXPIRE k abc
        EXPIRE k 9223372036854775807
        PEXPIRE k 9223372036854775807
        EXPIRE nope 10
        PERSIST k
        PERSIST k
        TTL k
        EXPIRE k 10 XX
        EXPIRE k 10 GT
        EXPIRE k 10 LT
        PERSIST k
        EXPIREAT k 1
        EXISTS k
        SET k v
        PEXPIREAT k 99999999999999
        PEXPIRETIME k
        EXPIRETIME k
        EXPIRETIME nope
        PERSIST k
        EXPIRETIME k
        PTTL k
        EXPIRE k -1
        EXISTS k
        TOUCH a nope
        "#,
    ),
    (
        "rename-copy-move",
        r#"
        SET a 1
        RENAME a b
        GET a
        GET b
        RENAME nope x
        RENAME b b
        SET c 3
        RENAMENX b c
        RENAMENX b d
        RENAMENX d d
        RENAMENX nope x
        SET t v
        EXPIRE t 100
        RENAME t t2
        TTL t2
        COPY t2 t3
        TTL t3
        COPY t2 t3
        COPY t2 t3 REPLACE
        COPY nope x
        COPY t2 t2
        COPY t2 t4 DB 1
        COPY t2 t4 DB 99
        COPY t2 t4 DB x
        COPY t2 t4 FOO
        MOVE t2 1
        MOVE t2 1
        MOVE t3 0
        MOVE t3 99
        MOVE t3 x
        SELECT 1
        GET t2
        TTL t2
        GET t4
        SELECT 99
        SELECT x
        SELECT 0
        "#,
    ),
    (
        "keyspace-wide",
        r#"
        MSET a 1 b 2 c 3 abc 4 {x}1 5
        ~KEYS *
        ~KEYS a*
        ~KEYS ?
        ~KEYS [ab]
        ~KEYS nomatch*
        DBSIZE
        FLUSHDB
        DBSIZE
        SET a 1
        FLUSHDB ASYNC
        FLUSHDB SYNC
        FLUSHDB FOO
        FLUSHALL FOO
        RANDOMKEY
        SET only 1
        RANDOMKEY
        SCAN abc
        SCAN 0 COUNT 0
        SCAN 0 FOO
        "#,
    ),
    (
        "object-dump",
        r#"
        SET i 12345
        SET e hello
        SET r aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
        OBJECT ENCODING i
        OBJECT ENCODING e
        OBJECT ENCODING r
        OBJECT ENCODING nope
        OBJECT FOO i
        OBJECT REFCOUNT nope
        DUMP nope
        RESTORE e 0 garbage
        RESTORE x 0 garbage
        RESTORE x -1 garbage
        "#,
    ),
    (
        "lcs",
        r#"
        MSET key1 ohmytext key2 mynewtext
        LCS key1 key2
        LCS key1 key2 LEN
        LCS key1 key2 IDX
        LCS key1 key2 IDX MINMATCHLEN 4
        LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN
        LCS key1 key2 LEN IDX
        LCS key1 nope
        LCS key1 key2 FOO
        "#,
    ),
    (
        "connection-and-errors",
        r#"
        PING
        PING hello
        PING a b
        ECHO hi
        ECHO
        GET
        GET a b
        NOSUCHCOMMAND a b
        nosuchcommand
        CLIENT FOO
        CLIENT SETNAME "bad name"
        CLIENT SETNAME good
        CLIENT GETNAME
        CLIENT SETNAME
        CLIENT NO-EVICT on
        CLIENT NO-EVICT maybe
        CLIENT KILL 1.2.3.4:5
        CLIENT KILL ID 999999
        CLIENT KILL ID abc
        CONFIG FOO
        CONFIG GET maxclients
        CONFIG SET maxclients abc
        CONFIG SET nosuchparam 1
        CONFIG SET maxclients
        AUTH foo
        AUTH a b
        HELLO 4
        HELLO abc
        OBJECT
        COMMAND GETKEYS GET k
        COMMAND GETKEYS MSET a 1 b 2
        COMMAND GETKEYS NOSUCH a
        COMMAND INFO nosuchcommand
        DEBUG SLEEP 0
        "#,
    ),
    (
        "slowlog-and-latency",
        r#"
        CONFIG SET slowlog-log-slower-than -1
        SLOWLOG RESET
        SLOWLOG LEN
        SLOWLOG GET
        SLOWLOG GET -1
        SLOWLOG GET -2
        SLOWLOG GET abc
        SLOWLOG GET 1 2
        SLOWLOG LEN x
        SLOWLOG FOO
        SLOWLOG
        CONFIG SET slowlog-max-len -1
        CONFIG SET slowlog-log-slower-than abc
        CONFIG SET slowlog-log-slower-than 10000
        LATENCY RESET
        LATENCY LATEST
        LATENCY HISTORY command
        LATENCY HISTORY
        LATENCY RESET command fork
        LATENCY HISTOGRAM nosuchcommand
        LATENCY FOO
        CONFIG SET latency-monitor-threshold -1
        CONFIG SET latency-tracking maybe
        CONFIG SET latency-tracking-info-percentiles "50 101"
        CONFIG SET latency-tracking-info-percentiles abc
        CONFIG SET latency-tracking-info-percentiles "50 99.9"
        CONFIG GET latency-tracking-info-percentiles
        CONFIG SET latency-tracking-info-percentiles "50 99 99.9"
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
    differential(4);
}

/// RESP3 replies after HELLO 3: maps, nulls, doubles as redis-server sends them.
#[test]
fn same_resp3_replies_as_redis() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    for c in [&["HELLO", "3"][..], &["FLUSHALL"]] {
        r.cmd(c);
        b.cmd(c);
    }
    let script = r#"
        GET nope
        SET k 1
        MGET k nope
        CONFIG GET maxclients
        LCS k k IDX
        INCRBYFLOAT f 1.5
        PING
        HSET h a 1
        HGETALL h
        HGETALL nope
        HRANDFIELD h -2 WITHVALUES
        SADD s x
        SMEMBERS s
        SPOP s 0
        SRANDMEMBER s 5
        SINTER s s
        "#;
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let args = split(line);
        let (want, got) = (r.cmd(&args), b.cmd(&args));
        assert_eq!(show(&want), show(&got), "RESP3 `{line}`");
    }
}

/// Protocol errors: same error line as Redis, then the connection is closed.
#[test]
fn protocol_errors_like_redis() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(1);
    let cases: &[&[u8]] = &[
        b"*abc\r\n",
        b"*1\r\n+PING\r\n",
        b"*1\r\n$-3\r\n",
        b"*1\r\n$abc\r\n",
        b"*2147483648\r\n",
        b"SET k \"unbalanced\r\n",
    ];
    for case in cases {
        let mut r = redis.raw();
        let mut b = basalt.raw();
        r.send_bytes(case);
        b.send_bytes(case);
        let (want, got) = (r.reply(), b.reply());
        assert_eq!(show(&want), show(&got), "input {:?}", String::from_utf8_lossy(case));
        assert!(
            b.closed(),
            "basalt kept the connection open after {:?}",
            String::from_utf8_lossy(case)
        );
    }
    // Inline commands and empty requests are served, not errors.
    let mut b = basalt.raw();
    b.send_bytes(b"\r\n*0\r\nPING\r\nset k \"a b\"\r\nget k\r\n");
    assert_eq!(b.reply(), b"+PONG\r\n");
    assert_eq!(b.reply(), b"+OK\r\n");
    assert_eq!(b.reply(), b"$3\r\na b\r\n");
}

/// `keys=` and `expires=` of INFO keyspace's db0 line ("" when db0 is empty).
fn keyspace_counts(c: &mut Raw) -> String {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "keyspace"])).to_string();
    info.lines()
        .find_map(|l| l.strip_prefix("db0:"))
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

/// INFO keyspace counts keys with an expiry as Redis does, through every
/// command that sets, keeps, clears or moves one.
#[test]
fn keyspace_expires_count_like_redis() {
    let script = r#"
        SET a 1 EX 100
        SET b 2 PX 100000
        SET c 3
        SETEX d 100 4
        SET a 5
        EXPIRE c 100
        PERSIST b
        GETEX c PERSIST
        GETEX b EX 50
        INCR d
        APPEND d x
        MSET d 1 e 2
        EXPIRE e 100
        RENAME e f
        COPY f g
        MOVE g 1
        SET h 1 EX 100
        DEL h
        SET i 1 KEEPTTL
        PSETEX j 100000 v
        SETRANGE j 0 w
        GETDEL j
        EXPIRE a 0
    "#;
    for shards in [1, 4] {
        let redis = RedisServer::start();
        let basalt = Basalt::start(shards);
        let (mut r, mut b) = (redis.raw(), basalt.raw());
        for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let args = split(line);
            assert_eq!(show(&r.cmd(&args)), show(&b.cmd(&args)), "`{line}`");
            assert_eq!(keyspace_counts(&mut r), keyspace_counts(&mut b), "after `{line}`, {shards} shards");
        }
    }
}
