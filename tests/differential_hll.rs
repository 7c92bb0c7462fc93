//! Differential tests of the HyperLogLog commands (PFADD, PFCOUNT,
//! PFMERGE, PFDEBUG, PFSELFTEST): the same scripts, errors included, go to
//! Debian's redis-server (7.0) and to Basalt (1 and 4 shards, RESP2 and
//! RESP3), and every reply must be the same, the HLL strings themselves
//! (GET) included. Then a million random elements counted step by step,
//! strings moved both ways with GET/SET and DUMP/RESTORE, and corrupted
//! strings.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts, show, Basalt, Raw, RedisServer, Rng};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "pfadd and pfcount",
        r#"
        PFADD h a b c d e f g
        PFADD h a b
        PFADD h
        PFADD new
        PFADD new
        GET new
        EXISTS new
        PFCOUNT new
        PFCOUNT h
        GET h
        PFADD h h1 h2 h3
        GET h
        PFCOUNT h
        GET h
        PFCOUNT h
        PFCOUNT nokey
        EXISTS nokey
        PFCOUNT h nokey
        PFCOUNT nokey nokey2
        PFADD h ""
        PFADD h "" ""
        PFCOUNT h
        PFADD
        PFCOUNT
        PFADD h2 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
        PFCOUNT h h2
        PFCOUNT h2 h
        PFCOUNT h h
        GET h2
        SET t x
        PFADD t a
        PFCOUNT t
        PFCOUNT h t
        PFCOUNT nokey t
        LPUSH l a
        PFADD l a
        PFCOUNT l
        PFCOUNT h l
        PFCOUNT l t
        SET short HYLL
        PFCOUNT short
        SET bad "HYLLxxxxxxxxxxxxxxxx"
        PFCOUNT bad
        PFADD bad a
        SET num 12345678901234567
        PFCOUNT num
        PFADD ttl a
        EXPIRE ttl 100
        PFADD ttl b
        TTL ttl
        PFCOUNT ttl
        TTL ttl
        TYPE h
        STRLEN h
        OBJECT ENCODING h
        "#,
    ),
    (
        "pfmerge",
        r#"
        PFADD a 1 2 3 4 5
        PFADD b 4 5 6 7 8 9
        PFADD c x y z
        PFMERGE d a b c
        PFCOUNT d
        GET d
        PFMERGE a b
        GET a
        PFCOUNT a
        PFMERGE only
        GET only
        EXISTS only
        PFMERGE only
        PFMERGE e nokey
        GET e
        PFMERGE e
        PFMERGE f nokey1 nokey2
        PFCOUNT f
        SET s notanhll
        PFMERGE s a
        PFMERGE g a s
        EXISTS g
        LPUSH l x
        PFMERGE l a
        PFMERGE g l
        PFMERGE
        PFADD ttl q
        EXPIRE ttl 500
        PFMERGE ttl a b
        TTL ttl
        PFCOUNT ttl
        PFDEBUG TODENSE b
        PFMERGE m a b
        PFDEBUG ENCODING m
        PFCOUNT m
        GET m
        PFMERGE m2 a c
        PFDEBUG ENCODING m2
        PFADD dd 1
        PFDEBUG TODENSE dd
        PFMERGE dd a
        PFDEBUG ENCODING dd
        GET dd
        PFCOUNT a b c d nokey
        "#,
    ),
    (
        "pfdebug",
        r#"
        PFADD h a b c d e f g h i j
        PFDEBUG ENCODING h
        PFDEBUG DECODE h
        PFDEBUG decode h
        PFDEBUG Encoding h
        PFDEBUG TODENSE h
        PFDEBUG TODENSE h
        PFDEBUG ENCODING h
        PFDEBUG DECODE h
        PFCOUNT h
        GET h
        PFADD s x y
        PFDEBUG GETREG s
        PFDEBUG ENCODING s
        GET s
        PFDEBUG GETREG h
        PFDEBUG NOPE h
        PFDEBUG nope nokey
        PFDEBUG ENCODING nokey
        PFDEBUG GETREG nokey
        SET str abc
        PFDEBUG ENCODING str
        PFDEBUG NOPE str
        LPUSH l a
        PFDEBUG ENCODING l
        PFDEBUG
        PFDEBUG ENCODING
        PFDEBUG ENCODING h extra
        PFADD e
        PFDEBUG DECODE e
        PFSELFTEST
        PFSELFTEST x
        "#,
    ),
    (
        "sparse limit",
        r#"
        CONFIG SET hll-sparse-max-bytes 30
        PFADD h a b c
        PFDEBUG ENCODING h
        PFADD h d e f g h i j k l m n
        PFDEBUG ENCODING h
        PFCOUNT h
        GET h
        CONFIG SET hll-sparse-max-bytes 0
        PFADD z a
        PFDEBUG ENCODING z
        GET z
        CONFIG SET hll-sparse-max-bytes 100
        PFADD y 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        PFDEBUG ENCODING y
        PFADD w 1 2 3
        PFMERGE w y
        PFDEBUG ENCODING w
        CONFIG SET hll-sparse-max-bytes 3000
        CONFIG GET hll-sparse-max-bytes
        CONFIG SET hll-sparse-max-bytes -1
        "#,
    ),
    (
        "inside transactions",
        r#"
        MULTI
        PFADD t1 a b c
        PFADD t2 c d e
        PFCOUNT t1
        PFCOUNT t1 t2
        PFMERGE t3 t1 t2
        PFCOUNT t3
        EXEC
        GET t3
        MULTI
        PFCOUNT t1 nokey
        PFMERGE t4 t3
        EXEC
        "#,
    ),
];

