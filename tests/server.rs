//! Integration tests against the real `basalt` binary with the `redis` crate.
//! Every test that involves keys runs with 1 shard and with 4 shards.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{show, Basalt, Raw};
use redis::{Commands, Value};

fn each_shard_count(f: impl Fn(&Basalt)) {
    for shards in [1, 4] {
        let b = Basalt::start(shards);
        f(&b);
    }
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("key:{i}")).collect()
}

#[test]
fn multi_key_commands_across_shards() {
    each_shard_count(|b| {
        let mut c = b.client();
        let names = keys(64);
        let pairs: Vec<(String, String)> = names.iter().map(|k| (k.clone(), format!("v-{k}"))).collect();
        let _: () = c.mset(&pairs).unwrap();
        let got: Vec<Option<String>> = c.mget(&names).unwrap();
        assert_eq!(
            got,
            names.iter().map(|k| Some(format!("v-{k}"))).collect::<Vec<_>>(),
            "{} shards",
            b.shards
        );
        let mut with_missing = names.clone();
        with_missing.insert(3, "absent".into());
        let got: Vec<Option<String>> = c.mget(&with_missing).unwrap();
        assert_eq!(got[3], None);
        assert_eq!(got[4].as_deref(), Some("v-key:3"));
        let n: i64 = redis::cmd("EXISTS").arg(&names).arg("absent").arg(&names[0]).query(&mut c).unwrap();
        assert_eq!(n, 65);
        let n: i64 = redis::cmd("TOUCH").arg(&names[..10]).query(&mut c).unwrap();
        assert_eq!(n, 10);
        let dbsize: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(dbsize, 64);
        // MSETNX is all or nothing across shards.
        let set: i64 = redis::cmd("MSETNX")
            .arg("fresh:1")
            .arg("x")
            .arg("fresh:2")
            .arg("x")
            .arg(&names[40])
            .arg("x")
            .query(&mut c)
            .unwrap();
        assert_eq!(set, 0);
        let e: i64 = redis::cmd("EXISTS").arg("fresh:1").arg("fresh:2").query(&mut c).unwrap();
        assert_eq!(e, 0);
        let set: i64 = redis::cmd("MSETNX")
            .arg("fresh:1")
            .arg("x")
            .arg("fresh:2")
            .arg("y")
            .arg("fresh:3")
            .arg("z")
            .query(&mut c)
            .unwrap();
        assert_eq!(set, 1);
        let got: Vec<String> = c.mget(&["fresh:1", "fresh:2", "fresh:3"]).unwrap();
        assert_eq!(got, vec!["x", "y", "z"]);
        // RENAME and COPY between keys on different shards keep value and TTL.
        let _: () = c.set_ex("src", "payload", 1000).unwrap();
        for i in 0..20 {
            let dst = format!("dst:{i}");
            let _: () = redis::cmd("RENAME")
                .arg(if i == 0 { "src".to_string() } else { format!("dst:{}", i - 1) })
                .arg(&dst)
                .query(&mut c)
                .unwrap();
            let ttl: i64 = c.ttl(&dst).unwrap();
            assert!((990..=1000).contains(&ttl), "ttl {ttl}");
        }
        let copied: i64 = redis::cmd("COPY").arg("dst:19").arg("copy:a").query(&mut c).unwrap();
        assert_eq!(copied, 1);
        let v: String = c.get("copy:a").unwrap();
        assert_eq!(v, "payload");
        let nx: i64 = redis::cmd("RENAMENX").arg("copy:a").arg("dst:19").query(&mut c).unwrap();
        assert_eq!(nx, 0);
        let deleted: i64 = c.del(&names).unwrap();
        assert_eq!(deleted, 64);
        let dbsize: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(dbsize, 5, "fresh:1..3, dst:19, copy:a");
    });
}

