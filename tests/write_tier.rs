//! The write tier prototype (`storage::wtier`, on with `BASALT_TIER`):
//! what it acknowledged survives kill -9, with the tier on again after the
//! restart and with it off (the log is written back, then dropped).

mod common;

use common::{show, Basalt, Raw};

/// The tests set BASALT_TIER for the servers they start: one at a time.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes a round of lone and pipelined SETs, HSETs, INCRs and DELs, and
/// returns what must be read back: (command, expected reply).
fn write_round(c: &mut Raw, round: usize) -> Vec<(Vec<String>, String)> {
    let mut expect = Vec::new();
    for i in 0..300 {
        let (k, v) = (format!("s:{round}:{i}"), format!("v{i}"));
        assert_eq!(c.cmd(&["SET", &k, &v]), b"+OK\r\n");
        expect.push((vec!["GET".to_string(), k], format!("${}\r\n{v}\r\n", v.len())));
    }
    let mut req = Vec::new();
    for i in 0..200 {
        req.extend(Raw::encode(&["HSET", &format!("h:{round}"), &format!("f{i}"), &format!("{i}")]));
    }
    c.send_bytes(&req);
    for _ in 0..200 {
        assert_eq!(c.reply(), b":1\r\n");
    }
    expect.push((vec!["HLEN".to_string(), format!("h:{round}")], ":200\r\n".to_string()));
    expect.push((
        vec!["HGET".to_string(), format!("h:{round}"), "f77".to_string()],
        "$2\r\n77\r\n".to_string(),
    ));
    for n in 1..=50 {
        assert_eq!(c.cmd(&["INCR", "counter"]), format!(":{}\r\n", round * 50 + n).as_bytes());
        // 1 MB values between them fill the test's 4 MB write buffers:
        // flushes persist the tier's marks, and later applies cut the log.
        if n % 10 == 0 {
            let big = format!("{round}{n}").repeat(1 << 18);
            assert_eq!(c.cmd(&["SET", &format!("big:{round}:{n}"), &big]), b"+OK\r\n");
            expect.push((
                vec!["STRLEN".to_string(), format!("big:{round}:{n}")],
                format!(":{}\r\n", big.len()),
            ));
        }
    }
    for i in (0..300).step_by(3) {
        let k = format!("s:{round}:{i}");
        assert_eq!(c.cmd(&["DEL", &k]), b":1\r\n");
        expect.retain(|(cmd, _)| cmd[1] != k);
        expect.push((vec!["EXISTS".to_string(), k], ":0\r\n".to_string()));
    }
    expect
}

fn check(c: &mut Raw, expect: &[(Vec<String>, String)], rounds: usize) {
    for (cmd, want) in expect {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "{cmd:?}");
    }
    let n = (rounds * 50).to_string();
    let want = if rounds == 0 {
        "$-1\r\n".to_string()
    } else {
        format!("${}\r\n{n}\r\n", n.len())
    };
    assert_eq!(show(&c.cmd(&["GET", "counter"])), show(want.as_bytes()));
}

#[test]
fn acknowledged_writes_survive_kill_9_with_the_write_tier() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut expect = Vec::new();
    for round in 0..4 {
        // Rounds 0-2 with the tier (a small one, so applies and log cuts
        // happen during the round), round 3 with it off: the last run's log
        // is written back at startup either way.
        if round < 3 {
            std::env::set_var("BASALT_TIER", "97");
        } else {
            std::env::remove_var("BASALT_TIER");
        }
        let mut b = Basalt::start_in(&dir, 1, &[]);
        let mut c = b.raw();
        check(&mut c, &expect, round);
        expect.extend(write_round(&mut c, round));
        check(&mut c, &expect, round + 1);
        b.signal_and_wait("-KILL");
    }
    std::env::remove_var("BASALT_TIER");
    let b = Basalt::start_in(&dir, 1, &[]);
    check(&mut b.raw(), &expect, 4);
}

/// Connected clients per shard, from INFO shards.
fn clients_per_shard(c: &mut Raw) -> Vec<u64> {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "shards"])).to_string();
    info.lines()
        .filter(|l| l.starts_with("shard"))
        .map(|l| {
            let n = l.split(',').find_map(|f| f.strip_prefix("connected_clients="));
            n.and_then(|n| n.trim().parse().ok()).expect("connected_clients")
        })
        .collect()
}

