//! Differential tests of the stream commands: the same scripts, error cases
//! included, go to Debian's redis-server (7.0) and to Basalt (1 and 4
//! shards, RESP2 and RESP3), and every reply must be byte-for-byte the
//! same. IDs are explicit (an `*` ID depends on the clock): where `*` is
//! used, only what does not show the ID is compared.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "xadd and ids",
        r#"
        XADD s 1-1 a 1
        XADD s 1-1 a 1
        XADD s 1-0 a 1
        XADD s 1-* b 2
        XADD s 5 c 3
        XADD s 0-0 a 1
        XADD fresh 0-0 a 1
        EXISTS fresh
        XADD fresh 0-* a 1
        XADD fresh 0-* a 1
        XADD fresh2 " 5" a 1
        XADD fresh3 +5 a 1
        XADD fresh4 -5 a 1
        XADD s 7-x a 1
        XADD s 7-1-1 a 1
        XADD s 18446744073709551616-0 a 1
        XADD s a
        XADD s 9-0 a
        XADD s 9-0 a 1 b
        XADD s 9-0 "" ""
        XADD s 10-0 f1 v1 f2 v2 f1 v3
        XRANGE s - +
        XLEN s
        XLEN nokey
        XADD s 18446744073709551615-18446744073709551615 a 1
        XADD s 18446744073709551615-* a 1
        XADD s 5-0 a 1
        XADD s NOMKSTREAM 11-0 e 5
        XADD nos NOMKSTREAM 7-0 e 5
        EXISTS nos
        TYPE s
        OBJECT ENCODING s
        SET str x
        XADD str 1-0 a 1
        XLEN str
        XRANGE str - +
        XDEL str 1-0
        XTRIM str MAXLEN 0
        "#,
    ),
    (
        "xadd options",
        r#"
        XADD s LIMIT 10 1-0 a 1
        XADD s MAXLEN ~ 1 LIMIT 10 2-0 a 1
        XADD s MAXLEN 1 LIMIT 10 3-0 a 1
        XADD s MAXLEN -1 4-0 a 1
        XADD s MAXLEN x 4-0 a 1
        XADD s MAXLEN 1 MINID 5 4-0 a 1
        XADD s MINID ~ 5 LIMIT -1 4-0 a 1
        XADD s MINID x 4-0 a 1
        XADD s MINID + 4-0 a 1
        XADD s FOO a 1
        XADD s maxlen = 2 4-0 a 1
        XADD s MAXLEN 2 5-0 a 1
        XADD s MAXLEN 2 6-0 a 1
        XRANGE s - +
        XADD s MINID 6 7-0 a 1
        XRANGE s - +
        XADD s MINID = 100 8-0 a 1
        XRANGE s - +
        XLEN s
        XADD s MAXLEN 0 9-0 a 1
        XLEN s
        XRANGE s - +
        XADD s NOMKSTREAM MAXLEN 5 10-0 a 1
        XADD s maxlen
        "#,
    ),
    (
        "xrange and xrevrange",
        r#"
        XADD s 1-0 a 1
        XADD s 1-1 b 2
        XADD s 2-0 c 3
        XADD s 3-5 d 4
        XADD s 18446744073709551615-0 e 5
        XRANGE s - +
        XREVRANGE s + -
        XRANGE s - + COUNT 2
        XREVRANGE s + - COUNT 2
        XRANGE s (1-0 +
        XRANGE s - (2-0
        XRANGE s (1-1 (3-5
        XREVRANGE s (3-5 (1-0
        XRANGE s 1 1
        XRANGE s 2 3
        XRANGE s 3 2
        XRANGE s 0 + COUNT 0
        XRANGE s 0 + COUNT -1
        XRANGE s 0 + COUNT
        XRANGE s 0 + COUNT x
        XRANGE s 0 + FOO 1
        XRANGE s 0 + COUNT 1 COUNT 3
        XRANGE s (- +
        XRANGE s - (+
        XRANGE s ( +
        XRANGE s x +
        XRANGE s 1-x +
        XRANGE s 18446744073709551615-18446744073709551615 (18446744073709551615-18446744073709551615
        XRANGE s (18446744073709551615-18446744073709551615 +
        XRANGE s - (0-0
        XRANGE s 18446744073709551615 +
        XREVRANGE s 2 1
        XREVRANGE s 1 2
        XRANGE nokey - +
        XREVRANGE nokey + - COUNT 1
        "#,
    ),
    (
        "xdel",
        r#"
        XADD s 1-0 a 1
        XADD s 2-0 b 2
        XADD s 3-0 c 3
        XDEL s 2-0 9-0
        XDEL s 2-0
        XDEL s 1-0 1-0
        XDEL s foo
        XDEL s 3-0 foo
        XRANGE s - +
        XLEN s
        XDEL s 3-0
        XLEN s
        EXISTS s
        XRANGE s - +
        XADD s 2-0 a 1
        XADD s 3-1 a 1
        XDEL nokey 1-0
        "#,
    ),
    (
        "xtrim",
        r#"
        XADD s 1-0 a 1
        XADD s 2-0 a 1
        XADD s 3-0 a 1
        XADD s 4-0 a 1
        XTRIM s
        XTRIM s LIMIT 5
        XTRIM s MAXLEN 100
        XTRIM s MAXLEN = 3
        XRANGE s - +
        XTRIM s MINID 3
        XRANGE s - +
        XTRIM s MINID (3
        XTRIM s MAXLEN 1 LIMIT 1
        XTRIM s MAXLEN ~ 0 LIMIT 0
        XTRIM s MAXLEN ~ 0
        XLEN s
        XTRIM s MAXLEN 0
        XLEN s
        EXISTS s
        XTRIM s FOO
        XTRIM nokey MAXLEN 0
        XTRIM s MAXLEN 1 MINID 1
        XTRIM s MAXLEN -1
        XADD s 5-0 a 1
        XRANGE s - +
        "#,
    ),
    (
        "approximate trims follow nodes",
        r#"
        CONFIG SET stream-node-max-entries 10
        EVAL "for i=1,1000 do redis.call('xadd','s','maxlen','~','555',i..'-0','x',i) end return redis.call('xlen','s')" 0
        XTRIM s MAXLEN ~ 500
        XTRIM s MAXLEN ~ 550
        XTRIM s MAXLEN 549
        XLEN s
        XTRIM s MINID ~ 0
        XTRIM s MAXLEN ~ 0 LIMIT 30
        XTRIM s MAXLEN ~ 0 LIMIT 9
        XLEN s
        XDEL s 471-0 472-0 473-0 474-0 475-0 476-0 477-0 478-0 479-0 480-0
        XTRIM s MAXLEN ~ 440
        XRANGE s - + COUNT 3
        XTRIM s MINID ~ 505
        XTRIM s MINID 505
        XRANGE s - + COUNT 2
        XTRIM s MAXLEN 0
        XLEN s
        XADD s 2000-0 a 1
        XLEN s
        CONFIG SET stream-node-max-entries 100
        "#,
    ),
    (
        "xsetid",
        r#"
        XADD s 1-0 a 1
        XADD s 2-0 a 1
        XADD s 3-0 a 1
        XDEL s 3-0
        XSETID s 2-5
        XSETID s 2-0
        XSETID s 1-0
        XSETID s x
        XSETID s 5-0 FOO 1
        XSETID s 5-0 ENTRIESADDED -1
        XSETID s 5-0 ENTRIESADDED x
        XSETID s 5-0 ENTRIESADDED 1
        XSETID s 5-0 MAXDELETEDID 6-0
        XSETID s 5-0 MAXDELETEDID x
        XSETID s 5-0 ENTRIESADDED 10 MAXDELETEDID 4-0
        XSETID nokey 5-0
        XADD s 5-0 a 1
        XADD s 5-* a 1
        XDEL s 2-0 1-0 5-1
        XLEN s
        XSETID s 1-0
        XSETID s 0-1
        XADD s 2-1 a 1
        XRANGE s - +
        SET str x
        XSETID str 1-0
        "#,
    ),
    (
        "streams and the keyspace",
        r#"
        XADD s 1-1 a 1 b 2
        XADD s 2-1 c 3
        XADD s 3-1 d 4
        XTRIM s MAXLEN 2
        RENAME s t
        XRANGE t - +
        COPY t u
        XRANGE u - +
        XLEN u
        TYPE u
        ~SCAN 0 TYPE stream COUNT 100
        EXPIRE u 100
        TTL u
        DEL t
        XLEN t
        XDEL u 2-1
        XADD u 2-5 z 1
        XADD u 4-0 z 1
        XRANGE u - +
        OBJECT ENCODING u
        MOVE u 1
        SELECT 1
        XRANGE u - +
        SELECT 0
        "#,
    ),
];

#[test]
fn stream_commands_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn stream_commands_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn stream_commands_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}
