//! Differential tests of the bitmap commands (SETBIT, GETBIT, BITCOUNT,
//! BITPOS, BITFIELD, BITFIELD_RO, BITOP): the same scripts, errors
//! included, go to Debian's redis-server (7.0) and to Basalt (1 and 4
//! shards, RESP2 and RESP3), and every reply must be the same. What Redis
//! changed after 7.0 (BITCOUNT/BITPOS check their arguments before the
//! key; SETBIT that changes nothing sends no event; BITOP DIFF, DIFF1,
//! ANDOR and ONE of 8.2) is checked against fixed answers at the end.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts, show, Basalt, RedisServer, Rng};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "multi-chunk reads see staged chunks",
        r#"
        SETBIT m 100000 1
        SETBIT m 1 1
        MULTI
        SETBIT m 40000 1
        SETBIT m 70000 1
        BITCOUNT m
        BITPOS m 1 100 -1
        BITCOUNT m 0 -1 BIT
        BITPOS m 0 0 -1
        GETRANGE m 4999 5001
        SETBIT m 40000 0
        BITCOUNT m 1000 12000
        EXEC
        BITCOUNT m
        BITPOS m 1 2 -1
        "#,
    ),
    (
        "setbit and getbit",
        r#"
        SETBIT b 0 1
        SETBIT b 7 1
        GET b
        GETBIT b 0
        GETBIT b 1
        GETBIT b 7
        GETBIT b 8
        GETBIT b 1000000
        SETBIT b 7 0
        SETBIT b 7 0
        STRLEN b
        SETBIT b 100 1
        STRLEN b
        GET b
        SETBIT b -1 1
        SETBIT b 4294967296 1
        SETBIT b 0 2
        SETBIT b 0 -1
        SETBIT b 0 x
        SETBIT b x 1
        SETBIT b "" 1
        SETBIT b +1 1
        SETBIT b 01 1
        SETBIT b 1.0 1
        GETBIT b -1
        GETBIT b x
        GETBIT nokey 5
        EXISTS nokey
        LPUSH l a
        SETBIT l 0 1
        GETBIT l 0
        SET s a
        SETBIT s 6 1
        GET s
        SET n 255
        GETBIT n 2
        SETBIT n 0 1
        GET n
        SET t x EX 100
        SETBIT t 0 1
        TTL t
        SETBIT wide 4294967295 1
        STRLEN wide
        GETBIT wide 4294967295
        GETBIT wide 4294967294
        SETBIT wide 4294967295 0
        GETBIT wide 4294967295
        DEL wide
        SETBIT mid 1048583 1
        STRLEN mid
        GETRANGE mid 131070 131072
        SETBIT mid 0 1
        GETRANGE mid 0 1
        STRLEN mid
        "#,
    ),
    (
        "bitcount",
        r#"
        SET k foobar
        BITCOUNT k
        BITCOUNT k 0 0
        BITCOUNT k 1 1
        BITCOUNT k 1 1 BYTE
        BITCOUNT k 1 1 byte
        BITCOUNT k 5 30 BIT
        BITCOUNT k 5 30 bit
        BITCOUNT k -1 -1
        BITCOUNT k -2 -1 BIT
        BITCOUNT k 0 -1 BIT
        BITCOUNT k -100 100
        BITCOUNT k -100 100 BIT
        BITCOUNT k 3 1
        BITCOUNT k -1 -3
        BITCOUNT k 9223372036854775807 -1 BIT
        BITCOUNT k -9223372036854775808 -1
        BITCOUNT k -9223372036854775808 9223372036854775807 BIT
        BITCOUNT k 0
        BITCOUNT k 0 1 2 3
        BITCOUNT k 0 1 bits
        BITCOUNT k a 1
        BITCOUNT k 0 a
        BITCOUNT nokey
        BITCOUNT nokey 0 1
        LPUSH l a
        BITCOUNT l
        BITCOUNT l 0 1
        SET e ""
        BITCOUNT e
        BITCOUNT e 0 -1
        BITCOUNT e 0 -1 BIT
        SET n 12345
        BITCOUNT n
        BITCOUNT n 1 2
        "#,
    ),
    (
        "bitpos",
        r#"
        EVAL "return redis.call('set', KEYS[1], string.char(255, 240, 0))" 1 p
        BITPOS p 0
        BITPOS p 1
        BITPOS p 0 2
        BITPOS p 1 2
        BITPOS p 0 2 -1
        BITPOS p 1 7 15 BIT
        BITPOS p 0 0 7 BIT
        BITPOS p 0 0 11 BIT
        BITPOS p 0 0 12 BIT
        BITPOS p 0 0
        BITPOS p 0 -1
        BITPOS p 1 -1
        BITPOS p 1 -2 -2
        BITPOS p 1 5 3
        BITPOS p 0 -1 -2
        BITPOS p 1 -100 100
        BITPOS p 0 3 BYTE
        BITPOS p 0 0 1 byte
        EVAL "return redis.call('set', KEYS[1], string.char(255, 255))" 1 ones
        BITPOS ones 0
        BITPOS ones 0 0 -1
        BITPOS ones 0 0
        BITPOS ones 0 1
        BITPOS ones 0 0 15 BIT
        BITPOS ones 0 3 13 BIT
        BITPOS ones 1 3 13 BIT
        BITPOS nokey 1
        BITPOS nokey 0
        BITPOS nokey 0 5 10
        BITPOS p 2
        BITPOS p -1
        BITPOS p x
        BITPOS p 1 a
        BITPOS p 1 0 a
        BITPOS p 1 0 1 bad
        BITPOS p 1 0 1 BIT extra
        LPUSH l a
        BITPOS l 1
        SET e ""
        BITPOS e 0
        BITPOS e 1
        BITPOS e 0 0 -1
        SETBIT far 80000 1
        BITPOS far 1
        BITPOS far 1 100
        BITPOS far 1 -1
        BITPOS far 0 0 -1 BIT
        "#,
    ),
    (
        "bitfield",
        r#"
        BITFIELD bf SET u8 0 255
        BITFIELD bf GET u8 0
        BITFIELD bf INCRBY u8 0 10
        BITFIELD bf OVERFLOW SAT INCRBY u8 0 300
        BITFIELD bf OVERFLOW SAT INCRBY u8 0 -300
        BITFIELD bf OVERFLOW FAIL INCRBY u8 0 -1
        BITFIELD bf overflow wrap incrby u8 0 -1
        BITFIELD bf SET i8 8 -1 GET i8 8 GET u8 8 GET u4 8 GET i4 12
        BITFIELD bf INCRBY i5 100 1 GET i5 100 INCRBY i5 100 15 INCRBY i5 100 1
        BITFIELD bf SET u8 #2 42 GET u8 16 GET u8 #2
        BITFIELD bf GET u63 0 GET i64 0 GET i1 0 GET u1 0
        BITFIELD bf SET i64 0 -9223372036854775808 INCRBY i64 0 -1 OVERFLOW SAT INCRBY i64 0 -1 SET i64 0 9223372036854775807 INCRBY i64 0 1
        BITFIELD bf SET u63 0 9223372036854775807 INCRBY u63 0 1
        BITFIELD bf SET u8 0 -1 OVERFLOW SAT SET u8 0 -1 SET i8 0 200 OVERFLOW FAIL SET i8 0 200 SET u8 0 256
        BITFIELD bf SET u2 100 5 GET u2 100
        BITFIELD bf GET u64 0
        BITFIELD bf GET i65 0
        BITFIELD bf GET i0 0
        BITFIELD bf GET x8 0
        BITFIELD bf GET U8 0
        BITFIELD bf GET i08 0
        BITFIELD bf GET u8 -1
        BITFIELD bf GET u8 #-1
        BITFIELD bf GET u8 #
        BITFIELD bf GET u8 abc
        BITFIELD bf GET u8 4294967296
        BITFIELD bf GET u8 #536870912
        BITFIELD bf SET u8 0 abc
        BITFIELD bf INCRBY u8 0 1.5
        BITFIELD bf OVERFLOW bad GET u8 0
        BITFIELD bf OVERFLOW
        BITFIELD bf GET u8
        BITFIELD bf SET u8 0
        BITFIELD bf FOO u8 0
        BITFIELD bf GET u8 0 FOO
        BITFIELD bf
        GET bf
        BITFIELD nokey GET u8 0 GET i16 100
        EXISTS nokey
        BITFIELD nokey2 OVERFLOW FAIL INCRBY u2 0 10
        EXISTS nokey2
        GET nokey2
        BITFIELD nokey3 OVERFLOW FAIL INCRBY u2 20 10 INCRBY u8 0 1
        GET nokey3
        BITFIELD seq SET u4 0 15 INCRBY u4 0 1 GET u4 0 SET u4 2 3 GET u8 0
        LPUSH l a
        BITFIELD l GET u8 0
        BITFIELD l SET u8 0 1
        BITFIELD_RO bf GET u8 0 GET i8 #1
        BITFIELD_RO bf SET u8 0 1
        BITFIELD_RO bf INCRBY u8 0 1
        BITFIELD_RO l SET u8 0 1
        BITFIELD_RO l GET u8 0
        BITFIELD_RO nokey4 GET i8 0
        BITFIELD_RO bf
        BITFIELD_RO bf OVERFLOW SAT GET u8 0
        SET t x EX 100
        BITFIELD t SET u8 0 1
        TTL t
        BITFIELD far SET u8 4294967280 255 GET u8 4294967280 GET u16 4294967272
        STRLEN far
        BITFIELD far GET u8 4294967287
        DEL far
        BITFIELD edge SET u8 4294967295 1
        STRLEN edge
        DEL edge
        "#,
    ),
    (
        "bitop",
        r#"
        SET a foobar
        SET b abcdef
        BITOP AND d a b
        GET d
        BITOP OR d a b
        GET d
        BITOP XOR d a b
        GET d
        BITOP NOT d a
        GET d
        BITOP and d a b
        BITOP AND d a nokey
        GET d
        BITOP OR d nokey nokey2
        EXISTS d
        SET d x EX 100
        BITOP OR d a
        TTL d
        BITOP OR d
        BITOP NOT d a b
        BITOP NOT d
        BITOP FOO d a
        LPUSH l x
        BITOP AND d a l
        BITOP AND l a
        TYPE l
        GET l
        SET short z
        BITOP AND d a short
        GET d
        BITOP OR d short a b
        GET d
        BITOP XOR d a a
        GET d
        BITOP OR a a b
        GET a
        SET e ""
        BITOP OR d e
        EXISTS d
        HSET h f v
        BITOP OR h nokey
        TYPE h
        SETBIT big 1048583 1
        BITOP NOT nbig big
        STRLEN nbig
        BITCOUNT nbig
        GETRANGE nbig 131071 131072
        BITOP XOR d big nbig
        BITCOUNT d
        BITOP AND d big nbig
        BITCOUNT d
        "#,
    ),
];

