//! Blocking stream reads (XREAD and XREADGROUP with BLOCK): each scenario
//! runs against Debian's redis-server and against Basalt with 4 shards
//! (keys picked on different shards), and the replies every client saw
//! must be the same. Plus runs only Basalt takes: a consumer group read by
//! many blocked clients at once delivers each entry to exactly one of them.

mod common;

use std::collections::HashSet;
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
fn an_xadd_serves_the_client_blocked_on_any_of_its_streams() {
    same_on_both(|port| {
        let (k0, k1, k2) = (on_shard("s", 0), on_shard("s", 1), on_shard("s", 2));
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        // `$` on missing keys: anything added later.
        send(&mut a, &["XREAD", "BLOCK", "0", "STREAMS", &k0, &k1, &k2, "$", "$", "$"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["XADD", &k2, "5-0", "a", "1"])));
        out.push(rec(&mut a));
        // `$` is the last ID when the command runs: older entries do not count.
        out.push(show(&c.cmd(&["XADD", &k1, "3-0", "b", "2"])));
        send(&mut a, &["XREAD", "BLOCK", "0", "STREAMS", &k1, &k2, "$", "$"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["XADD", &k1, "4-0", "c", "3", "d", "4"])));
        out.push(rec(&mut a));
        // An explicit ID with entries already after it answers at once.
        out.push(show(&a.cmd(&["XREAD", "BLOCK", "0", "STREAMS", &k0, &k1, "0", "3-0"])));
        // COUNT limits what a served client gets.
        send(&mut a, &["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", &k0, "$"]);
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&[
            "EVAL",
            "redis.call('xadd', KEYS[1], '1-0', 'x', 1) redis.call('xadd', KEYS[1], '2-0', 'y', 2) return 1",
            "1",
            &k0,
        ])));
        out.push(rec(&mut a));
        // Two clients on one stream are both served by one XADD.
        let mut b = Raw::connect(port);
        send(&mut a, &["XREAD", "BLOCK", "0", "STREAMS", &k2, "$"]);
        send(&mut b, &["XREAD", "BLOCK", "0", "STREAMS", &k2, "$"]);
        wait_blocked(&mut c, 2);
        out.push(show(&c.cmd(&["XADD", &k2, "9-0", "z", "9"])));
        out.push(rec(&mut a));
        out.push(rec(&mut b));
        out
    });
}

