//! An idle shard writes its write tier back to RocksDB
//! (`write-tier-idle-drain`, on by default): the tier empties once the
//! writes stop, every value reads back the same before and after, and
//! across kill -9; `CONFIG SET write-tier-idle-drain no` keeps the
//! records in the tier.

mod common;

use std::time::{Duration, Instant};

use common::{show, Basalt, Raw};

/// Strings, hashes, lists, sorted sets and counters over both shards, a
/// part of them overwritten and deleted; what each key reads back as.
fn fill(c: &mut redis::Connection, round: usize) -> Vec<(Vec<String>, String)> {
    let mut p = redis::pipe();
    let mut want = Vec::new();
    for i in 0..4000 {
        p.cmd("SET").arg(format!("s:{round}:{i}")).arg(format!("v{i}")).ignore();
    }
    for i in (0..4000).step_by(5) {
        p.cmd("SET").arg(format!("s:{round}:{i}")).arg("again").ignore();
    }
    for i in (0..4000).step_by(7) {
        p.cmd("DEL").arg(format!("s:{round}:{i}")).ignore();
    }
    for i in 0..4000 {
        let k = format!("s:{round}:{i}");
        let v = match () {
            _ if i % 7 == 0 => None,
            _ if i % 5 == 0 => Some("again".to_string()),
            _ => Some(format!("v{i}")),
        };
        let reply = v.map_or("$-1\r\n".to_string(), |v| format!("${}\r\n{v}\r\n", v.len()));
        want.push((vec!["GET".to_string(), k], reply));
    }
    for h in 0..20 {
        for f in 0..100 {
            p.cmd("HSET").arg(format!("h:{round}:{h}")).arg(format!("f{f}")).arg(f).ignore();
            p.cmd("RPUSH").arg(format!("l:{round}:{h}")).arg(f).ignore();
            p.cmd("ZADD").arg(format!("z:{round}:{h}")).arg(f).arg(format!("m{f}")).ignore();
            p.cmd("INCR").arg(format!("n:{round}:{h}")).ignore();
        }
        let k = |t: &str| format!("{t}:{round}:{h}");
        want.push((vec!["HLEN".into(), k("h")], ":100\r\n".into()));
        want.push((vec!["HGET".into(), k("h"), "f42".into()], "$2\r\n42\r\n".into()));
        want.push((vec!["LINDEX".into(), k("l"), "-1".into()], "$2\r\n99\r\n".into()));
        want.push((vec!["LLEN".into(), k("l")], ":100\r\n".into()));
        want.push((vec!["ZSCORE".into(), k("z"), "m17".into()], "$2\r\n17\r\n".into()));
        want.push((vec!["ZCARD".into(), k("z")], ":100\r\n".into()));
        want.push((vec!["GET".into(), k("n")], "$3\r\n100\r\n".into()));
    }
    p.query::<()>(c).expect("fill");
    want
}

fn check(c: &mut Raw, want: &[(Vec<String>, String)], when: &str) {
    for (cmd, reply) in want {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert_eq!(show(&c.cmd(&args)), show(reply.as_bytes()), "{when}: {cmd:?}");
    }
}

/// The records the tier holds once it has been left alone for a while
/// (INFO every 200 ms: an idle shard is one that received nothing for
/// 10 ms), or as soon as it holds none.
fn settled(c: &mut Raw, within: Duration) -> u64 {
    let end = Instant::now() + within;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let held = c.info_u64("memory", "wtier_records");
        if held == 0 || Instant::now() > end {
            return held;
        }
    }
}

#[test]
fn an_idle_shard_writes_its_tier_back_and_loses_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut b = Basalt::start_in(&dir, 2, &[]);
    let mut c = b.raw();
    let mut want = fill(&mut b.client(), 0);
    assert!(c.info_u64("memory", "wtier_records") > 1000, "the writes wait in the tier first");
    check(&mut c, &want, "in the tier");
    assert_eq!(settled(&mut c, Duration::from_secs(20)), 0, "written back while idle");
    check(&mut c, &want, "written back");

    // Off: the next round's records stay in the tier.
    assert_eq!(c.cmd(&["CONFIG", "SET", "write-tier-idle-drain", "no"]), b"+OK\r\n");
    assert_eq!(
        show(&c.cmd(&["CONFIG", "GET", "write-tier-idle-drain"])),
        show(b"*2\r\n$21\r\nwrite-tier-idle-drain\r\n$2\r\nno\r\n")
    );
    want.extend(fill(&mut b.client(), 1));
    let held = settled(&mut c, Duration::from_secs(1));
    assert!(held > 1000, "kept in the tier while off: {held}");
    check(&mut c, &want, "held while off");

    // On again: written back; then a third round, killed while idle (its
    // write-back under way or done): the restart reads everything back.
    assert_eq!(c.cmd(&["CONFIG", "SET", "write-tier-idle-drain", "yes"]), b"+OK\r\n");
    assert_eq!(settled(&mut c, Duration::from_secs(20)), 0, "written back once on again");
    want.extend(fill(&mut b.client(), 2));
    std::thread::sleep(Duration::from_millis(30));
    b.signal_and_wait("-KILL");
    let b = Basalt::start_in(&dir, 2, &[]);
    let mut c = b.raw();
    check(&mut c, &want, "after kill -9");
    assert_eq!(settled(&mut c, Duration::from_secs(20)), 0, "the replayed records written back too");
    check(&mut c, &want, "after kill -9, written back");
}
