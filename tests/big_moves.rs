//! Issue 31 item 3: RENAME, COPY and MOVE of a big collection go in slices
//! (`coord::bigmove`): the whole value arrives, TTLs and field TTLs with
//! it, a write to the source during the move is never lost, and a client
//! PINGing meanwhile is not stalled (bounded loosely here; perf/ has the
//! figures).

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::Basalt;

/// The PING-latency test runs alone: the others take this shared, it takes
/// it exclusively, so no other test's two-shard server competes for the
/// machine's cores while it measures (CI failed it at max 193 ms while
/// `big_renames_are_whole_after_kill_9` ran beside it; alone it sees
/// 6-55 ms here).
static CORES: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    CORES.read().unwrap_or_else(|e| e.into_inner())
}

/// `n` members added to `key` with `cmd` (SADD, HSET pairs, RPUSH).
fn fill(c: &mut redis::Connection, cmd: &str, key: &str, n: usize) {
    let mut pipe = redis::pipe();
    for chunk in 0..n.div_ceil(1000) {
        let mut one = redis::cmd(cmd);
        one.arg(key);
        for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
            one.arg(format!("m{i}"));
            if cmd == "HSET" {
                one.arg(i);
            }
        }
        pipe.add_command(one).ignore();
    }
    let _: () = pipe.query(c).expect("fill");
}

fn int(c: &mut redis::Connection, args: &[&str]) -> i64 {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn big_collections_move_whole() {
    let _cores = shared();
    for shards in [1, 3] {
        let b = Basalt::start(shards);
        let mut c = b.client();
        const N: usize = 20_000;
        fill(&mut c, "SADD", "set", N);
        fill(&mut c, "HSET", "hash", N);
        fill(&mut c, "RPUSH", "list", N);
        let _: () = redis::cmd("SET")
            .arg("big-string")
            .arg(vec![b'x'; 3 << 20])
            .query(&mut c)
            .expect("SET");
        int(&mut c, &["EXPIRE", "set", "1000"]);
        let r: Vec<i64> = redis::cmd("HEXPIRE")
            .arg("hash")
            .arg(1000)
            .arg("FIELDS")
            .arg(2)
            .arg("m1")
            .arg("m2")
            .query(&mut c)
            .expect("HEXPIRE");
        assert_eq!(r, vec![1, 1]);
        // Across shards (mostly) and on one: names with and without a tag.
        for (from, to) in [
            ("set", "set2"),
            ("set2", "{set2}x"),
            ("hash", "hash2"),
            ("list", "{list}2"),
            ("big-string", "bs2"),
        ] {
            let _: () = redis::cmd("RENAME").arg(from).arg(to).query(&mut c).expect("RENAME");
            assert_eq!(int(&mut c, &["EXISTS", from]), 0, "{from}");
        }
        assert_eq!(int(&mut c, &["SCARD", "{set2}x"]), N as i64);
        assert!(int(&mut c, &["TTL", "{set2}x"]) > 990, "the TTL comes along");
        assert_eq!(int(&mut c, &["SISMEMBER", "{set2}x", "m19999"]), 1);
        assert_eq!(int(&mut c, &["HLEN", "hash2"]), N as i64);
        let ttls: Vec<i64> = redis::cmd("HTTL")
            .arg("hash2")
            .arg("FIELDS")
            .arg(2)
            .arg("m1")
            .arg("m3")
            .query(&mut c)
            .expect("HTTL");
        assert!(ttls[0] > 990 && ttls[1] == -1, "{ttls:?}");
        let v: String = redis::cmd("HGET").arg("hash2").arg("m777").query(&mut c).expect("HGET");
        assert_eq!(v, "777");
        assert_eq!(int(&mut c, &["LLEN", "{list}2"]), N as i64);
        let v: Vec<String> = redis::cmd("LRANGE").arg("{list}2").arg(0).arg(2).query(&mut c).expect("LRANGE");
        assert_eq!(v, ["m0", "m1", "m2"]);
        let v: String = redis::cmd("LINDEX").arg("{list}2").arg(-1).query(&mut c).expect("LINDEX");
        assert_eq!(v, format!("m{}", N - 1));
        assert_eq!(int(&mut c, &["STRLEN", "bs2"]), 3 << 20);
        // RENAMENX and COPY without REPLACE refuse an existing destination.
        assert_eq!(int(&mut c, &["RENAMENX", "hash2", "bs2"]), 0);
        assert_eq!(int(&mut c, &["COPY", "hash2", "bs2"]), 0);
        assert_eq!(int(&mut c, &["HLEN", "hash2"]), N as i64);
        // COPY (REPLACE, DB), and MOVE.
        assert_eq!(int(&mut c, &["COPY", "hash2", "bs2", "REPLACE"]), 1);
        assert_eq!(int(&mut c, &["HLEN", "bs2"]), N as i64);
        assert_eq!(int(&mut c, &["COPY", "{list}2", "l3", "DB", "2"]), 1);
        assert_eq!(int(&mut c, &["MOVE", "{set2}x", "3"]), 1);
        assert_eq!(int(&mut c, &["MOVE", "hash2", "2"]), 1);
        assert_eq!(int(&mut c, &["EXISTS", "{set2}x", "hash2"]), 0);
        assert_eq!(int(&mut c, &["DBSIZE"]), 2, "{{list}}2 and bs2");
        let _: () = redis::cmd("SELECT").arg(2).query(&mut c).expect("SELECT");
        assert_eq!(int(&mut c, &["LLEN", "l3"]), N as i64);
        assert_eq!(int(&mut c, &["HLEN", "hash2"]), N as i64);
        // MOVE refuses a key the target db has.
        let _: () = redis::cmd("SELECT").arg(0).query(&mut c).expect("SELECT");
        assert_eq!(int(&mut c, &["COPY", "bs2", "hash2"]), 1);
        assert_eq!(int(&mut c, &["MOVE", "hash2", "2"]), 0);
        assert_eq!(int(&mut c, &["HLEN", "hash2"]), N as i64);
        let _: () = redis::cmd("SELECT").arg(3).query(&mut c).expect("SELECT");
        assert_eq!(int(&mut c, &["SCARD", "{set2}x"]), N as i64);
        assert!(int(&mut c, &["TTL", "{set2}x"]) > 990);
        // Counts stay exact through it all.
        let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).expect("INFO");
        assert!(info.contains("db0:keys=3,expires=0,"), "{info}");
        assert!(info.contains("db2:keys=2,expires=0,"), "{info}");
        assert!(info.contains("db3:keys=1,expires=1,"), "{info}");
    }
}

