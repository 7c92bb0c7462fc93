//! Issue 31 item 4: space comes back. A set, a hash and a list of a
//! million members each, deleted, expired and overwritten by another type,
//! give their disk space back after COMPACT: RocksDB's live SST bytes
//! return to within 20% of what they were before the collections came.

mod common;

use std::time::{Duration, Instant};

use common::Basalt;

fn live_sst_bytes(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("persistence").query(c).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("rocksdb_live_sst_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("rocksdb_live_sst_bytes")
}

fn compact(c: &mut redis::Connection) {
    let _: () = redis::cmd("COMPACT").query(c).expect("COMPACT");
}

/// Adds `n` members to `key` with `cmd` (SADD, HSET pairs, RPUSH), a
/// thousand a command.
fn fill(c: &mut redis::Connection, cmd: &str, key: &str, n: usize) {
    let mut pipe = redis::pipe();
    for chunk in 0..n / 1000 {
        let mut one = redis::cmd(cmd);
        one.arg(key);
        for i in chunk * 1000..(chunk + 1) * 1000 {
            let m = format!("member:{i:08}");
            one.arg(&m);
            if cmd == "HSET" {
                one.arg(i);
            }
        }
        pipe.add_command(one).ignore();
        if chunk % 50 == 49 {
            let _: () = pipe.query(c).expect("fill");
            pipe = redis::pipe();
        }
    }
    let _: () = pipe.query(c).expect("fill");
}

#[test]
fn deleted_expired_and_overwritten_collections_give_their_space_back() {
    const N: usize = 1_000_000;
    let b = Basalt::start(2);
    let mut c = b.client();
    // Data that stays: 100k small strings.
    let mut pipe = redis::pipe();
    for i in 0..100_000 {
        pipe.cmd("SET").arg(format!("keep:{i}")).arg(format!("value-{i:06}")).ignore();
    }
    let _: () = pipe.query(&mut c).expect("SET");
    compact(&mut c);
    let before = live_sst_bytes(&mut c);
    assert!(before > 500_000, "{before}");

    fill(&mut c, "SADD", "big:set", N);
    fill(&mut c, "HSET", "big:hash", N);
    fill(&mut c, "RPUSH", "big:list", N);
    compact(&mut c);
    let full = live_sst_bytes(&mut c);
    assert!(full > before + 5_000_000, "a million members each take room: {before} -> {full}");
    let len: i64 = redis::cmd("SCARD").arg("big:set").query(&mut c).expect("SCARD");
    assert_eq!(len, N as i64);

    // Deleted, expired, overwritten by another type.
    let _: i64 = redis::cmd("DEL").arg("big:set").query(&mut c).expect("DEL");
    let _: i64 = redis::cmd("PEXPIRE").arg("big:hash").arg(1).query(&mut c).expect("PEXPIRE");
    let _: () = redis::cmd("SET").arg("big:list").arg("now a string").query(&mut c).expect("SET");
    let start = Instant::now();
    loop {
        let n: i64 = redis::cmd("DBSIZE").query(&mut c).expect("DBSIZE");
        if n == 100_001 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the hash did not expire: DBSIZE {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
    compact(&mut c);
    let after = live_sst_bytes(&mut c);
    eprintln!("live SST bytes: {before} before, {full} with the collections, {after} after COMPACT");
    assert!(
        after <= before + before / 5,
        "live SST bytes {before} before, {full} with the collections, {after} after COMPACT"
    );
    // The data that stayed is whole.
    let v: String = redis::cmd("GET").arg("keep:99999").query(&mut c).expect("GET");
    assert_eq!(v, "value-099999");
    let v: String = redis::cmd("GET").arg("big:list").query(&mut c).expect("GET");
    assert_eq!(v, "now a string");
    let n: i64 = redis::cmd("EXISTS").arg("big:hash").arg("big:set").query(&mut c).expect("EXISTS");
    assert_eq!(n, 0);
}

#[test]
fn compact_and_debug_compact() {
    let b = Basalt::start_with(1, &["--enable-debug-command", "yes"]);
    let mut c = b.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).expect("SET");
    compact(&mut c);
    let _: () = redis::cmd("DEBUG").arg("COMPACT").query(&mut c).expect("DEBUG COMPACT");
    let v: String = redis::cmd("GET").arg("k").query(&mut c).expect("GET");
    assert_eq!(v, "v");
    let e = redis::cmd("COMPACT").arg("x").query::<()>(&mut c).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments for 'compact' command"), "{e}");
    let e = redis::cmd("DEBUG").arg("COMPACT").arg("x").query::<()>(&mut c).unwrap_err();
    assert!(e.to_string().contains("unknown subcommand 'COMPACT'. Try DEBUG HELP."), "{e}");
    // DEBUG needs enable-debug-command; COMPACT does not.
    let b = Basalt::start(1);
    let mut c = b.client();
    compact(&mut c);
    assert!(redis::cmd("DEBUG").arg("COMPACT").query::<()>(&mut c).is_err());
}
