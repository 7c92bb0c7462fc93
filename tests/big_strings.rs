//! Issue 10 item 3: strings past 128 KiB are stored in 64 KiB chunks
//! (docs/encoding.md). Every string command answers as redis-server does
//! on values on both sides of that line and of chunk edges, and a write to
//! a big string costs what it touches: APPEND of one byte to a 32 MB string,
//! or SETRANGE at offset 536870911, writes kilobytes, not the value.

mod common;

use std::path::Path;

use common::{show, Basalt, Raw, RedisServer, Rng};

const KB: usize = 1024;

/// A value of `len` bytes that differs by `seed` (so LCS and ranges see
/// real content).
fn value(len: usize, seed: u64) -> String {
    (0..len).map(|i| (b'a' + ((i as u64 * 31 + seed) % 26) as u8) as char).collect()
}

fn both(redis: &mut Raw, basalt: &mut Raw, args: &[String]) {
    let (want, got) = (redis.cmd(args), basalt.cmd(args));
    if want != got {
        let cut = |b: &[u8]| show(&b[..b.len().min(200)]);
        panic!(
            "{:?}: redis {} ({} B), basalt {} ({} B)",
            &args[..args.len().min(3)],
            cut(&want),
            want.len(),
            cut(&got),
            got.len()
        );
    }
}

#[test]
fn big_strings_answer_like_redis() {
    let redis = RedisServer::start();
    for shards in [1, 2] {
        let basalt = Basalt::start(shards);
        let (mut r, mut b) = (redis.raw(), basalt.raw());
        both(&mut r, &mut b, &["FLUSHALL".to_string()]);
        let mut rng = Rng(0xB16_5751 + shards as u64);
        let keys = ["s:a", "s:b", "s:c", "{s}:d"];
        let sizes = [0, 1, 100 * KB, 128 * KB, 128 * KB + 1, 192 * KB - 1, 300 * KB, 1024 * KB];
        let offsets = [0, 1, 64 * KB - 1, 64 * KB, 128 * KB, 128 * KB + 7, 200 * KB, 1100 * KB];
        for step in 0..400u64 {
            let k = rng.pick(&keys).to_string();
            let k2 = rng.pick(&keys).to_string();
            let size = sizes[rng.below(sizes.len())];
            let off = offsets[rng.below(offsets.len())] as i64;
            let s = |v: &str| v.to_string();
            let args: Vec<String> = match rng.below(16) {
                0 => vec![s("SET"), k, value(size, step)],
                1 => vec![s("APPEND"), k, value([1, 5, 70 * KB][rng.below(3)], step)],
                2 => vec![s("SETRANGE"), k, off.to_string(), value([1, 3, 65 * KB][rng.below(3)], step)],
                3 => {
                    let (a, z) = (
                        [0, -1, 5, 64 * KB as i64, -200_000][rng.below(5)],
                        [0, -1, 131_072, 70_000, 2_000_000][rng.below(5)],
                    );
                    vec![s("GETRANGE"), k, a.to_string(), z.to_string()]
                }
                4 => vec![s("STRLEN"), k],
                5 => vec![s("GET"), k],
                6 => vec![s("SET"), k, value(size, step), s("GET")],
                7 => vec![s("MGET"), k, k2],
                8 => vec![s("GETDEL"), k],
                9 => vec![s("INCR"), k],
                10 => vec![s("INCRBYFLOAT"), k, s("1.5")],
                11 => vec![s("OBJECT"), s("ENCODING"), k],
                12 => vec![s("RENAME"), k, k2],
                13 => vec![s("COPY"), k, k2, s("REPLACE")],
                14 => vec![s("EXPIRE"), k, s("100")],
                _ => vec![s("GETEX"), k, s("PERSIST")],
            };
            both(&mut r, &mut b, &args);
            // Every few steps, the whole state.
            if step % 20 == 0 {
                for k in keys {
                    for probe in ["GET", "STRLEN", "TTL", "TYPE"] {
                        both(&mut r, &mut b, &[probe.to_string(), k.to_string()]);
                    }
                }
                both(&mut r, &mut b, &["DBSIZE".to_string()]);
            }
        }
        // LCS over two big strings, and a hash command on a big string.
        let (x, y) = (value(130 * KB, 1), value(130 * KB, 2));
        both(&mut r, &mut b, &["SET".into(), "{l}a".into(), x]);
        both(&mut r, &mut b, &["SET".into(), "{l}b".into(), y]);
        both(&mut r, &mut b, &["LCS".into(), "{l}a".into(), "{l}b".into(), "LEN".into()]);
        both(&mut r, &mut b, &["HSET".into(), "{l}a".into(), "f".into(), "v".into()]);
        both(&mut r, &mut b, &["SADD".into(), "{l}a".into(), "m".into()]);
        // DUMP/RESTORE round trip (a string: Redis's payload).
        let dump = b.cmd(&["DUMP", "{l}a"]);
        assert!(dump.len() > 130 * KB, "{}", show(&dump[..40]));
        let payload = &dump[dump.iter().position(|c| *c == b'\n').map_or(0, |p| p + 1)..dump.len() - 2];
        assert_eq!(b.cmd(&[&b"RESTORE"[..], b"{l}c", b"0", payload]), b"+OK\r\n");
        assert_eq!(b.cmd(&["GET", "{l}c"]), b.cmd(&["GET", "{l}a"]));
        let mut bad = payload.to_vec();
        bad[20] ^= 1;
        assert!(show(&b.cmd(&[&b"RESTORE"[..], b"{l}d", b"0", &bad])).starts_with("-ERR DUMP payload"));
    }
}