#[test]
fn timeouts_multi_and_wrong_types_answer_as_redis() {
    same_on_both(|port| {
        let k0 = on_shard("t", 0);
        let (mut a, mut c) = (Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        let start = Instant::now();
        out.push(show(&a.cmd(&["XREAD", "BLOCK", "100", "STREAMS", &k0, "$"])));
        out.push(format!("waited {}", start.elapsed() >= Duration::from_millis(90)));
        // Inside MULTI a blocking read answers at once.
        out.push(show(&a.cmd(&["MULTI"])));
        out.push(show(&a.cmd(&["XREAD", "BLOCK", "0", "STREAMS", &k0, "$"])));
        out.push(show(&a.cmd(&["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", &k0, ">"])));
        out.push(show(&a.cmd(&["EXEC"])));
        // A wrong type blocks nothing: the read's error, or a wait.
        out.push(show(&c.cmd(&["SET", "str", "x"])));
        out.push(show(&a.cmd(&["XREAD", "BLOCK", "10", "STREAMS", "str", "$"])));
        // A history read never blocks.
        out.push(show(&c.cmd(&["XGROUP", "CREATE", &k0, "g", "$", "MKSTREAM"])));
        out.push(show(&a.cmd(&["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", &k0, "0"])));
        // CLIENT UNBLOCK ends a wait as a timeout.
        let id = show(&a.cmd(&["CLIENT", "ID"]));
        send(&mut a, &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", &k0, ">"]);
        wait_blocked(&mut c, 1);
        let id = id.trim_start_matches(':').trim_end_matches("\\r\\n").to_string();
        out.push(show(&c.cmd(&["CLIENT", "UNBLOCK", &id])));
        out.push(rec(&mut a));
        out
    });
}

#[test]
fn xreadgroup_serves_blocked_consumers_in_order() {
    same_on_both(|port| {
        let (k0, k1) = (on_shard("g", 0), on_shard("g", 1));
        let (mut a, mut b, mut c) = (Raw::connect(port), Raw::connect(port), Raw::connect(port));
        let mut out = Vec::new();
        out.push(show(&c.cmd(&["XGROUP", "CREATE", &k0, "grp", "$", "MKSTREAM"])));
        out.push(show(&c.cmd(&["XGROUP", "CREATE", &k1, "grp", "$", "MKSTREAM"])));
        send(
            &mut a,
            &["XREADGROUP", "GROUP", "grp", "alice", "BLOCK", "0", "STREAMS", &k0, &k1, ">", ">"],
        );
        wait_blocked(&mut c, 1);
        send(&mut b, &["XREADGROUP", "GROUP", "grp", "bob", "BLOCK", "0", "STREAMS", &k1, ">"]);
        wait_blocked(&mut c, 2);
        // One entry: alice (first to block) takes it; bob keeps waiting.
        out.push(show(&c.cmd(&["XADD", &k1, "1-0", "a", "1"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["XADD", &k1, "2-0", "b", "2"])));
        out.push(rec(&mut b));
        out.push(show(&c.cmd(&["XPENDING", &k1, "grp"])));
        // NOACK reads leave nothing pending.
        send(
            &mut a,
            &["XREADGROUP", "GROUP", "grp", "alice", "NOACK", "BLOCK", "0", "STREAMS", &k0, ">"],
        );
        wait_blocked(&mut c, 1);
        out.push(show(&c.cmd(&["XADD", &k0, "1-0", "c", "3"])));
        out.push(rec(&mut a));
        out.push(show(&c.cmd(&["XPENDING", &k0, "grp"])));
        out.push(show(&c.cmd(&["XINFO", "GROUPS", &k0])));
        out
    });
}

/// Many consumers blocked on one group's stream, a writer adding entries:
/// every entry is delivered exactly once, and all end up pending.
#[test]
fn a_group_read_by_many_blocked_clients_delivers_each_entry_once() {
    let b = Basalt::start(SHARDS);
    let port = b.port;
    let key = on_shard("q", 2);
    let mut c = Raw::connect(port);
    assert_eq!(show(&c.cmd(&["XGROUP", "CREATE", &key, "g", "$", "MKSTREAM"])), "+OK\\r\\n");
    const READERS: usize = 8;
    const ENTRIES: usize = 400;
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let key = key.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let name = format!("c{r}");
                let mut got = Vec::new();
                loop {
                    let reply = show(&c.cmd(&[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        &name,
                        "COUNT",
                        "3",
                        "BLOCK",
                        "300",
                        "STREAMS",
                        &key,
                        ">",
                    ]));
                    if reply.starts_with("*-1") {
                        return got;
                    }
                    for part in reply.split("\\r\\n") {
                        if part.contains("-0") && part.chars().all(|ch| ch.is_ascii_digit() || ch == '-') {
                            got.push(part.to_string());
                        }
                    }
                }
            })
        })
        .collect();
    wait_blocked(&mut c, READERS);
    for i in 1..=ENTRIES {
        let id = format!("{i}-0");
        assert_eq!(
            show(&c.cmd(&["XADD", &key, &id, "n", &i.to_string()])),
            format!("${}\\r\\n{id}\\r\\n", id.len())
        );
    }
    let mut all = Vec::new();
    for r in readers {
        all.extend(r.join().expect("reader"));
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), ENTRIES, "every entry delivered once: {} deliveries", all.len());
    assert_eq!(unique.len(), ENTRIES);
    let pending = show(&c.cmd(&["XPENDING", &key, "g"]));
    assert!(pending.starts_with(&format!("*4\\r\\n:{ENTRIES}\\r\\n")), "{pending}");
}