/// A connection served by shard 0 and one served by shard 1 (and the
/// others opened to find them, kept open so that the counts only grow).
fn conns_on_each_shard(b: &Basalt) -> (Raw, Raw, Vec<Raw>) {
    let (mut on, mut kept): ([Option<Raw>; 2], Vec<Raw>) = ([None, None], Vec::new());
    let mut before = vec![0, 0];
    for _ in 0..64 {
        let mut c = b.raw();
        let now = clients_per_shard(&mut c);
        let shard = (0..2).find(|&i| now[i] > before[i]).expect("a shard took the connection");
        before = now;
        if on[shard].is_none() {
            on[shard] = Some(c);
        } else {
            kept.push(c);
        }
        if let [Some(_), Some(_)] = &on {
            let [Some(a), Some(b)] = on else { unreachable!() };
            return (a, b, kept);
        }
    }
    panic!("64 connections, all on one shard");
}

/// Two shards with the tier on and no meta cache:
/// a GET of a key the other shard's tier holds must not read RocksDB
/// behind the owner's back (the held filter sends it to the owner);
/// transactions and cross-shard writes over both tiers survive kill -9
/// whole.
#[test]
fn two_shards_read_each_others_tiers_and_survive_kill_9() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let args = ["--meta-cache-size", "0"];
    let mut expect: Vec<(Vec<String>, String)> = Vec::new();
    for round in 0..3 {
        std::env::set_var("BASALT_TIER", "97");
        let mut b = Basalt::start_in(&dir, 2, &args);
        let (mut c, mut w, _kept) = conns_on_each_shard(&b);
        for (cmd, want) in &expect {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "after restart: {cmd:?}");
        }
        // Each SET (on shard 1's connection) read back at once on shard
        // 0's: half of the keys live on shard 1, many of them in its tier
        // only, and shard 0 reads them as a peer.
        for i in 0..400 {
            let (k, v) = (format!("k:{round}:{i}"), format!("v{round}.{i}"));
            assert_eq!(w.cmd(&["SET", &k, &v]), b"+OK\r\n");
            let want = format!("${}\r\n{v}\r\n", v.len());
            assert_eq!(show(&c.cmd(&["GET", &k])), show(want.as_bytes()), "{k}");
            if i % 5 == 0 {
                assert_eq!(w.cmd(&["DEL", &k]), b":1\r\n");
                assert_eq!(c.cmd(&["GET", &k]), b"$-1\r\n", "{k} deleted");
                expect.push((vec!["GET".into(), k], "$-1\r\n".into()));
            } else {
                expect.push((vec!["GET".into(), k], want));
            }
        }
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).to_string();
        assert!(info.contains("wtier_records:"), "{info}");
        // Cross-shard writes: MSET (intents), a transaction over both
        // shards, RENAME across shards.
        // Six keys: on both shards but for a 1-in-32 chance.
        let m: Vec<String> = (0..6).map(|i| format!("m:{round}:{i}")).collect();
        let mut mset = vec!["MSET"];
        for k in &m {
            mset.extend([k.as_str(), "1"]);
        }
        assert_eq!(c.cmd(&mset), b"+OK\r\n");
        // Written again through shard 1's tier (its keys): the transaction
        // below must stay newer than these across the crash.
        for k in &m {
            assert_eq!(w.cmd(&["SET", k, "1"]), b"+OK\r\n");
        }
        assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
        for k in &m {
            assert_eq!(c.cmd(&["INCR", k]), b"+QUEUED\r\n");
        }
        assert_eq!(c.cmd(&["EXEC"]), b"*6\r\n:2\r\n:2\r\n:2\r\n:2\r\n:2\r\n:2\r\n");
        let (from, to) = (format!("r:{round}:from"), format!("r:{round}:to"));
        assert_eq!(c.cmd(&["SET", &from, "moved"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["RENAME", &from, &to]), b"+OK\r\n");
        for k in m {
            expect.push((vec!["GET".into(), k], "$1\r\n2\r\n".into()));
        }
        expect.push((vec!["EXISTS".into(), from], ":0\r\n".into()));
        expect.push((vec!["GET".into(), to], "$5\r\nmoved\r\n".into()));
        for (cmd, want) in &expect {
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "{cmd:?}");
        }
        b.signal_and_wait("-KILL");
    }
    std::env::remove_var("BASALT_TIER");
    let b = Basalt::start_in(&dir, 2, &args);
    let mut c = b.raw();
    for (cmd, want) in &expect {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "tier off: {cmd:?}");
    }
}
