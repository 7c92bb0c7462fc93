//! MULTI, EXEC and DISCARD (issue 15) against Debian's redis-server:
//! scripted replies byte for byte on 1 and 4 shards and in RESP3, that
//! nothing queued is applied before EXEC (seen from another client), and
//! what CLIENT LIST and INFO commandstats say of a transaction.

mod common;

use common::{run_resp3_script, run_scripts, Basalt, Raw};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "queue-and-exec",
        r#"
        MULTI
        SET x 1
        INCR x
        GET x
        LPUSH l a b
        LRANGE l 0 -1
        EXEC
        GET x
        MULTI
        EXEC
        "#,
    ),
    (
        "runtime-errors-do-not-roll-back",
        r#"
        SET s abc
        MULTI
        INCR s
        SET t 1
        LPUSH s x
        HSET t f v
        GET t
        EXEC
        GET s
        GET t
        "#,
    ),
    (
        "refused-while-queueing",
        r#"
        MULTI
        SET a
        INCR a
        EXEC
        EXISTS a
        MULTI
        NOSUCHCOMMAND x
        SET a 1
        EXEC
        EXISTS a
        MULTI
        SET a 1
        EXEC x
        EXEC
        EXISTS a
        MULTI
        MULTI x
        EXEC
        "#,
    ),
    (
        "nesting-and-misuse",
        r#"
        EXEC
        DISCARD
        MULTI
        MULTI
        SET a 1
        EXEC
        GET a
        MULTI
        SET a 2
        DISCARD
        GET a
        EXEC
        DISCARD
        "#,
    ),
    (
        "blocking-commands-do-not-block",
        r#"
        MULTI
        BLPOP nope 0
        BRPOP nope 0
        BRPOPLPUSH nope dst 0
        BLMOVE nope dst LEFT LEFT 0
        BLMPOP 0 1 nope LEFT
        RPUSH l a b c
        BLPOP l 0
        BRPOPLPUSH l dst 0
        BLMOVE l dst LEFT RIGHT 0
        BLMPOP 0 1 l LEFT
        LRANGE dst 0 -1
        EXEC
        MULTI
        BLPOP l notanumber
        EXEC
        "#,
    ),
    (
        "multi-key-commands-on-one-shard",
        r#"
        MULTI
        MSET {t}a 1 {t}b 2
        MGET {t}a {t}b {t}c
        EXISTS {t}a {t}b {t}c {t}a
        TOUCH {t}a {t}zz
        DEL {t}a {t}c
        UNLINK {t}b
        MSETNX {t}x 1 {t}y 2
        MSETNX {t}x 3 {t}z 4
        MSET {t}a 1 {t}b
        MGET {t}x {t}y {t}z
        INCR {t}x
        HSET {t}h f v
        MGET {t}h {t}x
        EXEC
        MGET {t}a {t}b {t}x {t}y {t}z
        "#,
    ),
    (
        "keys-on-every-shard",
        r#"
        MULTI
        MSET a 1 b 2 c 3 d 4 e 5 f 6
        MGET a b c d e f nope
        DEL a c e
        SADD s1 x y
        SADD s2 y z
        SINTERSTORE s3 s1 s2
        SMEMBERS s3
        RPUSH src 1 2
        LMOVE src dst RIGHT LEFT
        RPOPLPUSH src dst
        LRANGE dst 0 -1
        SELECT 1
        SET a other
        SELECT 0
        GET a
        EXEC
        MGET a b c d e f
        SELECT 1
        GET a
        SELECT 0
        "#,
    ),
];

#[test]
fn same_replies_as_redis_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn same_replies_as_redis_four_shards() {
    let spread = ["a", "b", "c", "d", "e", "f", "src", "dst"].map(|k| basalt::slot::owner(k.as_bytes(), 4));
    assert!(spread.iter().any(|o| *o != spread[0]), "{spread:?}");
    run_scripts(SCRIPTS, 4);
}

#[test]
fn same_resp3_replies_as_redis() {
    run_resp3_script(
        "resp3",
        r#"
        MULTI
        BLPOP nope 0
        BLMOVE nope dst LEFT LEFT 0
        HSET h f v
        HGETALL h
        SMEMBERS nope
        EXEC
        MULTI
        SET a
        EXEC
        "#,
        2,
    );
}

