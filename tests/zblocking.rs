//! Blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP): each scenario
//! runs against Debian's redis-server and against Basalt with 4 shards
//! (keys picked on different shards), and the replies every client saw
//! must be the same. Plus a stress run only Basalt takes: many waiters,
//! many writers, every member popped exactly once.

mod common;

use std::time::{Duration, Instant};

use common::{rec, send, show, wait_blocked, Basalt, Raw};

const SHARDS: usize = 4;

fn on_shard(prefix: &str, shard: usize) -> String {
    common::on_shard(prefix, shard, SHARDS)
}

fn same_on_both(scenario: fn(u16) -> Vec<String>) {
    common::same_on_both(SHARDS, scenario)
}

#[test]
fn a_zadd_serves_the_client_blocked_on_any_of_its_keys() {
    same_on_both(|port| {
        let (k0, k1, k2) = (on_shard("z", 0), on_shard("z", 1), on_shard("z", 2));
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        send(&mut a, &["BZPOPMIN", &k0, &k1, &k2, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["ZADD", &k2, "3", "c", "1", "a", "2", "b"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["ZRANGE", &k2, "0", "-1", "WITHSCORES"])));
        send(&mut a, &["BZPOPMAX", &k0, &k1, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["ZINCRBY", &k1, "7.5", "m"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["EXISTS", &k1])));
        send(&mut a, &["BZMPOP", "0", "2", &k0, &k1, "MAX", "COUNT", "5"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["ZADD", &k0, "1", "x", "2", "y", "3", "z"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["EXISTS", &k0])));
        // A store into the key serves its waiter too.
        send(&mut a, &["BZMPOP", "0", "1", &k0, "MIN"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["ZUNIONSTORE", &k0, "1", &k2])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["ZRANGE", &k0, "0", "-1", "WITHSCORES"])));
        out
    });
}

/// A key that arrives by RENAME, COPY, MOVE or RESTORE serves its waiters,
/// as Redis's `dbAdd` signals it ready (lists and sorted sets alike).
#[test]
fn a_key_moved_into_place_serves_its_waiters() {
    same_on_both(|port| {
        let (k0, k1, k2) = (on_shard("w", 0), on_shard("w", 1), on_shard("w", 2));
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        let mut wait_then = |a: &mut Raw, c: &mut Raw, block: &[&str], fill: &[&[&str]]| {
            send(a, block);
            wait_blocked(c, 1);
            for cmd in fill {
                out.push(show(&c.cmd(cmd)));
            }
            out.push(rec(a));
        };
        wait_then(
            &mut a,
            &mut c,
            &["BZPOPMIN", &k0, "0"],
            &[&["ZADD", &k1, "1", "x", "2", "y"], &["RENAME", &k1, &k0]],
        );
        wait_then(&mut a, &mut c, &["BZPOPMAX", &k2, "0"], &[&["COPY", &k0, &k2]]);
        wait_then(
            &mut a,
            &mut c,
            &["BLPOP", &k1, "0"],
            &[&["RPUSH", &k2, "e"], &["DEL", &k1], &["RENAME", &k2, &k1]],
        );
        let dump = c.cmd(&["DUMP", &k0]);
        let payload = dump[dump.iter().position(|&x| x == b'\n').unwrap_or(0) + 1..dump.len().saturating_sub(2)].to_vec();
        send(&mut a, &["BZMPOP", "0", "1", &k2, "MIN"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&[&b"RESTORE"[..], k2.as_bytes(), b"0", &payload])));
        out.push(rec(&mut a));
        // MOVE from another database.
        c.cmd(&["SELECT", "1"]);
        c.cmd(&["ZADD", &k1, "5", "m"]);
        send(&mut a, &["BZPOPMIN", &k1, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["MOVE", &k1, "0"])));
        out.push(rec(&mut a));
        out
    });
}

#[test]
fn waiters_are_served_in_arrival_order_and_by_type() {
    same_on_both(|port| {
        let q = on_shard("q", 3);
        let mut c = Raw::connect(port);
        let mut clients: Vec<Raw> = (0..4).map(|_| Raw::connect(port)).collect();
        // A list waiter first, then sorted-set waiters on the same key.
        send(&mut clients[0], &["BLPOP", &q, "0"]);
        wait_blocked(&mut c, 1);
        for (i, w) in clients.iter_mut().enumerate().skip(1) {
            send(w, &["BZPOPMIN", &q, "0"]);
            wait_blocked(&mut c, i + 1);
        }
        let mut out = vec![show(&c.cmd(&["ZADD", &q, "1", "a", "2", "b"]))];
        // The sorted set serves the sorted-set waiters; the list one waits.
        out.push(rec(&mut clients[1]));
        out.push(rec(&mut clients[2]));
        out.push(show(&c.cmd(&["ZADD", &q, "0", "c"])));
        out.push(rec(&mut clients[3]));
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["RPUSH", &q, "e"])));
        out.push(rec(&mut clients[0]));
        out
    });
}

