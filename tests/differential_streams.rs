//! Differential tests of the stream commands: the same scripts, error cases
//! included, go to Debian's redis-server (7.0) and to Basalt (1 and 4
//! shards, RESP2 and RESP3), and every reply must be byte-for-byte the
//! same. IDs are explicit (an `*` ID depends on the clock): where `*` is
//! used, only what does not show the ID is compared.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_clients, run_resp3_script, run_scripts};

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
        "approximate trims after the first nodes change",
        r#"
        CONFIG SET stream-node-max-entries 4
        EVAL "for i=1,20 do redis.call('xadd','h',i..'-0','x',i) end return redis.call('xlen','h')" 0
        XDEL h 5-0 6-0 7-0 8-0
        XDEL h 1-0 2-0 3-0 4-0
        XTRIM h MAXLEN ~ 11
        XADD h MAXLEN ~ 12 21-0 x 21
        XDEL h 9-0 10-0
        XTRIM h MAXLEN ~ 9
        XTRIM h MAXLEN ~ 8
        XRANGE h - + COUNT 1
        XADD h MAXLEN ~ 100 22-0 x 22
        XDEL h 14-0
        XTRIM h MAXLEN ~ 7 LIMIT 2
        XTRIM h MAXLEN ~ 7 LIMIT 3
        XADD h MAXLEN ~ 4 23-0 x 23
        XADD h MAXLEN ~ 4 24-0 x 24
        XRANGE h - +
        XTRIM h MINID ~ 19-0
        XTRIM h MINID ~ 23-0
        XRANGE h - +
        XINFO STREAM h
        EVAL "for i=1,12 do redis.call('xadd','j',i..'-0','x',i) end return redis.call('xlen','j')" 0
        XADD j MAXLEN ~ 100 13-0 x 13
        XDEL j 6-0 7-0 8-0
        XDEL j 1-0 2-0 3-0 4-0
        XTRIM j MAXLEN ~ 5
        XRANGE j - +
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
    (
        "consumer groups",
        r#"
        XGROUP CREATE s g $
        XGROUP CREATE s g $ MKSTREAM
        XGROUP CREATE s g $ MKSTREAM
        XGROUP CREATE s g2 0 ENTRIESREAD -2
        XGROUP CREATE s g2 0 ENTRIESREAD -1
        XGROUP CREATE s g3 0 ENTRIESREAD 5 foo
        XGROUP CREATE s g4 x
        XGROUP CREATECONSUMER s g alice
        XGROUP CREATECONSUMER s g alice
        XGROUP CREATECONSUMER s nog alice
        XGROUP SETID s nog 0
        XGROUP SETID s g 0 ENTRIESREAD 0
        XGROUP SETID s g 0 ENTRIESREAD x
        XGROUP SETID s g 0 FOO 1
        XGROUP FOO s
        XGROUP CREATE
        XGROUP SETID s g
        XGROUP HELP
        XADD s 1-0 a 1
        XADD s 2-0 b 2
        XADD s 3-0 c 3
        XINFO GROUPS s
        XREADGROUP GROUP g bob STREAMS s >
        XREADGROUP GROUP g bob COUNT 1 STREAMS s >
        XREADGROUP GROUP g bob STREAMS s 0
        XREADGROUP GROUP g bob STREAMS s 1-0
        XREADGROUP GROUP g bob COUNT 1 STREAMS s 0
        XREADGROUP GROUP g alice STREAMS s 0
        XREADGROUP GROUP g bob NOACK STREAMS s >
        XREADGROUP GROUP nog bob STREAMS s >
        XREADGROUP GROUP g bob STREAMS nokey >
        XREADGROUP GROUP g bob STREAMS s $
        XREADGROUP STREAMS s >
        XREADGROUP GROUP g bob STREAMS s
        XREADGROUP GROUP g bob STREAMS s s > >
        XREADGROUP GROUP g bob STREAMS s x
        XREADGROUP GROUP g bob FOO STREAMS s >
        XPENDING s g
        EVAL "local r = redis.call('xpending', KEYS[1], 'g', '-', '+', 10) for _, e in ipairs(r) do e[3] = 0 end return r" 1 s
        EVAL "local r = redis.call('xpending', KEYS[1], 'g', '-', '+', 10, 'bob') for _, e in ipairs(r) do e[3] = 0 end return r" 1 s
        EVAL "local r = redis.call('xpending', KEYS[1], 'g', 'IDLE', 0, '(1-0', '+', 1) for _, e in ipairs(r) do e[3] = 0 end return r" 1 s
        XPENDING s g IDLE 100000 - + 10
        XPENDING s g - + 10 nobody
        XPENDING s g - +
        XPENDING s g IDLE 1 - +
        XPENDING s g IDLE x - + 10
        XPENDING s g x + 10
        XPENDING s g - + x
        XPENDING s g - + 0
        XPENDING s nog
        XPENDING nokey g
        XACK s g 1-0 9-0 foo
        XACK s g 1-0 9-0 1-0
        XACK s g 1-0
        XACK s nog 1-0
        XACK nokey g 1-0
        XPENDING s g
        XDEL s 2-0
        XREADGROUP GROUP g bob STREAMS s 0
        XINFO GROUPS s
        EVAL "local r = redis.call('xinfo', 'consumers', KEYS[1], 'g') for i, c in ipairs(r) do r[i] = {c[1], c[2], c[3], c[4], c[5]} end return r" 1 s
        XGROUP DELCONSUMER s g bob
        XGROUP DELCONSUMER s g bob
        XGROUP DELCONSUMER s nog bob
        XPENDING s g
        XINFO GROUPS s
        XGROUP DESTROY s g
        XGROUP DESTROY s g
        XGROUP DESTROY nokey g
        XINFO GROUPS s
        XINFO CONSUMERS s nog
        SET str x
        XGROUP CREATE str g $
        XREADGROUP GROUP g c STREAMS str >
        XACK str g 1-0
        XPENDING str g
        "#,
    ),
    (
        "xread",
        r#"
        XADD s 1-0 a 1
        XADD s 2-0 b 2
        XADD t 5-0 c 3
        XREAD STREAMS s 0
        XREAD COUNT 1 STREAMS s 0
        XREAD STREAMS s nokey t 0 0 0
        XREAD STREAMS s t 1 4
        XREAD STREAMS s $
        XREAD STREAMS s s 0 1
        XREAD COUNT -1 STREAMS s 0
        XREAD COUNT 0 STREAMS s 0
        XREAD STREAMS nokey 0
        XREAD STREAMS s 18446744073709551615-18446744073709551615
        XREAD GROUP g b STREAMS s 0
        XREAD NOACK STREAMS s 0
        XREAD STREAMS s >
        XREAD STREAMS s
        XREAD STREAMS s t 0
        XREAD STREAMS s x
        XREAD COUNT x STREAMS s 0
        XREAD BLOCK x STREAMS s 0
        XREAD BLOCK -1 STREAMS s 0
        XREAD FOO STREAMS s 0
        XREAD COUNT 1
        SET str x
        XREAD STREAMS str 0
        "#,
    ),
    (
        "claims",
        r#"
        XADD s 1-0 a 1
        XADD s 2-0 b 2
        XADD s 3-0 c 3
        XADD s 4-0 d 4
        XGROUP CREATE s g 0
        XREADGROUP GROUP g alice COUNT 3 STREAMS s >
        XCLAIM s g bob 0 1-0
        XCLAIM s g bob 0 1-0 JUSTID
        XCLAIM s g bob 1000000 2-0
        XCLAIM s g bob 0 2-0 RETRYCOUNT 7 JUSTID
        EVAL "local r = redis.call('xpending', KEYS[1], 'g', '-', '+', 10) for _, e in ipairs(r) do e[3] = 0 end return r" 1 s
        XCLAIM s g bob 0 4-0
        XCLAIM s g bob 0 4-0 FORCE JUSTID
        XPENDING s g
        XCLAIM s g bob 0 9-0 FORCE
        XCLAIM s g bob x 1-0
        XCLAIM s g bob 0 1-0 IDLE x
        XCLAIM s g bob 0 1-0 TIME x
        XCLAIM s g bob 0 1-0 RETRYCOUNT x
        XCLAIM s g bob 0 1-0 FOO
        XCLAIM s g bob 0 1-0 LASTID x
        XCLAIM s g bob 0 1-0 LASTID 10-0 JUSTID
        XINFO GROUPS s
        XCLAIM s nog bob 0 1-0
        XCLAIM nokey g bob 0 1-0
        XDEL s 3-0
        XCLAIM s g bob 0 3-0
        XPENDING s g
        XCLAIM s g carol 0 3-0 JUSTID
        XAUTOCLAIM s g carol 0 0
        XAUTOCLAIM s g dave 0 0 COUNT 1
        XAUTOCLAIM s g dave 0 0 COUNT 1 JUSTID
        XAUTOCLAIM s g dave 0 (1-0 COUNT 1 JUSTID
        XAUTOCLAIM s g dave 0 - COUNT 0
        XAUTOCLAIM s g dave 0 - COUNT x
        XAUTOCLAIM s g dave x -
        XAUTOCLAIM s g dave 0 x
        XAUTOCLAIM s g dave 0 - FOO
        XAUTOCLAIM s nog dave 0 -
        XAUTOCLAIM s g dave 1000000 -
        XPENDING s g
        XADD s 5-0 e 5
        XDEL s 2-0
        XAUTOCLAIM s g erin 0 0
        XINFO GROUPS s
        XPENDING s g
        XACK s g 1-0 2-0 3-0 4-0 5-0
        XPENDING s g
        XINFO GROUPS s
        "#,
    ),
    (
        "xinfo stream",
        r#"
        XADD s 1-0 a 1
        EVAL "local r = redis.call('xinfo', 'stream', KEYS[1]) r[6] = 0 return r" 1 s
        XADD s 2-0 b 2
        XDEL s 1-0
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c STREAMS s >
        EVAL "local r = redis.call('xinfo', 'stream', KEYS[1]) r[6] = 0 return r" 1 s
        EVAL "local r = redis.call('xinfo', 'stream', KEYS[1], 'full') r[6] = 0 for _, g in ipairs(r[18]) do for _, p in ipairs(g[12]) do p[3] = 0 end g[14] = #g[14] end return r" 1 s
        EVAL "local r = redis.call('xinfo', 'stream', KEYS[1], 'full', 'count', 1) r[6] = 0 for _, g in ipairs(r[18]) do for _, p in ipairs(g[12]) do p[3] = 0 end g[14] = #g[14] end return r" 1 s
        XINFO STREAM s foo
        XINFO STREAM s FULL COUNT
        XINFO STREAM s FULL COUNT x
        XINFO STREAM nokey
        XINFO STREAM nokey FULL
        XINFO GROUPS nokey
        XINFO FOO
        XINFO HELP
        SET str x
        XINFO STREAM str
        XINFO GROUPS str
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

/// Keyspace events of the stream commands, in Redis's order, and WATCH
/// spoiled by stream writes.
const EVENTS: &str = r#"
    B: CONFIG SET notify-keyspace-events KEA
    A> PSUBSCRIBE __keyevent@0__:*
    A<
    B: XADD s 1-0 a 1
    A<
    B: XADD s MAXLEN 1 2-0 b 2
    A<
    A<
    B: XDEL s 2-0
    A<
    B: XDEL s 9-0
    B: XADD s 3-0 c 3
    A<
    B: XTRIM s MAXLEN 0
    A<
    B: XTRIM s MAXLEN 0
    B: XSETID s 5-0
    A<
    B: XGROUP CREATE s g $
    A<
    B: XGROUP CREATECONSUMER s g alice
    A<
    B: XGROUP SETID s g 0
    A<
    B: XADD s 6-0 d 4
    A<
    B: XREADGROUP GROUP g bob STREAMS s >
    A<
    B: XCLAIM s g carol 0 6-0 JUSTID
    A<
    B: XAUTOCLAIM s g dave 0 0 JUSTID
    A<
    B: XGROUP DELCONSUMER s g dave
    A<
    B: XGROUP DESTROY s g
    A<
    B: XGROUP CREATE n g $ MKSTREAM
    A<
    B: DEL s n
    A<
    A<
    B: PUBLISH __keyevent@0__:done end
    A<
    C: WATCH w
    B: XADD w 1-0 a 1
    C: MULTI
    C: GET x
    C: EXEC
    C: WATCH w
    B: XGROUP CREATE w g 0
    C: MULTI
    C: GET x
    C: EXEC
    C: WATCH w
    B: XREADGROUP GROUP g c STREAMS w >
    C: MULTI
    C: GET x
    C: EXEC
    C: WATCH w
    B: XLEN w
    C: MULTI
    C: GET x
    C: EXEC
"#;

#[test]
fn stream_events_and_watch_match_redis() {
    for shards in [1, 4] {
        run_clients("stream-events", EVENTS, shards, false);
    }
    run_clients("stream-events-resp3", EVENTS, 1, true);
}
