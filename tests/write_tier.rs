//! The write tier (`storage::wtier`, on by default; `BASALT_TIER` caps a
//! generation's records): what it acknowledged survives kill -9, with the
//! tier on again after the restart and with it off (`write-tier-memory 0`:
//! the log is written back, then dropped).

mod common;

use common::{show, Basalt, Raw, RedisServer};

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
        let off: &[&str] = if round < 3 { &[] } else { &["--write-tier-memory", "0"] };
        let mut b = Basalt::start_in(&dir, 1, off);
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
        let shard = (0..2)
            .find(|&i| now[i] > before[i])
            .unwrap_or_else(|| panic!("a shard took the connection: {before:?} -> {now:?}"));
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

/// Two shards with the tier and the meta cache on (the default): a peer
/// answers a GET from the owner's cache even while the owner's tier holds
/// the key, so every write, delete, type change and drain must leave the
/// cached entry current. Hot keys are written on shard 1's connection and
/// read at once on shard 0's (GET, MGET, EXISTS, TYPE), with filler writes
/// between them so generations drain while the hot keys stay in dirty.
#[test]
fn peers_read_hot_keys_the_owners_tier_holds_through_its_cache() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("BASALT_TIER", "97");
    let b = Basalt::start(2);
    std::env::remove_var("BASALT_TIER");
    let (mut c, mut w, _kept) = conns_on_each_shard(&b);
    let hot: Vec<String> = (0..16).map(|i| format!("hot:{i}")).collect();
    // What each hot key holds: a string, nothing, or a hash.
    let mut model: Vec<Option<Option<String>>> = vec![Some(None); hot.len()];
    let bulk = |v: &str| format!("${}\r\n{v}\r\n", v.len());
    for i in 0..3000usize {
        let n = i % hot.len();
        let k = hot[n].as_str();
        match i % 23 {
            5 => {
                let had = model[n] != Some(None);
                assert_eq!(w.cmd(&["DEL", k]), format!(":{}\r\n", had as u8).as_bytes(), "{k}");
                model[n] = Some(None);
            }
            11 => {
                assert_eq!(w.cmd(&["DEL", k]).len(), 4);
                assert_eq!(w.cmd(&["HSET", k, "f", "v"]), b":1\r\n");
                model[n] = None;
            }
            17 => {
                assert_eq!(w.cmd(&["SET", k, "41"]), b"+OK\r\n");
                assert_eq!(w.cmd(&["INCR", k]), b":42\r\n");
                model[n] = Some(Some("42".into()));
            }
            _ => {
                let v = format!("v{i}");
                assert_eq!(w.cmd(&["SET", k, &v]), b"+OK\r\n");
                model[n] = Some(Some(v));
            }
        }
        if i % 3 == 0 {
            let f = format!("filler:{i}");
            assert_eq!(w.cmd(&["SET", &f, "x"]), b"+OK\r\n");
        }
        let want = match &model[n] {
            Some(Some(v)) => bulk(v),
            Some(None) => "$-1\r\n".to_string(),
            None => "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n".to_string(),
        };
        assert_eq!(show(&c.cmd(&["GET", k])), show(want.as_bytes()), "GET {k} after step {i}");
        let kind = match &model[n] {
            Some(Some(_)) => "+string\r\n",
            Some(None) => "+none\r\n",
            None => "+hash\r\n",
        };
        assert_eq!(show(&c.cmd(&["TYPE", k])), show(kind.as_bytes()), "TYPE {k} after step {i}");
        if i % 50 == 49 {
            let mut req = vec!["MGET"];
            req.extend(hot.iter().map(String::as_str));
            let mut want = format!("*{}\r\n", hot.len());
            for m in &model {
                match m {
                    Some(Some(v)) => want.push_str(&bulk(v)),
                    _ => want.push_str("$-1\r\n"),
                }
            }
            assert_eq!(show(&c.cmd(&req)), show(want.as_bytes()), "MGET after step {i}");
            let live = model.iter().filter(|m| **m != Some(None)).count();
            let mut ex = vec!["EXISTS"];
            ex.extend(hot.iter().map(String::as_str));
            assert_eq!(c.cmd(&ex), format!(":{live}\r\n").as_bytes(), "EXISTS after step {i}");
        }
    }
}