/// Sends `cmds` in one write and reads one reply per command.
fn pipeline(c: &mut Raw, cmds: &[&[&str]]) -> Vec<Vec<u8>> {
    let mut bytes = Vec::new();
    for args in cmds {
        bytes.extend(Raw::encode(args));
    }
    c.send_bytes(&bytes);
    cmds.iter().map(|_| c.reply()).collect()
}

#[test]
fn nothing_queued_is_applied_before_exec() {
    let basalt = Basalt::start(4);
    let (mut a, mut other) = (basalt.raw(), basalt.raw());
    assert_eq!(a.cmd(&["MULTI"]), b"+OK\r\n");
    for k in ["k1", "k2", "k3", "k4", "k5"] {
        assert_eq!(a.cmd(&["SET", k, "v"]), b"+QUEUED\r\n");
    }
    assert_eq!(a.cmd(&["INCR", "n"]), b"+QUEUED\r\n");
    assert_eq!(
        other.cmd(&["MGET", "k1", "k2", "k3", "k4", "k5", "n"]),
        b"*6\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n"
    );
    assert_eq!(a.cmd(&["EXEC"]), b"*6\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n:1\r\n");
    assert_eq!(other.cmd(&["MGET", "k1", "k5", "n"]), b"*3\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\n1\r\n");
    // DISCARD drops the queue; so does RESET.
    a.cmd(&["MULTI"]);
    a.cmd(&["DEL", "k1"]);
    assert_eq!(a.cmd(&["DISCARD"]), b"+OK\r\n");
    a.cmd(&["MULTI"]);
    a.cmd(&["DEL", "k2"]);
    assert_eq!(a.cmd(&["RESET"]), b"+RESET\r\n");
    assert_eq!(a.cmd(&["EXEC"]), b"-ERR EXEC without MULTI\r\n");
    assert_eq!(other.cmd(&["EXISTS", "k1", "k2"]), b":2\r\n");
    // A whole transaction pipelined in one write, as client libraries send it.
    let replies = pipeline(
        &mut a,
        &[&["MULTI"], &["SET", "p", "1"], &["INCRBY", "p", "41"], &["GET", "p"], &["EXEC"]],
    );
    assert_eq!(replies[4], b"*3\r\n+OK\r\n:42\r\n$2\r\n42\r\n");
}

#[test]
fn client_list_and_commandstats_see_the_transaction() {
    let basalt = Basalt::start(2);
    let mut c = basalt.raw();
    c.cmd(&["CONFIG", "RESETSTAT"]);
    let field = |line: &[u8], name: &str| -> String {
        let text = String::from_utf8_lossy(line).to_string();
        let at = text.find(&format!(" {name}=")).expect(name) + name.len() + 2;
        text[at..].split(' ').next().unwrap_or("").to_string()
    };
    let before = c.cmd(&["CLIENT", "INFO"]);
    assert_eq!((field(&before, "flags"), field(&before, "multi")), ("N".into(), "-1".into()));
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["INCR", "a"]);
    let inside = c.cmd(&["CLIENT", "INFO"]);
    // CLIENT INFO itself was queued: the fields come from EXEC's reply.
    assert_eq!(inside, b"+QUEUED\r\n");
    let replies = c.cmd(&["EXEC"]);
    let info = String::from_utf8_lossy(&replies).to_string();
    assert!(info.contains(" flags=x "), "{info}");
    assert!(info.contains(" multi=3 "), "{info}");
    let stats = String::from_utf8_lossy(&c.cmd(&["INFO", "commandstats"])).to_string();
    for (cmd, calls) in [("multi", 1), ("exec", 1), ("set", 1), ("incr", 1)] {
        assert!(stats.contains(&format!("cmdstat_{cmd}:calls={calls},")), "{cmd}: {stats}");
    }
}

#[test]
fn redis_rs_atomic_pipeline() {
    let basalt = Basalt::start(4);
    let mut con = basalt.client();
    let (a, b, n): (String, i64, Vec<String>) = redis::pipe()
        .atomic()
        .set("x", "1")
        .ignore()
        .get("x")
        .incr("y", 5)
        .rpush("l", &["p", "q"])
        .ignore()
        .lrange("l", 0, -1)
        .query(&mut con)
        .expect("atomic pipeline");
    assert_eq!((a.as_str(), b, n), ("1", 5, vec!["p".to_string(), "q".to_string()]));
}

/// Two-client differential scripts (`common::run_clients`).
fn two_clients(name: &str, script: &str, shards: usize) {
    common::run_clients(name, script, shards, false);
}