#[test]
fn scan_returns_every_key_once_and_ends_with_zero() {
    each_shard_count(|b| {
        let mut c = b.client();
        let names = keys(1000);
        for chunk in names.chunks(100) {
            let pairs: Vec<(&String, i32)> = chunk.iter().map(|k| (k, 1)).collect();
            let _: () = c.mset(&pairs).unwrap();
        }
        let _: () = c.set("other", 1).unwrap();
        let mut seen = HashSet::new();
        let mut cursor = 0u64;
        let mut calls = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("key:*")
                .arg("COUNT")
                .arg(50)
                .query(&mut c)
                .unwrap();
            for k in batch {
                assert!(seen.insert(k.clone()), "{k} returned twice");
            }
            calls += 1;
            cursor = next;
            if cursor == 0 {
                break;
            }
            // Keys written during the scan do not disturb it.
            let _: () = c.set(format!("during:{calls}"), 1).unwrap();
        }
        assert_eq!(seen.len(), 1000, "{} shards", b.shards);
        assert!(calls > 1);
        let (_, typed): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("TYPE")
            .arg("hash")
            .arg("COUNT")
            .arg(100000)
            .query(&mut c)
            .unwrap();
        assert!(typed.is_empty());
        let all: Vec<String> = c.keys("key:1*").unwrap();
        assert_eq!(all.len(), 111, "key:1, key:10..19, key:100..199");
        let r: Option<String> = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
        assert!(r.is_some());
    });
}

#[test]
fn pipelines_keep_order_across_shards() {
    each_shard_count(|b| {
        let mut c = b.client();
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("SET").arg(format!("p:{i}")).arg(i).ignore();
            p.cmd("INCR").arg(format!("p:{i}"));
            p.cmd("GET").arg(format!("p:{}", i / 2));
        }
        let out: Vec<i64> = p.query(&mut c).unwrap();
        for i in 0..500 {
            assert_eq!(out[2 * i], i as i64 + 1);
            assert_eq!(out[2 * i + 1], (i / 2) as i64 + 1);
        }
    });
}

#[test]
fn expired_keys_vanish_lazily_and_actively() {
    each_shard_count(|b| {
        let mut c = b.client();
        for i in 0..50 {
            let _: () = redis::cmd("SET")
                .arg(format!("t:{i}"))
                .arg("v")
                .arg("PX")
                .arg(100)
                .query(&mut c)
                .unwrap();
        }
        let _: () = c.set("keep", 1).unwrap();
        let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, 51);
        std::thread::sleep(Duration::from_millis(150));
        let v: Option<String> = c.get("t:0").unwrap();
        assert_eq!(v, None, "lazy expiration");
        // Active expiration removes the rest without any read.
        let mut n = 0;
        for _ in 0..50 {
            n = redis::cmd("DBSIZE").query(&mut c).unwrap();
            if n == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(n, 1, "active expiration left keys");
        let info: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
        assert!(info.contains("expired_keys:50"), "{info}");
    });
}

#[test]
fn data_and_ttls_survive_restart_and_resharding() {
    let tmp = tempfile::tempdir().unwrap();
    let names = keys(300);
    {
        let mut b = Basalt::start_in(tmp.path(), 1, &[]);
        let mut c = b.client();
        for k in &names {
            let _: () = c.set(k, format!("v-{k}")).unwrap();
        }
        let _: () = c.set_ex("ttl-key", "x", 5000).unwrap();
        let _: () = redis::cmd("SELECT").arg(3).query(&mut c).unwrap();
        let _: () = c.set("in-db3", "y").unwrap();
        assert!(b.signal_and_wait("-TERM").success());
    }
    for shards in [4, 3, 1] {
        let mut b = Basalt::start_in(tmp.path(), shards, &[]);
        let mut c = b.client();
        let got: Vec<String> = c.mget(&names).unwrap();
        assert_eq!(
            got,
            names.iter().map(|k| format!("v-{k}")).collect::<Vec<_>>(),
            "after reopening with {shards} shards"
        );
        let ttl: i64 = c.ttl("ttl-key").unwrap();
        assert!((4990..=5000).contains(&ttl), "ttl {ttl}");
        let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, 301);
        // Key and expiry counts are rebuilt from the records at startup.
        let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
        assert!(info.contains("db0:keys=301,expires=1,"), "{info}");
        assert!(info.contains("db3:keys=1,expires=0,"), "{info}");
        let _: () = redis::cmd("SELECT").arg(3).query(&mut c).unwrap();
        let v: String = c.get("in-db3").unwrap();
        assert_eq!(v, "y");
        let _: () = redis::cmd("SHUTDOWN").query(&mut c).unwrap_or(());
        assert!(b.wait_exit().success());
    }
}