#[test]
fn bitmap_commands_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn bitmap_commands_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn bitmap_commands_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}

/// Replies Redis 7.2-8.x gives that Debian's 7.0 does not.
#[test]
fn bitmap_commands_follow_redis_8() {
    for shards in [1, 3] {
        let basalt = Basalt::start(shards);
        let mut c = basalt.raw();
        let mut check = |args: &[&str], want: &str| {
            let got = show(&c.cmd(args));
            assert_eq!(
                got.trim_end_matches("\\r\\n"),
                want.trim_end_matches("\\r\\n"),
                "[{shards} shards] {args:?}"
            );
        };
        // Arguments are checked before the key is looked up (7.2).
        check(&["BITCOUNT", "nokey", "0"], "-ERR syntax error");
        check(&["BITCOUNT", "nokey", "a", "1"], "-ERR value is not an integer or out of range");
        check(&["BITCOUNT", "nokey", "0", "1", "bad"], "-ERR syntax error");
        check(&["BITPOS", "nokey", "1", "0", "1", "bad"], "-ERR syntax error");
        check(&["BITPOS", "nokey", "1", "a"], "-ERR value is not an integer or out of range");
        // BITOP's operators of Redis 8.2.
        check(&["SET", "x", "\u{7f}"], "+OK");
        check(&["SET", "y", "\u{3c}"], "+OK");
        check(&["SET", "z", "\u{0f}"], "+OK");
        for (op, want) in [
            ("DIFF", 0x7f & !(0x3c | 0x0f)),
            ("DIFF1", !0x7f & (0x3c | 0x0f)),
            ("ANDOR", 0x7f & (0x3c | 0x0f)),
        ] {
            check(&["BITOP", op, "{t}d", "x", "y", "z"], ":1");
            check(&["BITCOUNT", "{t}d"], &format!(":{}", (want as u8).count_ones()));
            check(&["GETBIT", "{t}d", "1"], &format!(":{}", (want as u8 >> 6) & 1));
        }
        // ONE: bits set in exactly one source: 0x7f ^ 0x3c ^ 0x0f minus
        // bits set in two or more.
        let (x, y, z) = (0x7fu8, 0x3cu8, 0x0fu8);
        let one = (x ^ y ^ z) & !((x & y) | (x & z) | (y & z));
        check(&["BITOP", "ONE", "{t}d", "x", "y", "z"], ":1");
        check(&["BITCOUNT", "{t}d"], &format!(":{}", one.count_ones()));
        check(&["BITOP", "one", "{t}d", "x"], ":1");
        check(&["GET", "{t}d"], &show(&c_bulk(&[0x7f])));
        check(
            &["BITOP", "DIFF", "{t}d", "x"],
            "-ERR BITOP DIFF must be called with at least two source keys.",
        );
        check(
            &["BITOP", "diff1", "{t}d", "x"],
            "-ERR BITOP DIFF1 must be called with at least two source keys.",
        );
        check(
            &["BITOP", "AndOr", "{t}d", "x"],
            "-ERR BITOP ANDOR must be called with at least two source keys.",
        );
        check(&["BITOP", "DIFF", "{t}d", "x", "nokey"], ":1");
        check(&["GET", "{t}d"], &show(&c_bulk(&[0x7f])));
        check(&["BITOP", "DIFF1", "{t}d", "x", "nokey"], ":1");
        check(&["GET", "{t}d"], &show(&c_bulk(&[0])));
    }
}