/// Bytes in the write-ahead log files of a data dir (its databases: `db`,
/// and `shard-<i>` with a database per shard).
fn wal_bytes(dir: &Path) -> u64 {
    let logs = |d: &Path| -> u64 {
        std::fs::read_dir(d)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let shard_dbs = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("shard-")))
                .map(|e| logs(&e.path()) + tier_logs(&e.path()))
                .sum()
        })
        .unwrap_or(0);
    logs(&dir.join("db")) + tier_logs(&dir.join("db")) + shard_dbs
}

/// The write tier's log files (`<db>/tier-log/shard-<i>/*.log`): with the
/// tier on, a write is logged there instead of the WAL.
fn tier_logs(db: &Path) -> u64 {
    let Ok(shards) = std::fs::read_dir(db.join("tier-log")) else {
        return 0;
    };
    shards
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_dir(e.path()).ok())
        .flat_map(|d| d.filter_map(|e| e.ok()).filter_map(|e| e.metadata().ok()).map(|m| m.len()))
        .sum()
}

/// Runs `args` and returns its reply and the WAL bytes it wrote.
fn wal_cost(b: &Basalt, c: &mut Raw, args: &[&str]) -> (Vec<u8>, u64) {
    let before = wal_bytes(&b.dir);
    let reply = c.cmd(args);
    (reply, wal_bytes(&b.dir) - before)
}

#[test]
fn writes_to_a_big_string_cost_what_they_touch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut b = Basalt::start_in(tmp.path(), 1, &[]);
    let mut c = b.raw();
    let big = value(32 << 20, 7);
    let (reply, cost) = wal_cost(&b, &mut c, &["SET", "big", &big]);
    assert_eq!(reply, b"+OK\r\n");
    assert!(cost >= 32 << 20, "the SET itself is logged: {cost}");
    let (reply, cost) = wal_cost(&b, &mut c, &["APPEND", "big", "x"]);
    assert_eq!(reply, format!(":{}\r\n", (32 << 20) + 1).into_bytes());
    assert!(cost < 256 * KB as u64, "APPEND of 1 byte wrote {cost} B of WAL");
    let (reply, cost) = wal_cost(&b, &mut c, &["SETRANGE", "big", "1000000", "yz"]);
    assert_eq!(reply, format!(":{}\r\n", (32 << 20) + 1).into_bytes());
    assert!(cost < 256 * KB as u64, "SETRANGE of 2 bytes wrote {cost} B of WAL");
    let (reply, cost) = wal_cost(&b, &mut c, &["EXPIRE", "big", "1000"]);
    assert_eq!(reply, b":1\r\n");
    assert!(cost < 4 * KB as u64, "EXPIRE wrote {cost} B of WAL");
    assert_eq!(
        c.cmd(&["GETRANGE", "big", "999999", "1000002"]),
        format!("$4\r\n{}yz{}\r\n", &big[999_999..1_000_000], &big[1_000_002..1_000_003]).into_bytes()
    );
    assert_eq!(
        c.cmd(&["GETRANGE", "big", "-2", "-1"]),
        format!("$2\r\n{}x\r\n", &big[big.len() - 1..]).into_bytes()
    );
    let (reply, cost) = wal_cost(&b, &mut c, &["SETRANGE", "far", "536870911", "x"]);
    assert_eq!(reply, b":536870912\r\n");
    assert!(cost < 256 * KB as u64, "SETRANGE far out wrote {cost} B of WAL");
    assert_eq!(c.cmd(&["STRLEN", "far"]), b":536870912\r\n");
    assert_eq!(c.cmd(&["GETRANGE", "far", "536870909", "-1"]), b"$3\r\n\0\0x\r\n");
    // Both survive kill -9 whole (the WAL is replayed).
    drop(c);
    b.signal_and_wait("-KILL");
    let b = Basalt::start_in(tmp.path(), 1, &[]);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["STRLEN", "big"]), format!(":{}\r\n", (32 << 20) + 1).into_bytes());
    let whole = c.cmd(&["GET", "big"]);
    let mut want = big.into_bytes();
    want[1_000_000..1_000_002].copy_from_slice(b"yz");
    want.push(b'x');
    let header = format!("${}\r\n", want.len()).into_bytes();
    assert!(whole.starts_with(&header) && whole.len() == header.len() + want.len() + 2);
    assert!(whole[header.len()..whole.len() - 2] == want[..], "the value after restart");
    assert_eq!(c.cmd(&["GETRANGE", "far", "536870910", "-1"]), b"$2\r\n\0x\r\n");
}
