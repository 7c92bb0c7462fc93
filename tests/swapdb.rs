//! SWAPDB (issue 30): replies, errors and what follows a swap (every type,
//! TTLs, counts, FLUSHDB, MOVE, MULTI) against Debian's redis-server on 1
//! and 4 shards and in RESP3; blocked clients woken by a swap and watches
//! it spoils, with several clients; no reader ever sees one shard swapped
//! and another not; and after kill -9 in the middle of swaps, either both
//! databases are swapped on every shard or neither is.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{run_clients, run_resp3_script, run_scripts, Basalt, Rng};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "swapdb-replies",
        r#"
        SWAPDB 0
        SWAPDB 0 1 2
        SWAPDB x 0
        SWAPDB 0 x
        SWAPDB 0 1.5
        SWAPDB 99999999999 0
        SWAPDB 0 -1
        SWAPDB 0 16
        SWAPDB 16 0
        SWAPDB 0 0
        SWAPDB 1 1
        SWAPDB 15 0
        SWAPDB 15 0
        "#,
    ),
    (
        "swapdb-moves-every-type",
        r#"
        SET s v0
        HSET h f v
        SADD set a b c
        RPUSH l 1 2 3
        SET {t}a 1
        SET {t}b 2
        SELECT 1
        SET s v1
        SET only1 x
        SWAPDB 0 1
        GET s
        HGETALL h
        ~SMEMBERS set
        LRANGE l 0 -1
        MGET {t}a {t}b
        EXISTS only1
        DBSIZE
        SELECT 0
        GET s
        GET only1
        DBSIZE
        EXISTS h set l
        ~KEYS *
        SELECT 1
        ~KEYS *
        SWAPDB 1 0
        ~KEYS *
        DBSIZE
        "#,
    ),
    (
        "swapdb-then-write-flush-move",
        r#"
        SET a 1
        SELECT 2
        SET b 2
        SWAPDB 2 0
        SET c 3
        ~KEYS *
        SELECT 0
        ~KEYS *
        MOVE b 2
        SELECT 2
        ~KEYS *
        FLUSHDB
        SELECT 0
        ~KEYS *
        SWAPDB 0 2
        ~KEYS *
        DBSIZE
        FLUSHALL
        DBSIZE
        "#,
    ),
    (
        "swapdb-ttls-follow",
        r#"
        SET a 1 EX 100
        HSET h f v
        SWAPDB 0 3
        TTL a
        EXISTS h
        SELECT 3
        TTL a
        PERSIST a
        TTL a
        HGET h f
        SET short 1 PX 30
        SWAPDB 3 4
        "#,
    ),
    (
        "swapdb-in-multi",
        r#"
        SET a 1
        MULTI
        SET b 2
        SWAPDB 0 1
        GET a
        SET c 3
        SWAPDB 0 x
        EXEC
        ~KEYS *
        SELECT 1
        ~KEYS *
        "#,
    ),
];

#[test]
fn swapdb_scripts_match_redis_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn swapdb_scripts_match_redis_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn swapdb_scripts_match_redis_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 4);
    }
}

/// Redis's "SWAPDB awakes blocked client", watches SWAPDB spoils and the
/// ones it does not (7.0's `touchAllWatchedKeysInDb`: keys that exist in
/// either db), with several clients.
const CLIENTS: &str = r#"
    A: SELECT 9
    B: SELECT 10
    B: RPUSH k x
    A> BLPOP k 0
    SLEEP 50
    B: SWAPDB 9 10
    A<
    A: BLPOP {k}a {k}b 0.05
    A> BLMOVE {k}a {k}b LEFT RIGHT 0
    SLEEP 50
    B: RPUSH {k}a y
    SLEEP 20
    B: SWAPDB 10 9
    A<
    A: SELECT 10
    A: LRANGE {k}b 0 -1
    C: SET w 1
    C: WATCH w
    D: SWAPDB 0 5
    C: MULTI
    C: PING
    C: EXEC
    C: WATCH nothere
    D: SWAPDB 0 5
    C: MULTI
    C: PING
    C: EXEC
    C: WATCH nothere
    D: SWAPDB 0 5
    D: SET nothere 1
    C: MULTI
    C: PING
    C: EXEC
    C: SELECT 6
    C: WATCH gone
    D: SELECT 7
    D: SET gone 1
    D: SWAPDB 6 7
    C: MULTI
    C: GET gone
    C: EXEC
    A: SELECT 0
    A> BLPOP stays 0
    SLEEP 30
    D: SELECT 12
    D: RPUSH other 1
    D: SWAPDB 0 12
    SLEEP 30
    D: SELECT 0
    D: RPUSH stays late
    A<