/// A server that closed its clients' connections leaves them in TIME_WAIT
/// on its own port; a restart on that port must still bind (Redis sets
/// SO_REUSEADDR; binding with SO_REUSEPORT alone failed for a minute).
#[test]
fn restarts_on_the_same_port_right_after_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let port = {
        let mut b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.client();
        let _: () = c.set("k", "before").unwrap();
        // SHUTDOWN closes this connection from the server's side first.
        let _: () = redis::cmd("SHUTDOWN").query(&mut c).unwrap_or(());
        assert!(b.wait_exit().success());
        b.port
    };
    let b = Basalt::start_at(tmp.path(), port, 2, &[]).unwrap_or_else(|e| panic!("restart on the same port: {e}"));
    let mut c = b.client();
    let v: String = c.get("k").unwrap();
    assert_eq!(v, "before");
}

#[test]
fn acknowledged_writes_survive_kill_9_with_appendfsync_always() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut b = Basalt::start_in(tmp.path(), 2, &["--appendfsync", "always"]);
        let mut c = b.client();
        for i in 0..200 {
            let _: () = c.set(format!("d:{i}"), i).unwrap();
        }
        b.signal_and_wait("-KILL");
    }
    let b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 200);
    let v: i64 = c.get("d:199").unwrap();
    assert_eq!(v, 199);
}

/// RocksDB buffers WAL records in memory (`manual_wal_flush`) until the
/// connection writes them out before it replies: a write acknowledged under
/// the default `appendfsync everysec` is in the WAL file, so it survives
/// kill -9 (which keeps the OS page cache), pipelined or not, and on either
/// shard.
#[test]
fn acknowledged_writes_survive_kill_9_with_a_buffered_wal() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut b = Basalt::start_in(tmp.path(), 2, &[]);
        let mut c = b.client();
        for i in 0..200 {
            let _: () = c.set(format!("d:{i}"), i).unwrap();
        }
        let mut pipe = redis::pipe();
        for i in 200..1200 {
            pipe.cmd("SET").arg(format!("d:{i}")).arg(i).ignore();
        }
        let _: () = pipe.query(&mut c).unwrap();
        b.signal_and_wait("-KILL");
    }
    let b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 1200);
    let v: i64 = c.get("d:1199").unwrap();
    assert_eq!(v, 1199);
}

#[test]
fn dump_restore_round_trip_and_corruption() {
    each_shard_count(|b| {
        let mut c = b.client();
        let _: () = c.set("src", "some value").unwrap();
        let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
        let _: () = redis::cmd("RESTORE").arg("dst").arg(0).arg(&payload).query(&mut c).unwrap();
        let v: String = c.get("dst").unwrap();
        assert_eq!(v, "some value");
        let err = redis::cmd("RESTORE")
            .arg("dst")
            .arg(0)
            .arg(&payload)
            .query::<()>(&mut c)
            .unwrap_err();
        assert_eq!(err.code(), Some("BUSYKEY"));
        let _: () = redis::cmd("RESTORE")
            .arg("dst")
            .arg(60000)
            .arg(&payload)
            .arg("REPLACE")
            .query(&mut c)
            .unwrap();
        let ttl: i64 = c.pttl("dst").unwrap();
        assert!(ttl > 59000 && ttl <= 60000);
        let mut bad = payload.clone();
        bad[3] ^= 0xff;
        let err = redis::cmd("RESTORE").arg("other").arg(0).arg(&bad).query::<()>(&mut c).unwrap_err();
        assert!(err.to_string().contains("DUMP payload version or checksum are wrong"), "{err}");
        let _: () = redis::cmd("RESTORE")
            .arg("abs")
            .arg(1)
            .arg(&payload)
            .arg("ABSTTL")
            .query(&mut c)
            .unwrap();
        let e: i64 = c.exists("abs").unwrap();
        assert_eq!(e, 0, "an ABSTTL in the past restores nothing");
    });
}

