//! Blocking list commands (issue 14): each scenario runs against Debian's
//! redis-server and against Basalt with 4 shards (keys picked on different
//! shards), and the replies every client saw must be the same.

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
fn a_push_serves_the_client_blocked_on_any_of_its_keys() {
    same_on_both(|port| {
        let (k0, k1, k2) = (on_shard("k", 0), on_shard("k", 1), on_shard("k", 2));
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        send(&mut a, &["BLPOP", &k0, &k1, &k2, "0"]);
        wait_blocked(&mut c, 1);
        // Another database's key of the same name serves nobody.
        c.cmd(&["SELECT", "1"]);
        out.push(show(&c.cmd(&["RPUSH", &k2, "other-db"])));
        c.cmd(&["SELECT", "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["RPUSH", &k2, "x", "y"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["LRANGE", &k2, "0", "-1"])));
        // BRPOP and BLMPOP likewise.
        send(&mut a, &["BRPOP", &k0, &k1, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["LPUSH", &k1, "p", "q"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["DEL", &k2])));
        send(&mut a, &["BLMPOP", "0", "2", &k0, &k2, "RIGHT", "COUNT", "5"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["RPUSH", &k0, "1", "2", "3"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["EXISTS", &k0])));
        out
    });
}

#[test]
fn waiters_are_served_in_arrival_order() {
    same_on_both(|port| {
        let q = on_shard("q", 3);
        let mut c = Raw::connect(port);
        let mut clients: Vec<Raw> = (0..3).map(|_| Raw::connect(port)).collect();
        for (i, w) in clients.iter_mut().enumerate() {
            send(w, &["BLPOP", &q, "0"]);
            wait_blocked(&mut c, i + 1);
        }
        let mut out = vec![show(&c.cmd(&["RPUSH", &q, "a", "b"]))];
        out.extend(clients.iter_mut().take(2).map(rec));
        out.push(show(&c.cmd(&["LPUSH", &q, "c", "d"])));
        out.push(rec(&mut clients[2]));
        out.push(show(&c.cmd(&["LRANGE", &q, "0", "-1"])));
        out
    });
}

#[test]
fn timeouts_end_the_wait_with_a_null_array() {
    same_on_both(|port| {
        let mut a = Raw::connect(port);
        let mut out = Vec::new();
        for cmd in [
            &["BLPOP", "t1", "t2", "0.2"][..],
            &["BRPOP", "t1", "0.05"],
            &["BLMPOP", "0.05", "1", "t1", "LEFT"],
            &["BLMOVE", "t1", "t2", "LEFT", "RIGHT", "0.05"],
            &["BRPOPLPUSH", "t1", "t2", "0.05"],
        ] {
            let start = Instant::now();
            out.push(show(&a.cmd(cmd)));
            let took = start.elapsed();
            let want = if cmd[0] == "BLPOP" { 200 } else { 50 };
            assert!(took >= Duration::from_millis(want), "{cmd:?} came back after {took:?}");
            assert!(took < Duration::from_secs(3), "{cmd:?} came back after {took:?}");
        }
        out.push(show(&a.cmd(&["EXISTS", "t1", "t2"])));
        out
    });
}

#[test]
fn blmove_across_shards_moves_once_and_wakes_the_destination() {
    same_on_both(|port| {
        let (src, dst) = (on_shard("src", 0), on_shard("dst", 1));
        let (mut a, mut b, mut c) = (Raw::connect(port), Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        // b waits on dst, a moves src -> dst once src has data.
        send(&mut b, &["BLPOP", &dst, "0"]);
        wait_blocked(&mut c, 1);
        send(&mut a, &["BLMOVE", &src, &dst, "RIGHT", "LEFT", "0"]);
        wait_blocked(&mut c, 2);
        out.push(show(&c.cmd(&["RPUSH", &src, "x", "y"])));
        out.push(rec(&mut a));
        out.push(rec(&mut b));
        out.push(show(&c.cmd(&["LRANGE", &src, "0", "-1"])));
        out.push(show(&c.cmd(&["LRANGE", &dst, "0", "-1"])));
        // BRPOPLPUSH to a destination that turned into a string meanwhile:
        // WRONGTYPE, and the element stays where it was.
        c.cmd(&["DEL", &src]);
        send(&mut a, &["BRPOPLPUSH", &src, &dst, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["SET", &dst, "string"])));
        out.push(show(&c.cmd(&["RPUSH", &src, "z"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["LRANGE", &src, "0", "-1"])));
        out.push(show(&c.cmd(&["GET", &dst])));
        // LMOVE (not blocking) into a key a client waits on serves it.
        c.cmd(&["DEL", &dst]);
        send(&mut b, &["BRPOP", &dst, "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["LMOVE", &src, &dst, "LEFT", "LEFT"])));
        out.push(rec(&mut b));
        out.push(show(&c.cmd(&["EXISTS", &src, &dst])));
        out
    });
}

#[test]
fn client_unblock_and_kill_end_a_wait() {
    same_on_both(|port| {
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        let id = String::from_utf8_lossy(&a.cmd(&["CLIENT", "ID"]))
            .trim()
            .trim_start_matches(':')
            .to_string();
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id])));
        send(&mut a, &["BLPOP", "u", "0"]);
        wait_blocked(&mut c, 1);
        let list = String::from_utf8_lossy(&c.cmd(&["CLIENT", "LIST", "ID", &id])).to_string();
        out.push(format!("blocked flag: {}", list.contains(" flags=b ")));
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id, "FOO"])));
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id])));
        send(&mut a, &["BLMOVE", "u", "v", "LEFT", "LEFT", "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"])));
        out.push(rec(&mut a));
        send(&mut a, &["BLMPOP", "0", "1", "u", "LEFT"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id, "error"])));
        out.push(rec(&mut a));
        out.push(show(&a.cmd(&["PING"])));
        // A killed waiter takes nothing: the push stays in the list.
        send(&mut a, &["BLPOP", "u", "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["CLIENT", "KILL", "ID", &id])));
        out.push(format!("killed closed: {}", a.closed()));
        wait_blocked(&mut c, 0);
        out.push(show(&c.cmd(&["RPUSH", "u", "kept"])));
        out.push(show(&c.cmd(&["LRANGE", "u", "0", "-1"])));
        out
    });
}