#[test]
fn timeouts_and_transactions_answer_a_null_array() {
    same_on_both(|port| {
        let mut a = Raw::connect(port);
        let mut out = Vec::new();
        for cmd in [
            &["BZPOPMIN", "t1", "t2", "0.2"][..],
            &["BZPOPMAX", "t1", "0.05"],
            &["BZMPOP", "0.05", "2", "t1", "t2", "MIN"],
        ] {
            let start = Instant::now();
            out.push(show(&a.cmd(cmd)));
            let took = start.elapsed();
            let want = if cmd[0] == "BZPOPMIN" { 200 } else { 50 };
            assert!(took >= Duration::from_millis(want), "{cmd:?} came back after {took:?}");
            assert!(took < Duration::from_secs(3), "{cmd:?} came back after {took:?}");
        }
        // Inside MULTI nothing blocks: an empty key answers at once.
        out.push(show(&a.cmd(&["MULTI"])));
        for cmd in [
            &["BZPOPMIN", "t1", "0"][..],
            &["ZADD", "t1", "1", "a", "2", "b"],
            &["BZPOPMAX", "t1", "0"],
            &["BZMPOP", "0", "1", "t1", "MIN", "COUNT", "9"],
            &["BZMPOP", "0", "1", "t1", "MIN"],
        ] {
            out.push(show(&a.cmd(cmd)));
        }
        out.push(show(&a.cmd(&["EXEC"])));
        // RESP3: a null, the score a double.
        let mut r3 = Raw::connect(port);
        r3.cmd(&["HELLO", "3"]);
        for cmd in [
            &["BZPOPMIN", "t1", "0.01"][..],
            &["BZMPOP", "0.01", "1", "t1", "MIN"],
            &["ZADD", "t1", "1.5", "a"],
            &["BZPOPMIN", "t1", "0.01"],
            &["ZADD", "t1", "1.5", "a"],
            &["BZMPOP", "0.01", "1", "t1", "MIN"],
        ] {
            out.push(show(&r3.cmd(cmd)));
        }
        out
    });
}

/// Waiters on sorted sets of every shard and writers adding exactly as many
/// members as there are pops: every member is popped exactly once.
#[test]
fn concurrent_waiters_and_writers_lose_nothing() {
    let b = Basalt::start(SHARDS);
    let keys: Vec<String> = (0..SHARDS).map(|s| on_shard("hot", s)).collect();
    const WAITERS: usize = 6;
    const ROUNDS: usize = 40;
    let port = b.port;
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            let keys = keys.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut got = Vec::new();
                for i in 0..ROUNDS {
                    let mut ks: Vec<&str> = keys.iter().map(String::as_str).collect();
                    ks.rotate_left(w % SHARDS);
                    let mut cmd = if i % 2 == 0 { vec!["BZPOPMIN"] } else { vec!["BZPOPMAX"] };
                    cmd.extend(ks);
                    cmd.push("10");
                    got.push(c.cmd(&cmd));
                }
                got
            })
        })
        .collect();
    let total = WAITERS * ROUNDS;
    let writers: Vec<_> = (0..2)
        .map(|wr| {
            let keys = keys.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for i in 0..total / 2 {
                    let key = &keys[i % keys.len()];
                    let member = format!("m{wr}:{i}");
                    let reply = c.cmd(&["ZADD", key, &i.to_string(), &member]);
                    assert_eq!(show(&reply), ":1\\r\\n", "ZADD {key} {member}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let mut popped = Vec::new();
    for w in waiters {
        for reply in w.join().expect("waiter") {
            let text = show(&reply);
            assert!(text.starts_with("*3"), "a waiter timed out or failed: {text}");
            let member = text.split("\\r\\n").nth(4).unwrap_or_default().to_string();
            popped.push(member);
        }
    }
    popped.sort();
    let mut want: Vec<String> = (0..2).flat_map(|wr| (0..total / 2).map(move |i| format!("m{wr}:{i}"))).collect();
    want.sort();
    assert_eq!(popped, want, "every member popped exactly once");
    let mut c = b.raw();
    for k in &keys {
        assert_eq!(show(&c.cmd(&["EXISTS", k])), ":0\\r\\n", "{k} left over");
    }
}