/// One random bitmap command over three keys (two on a shared hash tag)
/// with offsets below `bits` (small, so ranges, fields and edges cross
/// each other; or spread over big strings' chunks).
fn random_command(rng: &mut Rng, bits: usize) -> Vec<String> {
    let bytes = (bits / 8) as i64;
    const KEYS: &[&str] = &["a", "{t}b", "{t}c", "nokey"];
    let k = rng.pick(KEYS).to_string();
    let num = |rng: &mut Rng, span: i64| (rng.below(2 * span as usize + 1) as i64 - span).to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match rng.below(9) {
        0 | 1 => s(&["SETBIT", &k, &rng.below(bits).to_string(), &rng.below(2).to_string()]),
        2 => s(&["GETBIT", &k, &rng.below(bits + 20).to_string()]),
        3 => {
            let mut c = s(&["BITCOUNT", &k]);
            if rng.below(4) > 0 {
                c.extend([num(rng, bytes + 15), num(rng, bytes + 15)]);
                if rng.below(2) == 0 {
                    c.push(rng.pick(&["BIT", "BYTE"]).to_string());
                }
            }
            c
        }
        4 => {
            let mut c = s(&["BITPOS", &k, &rng.below(2).to_string()]);
            let n = rng.below(4);
            if n >= 1 {
                c.push(num(rng, bytes + 15));
            }
            if n >= 2 {
                c.push(num(rng, bytes + 15));
            }
            if n == 3 {
                c.push(rng.pick(&["BIT", "BYTE"]).to_string());
            }
            c
        }
        5 | 6 => {
            let mut c = s(&["BITFIELD", &k]);
            for _ in 0..1 + rng.below(3) {
                if rng.below(4) == 0 {
                    c.extend(s(&["OVERFLOW", rng.pick(&["WRAP", "SAT", "FAIL"])]));
                }
                let signed = rng.below(2) == 0;
                let bits = 1 + rng.below(if signed { 64 } else { 63 });
                let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
                let offset = if rng.below(4) == 0 {
                    format!("#{}", rng.below(5))
                } else {
                    rng.below(150).to_string()
                };
                let v = match rng.below(4) {
                    0 => i64::MAX.to_string(),
                    1 => i64::MIN.to_string(),
                    _ => num(rng, 300),
                };
                match rng.below(3) {
                    0 => c.extend([String::from("GET"), ty, offset]),
                    1 => c.extend([String::from("SET"), ty, offset, v]),
                    _ => c.extend([String::from("INCRBY"), ty, offset, v]),
                }
            }
            c
        }
        7 => {
            let op = rng.pick(&["AND", "OR", "XOR", "NOT"]);
            let mut c = s(&["BITOP", op, rng.pick(KEYS)]);
            let n = if op == "NOT" { 1 } else { 1 + rng.below(3) };
            for _ in 0..n {
                c.push(rng.pick(KEYS).to_string());
            }
            c
        }
        _ => s(&["GET", &k]),
    }
}