#[test]
fn a_waiter_that_hangs_up_takes_nothing() {
    same_on_both(|port| {
        let mut c = Raw::connect(port);
        let mut out = Vec::new();
        {
            let mut a = Raw::connect(port);
            send(&mut a, &["BLPOP", "h", "0"]);
            wait_blocked(&mut c, 1);
        }
        // The server notices the hang-up (Basalt within its 100 ms check).
        wait_blocked(&mut c, 0);
        let mut b = Raw::connect(port);
        send(&mut b, &["BLPOP", "h", "0"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["RPUSH", "h", "1", "2"])));
        out.push(rec(&mut b));
        out.push(show(&c.cmd(&["LRANGE", "h", "0", "-1"])));
        out
    });
}

/// Many clients block on lists of all shards while pushers add exactly as
/// many elements as there are waits: every element is popped exactly once
/// and nothing is left over (no double serving, no lost wakeups).
#[test]
fn concurrent_waiters_and_pushers_lose_nothing() {
    let b = Basalt::start(SHARDS);
    let keys: Vec<String> = (0..SHARDS).map(|s| on_shard("hot", s)).collect();
    const WAITERS: usize = 8;
    const ROUNDS: usize = 50;
    let port = b.port;
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            let keys = keys.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut got = Vec::new();
                for i in 0..ROUNDS {
                    // Each waiter names the keys in its own order, and moves
                    // one element in three through another list.
                    let mut ks: Vec<&str> = keys.iter().map(String::as_str).collect();
                    ks.rotate_left(w % SHARDS);
                    let reply = if i % 3 == 0 {
                        let dst = format!("through:{w}");
                        let v = c.cmd(&["BLMOVE", ks[0], &dst, "LEFT", "RIGHT", "5"]);
                        if v.starts_with(b"$") {
                            c.cmd(&["LPOP", &dst])
                        } else {
                            v
                        }
                    } else {
                        let mut cmd = vec!["BLPOP"];
                        cmd.extend(ks);
                        cmd.push("5");
                        c.cmd(&cmd)
                    };
                    got.push(show(&reply));
                }
                got
            })
        })
        .collect();
    let pushers: Vec<_> = (0..2)
        .map(|p| {
            let keys = keys.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for i in 0..WAITERS * ROUNDS / 2 {
                    // BLMOVE waits on its first key only: feed that one
                    // often enough for every waiter.
                    let k = &keys[(i + p) % SHARDS];
                    c.cmd(&["RPUSH", k, &format!("e{p}-{i}")]);
                }
            })
        })
        .collect();
    for p in pushers {
        p.join().expect("pusher");
    }
    let mut all: Vec<String> = Vec::new();
    for w in waiters {
        all.extend(w.join().expect("waiter"));
    }
    let mut c = b.raw();
    let left: usize = keys
        .iter()
        .map(|k| {
            String::from_utf8_lossy(&c.cmd(&["LLEN", k]))
                .trim()
                .trim_start_matches(':')
                .parse::<usize>()
                .unwrap_or(0)
        })
        .sum();
    let timeouts = all.iter().filter(|r| r.as_str() == "*-1\\r\\n").count();
    let mut elements: Vec<String> = all
        .iter()
        .filter(|r| r.as_str() != "*-1\\r\\n")
        .map(|r| r.rsplit("\\r\\n").nth(1).unwrap_or("").to_string())
        .collect();
    let n = elements.len();
    elements.sort();
    elements.dedup();
    assert_eq!(elements.len(), n, "an element was served twice");
    assert_eq!(n + left, WAITERS * ROUNDS, "served {n}, left {left}, timeouts {timeouts}");
    assert_eq!(timeouts, left, "every timeout left one element behind");
}

#[test]
fn timeout_arguments_are_checked_as_redis_does() {
    same_on_both(|port| {
        let mut a = Raw::connect(port);
        [
            &["BLPOP", "k", "0x1p-20"][..],
            &["BLPOP", "k", "-0.0001x"],
            &["BLPOP", "k", "0.0001x"],
            &["BLPOP", "k", "-inf"],
            &["BLMPOP", "-1", "1", "k", "LEFT"],
            &["BRPOPLPUSH", "k", "d", "abc"],
        ]
        .iter()
        .map(|cmd| show(&a.cmd(cmd)))
        .collect()
    });
}