/// Every type's writes, a cross-shard MSET and a transaction over
/// several shards: (command, expected reply) to read back.
fn typed_round(c: &mut Raw, round: usize) -> Vec<(Vec<String>, String)> {
    let mut expect: Vec<(Vec<String>, String)> = Vec::new();
    let mut want = |cmd: &[&str], reply: &str| expect.push((cmd.iter().map(|s| s.to_string()).collect(), reply.to_string()));
    for i in 0..40 {
        let k = |t: &str| format!("{t}:{round}:{i}");
        assert_eq!(c.cmd(&["SET", &k("s"), "v"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["HSET", &k("h"), "f", "1", "g", "2"]), b":2\r\n");
        assert_eq!(c.cmd(&["RPUSH", &k("l"), "a", "b", "c"]), b":3\r\n");
        assert_eq!(c.cmd(&["SADD", &k("t"), "x", "y"]), b":2\r\n");
        assert_eq!(c.cmd(&["ZADD", &k("z"), "1", "a", "2", "b"]), b":2\r\n");
        assert_eq!(c.cmd(&["XADD", &k("x"), "1-1", "f", "v"]), b"$3\r\n1-1\r\n");
        want(&["GET", &k("s")], "$1\r\nv\r\n");
        want(&["HGET", &k("h"), "g"], "$1\r\n2\r\n");
        want(&["LINDEX", &k("l"), "-1"], "$1\r\nc\r\n");
        want(&["SCARD", &k("t")], ":2\r\n");
        want(&["ZSCORE", &k("z"), "b"], "$1\r\n2\r\n");
        want(&["XLEN", &k("x")], ":1\r\n");
    }
    let m: Vec<String> = (0..8).map(|i| format!("m:{round}:{i}")).collect();
    let mut mset = vec!["MSET"];
    for k in &m {
        mset.extend([k.as_str(), "5"]);
    }
    assert_eq!(c.cmd(&mset), b"+OK\r\n");
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    for k in &m {
        assert_eq!(c.cmd(&["INCRBY", k, "2"]), b"+QUEUED\r\n");
    }
    let exec = c.cmd(&["EXEC"]);
    assert_eq!(show(&exec), show(format!("*8\r\n{}", ":7\r\n".repeat(8)).as_bytes()));
    for k in &m {
        want(&["GET", k], "$1\r\n7\r\n");
    }
    expect
}

fn check_all(c: &mut Raw, expect: &[(Vec<String>, String)], when: &str) {
    for (cmd, want) in expect {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "{when}: {cmd:?}");
    }
}