const WATCH_SCRIPTS: &[(&str, &str)] = &[
    (
        "another-client-writes",
        r#"
        A: SET k 1
        A: WATCH k
        B: SET k 2
        A: MULTI
        A: SET k 3
        A: EXEC
        A: GET k
        "#,
    ),
    (
        "nobody-writes",
        r#"
        A: WATCH k other
        B: SET unrelated 1
        B: GET k
        A: MULTI
        A: SET k 3
        A: EXEC
        A: GET k
        "#,
    ),
    (
        "own-write-before-multi",
        r#"
        A: WATCH k
        A: SET k mine
        A: MULTI
        A: INCR n
        A: EXEC
        A: EXISTS n
        "#,
    ),
    (
        "members-count",
        r#"
        A: HSET h f v
        A: SADD s m
        A: RPUSH l a
        A: WATCH h
        B: HSET h f v2
        A: MULTI
        A: HGET h f
        A: EXEC
        A: WATCH s
        B: SADD s m
        A: MULTI
        A: SCARD s
        A: EXEC
        A: WATCH l
        B: LSET l 0 z
        A: MULTI
        A: LLEN l
        A: EXEC
        A: WATCH newhash
        B: HSET newhash f v
        A: MULTI
        A: EXEC
        "#,
    ),
    (
        "deletes-and-flushes",
        r#"
        A: SET k v
        A: WATCH k
        B: DEL k
        A: MULTI
        A: EXEC
        A: WATCH absent
        B: FLUSHDB
        A: MULTI
        A: PING
        A: EXEC
        A: SET present 1
        A: WATCH present
        B: FLUSHALL
        A: MULTI
        A: PING
        A: EXEC
        A: SET k v
        A: WATCH k
        B: EXPIRE k 100
        A: MULTI
        A: EXEC
        "#,
    ),
    (
        "expiry-spoils-the-watch",
        r#"
        A: SET k v PX 100
        A: WATCH k
        SLEEP 200
        A: MULTI
        A: PING
        A: EXEC
        A: SET gone v PX 50
        SLEEP 100
        A: WATCH gone
        A: MULTI
        A: PING
        A: EXEC
        "#,
    ),
    (
        "unwatch-discard-and-misuse",
        r#"
        A: WATCH k
        B: SET k 1
        A: UNWATCH
        A: MULTI
        A: SET k 2
        A: EXEC
        A: WATCH k
        B: SET k 3
        A: MULTI
        A: DISCARD
        A: MULTI
        A: GET k
        A: EXEC
        A: MULTI
        A: WATCH k
        A: UNWATCH
        A: EXEC
        A: WATCH
        A: WATCH k
        B: SET k 4
        A: WATCH k2
        A: MULTI
        A: EXEC
        "#,
    ),
];

#[test]
fn watch_like_redis_one_shard() {
    for (name, script) in WATCH_SCRIPTS {
        two_clients(name, script, 1);
    }
}

#[test]
fn watch_like_redis_four_shards() {
    for (name, script) in WATCH_SCRIPTS {
        two_clients(name, script, 4);
    }
}

#[test]
fn watch_in_resp3() {
    two_clients(
        "resp3",
        r#"
        !A: HELLO 3
        A: WATCH k
        B: SET k 1
        A: MULTI
        A: GET k
        A: EXEC
        "#,
        2,
    );
}

/// WATCH-guarded increments from several clients at once (optimistic
/// locking, as an application does it): every EXEC that ran must count,
/// so the counters end exactly at the number of EXECs that succeeded.
#[test]
fn watched_increments_from_many_clients_lose_nothing() {
    let basalt = Basalt::start(4);
    let port = basalt.port;
    let counters = ["c:a", "c:b", "c:c"];
    let spread = counters.map(|k| basalt::slot::owner(k.as_bytes(), 4));
    assert!(spread.iter().any(|o| *o != spread[0]), "{spread:?}");
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut done = [0u64; 3];
                for i in 0..150 {
                    let k = (t + i) % 3;
                    let key = ["c:a", "c:b", "c:c"][k];
                    loop {
                        c.cmd(&["WATCH", key]);
                        let got = c.cmd(&["GET", key]);
                        let text = String::from_utf8_lossy(&got).to_string();
                        let v: u64 = text.lines().nth(1).and_then(|l| l.trim().parse().ok()).unwrap_or(0);
                        c.cmd(&["MULTI"]);
                        c.cmd(&["SET", key, &(v + 1).to_string()]);
                        if c.cmd(&["EXEC"]) != b"*-1\r\n" {
                            done[k] += 1;
                            break;
                        }
                    }
                }
                done
            })
        })
        .collect();
    let mut total = [0u64; 3];
    for t in threads {
        let d = t.join().expect("client thread");
        for k in 0..3 {
            total[k] += d[k];
        }
    }
    let mut c = basalt.raw();
    for (k, key) in counters.iter().enumerate() {
        let want = format!("${}\r\n{}\r\n", total[k].to_string().len(), total[k]);
        assert_eq!(String::from_utf8_lossy(&c.cmd(&["GET", key])), want, "{key}");
    }
    assert_eq!(total.iter().sum::<u64>(), 900);
}