#[test]
fn hello_3_auth_and_client_commands() {
    let b = Basalt::start_with(2, &["--requirepass", "secret"]);
    let mut raw = b.raw();
    assert_eq!(show(&raw.cmd(&["GET", "k"])), "-NOAUTH Authentication required.\\r\\n");
    assert!(show(&raw.cmd(&["AUTH", "wrong"])).starts_with("-WRONGPASS"));
    let hello = raw.cmd(&["HELLO", "3", "AUTH", "default", "secret", "SETNAME", "me"]);
    assert!(hello.starts_with(b"%7\r\n"), "{}", show(&hello));
    assert!(show(&hello).contains("proto\\r\\n:3"));
    assert_eq!(raw.cmd(&["GET", "missing"]), b"_\r\n");
    assert_eq!(raw.cmd(&["CLIENT", "GETNAME"]), b"$2\r\nme\r\n");
    let list = raw.cmd(&["CLIENT", "LIST"]);
    assert!(list.starts_with(b"="), "RESP3 verbatim string: {}", show(&list));
    assert!(show(&list).contains("name=me"));
    assert_eq!(raw.cmd(&["CONFIG", "SET", "maxclients", "100"]), b"+OK\r\n");
    assert_eq!(
        show(&raw.cmd(&["CONFIG", "GET", "maxclients"])),
        "%1\\r\\n$10\\r\\nmaxclients\\r\\n$3\\r\\n100\\r\\n"
    );
    assert_eq!(raw.cmd(&["RESET"]), b"+RESET\r\n");
    assert_eq!(show(&raw.cmd(&["GET", "k"])), "-NOAUTH Authentication required.\\r\\n");

    // CLIENT KILL by ID closes the other connection.
    let mut victim = b.raw();
    victim.cmd(&["AUTH", "secret"]);
    let id = String::from_utf8(victim.cmd(&["CLIENT", "ID"])).unwrap();
    let id = id.trim().trim_start_matches(':').to_string();
    let mut killer = b.raw();
    killer.cmd(&["AUTH", "secret"]);
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ID", &id]), b":1\r\n");
    assert!(victim.closed());
}

#[test]
fn maxclients_and_timeout() {
    let b = Basalt::start_with(1, &["--maxclients", "2"]);
    let mut a = b.raw();
    // The harness's readiness probe may still be registered: wait until
    // `a` is the only client.
    for _ in 0..100 {
        if show(&a.cmd(&["INFO", "clients"])).contains("connected_clients:1\\r") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = b.raw();
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    let mut third = b.raw();
    assert_eq!(third.reply(), b"-ERR max number of clients reached\r\n");
    drop((a, c, third));
    std::thread::sleep(Duration::from_millis(100));
    let mut d = b.raw();
    assert_eq!(d.cmd(&["CONFIG", "SET", "timeout", "1"]), b"+OK\r\n");
    let mut idle = b.raw();
    idle.cmd(&["PING"]);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(idle.closed(), "idle client was not closed after timeout");
}

#[test]
fn command_table_introspection() {
    let b = Basalt::start(1);
    let mut c = b.client();
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut c).unwrap();
    let all: Vec<Value> = redis::cmd("COMMAND").query(&mut c).unwrap();
    assert_eq!(all.len() as i64, count);
    let list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut c).unwrap();
    for name in ["get", "set", "mget", "scan", "lcs", "client", "restore", "hello"] {
        assert!(list.iter().any(|n| n == name), "{name} missing from COMMAND LIST");
    }
    let mut raw = b.raw();
    let info = show(&raw.cmd(&["COMMAND", "INFO", "get"]));
    assert!(info.starts_with("*1\\r\\n*10\\r\\n$3\\r\\nget\\r\\n:2\\r\\n"), "{info}");
    let docs = show(&raw.cmd(&["COMMAND", "DOCS", "set"]));
    assert!(docs.contains("summary") && docs.contains("1.0.0"), "{docs}");
    let filtered: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("PATTERN")
        .arg("get*")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        filtered.iter().collect::<HashSet<_>>(),
        ["get", "getbit", "getset", "getdel", "getex", "getrange"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .iter()
            .collect()
    );
}