"#;

#[test]
fn swapdb_wakes_blocked_clients_and_spoils_watches() {
    for shards in [1, 4] {
        run_clients("swapdb-clients", CLIENTS, shards, false);
    }
    run_clients("swapdb-clients", CLIENTS, 4, true);
}

/// Keys on every shard of a 4-shard server (names chosen to spread).
fn spread_keys() -> Vec<String> {
    (0..32).map(|i| format!("k{i}")).collect()
}

fn fill(b: &Basalt) {
    let mut c = b.client();
    for (db, v) in [(0, "zero"), (1, "one")] {
        redis::cmd("SELECT").arg(db).query::<()>(&mut c).expect("SELECT");
        for k in spread_keys() {
            redis::cmd("SET").arg(&k).arg(v).query::<()>(&mut c).expect("SET");
        }
    }
}

/// Every key of db 0 holds the same value, db 1 the other one, and the
/// counts say 32 each: `Some(value of db 0)`.
fn check_whole(c: &mut redis::Connection, what: &str) -> String {
    let keys = spread_keys();
    let mut seen = Vec::new();
    for db in [0, 1] {
        redis::cmd("SELECT").arg(db).query::<()>(c).expect("SELECT");
        let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(c).expect("MGET");
        assert!(
            values.iter().all(|v| v.is_some() && v == &values[0]),
            "{what}: db {db} is torn: {values:?}"
        );
        let n: i64 = redis::cmd("DBSIZE").query(c).expect("DBSIZE");
        assert_eq!(n, 32, "{what}: DBSIZE of db {db}");
        seen.push(values[0].clone().unwrap_or_default());
    }
    assert_ne!(seen[0], seen[1], "{what}: both dbs hold {:?}", seen[0]);
    seen.swap_remove(0)
}

#[test]
fn no_reader_sees_a_swap_half_done() {
    let b = Basalt::start(4);
    fill(&b);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (port, stop) = (b.port, stop.clone());
        std::thread::spawn(move || {
            let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .and_then(|c| c.get_connection())
                .expect("client");
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                redis::cmd("SWAPDB").arg(0).arg(1).query::<()>(&mut c).expect("SWAPDB");
                n += 1;
            }
            n
        })
    };
    let mut c = b.client();
    for i in 0..300 {
        // One MGET over every shard, db 0 only: all the same value.
        let values: Vec<Option<String>> = redis::cmd("MGET").arg(spread_keys()).query(&mut c).expect("MGET");
        assert!(values.iter().all(|v| v.is_some() && v == &values[0]), "read {i}: {values:?}");
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 10, "only {swaps} swaps ran beside the reads");
    let first = check_whole(&mut c, "after the swaps");
    assert_eq!(first == "zero", swaps % 2 == 0, "{swaps} swaps leave db 0 with {first}");
}

#[test]
fn swapdb_is_whole_after_kill_9() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut rng = Rng(0x5a4d_b0b0_1234_5678);
    {
        let b = Basalt::start_in(dir, 4, &[]);
        fill(&b);
    }
    let mut last = "zero".to_string();
    let mut changed = 0;
    for cycle in 0..10 {
        let mut b = Basalt::start_in(dir, 4, &[]);
        let mut c = b.client();
        let now = check_whole(&mut c, &format!("cycle {cycle}"));
        changed += (now != last) as usize;
        last = now;
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (port, stop) = (b.port, stop.clone());
            std::thread::spawn(move || {
                let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()) else {
                    return;
                };
                while !stop.load(Ordering::Relaxed) {
                    if redis::cmd("SWAPDB").arg(0).arg(1).query::<()>(&mut c).is_err() {
                        return;
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(50 + rng.below(300) as u64));
        b.signal_and_wait("-KILL");
        stop.store(true, Ordering::Relaxed);
        swapper.join().expect("swapper");
    }
    let b = Basalt::start_in(dir, 4, &[]);
    let mut c = b.client();
    let now = check_whole(&mut c, "at the end");
    changed += (now != last) as usize;
    // Swaps ran in every cycle; both outcomes are whole, and the data dir
    // was seen in both states across the restarts at least once.
    assert!(changed > 0, "no swap survived any restart");
    // A swap after restarts still swaps every shard.
    redis::cmd("SWAPDB").arg(0).arg(1).query::<()>(&mut c).expect("SWAPDB");
    let after = check_whole(&mut c, "after one more swap");
    assert_ne!(after, now);
}
