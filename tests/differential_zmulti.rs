//! Differential tests of the sorted-set commands over several keys: ZMPOP,
//! BZPOPMIN/BZPOPMAX/BZMPOP when they need not block, ZRANGESTORE, ZUNION,
//! ZINTER, ZDIFF, their STORE forms and ZINTERCARD. The same scripts go to
//! Debian's redis-server (7.0) and to Basalt (1 and 4 shards, so the keys
//! land on different owners, and RESP3); every reply must be the same.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "zmpop",
        r#"
        ZADD a 1 x 2 y 3 z
        ZADD b 10 p 20 q
        ZMPOP 1 a MIN
        ZMPOP 1 a MAX
        ZMPOP 2 nokey b MAX COUNT 5
        EXISTS b
        ZMPOP 2 nokey b MIN
        ZMPOP 1 a MIN COUNT 10
        EXISTS a
        ZADD a 1 x 2 y 3 z
        ZMPOP 0 a MIN
        ZMPOP -1 a MIN
        ZMPOP x a MIN
        ZMPOP 2 a MIN
        ZMPOP 1 a
        ZMPOP 1 a LEFT
        ZMPOP 1 a MIN COUNT 0
        ZMPOP 1 a MIN COUNT -1
        ZMPOP 1 a MIN COUNT x
        ZMPOP 1 a MIN COUNT 1 COUNT 1
        ZMPOP 1 a MIN COUNT
        ZMPOP 1 a min count 2
        ZMPOP 5 a MIN
        SET str v
        ZMPOP 2 str a MIN
        ZMPOP 2 a str MIN
        ZMPOP 1 str MIN
        LPUSH lst e
        ZMPOP 1 lst MAX
        "#,
    ),
    (
        "blocking pops that need not block",
        r#"
        ZADD a 1 x 2 y 3 z
        ZADD b 10 p
        BZPOPMIN a 0
        BZPOPMAX a b 0
        BZPOPMIN nokey b 0.01
        EXISTS b
        BZPOPMIN nokey 0.01
        BZPOPMAX nokey other 0.01
        BZMPOP 0.01 1 nokey MIN
        BZMPOP 0 2 nokey a MAX COUNT 3
        BZPOPMIN a x
        BZPOPMIN a -1
        BZPOPMIN a
        BZMPOP 0 0 a MIN
        BZMPOP x 1 a MIN
        BZMPOP -1 1 a MIN
        BZMPOP 0 1 a SIDE
        SET str v
        BZPOPMIN str 0
        BZPOPMAX nokey str 0
        BZMPOP 0 1 str MIN
        "#,
    ),
    (
        "zrangestore",
        r#"
        ZADD src 1 a 2 b 3 c 4 d 5 e
        ZRANGESTORE dst src 0 -1
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src 1 2
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src -2 -1 REV
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src (1 4 BYSCORE
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src 4 (1 BYSCORE REV LIMIT 1 2
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src [b + BYLEX
        ZRANGESTORE dst src + [c BYLEX REV LIMIT 0 1
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst src 10 20
        EXISTS dst
        ZRANGESTORE dst src 0 -1
        ZRANGESTORE dst nokey 0 -1
        EXISTS dst
        ZRANGESTORE dst src 0 -1 WITHSCORES
        ZRANGESTORE dst src 0 -1 LIMIT 0 1
        ZRANGESTORE dst src x 1
        ZRANGESTORE dst src 0 1 BYSCORE BYLEX
        ZRANGESTORE dst src a b BYLEX
        ZRANGESTORE dst src
        SET str v
        ZRANGESTORE dst str 0 -1
        ZRANGESTORE str src 0 -1
        TYPE str
        ZRANGESTORE src src 0 1
        ZRANGE src 0 -1 WITHSCORES
        "#,
    ),
    (
        "zunion zinter zdiff",
        r#"
        ZADD a 1 x 2 y 3 z
        ZADD b 10 y 20 z 30 w
        SADD s y w v
        ZUNION 2 a b
        ZUNION 2 a b WITHSCORES
        ZUNION 3 a b s WITHSCORES
        ZUNION 2 a b WEIGHTS 2 0.5 WITHSCORES
        ZUNION 2 a b AGGREGATE MIN WITHSCORES
        ZUNION 2 a b AGGREGATE max WITHSCORES
        ZUNION 2 a b WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES
        ZUNION 1 nokey
        ZUNION 2 nokey a WITHSCORES
        ZINTER 2 a b WITHSCORES
        ZINTER 3 a b s WITHSCORES
        ZINTER 2 a b WEIGHTS 3 1 AGGREGATE MAX WITHSCORES
        ZINTER 2 a nokey
        ZINTER 2 a a WITHSCORES
        ZDIFF 2 a b WITHSCORES
        ZDIFF 1 a
        ZDIFF 2 b s WITHSCORES
        ZDIFF 2 nokey a
        ZDIFF 3 a nokey b WITHSCORES
        ZUNION 0 a
        ZUNION -1 a
        ZUNION x a
        ZUNION 3 a b
        ZUNION 2 a b WEIGHTS 1
        ZUNION 2 a b WEIGHTS 1 x
        ZUNION 2 a b WEIGHTS 1 nan
        ZUNION 2 a b AGGREGATE
        ZUNION 2 a b AGGREGATE avg
        ZUNION 2 a b WITHSCORES extra
        ZDIFF 2 a b WEIGHTS 1 2
        ZDIFF 2 a b AGGREGATE SUM
        ZINTERCARD 2 a b
        ZINTERCARD 3 a b s
        ZINTERCARD 2 a b LIMIT 1
        ZINTERCARD 2 a b LIMIT 0
        ZINTERCARD 2 a b LIMIT -1
        ZINTERCARD 2 a b LIMIT x
        ZINTERCARD 2 a b WITHSCORES
        ZINTERCARD 2 a nokey
        ZINTERCARD 0 a
        ZINTERCARD 3 a b
        SET str v
        ZUNION 2 a str
        ZINTER 2 str nokey
        ZINTER 2 nokey str
        ZDIFF 2 a str
        ZINTERCARD 2 a str
        ZUNION 2 a str WEIGHTS x y
        ZUNION 2 a str bogus
        "#,
    ),
    (
        "the store forms",
        r#"
        ZADD a 1 x 2 y 3 z
        ZADD b 10 y 20 z 30 w
        SADD s y w v
        ZUNIONSTORE d 2 a b
        ZRANGE d 0 -1 WITHSCORES
        ZUNIONSTORE d 3 a b s WEIGHTS 1 2 3
        ZRANGE d 0 -1 WITHSCORES
        ZINTERSTORE d 2 a b AGGREGATE MIN
        ZRANGE d 0 -1 WITHSCORES
        ZINTERSTORE d 2 a s
        ZRANGE d 0 -1 WITHSCORES
        ZDIFFSTORE d 2 b a
        ZRANGE d 0 -1 WITHSCORES
        TYPE d
        ZINTERSTORE d 2 a nokey
        EXISTS d
        ZDIFFSTORE d 1 nokey
        ZUNIONSTORE a 2 a b
        ZRANGE a 0 -1 WITHSCORES
        ZUNIONSTORE d 2 a b WITHSCORES
        ZUNIONSTORE d 0 a
        ZINTERSTORE d 0 a
        ZDIFFSTORE d 0 a
        ZUNIONSTORE d 3 a b
        ZUNIONSTORE d x a
        ZDIFFSTORE d 2 a b WEIGHTS 1 1
        SET str v
        ZUNIONSTORE d 2 a str
        ZUNIONSTORE str 1 a
        TYPE str
        ZADD i1 inf m 1 k
        ZADD i2 -inf m 2 k
        ZUNIONSTORE d 2 i1 i2
        ZRANGE d 0 -1 WITHSCORES
        ZINTERSTORE d 2 i1 i2 WEIGHTS 0 1
        ZRANGE d 0 -1 WITHSCORES
        ZUNIONSTORE d 2 i1 i2 WEIGHTS 0 0
        ZRANGE d 0 -1 WITHSCORES
        ZUNIONSTORE d 1 i1 WEIGHTS -1
        ZRANGE d 0 -1 WITHSCORES
        ZADD zero 0 m
        ZUNIONSTORE d 1 zero WEIGHTS -1
        ZSCORE d m
        ZRANGE d 0 -1 WITHSCORES
        ZUNION 1 zero WEIGHTS -1 WITHSCORES
        "#,
    ),
];

#[test]
fn multi_key_sorted_set_commands_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn multi_key_sorted_set_commands_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn multi_key_sorted_set_commands_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}