#[test]
fn hll_commands_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn hll_commands_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn hll_commands_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}

fn bulk(reply: &[u8]) -> Vec<u8> {
    let text = reply.strip_suffix(b"\r\n").unwrap_or(reply);
    let at = text.iter().position(|&c| c == b'\n').map_or(0, |p| p + 1);
    text[at..].to_vec()
}

fn elements(rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n).map(|_| format!("e{}", rng.next() % 50_000_000)).collect()
}

/// The same 1M random elements (in PFADDs of 1000) go to both servers:
/// PFCOUNT answers the same at every 10k, the strings are the same bytes
/// at every 100k, through the sparse-to-dense promotion; two more keys on
/// other shards are merged and counted together as redis-server does.
#[test]
fn a_million_elements_count_the_same() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(4);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(0x5eed_1111);
    let keys = ["big", "other{1}", "third{2}"];
    for step in 0..1000 {
        let key = keys[step % 7 / 5 + step % 11 / 10];
        let mut cmd = vec!["PFADD".to_string(), key.to_string()];
        cmd.extend(elements(&mut rng, 1000));
        assert_eq!(show(&r.cmd(&cmd)), show(&b.cmd(&cmd)), "PFADD at step {step}");
        if step % 10 == 9 {
            for k in keys {
                let (want, got) = (r.cmd(&["PFCOUNT", k]), b.cmd(&["PFCOUNT", k]));
                assert_eq!(show(&want), show(&got), "PFCOUNT {k} at step {step}");
            }
            let all = ["PFCOUNT", keys[0], keys[1], keys[2]];
            assert_eq!(show(&r.cmd(&all)), show(&b.cmd(&all)), "PFCOUNT of all at step {step}");
        }
        if step % 100 == 99 || step < 3 {
            for k in keys {
                assert!(r.cmd(&["GET", k]) == b.cmd(&["GET", k]), "GET {k} at step {step}");
            }
            let merge = ["PFMERGE", "m{3}", keys[1], keys[2], keys[0]];
            assert_eq!(show(&r.cmd(&merge)), show(&b.cmd(&merge)));
            assert!(r.cmd(&["GET", "m{3}"]) == b.cmd(&["GET", "m{3}"]), "merged at step {step}");
        }
    }
}