/// Long random sequences of bitmap commands give the same replies on
/// redis-server and Basalt (1 and 4 shards).
#[test]
fn random_bitmap_commands_match_redis() {
    for (seed, shards) in [(11u64, 1), (12, 4), (13, 1), (14, 4)] {
        fuzz(seed, shards, 2500, 200);
    }
}

/// The same over strings past the inline limit (128 KiB), so commands
/// cross 64 KiB chunks and the inline-to-chunks conversion.
#[test]
fn random_bitmap_commands_on_big_strings_match_redis() {
    for (seed, shards) in [(21u64, 1), (22, 4)] {
        fuzz(seed, shards, 1500, 1_200_000);
    }
}

/// The same with more seeds (`BITMAP_FUZZ_SEEDS`, default 40).
#[test]
#[ignore]
fn random_bitmap_commands_match_redis_long() {
    let seeds: u64 = std::env::var("BITMAP_FUZZ_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    for seed in 100..100 + seeds {
        fuzz(
            seed,
            if seed % 3 == 0 { 4 } else { 1 },
            5000,
            if seed % 2 == 0 { 200 } else { 1_200_000 },
        );
    }
}

fn fuzz(seed: u64, shards: usize, steps: usize, bits: usize) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(seed * 2_654_435_761);
    let mut log = Vec::new();
    for step in 0..steps {
        let cmd = random_command(&mut rng, bits);
        let (want, got) = (r.cmd(&cmd), b.cmd(&cmd));
        log.push(cmd.join(" "));
        assert!(
            want == got,
            "[seed {seed}, {shards} shards, step {step}] {}\n redis:  {}\n basalt: {}\nlast:\n{}",
            cmd.join(" "),
            show(&want),
            show(&got),
            log[log.len().saturating_sub(40)..].join("\n")
        );
    }
}