#[test]
fn info_sections_and_stats() {
    let b = Basalt::start(2);
    let mut c = b.client();
    let _: () = c.set("a", 1).unwrap();
    let _: Option<String> = c.get("a").unwrap();
    let _: Option<String> = c.get("nope").unwrap();
    let _ = redis::cmd("GET").query::<()>(&mut c);
    let info: String = redis::cmd("INFO").arg("all").query(&mut c).unwrap();
    for needle in [
        "# Server",
        "redis_version:",
        "# Clients",
        "connected_clients:1",
        "# Persistence",
        "# Stats",
        "keyspace_hits:1",
        "keyspace_misses:1",
        "# Commandstats",
        "cmdstat_set:calls=1,",
        "cmdstat_get:calls=2,",
        "rejected_calls=1",
        "# Keyspace",
        "db0:keys=1,",
        "# CPU",
    ] {
        assert!(info.contains(needle), "INFO lacks {needle}:\n{info}");
    }
    let t: Vec<String> = redis::cmd("TIME").query(&mut c).unwrap();
    assert_eq!(t.len(), 2);
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    assert!(b.dir.join("checkpoint").join("CURRENT").exists());
    let last: i64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(last > 1_700_000_000);
    let started: String = redis::cmd("BGSAVE").query(&mut c).unwrap();
    assert_eq!(started, "Background saving started");
}