/// Four shards with the tier and `appendfsync always`: each shard's log
/// is a file in its database's directory; what was acknowledged of every
/// type survives kill -9; and a checkpoint (SAVE) carries the logs, so a
/// server started on a copy of it has what the tier held.
#[test]
fn four_shards_every_type_under_always_and_a_checkpoint_with_the_tier() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let args = ["--appendfsync", "always"];
    let env = [("BASALT_TIER", "97")];
    let mut expect = Vec::new();
    for round in 0..2 {
        let mut b = Basalt::start_in_env(&dir, 4, &args, &env);
        let mut c = b.raw();
        check_all(&mut c, &expect, "after kill -9");
        expect.extend(typed_round(&mut c, round));
        check_all(&mut c, &expect, "before kill -9");
        let log_bytes = c.info_u64("memory", "wtier_log_bytes");
        assert!(log_bytes > 0, "wtier_log_bytes {log_bytes}");
        b.signal_and_wait("-KILL");
    }
    let logs: Vec<_> = (0..4)
        .filter(|i| dir.join(format!("shard-{i}/tier-log/shard-{i}")).is_dir())
        .collect();
    assert_eq!(logs, vec![0, 1, 2, 3], "a log directory per shard, in its database");
    // A checkpoint, then writes after it that it must not be missing
    // anything before.
    let mut b = Basalt::start_in_env(&dir, 4, &args, &env);
    let mut c = b.raw();
    expect.extend(typed_round(&mut c, 2));
    // After the transaction (which applied every tier it touched): these
    // wait in the tiers when the checkpoint is made.
    for i in 0..50 {
        let (k, v) = (format!("late:{i}"), format!("v{i}"));
        assert_eq!(c.cmd(&["SET", &k, &v]), b"+OK\r\n");
        expect.push((vec!["GET".into(), k], format!("${}\r\n{v}\r\n", v.len())));
    }
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    let cp = dir.join("checkpoint");
    assert!(cp.join("shard-0/tier-log/shard-0").is_dir(), "the checkpoint has the logs");
    b.signal_and_wait("-KILL");
    // The checkpoint laid out as a data directory: its first database as
    // `db`, the shards' beside it.
    let restored = tmp.path().join("restored");
    std::fs::create_dir_all(&restored).unwrap();
    std::fs::rename(&cp, restored.join("db")).unwrap();
    for i in 0..4 {
        std::fs::rename(restored.join(format!("db/shard-{i}")), restored.join(format!("shard-{i}"))).unwrap();
    }
    for (d, tier) in [(&restored, "97"), (&dir, "0")] {
        // BASALT_TIER=0 with `write-tier-memory 0`: the tier off.
        let mut args = args.to_vec();
        if tier == "0" {
            args.extend(["--write-tier-memory", "0"]);
        }
        let b = Basalt::start_in_env(d, 4, &args, &[("BASALT_TIER", tier)]);
        check_all(&mut b.raw(), &expect, &format!("{} with BASALT_TIER={tier}", d.display()));
    }
}

/// The tier turned on by its memory (`write-tier-memory`, no
/// BASALT_TIER): INFO shows the budget and what the tier holds within
/// it, CONFIG GET the parameter, and what was acknowledged survives kill -9.
#[test]
fn write_tier_memory_turns_the_tier_on_within_its_budget() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::remove_var("BASALT_TIER");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    // Not written back while idle: INFO is to show records held.
    let args = ["--write-tier-memory", "262144", "--write-tier-idle-drain", "no"];
    let mut expect = Vec::new();
    for round in 0..2 {
        let mut b = Basalt::start_in(&dir, 2, &args);
        let mut c = b.raw();
        check(&mut c, &expect, round);
        assert_eq!(
            show(&c.cmd(&["CONFIG", "GET", "write-tier-memory"])),
            show(b"*2\r\n$17\r\nwrite-tier-memory\r\n$6\r\n262144\r\n")
        );
        expect.extend(write_round(&mut c, round));
        // After the round's DELs (which apply the tier): these wait in it.
        for i in 0..20 {
            let k = format!("tail:{round}:{i}");
            assert_eq!(c.cmd(&["SET", &k, "t"]), b"+OK\r\n");
            expect.push((vec!["GET".into(), k], "$1\r\nt\r\n".into()));
        }
        check(&mut c, &expect, round + 1);
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).to_string();
        let field = |name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} in {info}"))
        };
        assert_eq!(field("wtier_budget:"), 262144);
        assert!(field("wtier_records:") > 0, "{info}");
        // Its share, and what it may borrow of the meta caches' room
        // (half of it: `wtier`'s `tier_set_room`), which INFO shows as
        // dirty's room.
        let room = field("wtier_room:");
        assert!(
            room >= 262144 / 2 && room <= 262144 / 2 + field("meta_cache_capacity:") / 2,
            "{info}"
        );
        assert!(field("wtier_bytes:") <= 262144 + field("meta_cache_capacity:") / 2, "{info}");
        assert!(field("wtier_log_bytes:") > 0, "{info}");
        b.signal_and_wait("-KILL");
    }
    // Off (`write-tier-memory 0`): the log is written back, INFO shows no
    // budget; then the default: 256 MB over the shards, and CONFIG GET says so.
    let b = Basalt::start_in(&dir, 2, &["--write-tier-memory", "0"]);
    let mut c = b.raw();
    check(&mut c, &expect, 2);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).to_string();
    assert!(info.contains("wtier_budget:0\r\n"), "{info}");
    drop(c);
    drop(b);
    let b = Basalt::start_in(&dir, 2, &[]);
    let mut c = b.raw();
    check(&mut c, &expect, 2);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).to_string();
    assert!(info.contains("wtier_budget:268435456\r\n"), "{info}");
    assert_eq!(
        show(&c.cmd(&["CONFIG", "GET", "write-tier-memory"])),
        show(b"*2\r\n$17\r\nwrite-tier-memory\r\n$9\r\n268435456\r\n")
    );
}

