//! Differential tests of the collection types (hashes, sets) and of the
//! commands common to every type: the same command scripts, error cases
//! included, go to Debian's redis-server and to Basalt (with 1 shard and
//! with 4 shards), and every reply must be byte-for-byte the same. The
//! string and key scripts are in `differential.rs`.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::run_scripts;

const SCRIPTS: &[(&str, &str)] = &[
    (
        "hashes",
        r#"
        HSET h a 1 b 2 c 3
        HSET h a 10 d 4
        HSET h x
        HSET h
        HMSET h e 5 f 6
        HMSET h e
        HGET h a
        HGET h nope
        HGET nokey a
        HMGET h a nope d
        HMGET nokey a b
        HLEN h
        HLEN nokey
        HSTRLEN h a
        HSTRLEN h nope
        HEXISTS h a
        HEXISTS h nope
        HEXISTS nokey a
        HGETALL h
        HKEYS h
        HVALS h
        HGETALL nokey
        HKEYS nokey
        HSETNX h a 99
        HSETNX h g 7
        HGET h g
        HDEL h a nope b
        HDEL h nope
        HDEL nokey a
        HLEN h
        HINCRBY h c 5
        HINCRBY h new -3
        HINCRBY h c x
        HINCRBY h c 9223372036854775807
        HSET h s str
        HINCRBY h s 1
        HINCRBYFLOAT h c 1.5
        HINCRBYFLOAT h t 2.25
        HINCRBYFLOAT h s 1
        HINCRBYFLOAT h c abc
        HINCRBYFLOAT h c inf
        HSET big 1 x
        HINCRBYFLOAT big 1 1
        HSCAN h 0
        HSCAN h 0 MATCH d*
        HSCAN h 0 COUNT 1
        HSCAN h 0 COUNT 0
        HSCAN h x
        HSCAN h 0 FOO
        HSCAN nokey 0
        HRANDFIELD nokey
        HRANDFIELD nokey 5
        HRANDFIELD h 0
        HRANDFIELD h 1 x
        HRANDFIELD h 1 withvalues x
        HRANDFIELD h x
        HRANDFIELD h -9223372036854775808
        HRANDFIELD h 9223372036854775807 WITHVALUES
        HSET one f v
        HRANDFIELD one
        HRANDFIELD one -3
        HRANDFIELD one -2 WITHVALUES
        HRANDFIELD one 5 WITHVALUES
        SET str v
        HGET str a
        HSET str a 1
        HLEN str
        HGETALL str
        HDEL str a
        HINCRBY str a 1
        HRANDFIELD str
        HSCAN str 0
        HMGET str a
        HSETNX str a 1
        HEXISTS str a
        HSTRLEN str a
        HKEYS str
        HVALS str
        TYPE h
        OBJECT ENCODING h
        HSET long f 0123456789012345678901234567890123456789012345678901234567890123456789
        OBJECT ENCODING long
        DEL h
        HGETALL h
        EXISTS h
        HSET h a 1
        HDEL h a
        EXISTS h
        TYPE h
        "#,
    ),
    (
        "sets",
        r#"
        SADD s a b c
        SADD s c d
        SADD s
        SCARD s
        SCARD nokey
        SISMEMBER s a
        SISMEMBER s z
        SISMEMBER nokey a
        SMISMEMBER s a z d
        SMISMEMBER nokey a
        ~SMEMBERS s
        SMEMBERS nokey
        SREM s a z
        SREM nokey a
        SREM s
        ~SMEMBERS s
        SADD t c d e
        SADD u x
        ~SINTER s t
        SINTER s nokey
        SINTER nokey s
        ~SUNION s t u
        SUNION nokey
        ~SDIFF s t
        ~SDIFF t s u
        SDIFF nokey s
        SINTERSTORE d1 s t
        ~SMEMBERS d1
        SUNIONSTORE d2 s t u
        SCARD d2
        SDIFFSTORE d3 s t
        ~SMEMBERS d3
        SINTERSTORE d3 s nokey
        EXISTS d3
        SET str v
        SINTERSTORE str s t
        TYPE str
        SINTERCARD 2 s t
        SINTERCARD 2 s t LIMIT 1
        SINTERCARD 2 s t LIMIT 0
        SINTERCARD 0 s
        SINTERCARD x s
        SINTERCARD 3 s t
        SINTERCARD 2 s t LIMIT -1
        SINTERCARD 2 s t FOO 1
        SINTERCARD 1 nokey
        SMOVE s t b
        SMOVE s t b
        SMOVE nokey t b
        SMOVE s s c
        SMOVE s s zz
        SMOVE s newset c
        ~SMEMBERS newset
        SCARD s
        SPOP nokey
        SPOP nokey 3
        SPOP s 0
        SPOP s -1
        SPOP s x
        SPOP s 1 2
        SRANDMEMBER nokey
        SRANDMEMBER nokey 3
        SRANDMEMBER s 0
        SRANDMEMBER s x
        SRANDMEMBER s 1 2
        SRANDMEMBER s -9223372036854775808
        SADD one m
        SRANDMEMBER one
        SRANDMEMBER one -3
        SRANDMEMBER one 5
        SPOP one
        EXISTS one
        SADD one2 m
        SPOP one2 5
        EXISTS one2
        SSCAN s 0
        SSCAN nokey 0
        SSCAN s x
        SSCAN s 0 COUNT 0
        SSCAN s 0 NOVALUES
        SET str v
        SADD str a
        SREM str a
        SCARD str
        SISMEMBER str a
        SMISMEMBER str a
        SMEMBERS str
        SRANDMEMBER str
        SPOP str
        SSCAN str 0
        SINTER s str
        SINTER nokey str
        SUNION s str
        SDIFF s str
        SDIFF nokey str
        SINTERCARD 2 s str
        SMOVE str s a
        SMOVE s str d
        SMOVE nokey str a
        SADD ints 1 2 3
        OBJECT ENCODING ints
        TYPE t
        HSET hh f v
        SADD hh a
        SINTER hh
        "#,
    ),
    (
        "generic-types",
        r#"
        HSET h a 1 b 2
        SADD s x y
        RENAME h h2
        HGETALL h2
        EXISTS h
        RENAME s s2
        ~SMEMBERS s2
        COPY h2 h3
        HGETALL h3
        COPY s2 s3
        ~SMEMBERS s3
        COPY h2 s3
        COPY h2 s3 REPLACE
        HGETALL s3
        TYPE s3
        HSET h2 c 3
        HGETALL h3
        MOVE h2 1
        EXISTS h2
        SELECT 1
        HGETALL h2
        MOVE h2 0
        SELECT 0
        HGETALL h2
        DEL h2 s2 h3
        EXISTS h2 s2 h3
        SADD s4 a
        EXPIRE s4 100
        TTL s4
        PERSIST s4
        TTL s4
        RENAMENX s4 s3
        GET s3
        "#,
    ),
];

#[test]
fn collections_reply_like_redis_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn collections_reply_like_redis_four_shards() {
    run_scripts(SCRIPTS, 4);
}