#[test]
fn writes_to_the_source_during_a_big_rename_are_never_lost() {
    let _cores = shared();
    let b = Basalt::start(2);
    let mut c = b.client();
    const N: usize = 200_000;
    fill(&mut c, "SADD", "src", N);
    let port = b.port;
    let writer = std::thread::spawn(move || {
        let mut w = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("client");
        for i in 0..2000 {
            let _: i64 = redis::cmd("SADD").arg("src").arg(format!("late{i}")).query(&mut w).expect("SADD");
        }
    });
    std::thread::sleep(Duration::from_millis(5));
    let _: () = redis::cmd("RENAME").arg("src").arg("dst").query(&mut c).expect("RENAME");
    writer.join().expect("writer");
    let dst: HashSet<String> = redis::cmd("SMEMBERS").arg("dst").query(&mut c).expect("SMEMBERS");
    let src: HashSet<String> = redis::cmd("SMEMBERS").arg("src").query(&mut c).expect("SMEMBERS");
    assert!(dst.len() >= N, "{}", dst.len());
    for i in 0..2000 {
        let m = format!("late{i}");
        assert!(dst.contains(&m) ^ src.contains(&m), "{m} lost or in both");
    }
    assert_eq!(dst.len() + src.len(), N + 2000);
}

/// PING latencies (µs) on every connection while `busy` runs.
fn pings_while(port: u16, conns: usize, busy: impl FnOnce()) -> Vec<u64> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pingers: Vec<_> = (0..conns)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut p = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .and_then(|c| c.get_connection())
                    .expect("client");
                let mut lat = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = Instant::now();
                    let _: String = redis::cmd("PING").query(&mut p).expect("PING");
                    lat.push(t.elapsed().as_micros() as u64);
                    std::thread::sleep(Duration::from_micros(200));
                }
                lat
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    busy();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut all: Vec<u64> = pingers.into_iter().flat_map(|p| p.join().expect("pinger")).collect();
    all.sort_unstable();
    all
}