/// Strings made by one server count the same on the other: GET there,
/// SET here (both ways), and DUMP there, RESTORE here, sparse and dense,
/// with the cache valid and stale.
#[test]
fn hll_strings_move_between_redis_and_basalt() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(77);
    for (i, n) in [1usize, 10, 300, 2000, 5000, 40_000].into_iter().enumerate() {
        let key = format!("k{i}");
        for chunk in elements(&mut rng, n).chunks(1000) {
            let mut cmd = vec!["PFADD".to_string(), key.clone()];
            cmd.extend(chunk.iter().cloned());
            r.cmd(&cmd);
            b.cmd(&cmd);
        }
        copy_and_count(&mut r, &mut b, &key, n, "redis to basalt");
        copy_and_count(&mut b, &mut r, &key, n, "basalt to redis");
        // DUMP on redis-server, RESTORE on Basalt, and back.
        let dump = bulk(&r.cmd(&["DUMP", &key]));
        let restored = format!("{key}-restored");
        let ok = b.cmd(&[b"RESTORE".to_vec(), restored.clone().into_bytes(), b"0".to_vec(), dump]);
        assert_eq!(show(&ok), "+OK\\r\\n");
        assert_eq!(show(&r.cmd(&["PFCOUNT", &key])), show(&b.cmd(&["PFCOUNT", &restored])));
        let back = bulk(&b.cmd(&["DUMP", &restored]));
        let ok = r.cmd(&[b"RESTORE".to_vec(), restored.clone().into_bytes(), b"0".to_vec(), back]);
        assert_eq!(show(&ok), "+OK\\r\\n");
        assert!(r.cmd(&["GET", &restored]) == b.cmd(&["GET", &restored]));
        let merged = ["PFCOUNT", &key, &restored];
        assert_eq!(show(&r.cmd(&merged)), show(&b.cmd(&merged)));
    }
}

/// GET `key` on `from`, SET it on `to`: the same count and encoding.
fn copy_and_count(from: &mut Raw, to: &mut Raw, key: &str, n: usize, name: &str) {
    let v = bulk(&from.cmd(&["GET", key]));
    let copy = format!("{key}-copy");
    to.cmd(&[b"SET".to_vec(), copy.clone().into_bytes(), v]);
    let (want, got) = (from.cmd(&["PFCOUNT", key]), to.cmd(&["PFCOUNT", &copy]));
    assert_eq!(show(&want), show(&got), "{name}: {n} elements");
    let enc = from.cmd(&["PFDEBUG", "ENCODING", key]);
    assert_eq!(show(&enc), show(&to.cmd(&["PFDEBUG", "ENCODING", &copy])), "{name}");
    to.cmd(&["DEL", &copy]);
}

/// A valid HLL string of either encoding, from `server`.
fn sample(server: &mut Raw, rng: &mut Rng, dense: bool) -> Vec<u8> {
    server.cmd(&["DEL", "sample"]);
    let n = if dense { 3000 } else { 1 + rng.below(200) };
    let mut cmd = vec!["PFADD".to_string(), "sample".to_string()];
    cmd.extend(elements(rng, n));
    server.cmd(&cmd);
    bulk(&server.cmd(&["GET", "sample"]))
}