/// Keyspace events as Redis 7.2+ sends them: SETBIT and BITFIELD only
/// when something changed (7.0 sent one for every SETBIT), BITOP `set` or
/// `del` for an empty result.
#[test]
fn bitmap_events_follow_redis_7_2() {
    let basalt = Basalt::start(1);
    let (mut c, mut sub) = (basalt.raw(), basalt.raw());
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for args in [
        &["SETBIT", "e1", "0", "1"][..],
        &["SETBIT", "e1", "0", "1"],
        &["SETBIT", "e1", "3", "0"],
        &["BITFIELD", "e1", "SET", "u8", "0", "128"],
        &["BITFIELD", "e1", "INCRBY", "u8", "0", "1"],
        &["BITFIELD", "e1", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000"],
        &["BITFIELD", "e1", "GET", "u8", "0"],
        &["BITOP", "NOT", "e2", "e1"],
        &["BITOP", "AND", "e2", "nokey"],
        &["BITOP", "AND", "e2", "nokey"],
        &["SET", "marker", "1"],
    ] {
        c.cmd(args);
    }
    let events = common::keyevents_until_marker(&mut sub);
    assert_eq!(events, ["setbit", "setbit", "set", "del", "set"]);
}

/// A bitmap the bit commands grew past 4 KiB is kept in 4 KiB chunks:
/// DUMP/RESTORE, RENAME, COPY, MOVE, APPEND, SETRANGE, GETRANGE and GET
/// see the same bytes as redis-server does for the same writes.
#[test]
fn small_chunked_bitmaps_move_and_read_whole() {
    let script = r#"
        SETBIT bm 100000 1
        SETBIT bm 7 1
        SETBIT bm 40000 1
        STRLEN bm
        BITCOUNT bm
        GETRANGE bm 4095 4097
        APPEND bm tail
        SETRANGE bm 8190 xyz
        GETRANGE bm 8188 8194
        EVAL "local v = redis.call('dump', KEYS[1]) redis.call('restore', KEYS[2], 0, v) return redis.call('get', KEYS[2]) == redis.call('get', KEYS[1])" 2 bm {bm}copy
        RENAME bm {bm}renamed
        COPY {bm}renamed {bm}copy2
        BITCOUNT {bm}copy2
        MOVE {bm}copy2 1
        SELECT 1
        BITCOUNT {bm}copy2
        GETBIT {bm}copy2 100000
        SELECT 0
        GET {bm}renamed
        SETBIT {bm}renamed 100000 0
        BITPOS {bm}renamed 1 5000
        OBJECT ENCODING {bm}renamed
        "#;
    for shards in [1, 4] {
        run_scripts(&[("small chunks", script)], shards);
    }
}

/// A bulk reply of `b`.
fn c_bulk(b: &[u8]) -> Vec<u8> {
    let mut v = format!("${}\r\n", b.len()).into_bytes();
    v.extend_from_slice(b);
    v.extend_from_slice(b"\r\n");
    v
}

/// Pipelined SETBITs and multi-chunk reads in one batch: the reads see
/// the SETBITs before them still in the shard's open write group (the
/// MultiGet's staged-record path), as redis-server answers them.
#[test]
fn pipelined_writes_and_multi_chunk_reads_match_redis() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(1);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(0xb17);
    for s in [&mut r, &mut b] {
        s.cmd(&["SETBIT", "p", "200000", "1"]);
    }
    for round in 0..20 {
        let mut cmds: Vec<Vec<String>> = Vec::new();
        for _ in 0..100 {
            let off = rng.below(200_000).to_string();
            cmds.push(match rng.below(4) {
                0 | 1 => vec!["SETBIT".into(), "p".into(), off, rng.below(2).to_string()],
                2 => vec!["BITCOUNT".into(), "p".into(), rng.below(12_000).to_string(), "-1".into()],
                _ => vec!["BITPOS".into(), "p".into(), rng.below(2).to_string(), rng.below(20_000).to_string()],
            });
        }
        let wire: Vec<u8> = cmds.iter().flat_map(|c| common::Raw::encode(c)).collect();
        let mut replies = Vec::new();
        for s in [&mut r, &mut b] {
            s.send_bytes(&wire);
            replies.push((0..cmds.len()).map(|_| s.reply()).collect::<Vec<_>>());
        }
        for (i, c) in cmds.iter().enumerate() {
            assert_eq!(show(&replies[0][i]), show(&replies[1][i]), "round {round}: {}", c.join(" "));
        }
    }
}