/// All the keys a full SCAN of this connection's db lists, sorted.
fn scan_all(c: &mut redis::Connection, count: usize) -> Vec<String> {
    let mut cursor = 0u64;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(count).query(c).expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    keys
}

/// SCAN, KEYS, RANDOMKEY and DBSIZE over keys the write tier holds (new
/// ones, overwritten ones, deleted ones, and hashes deleted whole) answer
/// as redis-server does, and leave the tier's records where they are
/// (they are merged into the read, not written to RocksDB first).
#[test]
fn key_scans_merge_the_tier_and_answer_as_redis() {
    // Not while another test has BASALT_TIER=97 set: the server would
    // inherit it, and its 97-record tier would drain the keys at once.
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let redis = RedisServer::start();
    // Nor written back while idle (between the two servers' commands).
    let b = Basalt::start_with(1, &["--write-tier-idle-drain", "no"]);
    let mut r = redis::Client::open(format!("redis://127.0.0.1:{}/", redis.port))
        .and_then(|c| c.get_connection())
        .expect("redis-server client");
    let mut c = b.client();
    for conn in [&mut r, &mut c] {
        let mut p = redis::pipe();
        for i in 0..6000 {
            p.cmd("SET").arg(format!("k:{i}")).arg(i).ignore();
        }
        for i in (0..6000).step_by(7) {
            p.cmd("DEL").arg(format!("k:{i}")).ignore();
        }
        for i in 0..50 {
            p.cmd("HSET").arg(format!("h:{i}")).arg("f").arg(i).ignore();
        }
        for i in (0..50).step_by(3) {
            p.cmd("DEL").arg(format!("h:{i}")).ignore();
        }
        for i in (0..6000).step_by(11) {
            p.cmd("SET").arg(format!("k:{i}")).arg("again").ignore();
        }
        p.query::<()>(conn).expect("fill");
    }
    let mut raw = b.raw();
    let held = raw.info_u64("memory", "wtier_records");
    assert!(
        held > 5000,
        "the tier holds the keys: {held}: {}",
        show(&raw.cmd(&["INFO", "memory"]))
    );
    for count in [10, 1000] {
        assert_eq!(scan_all(&mut c, count), scan_all(&mut r, count), "SCAN COUNT {count}");
    }
    let keys = |conn: &mut redis::Connection, pattern: &str| {
        let mut k: Vec<String> = redis::cmd("KEYS").arg(pattern).query(conn).expect("KEYS");
        k.sort();
        k
    };
    for pattern in ["*", "h:*", "k:1??", "nomatch*"] {
        assert_eq!(keys(&mut c, pattern), keys(&mut r, pattern), "KEYS {pattern}");
    }
    let size: usize = redis::cmd("DBSIZE").query(&mut c).expect("DBSIZE");
    assert_eq!(size, keys(&mut r, "*").len());
    for _ in 0..20 {
        let k: String = redis::cmd("RANDOMKEY").query(&mut c).expect("RANDOMKEY");
        assert_eq!(redis::cmd("EXISTS").arg(&k).query::<i64>(&mut r).expect("EXISTS"), 1, "{k}");
    }
    assert!(
        raw.info_u64("memory", "wtier_records") >= held,
        "the scans left the tier's records in it"
    );
}