/// Corrupted HLL strings: bytes flipped, cut, grown, opcodes made to
/// overflow the registers, the cache marked stale. PFCOUNT (one key and
/// several) answers as redis-server does (a count or INVALIDOBJ); the
/// commands that write (whose handling of broken input differs between
/// Redis versions) answer a count, OK or Redis's error, and the server
/// never crashes.
#[test]
fn corrupted_hll_strings_get_redis_errors() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(0xbad_c0de);
    let allowed = [
        "INVALIDOBJ Corrupted HLL object detected",
        "WRONGTYPE Key is not a valid HyperLogLog string value.",
    ];
    for round in 0..400 {
        let dense = rng.below(4) == 0;
        let mut v = sample(&mut b, &mut rng, dense);
        match rng.below(5) {
            0 => {
                for _ in 0..1 + rng.below(3) {
                    let at = 16 + rng.below(v.len() - 16);
                    v[at] = rng.next() as u8;
                }
            }
            1 => v.truncate(16 + rng.below(v.len() - 16)),
            2 => {
                for _ in 0..1 + rng.below(20) {
                    v.push(rng.next() as u8);
                }
            }
            3 => {
                let at = 16 + rng.below(v.len() - 16);
                v.insert(at, 0x7f);
            }
            _ => {
                let at = rng.below(v.len());
                v[at] ^= 1 << rng.below(8);
            }
        }
        // Mostly stale, so PFCOUNT reads the registers.
        if rng.below(4) != 0 && v.len() >= 16 {
            v[15] |= 0x80;
        }
        for s in [&mut r, &mut b] {
            s.cmd(&[b"SET".to_vec(), b"bad".to_vec(), v.clone()]);
            s.cmd(&["PFADD", "good", "a", "b", "c"]);
        }
        for cmd in [&["PFCOUNT", "bad"][..], &["PFCOUNT", "good", "bad"]] {
            let (want, got) = (r.cmd(cmd), b.cmd(cmd));
            assert_eq!(show(&want), show(&got), "round {round}: {cmd:?} of {v:?}");
        }
        for cmd in [
            &["PFADD", "bad", "x", "y", "z"][..],
            &["PFMERGE", "out", "good", "bad"],
            &["PFMERGE", "bad", "good"],
            &["PFDEBUG", "GETREG", "bad"],
            &["PFDEBUG", "DECODE", "bad"],
            &["PFDEBUG", "TODENSE", "bad"],
            &["PFCOUNT", "bad"],
        ] {
            b.cmd(&[b"SET".to_vec(), b"bad".to_vec(), v.clone()]);
            let got = b.cmd(cmd);
            let text = String::from_utf8_lossy(&got).to_string();
            let fine = match text.strip_prefix('-') {
                Some(e) => allowed.iter().any(|a| e.trim_end() == *a) || e.starts_with("ERR HLL encoding is not sparse"),
                None => !text.is_empty(),
            };
            assert!(fine, "round {round}: {cmd:?} answered {}", show(&got));
        }
        assert_eq!(show(&b.cmd(&["PING"])), "+PONG\\r\\n");
    }
}

/// Keyspace events: PFADD sends `pfadd` only when the HLL changed (or was
/// made), PFMERGE sends `pfadd`, PFCOUNT's cache write and PFDEBUG send
/// none.
#[test]
fn hll_events_follow_redis() {
    let basalt = Basalt::start(1);
    let (mut c, mut sub) = (basalt.raw(), basalt.raw());
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for args in [
        &["PFADD", "e1", "a"][..],
        &["PFADD", "e1", "a"],
        &["PFADD", "e2"],
        &["PFADD", "e2"],
        &["PFCOUNT", "e1"],
        &["PFMERGE", "e3", "e1", "e2"],
        &["PFDEBUG", "TODENSE", "e3"],
        &["PFDEBUG", "GETREG", "e1"],
        &["SET", "marker", "1"],
    ] {
        c.cmd(args);
    }
    let events = common::keyevents_until_marker(&mut sub);
    assert_eq!(events, ["pfadd", "pfadd", "pfadd", "set"]);
}

/// PFCOUNT's cache write is a change of the key: a WATCH on it fails the
/// transaction, as in redis-server (`signalModifiedKey`); a valid cache
/// writes nothing.
#[test]
fn pfcount_cache_write_touches_watchers() {
    let basalt = Basalt::start(2);
    let (mut c, mut other) = (basalt.raw(), basalt.raw());
    c.cmd(&["PFADD", "w", "a", "b"]);
    c.cmd(&["WATCH", "w"]);
    other.cmd(&["PFCOUNT", "w"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["PING"]);
    assert_eq!(show(&c.cmd(&["EXEC"])), "*-1\\r\\n");
    c.cmd(&["WATCH", "w"]);
    other.cmd(&["PFCOUNT", "w"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["PING"]);
    assert_eq!(show(&c.cmd(&["EXEC"])), "*1\\r\\n+PONG\\r\\n");
}