/// The integer in a bulk reply line (`$1\r\n7\r\n` -> 7; nil -> 0).
fn bulk_int(lines: &mut std::str::Lines<'_>) -> u64 {
    let head = lines.next().unwrap_or_default();
    if head == "$-1" {
        return 0;
    }
    lines.next().and_then(|l| l.trim().parse().ok()).unwrap_or(0)
}

/// EXECs whose keys live on several shards are isolated: writers bump
/// three counters on different shards in one transaction; readers, in
/// transactions and with MGET, must always see the three equal. Without
/// the transaction gate (`coord::gate`) readers see them apart.
#[test]
fn multi_shard_exec_is_never_seen_half_done() {
    let basalt = Basalt::start(4);
    let port = basalt.port;
    let keys = ["k:a", "k:b", "k:c"];
    let spread = keys.map(|k| basalt::slot::owner(k.as_bytes(), 4));
    assert!(spread.iter().any(|o| *o != spread[0]), "{spread:?}");
    let writers: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for _ in 0..200 {
                    let mut tx = Raw::encode(&["MULTI"]);
                    for k in keys {
                        tx.extend(Raw::encode(&["INCR", k]));
                    }
                    tx.extend(Raw::encode(&["EXEC"]));
                    c.send_bytes(&tx);
                    (0..4).for_each(|_| {
                        c.reply();
                    });
                    let exec = c.reply();
                    assert!(exec.starts_with(b"*3\r\n"), "{}", common::show(&exec));
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut seen = 0;
                for _ in 0..300 {
                    let got = if r == 0 {
                        c.cmd(&["MULTI"]);
                        keys.iter().for_each(|k| {
                            c.cmd(&["GET", k]);
                        });
                        c.cmd(&["EXEC"])
                    } else {
                        c.cmd(&["MGET", keys[0], keys[1], keys[2]])
                    };
                    let text = String::from_utf8_lossy(&got).to_string();
                    let mut lines = text.lines();
                    lines.next();
                    let v = [bulk_int(&mut lines), bulk_int(&mut lines), bulk_int(&mut lines)];
                    assert!(v[0] == v[1] && v[1] == v[2], "reader {r} saw a transaction half done: {v:?}");
                    seen = seen.max(v[0]);
                }
                seen
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    for r in readers {
        r.join().expect("reader");
    }
    let mut c = basalt.raw();
    for k in keys {
        assert_eq!(c.cmd(&["GET", k]), b"$3\r\n600\r\n", "{k}");
    }
}

/// WATCH-guarded transfers between two keys on two shards: the sum is
/// conserved and every EXEC that ran counted.
#[test]
fn watched_transfers_across_shards_conserve_the_total() {
    let basalt = Basalt::start(4);
    let port = basalt.port;
    let (a, b) = ("acct:a", "acct:b");
    assert_ne!(basalt::slot::owner(a.as_bytes(), 4), basalt::slot::owner(b.as_bytes(), 4));
    let mut c = basalt.raw();
    c.cmd(&["SET", a, "1000"]);
    c.cmd(&["SET", b, "1000"]);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let (from, to) = if t % 2 == 0 { (a, b) } else { (b, a) };
                let mut moved = 0i64;
                for _ in 0..60 {
                    loop {
                        c.cmd(&["WATCH", from, to]);
                        let got = String::from_utf8_lossy(&c.cmd(&["MGET", from, to])).to_string();
                        let mut lines = got.lines();
                        lines.next();
                        let (f, d) = (bulk_int(&mut lines), bulk_int(&mut lines));
                        c.cmd(&["MULTI"]);
                        c.cmd(&["SET", from, &(f - 1).to_string()]);
                        c.cmd(&["SET", to, &(d + 1).to_string()]);
                        if c.cmd(&["EXEC"]) != b"*-1\r\n" {
                            moved += if from == a { 1 } else { -1 };
                            break;
                        }
                    }
                }
                moved
            })
        })
        .collect();
    let net: i64 = threads.into_iter().map(|t| t.join().expect("client")).sum();
    let got = String::from_utf8_lossy(&c.cmd(&["MGET", a, b])).to_string();
    let mut lines = got.lines();
    lines.next();
    let (va, vb) = (bulk_int(&mut lines) as i64, bulk_int(&mut lines) as i64);
    assert_eq!(va + vb, 2000, "the total changed: {va} + {vb}");
    assert_eq!(va, 1000 - net, "a transfer was lost or counted twice");
}

