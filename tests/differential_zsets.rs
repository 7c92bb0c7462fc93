//! Differential tests of the sorted-set commands: the same scripts, error
//! cases included, go to Debian's redis-server (7.0) and to Basalt (1 and 4
//! shards, RESP2 and RESP3), and every reply must be byte-for-byte the
//! same. Scores are ones 7.0's `%.17g` and 7.2+'s `d2string` print alike;
//! what 7.0 lacks (ZRANK WITHSCORE) is tested in `zsets.rs`.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "zadd and scores",
        r#"
        ZADD z 1 a 2 b 3 c
        ZADD z 1 a
        ZADD z 5 a 4 d
        ZCARD z
        ZCARD nokey
        ZSCORE z a
        ZSCORE z nope
        ZSCORE nokey a
        ZMSCORE z a nope d
        ZMSCORE nokey a b
        ZADD z
        ZADD z 1
        ZADD z 1 a 2
        ZADD z x a
        ZADD z nan a
        ZADD z 1e400 a
        ZADD z -1e400 a
        ZADD z 1e-400 a
        ZADD z 0e400 zero
        ZSCORE z zero
        ZINCRBY z 1e400 a
        ZINCRBY z 1e-400 a
        ZRANGEBYSCORE z -1e400 1e400
        ZCOUNT z (1e-400 1e400
        ZUNIONSTORE zw 1 z WEIGHTS 1e400
        ZREM z zero
        ZADD z 1.5 e -2.25 f inf g -inf h +inf i
        ZSCORE z e
        ZSCORE z f
        ZSCORE z g
        ZSCORE z h
        ZADD z NX XX 1 a
        ZADD z NX GT 1 a
        ZADD z GT LT 1 a
        ZADD z LT NX 1 a
        ZADD z INCR 1 a 2 b
        ZADD z NX 100 a 6 new
        ZSCORE z a
        ZADD z XX 100 a 7 other
        ZSCORE z a
        ZSCORE z other
        ZADD z XX CH 100 a 101 b
        ZADD z GT CH 50 a 200 b
        ZSCORE z a
        ZSCORE z b
        ZADD z LT CH 50 a 300 b
        ZSCORE z a
        ZADD z CH 1 a 1 b 9 c 9 zz
        ZADD z INCR 10 a
        ZADD z INCR NX 10 a
        ZADD z INCR XX 10 nope
        ZADD z INCR GT -100 a
        ZADD z INCR LT -100 a
        ZADD z INCR 5 fresh
        ZADD z INCR inf g
        ZADD z INCR -inf g
        ZADD z XX 1 a1
        ZADD missing XX 1 a
        EXISTS missing
        ZADD missing XX INCR 1 a
        ZINCRBY z 2 a
        ZINCRBY z -2.5 new2
        ZINCRBY z x a
        ZINCRBY z inf g
        ZINCRBY z -inf g
        ZINCRBY nokey2 3 m
        ZSCORE nokey2 m
        ZADD z nx 1 lower
        ZADD z Nx Ch 1 lower2
        SET str v
        ZADD str 1 a
        ZSCORE str a
        ZCARD str
        ZINCRBY str 1 a
        ZRANGE z 0 -1 WITHSCORES
        "#,
    ),
    (
        "zrem and empty keys",
        r#"
        ZADD z 1 a 2 b 3 c
        ZREM z a nope
        ZREM z nope
        ZREM nokey a
        ZREM z b c
        EXISTS z
        ZCARD z
        ZREM z
        SET str v
        ZREM str a
        ZADD z 0 x
        ZADD z -0 x
        ZSCORE z x
        ZADD z -0 y
        ZSCORE z y
        TYPE z
        "#,
    ),
    (
        "ranges by rank",
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e 1 aa 1 ab
        ZRANGE z 0 -1
        ZRANGE z 0 -1 WITHSCORES
        ZRANGE z 2 3
        ZRANGE z -2 -1
        ZRANGE z -100 100
        ZRANGE z 5 2
        ZRANGE z 10 20
        ZRANGE z 0 0 withscores
        ZRANGE z 0 -1 REV
        ZRANGE z 0 1 REV WITHSCORES
        ZREVRANGE z 0 -1
        ZREVRANGE z 0 2 WITHSCORES
        ZREVRANGE z -1 -1
        ZRANGE z a b
        ZRANGE z 0 1 LIMIT 0 1
        ZRANGE z 0 1 BYLEX WITHSCORES
        ZRANGE z 0 1 FOO
        ZRANGE z 0 1 REV REV
        ZRANGE nokey 0 -1
        ZREVRANGE nokey 0 -1
        ZRANGE z 0 1 WITHSCORES WITHSCORES
        ZREVRANGE z 0 1 REV
        ZRANK z a
        ZRANK z aa
        ZRANK z e
        ZRANK z nope
        ZRANK nokey a
        ZREVRANK z a
        ZREVRANK z e
        ZREVRANK z nope
        SET str v
        ZRANGE str 0 -1
        ZRANK str a
        "#,
    ),
    (
        "ranges by score",
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e 1 aa -inf lo +inf hi 2.5 mid
        ZRANGEBYSCORE z -inf +inf
        ZRANGEBYSCORE z -inf +inf WITHSCORES
        ZRANGEBYSCORE z 1 2
        ZRANGEBYSCORE z (1 2
        ZRANGEBYSCORE z (1 (2
        ZRANGEBYSCORE z 1 (2
        ZRANGEBYSCORE z 2 1
        ZRANGEBYSCORE z (2 (2
        ZRANGEBYSCORE z 2 2
        ZRANGEBYSCORE z -inf 2 LIMIT 1 2
        ZRANGEBYSCORE z -inf 2 LIMIT 1 -1
        ZRANGEBYSCORE z -inf 2 LIMIT -1 2
        ZRANGEBYSCORE z -inf 2 LIMIT 0 0
        ZRANGEBYSCORE z -inf 2 LIMIT 100 1
        ZRANGEBYSCORE z -inf 2 LIMIT 0 1 WITHSCORES
        ZRANGEBYSCORE z -inf 2 WITHSCORES LIMIT 0 1
        ZRANGEBYSCORE z -inf 2 LIMIT 0
        ZRANGEBYSCORE z -inf 2 LIMIT x 1
        ZRANGEBYSCORE z x 2
        ZRANGEBYSCORE z 1 (x
        ZRANGEBYSCORE z ( 2
        ZRANGEBYSCORE z nan 2
        ZRANGEBYSCORE z inf inf
        ZRANGEBYSCORE z -inf -inf
        ZREVRANGEBYSCORE z +inf -inf
        ZREVRANGEBYSCORE z 2 1
        ZREVRANGEBYSCORE z (2 1 WITHSCORES
        ZREVRANGEBYSCORE z 2 (1
        ZREVRANGEBYSCORE z 1 2
        ZREVRANGEBYSCORE z +inf -inf LIMIT 2 3
        ZREVRANGEBYSCORE z 5 5
        ZRANGE z 1 2 BYSCORE
        ZRANGE z (1 5 BYSCORE LIMIT 1 2 WITHSCORES
        ZRANGE z 5 1 BYSCORE REV
        ZRANGE z 1 5 BYSCORE REV
        ZRANGE z +inf -inf BYSCORE REV LIMIT 0 3
        ZRANGE z 1 2 BYSCORE BYLEX
        ZCOUNT z -inf +inf
        ZCOUNT z 1 2
        ZCOUNT z (1 2
        ZCOUNT z 2 1
        ZCOUNT z x 1
        ZCOUNT nokey 1 2
        ZRANGEBYSCORE nokey 1 2
        SET str v
        ZCOUNT str 1 2
        ZRANGEBYSCORE str 1 2
        "#,
    ),
    (
        "ranges by lex",
        r#"
        ZADD z 0 a 0 b 0 c 0 d 0 e 0 f 0 g 0 aa 0 ""
        ZRANGEBYLEX z - +
        ZRANGEBYLEX z [b [d
        ZRANGEBYLEX z (b [d
        ZRANGEBYLEX z (b (d
        ZRANGEBYLEX z [a (aa
        ZRANGEBYLEX z - [c
        ZRANGEBYLEX z [e +
        ZRANGEBYLEX z + -
        ZRANGEBYLEX z [d [b
        ZRANGEBYLEX z - + LIMIT 2 3
        ZRANGEBYLEX z - + LIMIT -1 3
        ZRANGEBYLEX z - + LIMIT 2 -1
        ZRANGEBYLEX z - + WITHSCORES
        ZRANGEBYLEX z a c
        ZRANGEBYLEX z [a c
        ZRANGEBYLEX z [ [
        ZRANGEBYLEX z ( +
        ZREVRANGEBYLEX z + -
        ZREVRANGEBYLEX z [d [b
        ZREVRANGEBYLEX z (d (b
        ZREVRANGEBYLEX z [b [d
        ZREVRANGEBYLEX z + - LIMIT 1 2
        ZRANGE z [b [d BYLEX
        ZRANGE z [d [b BYLEX REV
        ZRANGE z - + BYLEX LIMIT 1 1
        ZLEXCOUNT z - +
        ZLEXCOUNT z [b [d
        ZLEXCOUNT z (b (d
        ZLEXCOUNT z [d [b
        ZLEXCOUNT z b d
        ZLEXCOUNT nokey - +
        SET str v
        ZLEXCOUNT str - +
        ZRANGEBYLEX str - +
        "#,
    ),
    (
        "pops and range removals",
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g
        ZPOPMIN z
        ZPOPMAX z
        ZPOPMIN z 2
        ZPOPMAX z 0
        ZPOPMIN z -1
        ZPOPMIN z x
        ZPOPMIN z 1 2
        ZPOPMAX z 10
        EXISTS z
        ZPOPMIN z
        ZPOPMIN nokey
        ZPOPMIN nokey 3
        ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g
        ZREMRANGEBYRANK z 0 1
        ZREMRANGEBYRANK z -2 -1
        ZREMRANGEBYRANK z 5 1
        ZREMRANGEBYRANK z x 1
        ZRANGE z 0 -1
        ZREMRANGEBYSCORE z (3 4
        ZREMRANGEBYSCORE z x 4
        ZREMRANGEBYSCORE z 10 20
        ZRANGE z 0 -1 WITHSCORES
        ZREMRANGEBYSCORE z -inf +inf
        EXISTS z
        ZADD z 0 a 0 b 0 c 0 d
        ZREMRANGEBYLEX z [b (d
        ZREMRANGEBYLEX z b d
        ZREMRANGEBYLEX z - +
        EXISTS z
        ZREMRANGEBYRANK nokey 0 -1
        ZREMRANGEBYSCORE nokey 0 1
        ZREMRANGEBYLEX nokey - +
        SET str v
        ZPOPMIN str
        ZREMRANGEBYRANK str 0 1
        ZREMRANGEBYSCORE str 0 1
        ZREMRANGEBYLEX str - +
        "#,
    ),
    (
        "zscan and zrandmember",
        r#"
        ZADD z 1 a 2 b 3 c
        ZSCAN z 0
        ZSCAN z 0 MATCH a*
        ZSCAN z 0 COUNT 1
        ZSCAN z 0 COUNT 0
        ZSCAN z 0 MATCH
        ZSCAN z x
        ZSCAN nokey 0
        ZRANDMEMBER nokey
        ZRANDMEMBER nokey 3
        ZRANDMEMBER nokey 3 WITHSCORES
        ZRANDMEMBER z 0
        ZRANDMEMBER z x
        ZRANDMEMBER z 1 WITHSCORES x
        ZRANDMEMBER z 1 foo
        ZRANDMEMBER z -9223372036854775808
        ZRANDMEMBER z -9223372036854775807 WITHSCORES
        ZRANDMEMBER z 9223372036854775807 WITHSCORES
        ~ZRANDMEMBER z 3
        ~ZRANDMEMBER z 10
        ZADD one 5 only
        ZRANDMEMBER one
        ZRANDMEMBER one 1 WITHSCORES
        ZRANDMEMBER one -3
        ZRANDMEMBER one -2 WITHSCORES
        SET str v
        ZSCAN str 0
        ZRANDMEMBER str
        "#,
    ),
];

#[test]
fn sorted_sets_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn sorted_sets_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn sorted_sets_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}