#[test]
fn bad_input_never_hurts_other_clients() {
    let b = Basalt::start(2);
    let mut good = b.raw();
    good.cmd(&["SET", "k", "v"]);
    for junk in [
        &b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999999\r\n"[..],
        b"\x01\x02garbage\r\n",
        b"*-5\r\n*1\r\n$-1\r\n",
    ] {
        let mut bad = b.raw();
        bad.send_bytes(junk);
        let _ = bad.reply();
    }
    // A NUL before the newline hides it (Redis searches with strchr): the
    // request waits for more, with no reply; others go on.
    let mut nul = b.raw();
    nul.send_bytes(b"\x00\x01\x02garbage\r\n");
    assert_eq!(good.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    // A client announcing a huge bulk and sending nothing does not block others.
    let mut slow = b.raw();
    slow.send_bytes(b"*2\r\n$3\r\nGET\r\n$100000\r\nabc");
    assert_eq!(good.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    drop(slow);
    let mut r = Raw::connect(b.port);
    assert_eq!(r.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}

/// Redis 7.2 additions that Debian's 7.0 lacks, checked against the docs.
#[test]
fn redis_7_2_client_subcommands() {
    let b = Basalt::start(1);
    let mut raw = b.raw();
    assert_eq!(raw.cmd(&["CLIENT", "SETINFO", "lib-name", "mylib"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["CLIENT", "SETINFO", "lib-ver", "1.2.3"]), b"+OK\r\n");
    assert_eq!(
        show(&raw.cmd(&["CLIENT", "SETINFO", "foo", "bar"])),
        "-ERR Unrecognized option 'foo'\\r\\n"
    );
    assert_eq!(
        show(&raw.cmd(&["CLIENT", "SETINFO", "lib-name", "has space"])),
        "-ERR lib-name cannot contain spaces, newlines or special characters.\\r\\n"
    );
    let info = show(&raw.cmd(&["CLIENT", "INFO"]));
    assert!(info.contains("lib-name=mylib lib-ver=1.2.3"), "{info}");
    assert_eq!(raw.cmd(&["CLIENT", "NO-TOUCH", "on"]), b"+OK\r\n");
    assert_eq!(raw.cmd(&["CLIENT", "NO-TOUCH", "off"]), b"+OK\r\n");
    assert_eq!(show(&raw.cmd(&["CLIENT", "NO-TOUCH", "maybe"])), "-ERR syntax error\\r\\n");
    // 7.2 gave COMMAND GETKEYS arity -3 (7.0: -4).
    assert_eq!(
        show(&raw.cmd(&["COMMAND", "GETKEYS", "PING"])),
        "-ERR The command has no key arguments\\r\\n"
    );
    assert_eq!(
        show(&raw.cmd(&["COMMAND", "GETKEYS", "GET"])),
        "-ERR Invalid number of arguments specified for command\\r\\n"
    );
}

#[test]
fn debug_sleep_when_enabled() {
    let b = Basalt::start_with(1, &["--enable-debug-command", "local"]);
    let mut raw = b.raw();
    let start = std::time::Instant::now();
    assert_eq!(raw.cmd(&["DEBUG", "SLEEP", "0.2"]), b"+OK\r\n");
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(show(&raw.cmd(&["DEBUG", "NOPE"])).starts_with("-ERR unknown subcommand 'NOPE'"));
}

#[test]
fn slowlog_keeps_slow_commands_from_every_shard() {
    each_shard_count(|b| {
        let mut c = b.client();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(0)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("slowpoke").query(&mut c).unwrap();
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
        for k in keys(20) {
            let _: () = c.set(&k, "v").unwrap();
        }
        let long = "x".repeat(200);
        let _: () = c.set("long", &long).unwrap();
        // 20 SETs + SLOWLOG RESET + the long SET: RESET is logged after it ran.
        let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
        assert_eq!(len, 22, "{} shards", b.shards);
        let entries: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(3).query(&mut c).unwrap();
        assert_eq!(entries.len(), 3);
        // entries[0] is the SLOWLOG LEN above; then the long SET.
        let Value::Array(len_entry) = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!(
            len_entry[3],
            Value::Array(vec![Value::BulkString(b"SLOWLOG".to_vec()), Value::BulkString(b"LEN".to_vec())])
        );
        let Value::Array(newest) = &entries[1] else { panic!("{entries:?}") };
        assert_eq!(newest.len(), 6);
        let Value::Array(args) = &newest[3] else { panic!("{newest:?}") };
        assert_eq!(args.len(), 3);
        assert_eq!(
            args[2],
            Value::BulkString(format!("{}... (72 more bytes)", "x".repeat(128)).into_bytes())
        );
        assert_eq!(newest[5], Value::BulkString(b"slowpoke".to_vec()));
        // Newest first, ids strictly decreasing across shards.
        let ids: Vec<i64> = entries
            .iter()
            .map(|e| match e {
                Value::Array(f) => match f[0] {
                    Value::Int(id) => id,
                    _ => panic!("{f:?}"),
                },
                _ => panic!("{e:?}"),
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
        let all: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query(&mut c).unwrap();
        assert!(all.len() >= 22);
        let _: () = redis::cmd("CONFIG").arg("SET").arg("slowlog-max-len").arg(2).query(&mut c).unwrap();
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
        for k in keys(10) {
            let _: Option<String> = c.get(&k).unwrap();
        }
        let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
        assert!(len <= 2 * b.shards as i64, "each shard keeps at most slowlog-max-len: {len}");
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(-1)
            .query(&mut c)
            .unwrap();
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
        let _: () = c.set("a", 1).unwrap();
        let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).unwrap();
        assert_eq!(len, 0);
    });
}

#[test]
fn info_latencystats_errorstats_and_shards() {
    each_shard_count(|b| {
        let mut c = b.client();
        for k in keys(30) {
            let _: () = c.set(&k, "v").unwrap();
            let _: Option<String> = c.get(&k).unwrap();
        }
        let _ = redis::cmd("INCR").arg("key:1").query::<i64>(&mut c);
        let _ = redis::cmd("GET").query::<()>(&mut c);
        let _ = redis::cmd("NOSUCH").query::<()>(&mut c);
        let info: String = redis::cmd("INFO")
            .arg("latencystats")
            .arg("errorstats")
            .arg("shards")
            .arg("stats")
            .query(&mut c)
            .unwrap();
        for needle in [
            "latency_percentiles_usec_set:p50=",
            "latency_percentiles_usec_get:p50=",
            ",p99=",
            ",p99.9=",
            "errorstat_ERR:count=3",
            "total_error_replies:3",
            "instantaneous_ops_per_sec:",
            "instantaneous_input_kbps:",
        ] {
            assert!(info.contains(needle), "{} shards: INFO lacks {needle}:\n{info}", b.shards);
        }
        let shard_lines: Vec<&str> = info.lines().filter(|l| l.starts_with("shard")).collect();
        assert_eq!(shard_lines.len(), b.shards, "{info}");
        let keys_total: i64 = shard_lines
            .iter()
            .filter_map(|l| l.split(',').find_map(|f| f.strip_prefix("keys=")))
            .map(|v| v.parse::<i64>().unwrap())
            .sum();
        assert_eq!(keys_total, 30);
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("latency-tracking-info-percentiles")
            .arg("50 99.99")
            .query(&mut c)
            .unwrap();
        let info: String = redis::cmd("INFO").arg("latencystats").query(&mut c).unwrap();
        assert!(info.contains(",p99.99="), "{info}");
        assert!(!info.contains(",p99.9="), "{info}");
        // Default INFO leaves latencystats out, as Redis does.
        let info: String = redis::cmd("INFO").query(&mut c).unwrap();
        assert!(!info.contains("latency_percentiles_usec"));
        assert!(info.contains("# Errorstats"));
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
        let info: String = redis::cmd("INFO").arg("errorstats").arg("latencystats").query(&mut c).unwrap();
        assert!(!info.contains("errorstat_ERR"), "{info}");
        assert!(!info.contains("latency_percentiles_usec_set"), "{info}");
    });
}

#[test]
fn latency_monitor_records_slow_commands() {
    let b = Basalt::start_with(1, &["--enable-debug-command", "yes", "--latency-monitor-threshold", "50"]);
    let mut raw = b.raw();
    assert_eq!(raw.cmd(&["DEBUG", "SLEEP", "0.1"]), b"+OK\r\n");
    let latest = show(&raw.cmd(&["LATENCY", "LATEST"]));
    assert!(latest.starts_with("*1\\r\\n*4\\r\\n$7\\r\\ncommand\\r\\n:"), "{latest}");
    let history = show(&raw.cmd(&["LATENCY", "HISTORY", "command"]));
    assert!(history.starts_with("*1\\r\\n*2\\r\\n:"), "{history}");
    let doctor = show(&raw.cmd(&["LATENCY", "DOCTOR"]));
    assert!(doctor.contains("command: latest spike"), "{doctor}");
    assert_eq!(raw.cmd(&["LATENCY", "RESET"]), b":1\r\n");
    raw.cmd(&["SET", "a", "1"]);
    raw.cmd(&["GET", "a"]);
    raw.cmd(&["GET", "a"]);
    let h = show(&raw.cmd(&["LATENCY", "HISTOGRAM", "get", "nosuch"]));
    assert!(
        h.starts_with("*2\\r\\n$3\\r\\nget\\r\\n*4\\r\\n$5\\r\\ncalls\\r\\n:2\\r\\n$14\\r\\nhistogram_usec\\r\\n*"),
        "{h}"
    );
    assert_eq!(raw.cmd(&["LATENCY", "LATEST"]), b"*0\r\n");
}

#[test]
fn appendfsync_always_commits_pipelines_as_groups() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut b = Basalt::start_in(tmp.path(), 2, &["--appendfsync", "always"]);
        let port = b.port;
        let writers: Vec<_> = (0..4)
            .map(|w| {
                std::thread::spawn(move || {
                    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                        .unwrap()
                        .get_connection()
                        .unwrap();
                    let mut p = redis::pipe();
                    for i in 0..100 {
                        p.set(format!("g:{w}:{i}"), i).ignore();
                    }
                    let _: () = p.query(&mut c).unwrap();
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let mut c = b.client();
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        let syncs: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("wal_group_syncs:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{info}"));
        // 400 acknowledged writes, synced in groups: one per pipelined batch at most.
        assert!((1..100).contains(&syncs), "wal_group_syncs {syncs}");
        b.signal_and_wait("-KILL");
    }
    let b = Basalt::start_in(tmp.path(), 2, &[]);
    let mut c = b.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 400);
}

#[test]
fn listen_shards_must_name_existing_shards() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["2", "0,x", "-1"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args([
                "--port",
                "0",
                "--dir",
                &tmp.path().display().to_string(),
                "--shards",
                "2",
                "--listen-shards",
                bad,
            ])
            .output()
            .unwrap();
        assert!(!out.status.success(), "listen-shards {bad} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("listen-shards"), "{out:?}");
    }
    // Only shard 0 accepts, yet every key is reachable through it.
    let b = Basalt::start_with(2, &["--listen-shards", "0"]);
    let mut c = b.client();
    for k in keys(20) {
        let _: () = c.set(&k, &k).unwrap();
    }
    let got: Vec<String> = c.mget(keys(20)).unwrap();
    assert_eq!(got, keys(20));
    let info: String = redis::cmd("INFO").arg("shards").query(&mut c).unwrap();
    assert!(info.contains("shard0:") && info.contains("connected_clients=1"), "{info}");
    assert!(
        info.contains("shard1:") && !info.lines().any(|l| l.starts_with("shard1:") && l.contains("connected_clients=1")),
        "{info}"
    );
}