/// A push inside EXEC serves a blocked client after the transaction, as
/// Redis does: LLEN inside EXEC still sees the element. On one shard (the
/// isolated path) and across shards (behind the transaction gate).
const SERVED_AFTER_EXEC: &str = r#"
    C> BLPOP {t}l 0
    SLEEP 100
    A: MULTI
    A: RPUSH {t}l a b
    A: LLEN {t}l
    A: EXEC
    C<
    A: LLEN {t}l
    D> BRPOP {t}q 0
    SLEEP 100
    A: MULTI
    A: RPUSH {t}q x
    A: LLEN {t}q
    A: SET elsewhere:1 v
    A: SET elsewhere:2 v
    A: GET {t}l
    A: EXEC
    D<
    A: LLEN {t}q
"#;

#[test]
fn blocked_clients_are_served_after_exec() {
    for shards in [1, 4] {
        common::run_clients("served-after-exec", SERVED_AFTER_EXEC, shards, false);
    }
}

/// The transaction gate under a mix of everything that waits: multi-shard
/// EXECs, blocking pops served by pushes inside and outside EXEC, cross-shard
/// moves, MGET and plain writes, from eight clients on four shards. Every
/// client must finish (a deadlock shows as a thread that never does) and
/// the counters bumped only inside EXEC must agree.
#[test]
fn the_gate_never_deadlocks_a_mixed_load() {
    let basalt = Basalt::start(4);
    let port = basalt.port;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for t in 0..8u64 {
        let done = done_tx.clone();
        std::thread::spawn(move || {
            let mut c = Raw::connect(port);
            let mut rng = common::Rng(0x9E37_79B9 + t);
            for i in 0..150 {
                match rng.below(6) {
                    0 | 1 => {
                        let mut tx = Raw::encode(&["MULTI"]);
                        for k in ["m:a", "m:b", "m:c"] {
                            tx.extend(Raw::encode(&["INCR", k]));
                        }
                        tx.extend(Raw::encode(&["RPUSH", "m:list", &format!("{t}:{i}")]));
                        tx.extend(Raw::encode(&["EXEC"]));
                        c.send_bytes(&tx);
                        (0..6).for_each(|_| {
                            c.reply();
                        });
                    }
                    2 => {
                        c.cmd(&["BLPOP", "m:list", "m:other", "0.05"]);
                    }
                    3 => {
                        c.cmd(&["BLMOVE", "m:list", "m:moved", "LEFT", "RIGHT", "0.05"]);
                    }
                    4 => {
                        let got = String::from_utf8_lossy(&c.cmd(&["MGET", "m:a", "m:b", "m:c"])).to_string();
                        let vals: Vec<&str> = got.lines().skip(1).filter(|l| !l.starts_with('$')).collect();
                        assert!(vals.windows(2).all(|w| w[0] == w[1]), "MGET saw an EXEC half done: {vals:?}");
                    }
                    _ => {
                        c.cmd(&["LPUSH", "m:other", "x"]);
                        c.cmd(&["SET", &format!("m:plain:{t}"), &i.to_string()]);
                    }
                }
            }
            let _ = done.send(t);
        });
    }
    drop(done_tx);
    let mut finished = 0;
    while finished < 8 {
        match done_rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(_) => finished += 1,
            Err(e) => panic!("{} of 8 clients finished, then nothing for 60 s ({e}): a deadlock", finished),
        }
    }
    let mut c = basalt.raw();
    let got = String::from_utf8_lossy(&c.cmd(&["MGET", "m:a", "m:b", "m:c"])).to_string();
    let vals: Vec<&str> = got.lines().skip(1).filter(|l| !l.starts_with('$')).collect();
    assert!(vals.windows(2).all(|w| w[0] == w[1]), "{vals:?}");
}