#[test]
fn a_million_member_rename_across_shards_does_not_stall_pings() {
    let _cores = CORES.write().unwrap_or_else(|e| e.into_inner());
    let b = Basalt::start(2);
    let mut c = b.client();
    const N: usize = 1_000_000;
    fill(&mut c, "SADD", "big", N);
    let mut took = Duration::ZERO;
    // Two PING connections: the shards take connections in turn, so both
    // the source's and the destination's owner serve one.
    let lat = pings_while(b.port, 2, || {
        let t = Instant::now();
        let _: () = redis::cmd("RENAME").arg("big").arg("moved").query(&mut c).expect("RENAME");
        took = t.elapsed();
    });
    assert_eq!(int(&mut c, &["SCARD", "moved"]), N as i64);
    let p99 = lat[lat.len() * 99 / 100];
    let max = lat[lat.len() - 1];
    eprintln!(
        "RENAME of {N} members took {took:?}; {} PINGs meanwhile, p99 {p99} µs, max {max} µs",
        lat.len()
    );
    // Loose: the exact figures come from perf runs. The one-step path
    // stalled a core for the whole copy: one PING waited 559 ms (this
    // test before bigmove; here max 10 ms, p99 1.6 ms).
    assert!(p99 < 20_000, "PING p99 {p99} µs, max {max} µs during a {took:?} RENAME");
    assert!(max < 150_000, "PING p99 {p99} µs, max {max} µs during a {took:?} RENAME");
}

/// A big set renamed around names on both shards, the server killed with
/// SIGKILL at random moments: after each restart it is under exactly one
/// name, whole, and DBSIZE counts one key.
#[test]
fn big_renames_are_whole_after_kill_9() {
    let _cores = shared();
    const N: usize = 5_000;
    let tmp = tempfile::tempdir().expect("tempdir");
    let names: Vec<String> = (0..6).map(|i| format!("big:{i}")).collect();
    {
        let b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.client();
        fill(&mut c, "SADD", &names[0], N);
    }
    let mut rng = common::Rng(0xB16_5E7);
    for cycle in 0..8 {
        let mut b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.client();
        let present: Vec<&String> = names.iter().filter(|n| int(&mut c, &["EXISTS", n]) == 1).collect();
        assert_eq!(present.len(), 1, "cycle {cycle}: the set is under {present:?}");
        assert_eq!(int(&mut c, &["SCARD", present[0]]), N as i64, "cycle {cycle}");
        assert_eq!(int(&mut c, &["DBSIZE"]), 1, "cycle {cycle}");
        let mut at = names.iter().position(|n| n == present[0]).expect("a name");
        let port = b.port;
        let names2 = names.clone();
        let renamer = std::thread::spawn(move || {
            let Ok(mut w) = redis::Client::open(format!("redis://127.0.0.1:{port}/")).and_then(|c| c.get_connection()) else {
                return;
            };
            loop {
                let next = (at + 1) % names2.len();
                if redis::cmd("RENAME")
                    .arg(&names2[at])
                    .arg(&names2[next])
                    .query::<()>(&mut w)
                    .is_err()
                {
                    return;
                }
                at = next;
            }
        });
        std::thread::sleep(Duration::from_millis(50 + rng.below(300) as u64));
        b.signal_and_wait("-KILL");
        renamer.join().expect("renamer");
    }
}

/// SCAN over expired keys not yet reclaimed, or with a MATCH nothing
/// passes, does a bounded step per call; KEYS (taken in steps) still
/// returns every key.
#[test]
fn scans_over_dead_or_unmatched_keys_are_bounded() {
    let _cores = shared();
    let b = Basalt::start_with(2, &["--enable-debug-command", "yes"]);
    let mut c = b.client();
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut c).expect("DEBUG");
    let mut pipe = redis::pipe();
    for i in 0..50_000 {
        pipe.cmd("SET").arg(format!("dead:{i}")).arg("v").arg("PX").arg(1).ignore();
    }
    for i in 0..20_000 {
        pipe.cmd("SET").arg(format!("live:{i}")).arg("v").ignore();
    }
    let _: () = pipe.query(&mut c).expect("pipeline");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(int(&mut c, &["DBSIZE"]), 70_000, "nothing reclaimed yet");
    for args in [&["MATCH", "nothing-matches*", "COUNT", "10"][..], &["COUNT", "10"][..]] {
        let mut cursor = "0".to_string();
        let (mut calls, mut seen) = (0, HashSet::new());
        loop {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(&cursor).arg(args);
            let (next, keys): (String, Vec<String>) = cmd.query(&mut c).expect("SCAN");
            calls += 1;
            seen.extend(keys);
            if next == "0" {
                break;
            }
            cursor = next;
        }
        // COUNT 10 over 70k records: many short calls, not one long one.
        assert!(calls > 1000, "{args:?}: {calls} calls");
        let live = if args[0] == "MATCH" { 0 } else { 20_000 };
        assert_eq!(seen.len(), live, "{args:?}");
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("live:1*").query(&mut c).expect("KEYS");
    assert_eq!(keys.len(), 11_111);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).expect("KEYS");
    assert_eq!(keys.len(), 20_000);
}
