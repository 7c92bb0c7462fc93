//! The server commands and client options of issue 30 against Debian's
//! redis-server: MEMORY, CLIENT REPLY, ROLE, LOLWUT, BGREWRITEAOF, DEBUG
//! ERROR/SET-ACTIVE-EXPIRE/RELOAD, INFO's sections, and SCAN going on
//! across shards; on 1 and 4 shards and in RESP3 where the reply differs.

mod common;

use common::{run_clients, run_resp3_script, run_scripts, show, split, Basalt, Raw, RedisServer};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "memory-errors",
        r#"
        SET k v
        MEMORY USAGE missing
        MEMORY USAGE k SAMPLES
        MEMORY USAGE k SAMPLES x
        MEMORY USAGE k SAMPLES -1
        MEMORY USAGE k FOO
        MEMORY USAGE k SAMPLES 1 FOO
        MEMORY
        MEMORY USAGE
        MEMORY STATS x
        MEMORY DOCTOR x
        MEMORY PURGE x
        MEMORY FOO
        MEMORY HELP
        MEMORY PURGE
        "#,
    ),
    (
        "role-lolwut-bgrewriteaof",
        r#"
        ROLE
        ROLE x
        LOLWUT VERSION x
        LOLWUT VERSION 5 x
        LOLWUT VERSION 6 1 x
        BGREWRITEAOF x
        "#,
    ),
    (
        "multi-edges",
        r#"
        MULTI
        SAVE
        EXEC
        MULTI
        SHUTDOWN
        EXEC
        MULTI
        CONFIG SET maxmemory x
        SET a 1
        EXEC
        GET a
        MULTI
        SET a
        EXEC
        MULTI
        MULTI
        EXEC
        EXEC
        DISCARD
        MULTI
        WATCH x
        EXEC
        SET x 1
        SET y 2
        WATCH x y nope
        FLUSHALL
        MULTI
        PING
        EXEC
        WATCH nope
        FLUSHALL
        MULTI
        PING
        EXEC
        MULTI
        FOO
        EXEC
        CLIENT KILL USER nobody
        CLIENT KILL MAXAGE x
        CLIENT KILL ID 0
        CLIENT KILL TYPE foo
        CLIENT KILL SKIPME maybe
        CLIENT KILL 1.2.3.4:5
        CLIENT KILL ADDR 1.2.3.4:5
        CLIENT KILL ID 999999
        LATENCY RESET
        LATENCY RESET command x
        LATENCY GRAPH foo
        LATENCY HISTORY
        SLOWLOG GET 0
        SLOWLOG GET x
        SET m 1
        MOVE m 0
        MOVE m 1
        MOVE m 1
        MOVE m -1
        MOVE m 16
        MOVE m x
        MOVE nokey 1
        "#,
    ),
    (
        "client-reply-errors",
        r#"
        CLIENT REPLY
        CLIENT REPLY maybe
        CLIENT REPLY ON x
        CLIENT REPLY ON
        "#,
    ),
];

#[test]
fn server_command_scripts_match_redis() {
    run_scripts(SCRIPTS, 1);
    run_scripts(SCRIPTS, 4);
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 2);
    }
}

/// CLIENT REPLY OFF/ON/SKIP, each command sent on its own and read when
/// a reply is due.
const REPLY_CLIENTS: &str = r#"
    A> CLIENT REPLY OFF
    A> SET k 1
    A> INCR k
    A> GET nope
    A> INCR notanumber x
    A> CLIENT REPLY ON
    A<
    A: GET k
    A> CLIENT REPLY SKIP
    A> INCR k
    A: GET k
    A> CLIENT REPLY OFF
    A> CLIENT REPLY SKIP
    A> INCR k
    A> CLIENT REPLY ON
    A<
    A: GET k
    A> CLIENT REPLY SKIP
    A> PING
    A: PING
    A> CLIENT REPLY OFF
    A: RESET
    A: PING
"#;

#[test]
fn client_reply_matches_redis() {
    for shards in [1, 4] {
        run_clients("client-reply", REPLY_CLIENTS, shards, false);
    }
    run_clients("client-reply", REPLY_CLIENTS, 4, true);
}

/// The same modes with every command of a run in one write (one batch).
#[test]
fn client_reply_in_one_pipeline_matches_redis() {
    let pipeline = [
        "CLIENT REPLY OFF",
        "SET a 1",
        "INCR a",
        "CLIENT REPLY ON",
        "GET a",
        "CLIENT REPLY SKIP",
        "GET a",
        "INCR a",
        "CLIENT REPLY SKIP",
        "CLIENT REPLY SKIP",
        "INCR a",
        "GET a",
        "MSET {x}1 a {x}2 b",
        "CLIENT REPLY OFF",
        "MGET {x}1 {x}2 a",
        "CLIENT REPLY ON",
        "PING",
    ];
    let bytes: Vec<u8> = pipeline.iter().flat_map(|l| Raw::encode(&split(l))).collect();
    let redis = RedisServer::start();
    let mut r = redis.raw();
    r.send_bytes(&bytes);
    let want: Vec<Vec<u8>> = (0..6).map(|_| r.reply()).collect();
    for shards in [1, 4] {
        let b = Basalt::start(shards);
        let mut c = b.raw();
        c.send_bytes(&bytes);
        let got: Vec<Vec<u8>> = (0..6).map(|_| c.reply()).collect();
        assert_eq!(got, want, "{shards} shards: {:?}", got.iter().map(|g| show(g)).collect::<Vec<_>>());
        // Nothing more came: the next reply is PING's own.
        assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    }
}

fn int(r: &mut Raw, args: &[&str]) -> i64 {
    let reply = r.cmd(args);
    let text = String::from_utf8_lossy(&reply);
    text.trim_start_matches(':')
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{args:?}: {}", show(&reply)))
}

#[test]
fn memory_usage_grows_with_the_value_and_members() {
    for shards in [1, 4] {
        let b = Basalt::start(shards);
        let mut c = b.raw();
        c.cmd(&["SET", "small", "x"]);
        c.cmd(&["SET", "big", &"x".repeat(10_000)]);
        c.cmd(&["SET", "huge", &"y".repeat(300_000)]);
        let (small, big, huge) = (
            int(&mut c, &["MEMORY", "USAGE", "small"]),
            int(&mut c, &["MEMORY", "USAGE", "big"]),
            int(&mut c, &["MEMORY", "USAGE", "huge"]),
        );
        assert!(small > 0 && big >= small + 9_990 && huge >= 300_000, "{small} {big} {huge}");
        let mut h = vec!["HSET".to_string(), "h".to_string()];
        for i in 0..1000 {
            h.push(format!("field{i:04}"));
            h.push("v".repeat(20));
        }
        c.cmd(&h);
        c.cmd(&["HSET", "h1", "field0000", &"v".repeat(20)]);
        let (one, many) = (int(&mut c, &["MEMORY", "USAGE", "h1"]), int(&mut c, &["MEMORY", "USAGE", "h"]));
        let all = int(&mut c, &["MEMORY", "USAGE", "h", "SAMPLES", "0"]);
        assert!(many > 500 * one / 2, "1000 fields {many} against one {one}");
        // Every field is the same size: the sample's average is exact.
        assert!((all - many).abs() <= all / 50, "sampled {many}, all {all}");
        for (cmd, key) in [("SADD", "s"), ("RPUSH", "l")] {
            let mut args = vec![cmd.to_string(), key.to_string()];
            args.extend((0..500).map(|i| format!("member-{i:05}")));
            c.cmd(&args);
            let n = int(&mut c, &["MEMORY", "USAGE", key]);
            assert!(n > 500 * 12, "{key}: {n}");
        }
        c.cmd(&["EXPIRE", "small", "100"]);
        assert!(int(&mut c, &["MEMORY", "USAGE", "small"]) > small, "a TTL costs its index entry");
        assert_eq!(c.cmd(&["MEMORY", "USAGE", "nope"]), b"$-1\r\n");
    }
}

#[test]
fn memory_stats_doctor_malloc_stats() {
    let b = Basalt::start(2);
    let mut c = b.raw();
    c.cmd(&["HELLO", "3"]);
    for i in 0..20 {
        c.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    let stats = String::from_utf8_lossy(&c.cmd(&["MEMORY", "STATS"])).to_string();
    assert!(stats.starts_with('%'), "a map in RESP3: {stats}");
    for field in [
        "peak.allocated",
        "total.allocated",
        "startup.allocated",
        "overhead.total",
        "keys.count",
        "keys.bytes-per-key",
        "dataset.bytes",
        "dataset.percentage",
        "fragmentation",
        "db.0",
        "rocksdb.block-cache",
        "rocksdb.memtables",
        "meta-cache",
        "read-ahead",
        "connections",
    ] {
        assert!(stats.contains(&format!("\r\n{field}\r\n")), "MEMORY STATS lacks {field}: {stats}");
    }
    assert!(stats.contains("keys.count\r\n:20\r\n"), "{stats}");
    let doctor = String::from_utf8_lossy(&c.cmd(&["MEMORY", "DOCTOR"])).to_string();
    assert!(doctor.starts_with('=') && doctor.contains("Sam"), "{doctor}");
    let malloc = String::from_utf8_lossy(&c.cmd(&["MEMORY", "MALLOC-STATS"])).to_string();
    assert!(malloc.starts_with('=') && malloc.len() > 20, "{malloc}");
    // Both allocators: mimalloc's (Rust's allocations) and glibc's (RocksDB's).
    assert!(malloc.contains("mimalloc\ncommitted:") && malloc.contains("mallinfo2"), "{malloc}");
    let committed: u64 = malloc
        .split("committed:")
        .nth(1)
        .and_then(|r| r.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .expect("mimalloc's committed bytes");
    assert!(committed > 0, "{malloc}");
    let used = c.info_u64("memory", "used_memory");
    assert!(used >= committed, "used_memory counts mimalloc's pages: {used} < {committed}");
    assert_eq!(c.cmd(&["MEMORY", "PURGE"]), b"+OK\r\n");
    c.cmd(&["HELLO", "2"]);
    let stats2 = String::from_utf8_lossy(&c.cmd(&["MEMORY", "STATS"])).to_string();
    assert!(stats2.starts_with('*'), "a flat array in RESP2: {stats2}");
}

#[test]
fn role_lolwut_bgrewriteaof_answer_as_redis() {
    let redis = RedisServer::start();
    let b = Basalt::start(2);
    let (mut r, mut c) = (redis.raw(), b.raw());
    assert_eq!(c.cmd(&["ROLE"]), r.cmd(&["ROLE"]));
    assert_eq!(c.cmd(&["BGREWRITEAOF"]), r.cmd(&["BGREWRITEAOF"]));
    for args in [vec!["LOLWUT"], vec!["LOLWUT", "VERSION", "5"], vec!["LOLWUT", "VERSION", "9"]] {
        let (want, got) = (r.cmd(&args), c.cmd(&args));
        // The version line differs (7.0.15 against Basalt's 7.2.0); the
        // type and the words are Redis's.
        assert!(want.starts_with(b"$") && got.starts_with(b"$"), "{args:?}: {}", show(&got));
        assert!(String::from_utf8_lossy(&got).contains("Redis ver. "), "{}", show(&got));
    }
    c.cmd(&["HELLO", "3"]);
    assert!(c.cmd(&["LOLWUT"]).starts_with(b"="), "a verbatim string in RESP3");
}

#[test]
fn debug_error_reload_and_active_expire() {
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let b = Basalt::start_with(2, &["--enable-debug-command", "yes"]);
    let (mut r, mut c) = (redis.raw(), b.raw());
    for args in [
        vec!["DEBUG", "ERROR", "LOADING Redis is loading the dataset in memory"],
        vec!["DEBUG", "ERROR", "READONLY You can't write against a read only replica."],
        vec!["DEBUG", "ERROR", "OOM command not allowed"],
        vec!["DEBUG", "ERROR", "two\r\nlines"],
        vec!["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        vec!["SET", "k", "v", "PX", "50"],
        vec!["DEBUG", "RELOAD"],
        vec!["DEBUG", "RELOAD", "FOO"],
        vec!["DEBUG", "CHANGE-REPL-ID"],
    ] {
        assert_eq!(show(&c.cmd(&args)), show(&r.cmd(&args)), "{args:?}");
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    // With active expiry off the key is still counted; a read expires it.
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "keyspace"])).to_string();
    assert!(info.contains("db0:keys=1,"), "{info}");
    assert_eq!(c.cmd(&["GET", "k"]), b"$-1\r\n");
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    c.cmd(&["SET", "k2", "v", "PX", "50"]);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "keyspace"])).to_string();
    assert!(!info.contains("db0:"), "active expiry is back on: {info}");
}

/// The `# Section` lines of an INFO reply, in order.
fn sections(reply: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(reply)
        .lines()
        .filter_map(|l| l.strip_prefix("# ").map(str::to_string))
        .collect()
}

#[test]
fn info_has_every_section_redis_prints() {
    let redis = RedisServer::start();
    let b = Basalt::start(2);
    let (mut r, mut c) = (redis.raw(), b.raw());
    r.cmd(&["SET", "k", "v"]);
    c.cmd(&["SET", "k", "v"]);
    for args in [
        vec!["INFO"],
        vec!["INFO", "default"],
        vec!["INFO", "all"],
        vec!["INFO", "everything"],
        vec!["INFO", "server", "clients"],
        vec!["INFO", "cluster", "keyspace", "replication"],
        vec!["INFO", "modules"],
    ] {
        let (want, got) = (sections(&r.cmd(&args)), sections(&c.cmd(&args)));
        // Basalt adds its own `# Shards`; Redis's come in Redis's order.
        let got: Vec<String> = got.into_iter().filter(|s| s != "Shards").collect();
        assert_eq!(got, want, "{args:?}");
    }
    let info = String::from_utf8_lossy(&c.cmd(&["INFO"])).to_string();
    for line in [
        "cluster_enabled:0",
        "role:master",
        "connected_slaves:0",
        "db0:keys=1,expires=0,avg_ttl=0",
    ] {
        assert!(info.contains(line), "INFO lacks {line}");
    }
}

#[test]
fn one_scan_call_goes_on_across_shards() {
    let redis = RedisServer::start();
    let mut r = redis.raw();
    for shards in [2, 4] {
        let b = Basalt::start(shards);
        let mut c = b.raw();
        for raw in [&mut r, &mut c] {
            raw.cmd(&["FLUSHALL"]);
            for k in ["s1", "s2", "str1", "str2", "str3"] {
                if k.starts_with("str") {
                    raw.cmd(&["SET", k, "v"]);
                } else {
                    raw.cmd(&["SADD", k, "m"]);
                }
            }
        }
        for args in [
            vec!["SCAN", "0"],
            vec!["SCAN", "0", "TYPE", "set", "COUNT", "100000"],
            vec!["SCAN", "0", "MATCH", "str*"],
            vec!["SCAN", "0", "MATCH", "s?", "TYPE", "set"],
            vec!["SCAN", "0", "TYPE", "hash"],
        ] {
            let (want, got) = (r.cmd(&args), c.cmd(&args));
            assert!(got.starts_with(b"*2\r\n$1\r\n0\r\n"), "{shards} shards {args:?}: {}", show(&got));
            let keys = |b: &[u8]| {
                let mut k: Vec<String> = String::from_utf8_lossy(b)
                    .lines()
                    .skip(4)
                    .filter(|l| !l.starts_with('$'))
                    .map(str::to_string)
                    .collect();
                k.sort();
                k
            };
            assert_eq!(keys(&got), keys(&want), "{shards} shards {args:?}");
        }
        // COUNT 1 still pages, and the pages add up to every key once.
        let mut cursor = "0".to_string();
        let mut seen = Vec::new();
        loop {
            let reply = c.cmd(&["SCAN", &cursor, "COUNT", "1"]);
            let text = String::from_utf8_lossy(&reply).to_string();
            let lines: Vec<&str> = text.lines().collect();
            cursor = lines[2].to_string();
            seen.extend(lines.iter().skip(4).filter(|l| !l.starts_with('$')).map(|l| l.to_string()));
            if cursor == "0" {
                break;
            }
        }
        seen.sort();
        assert_eq!(seen, ["s1", "s2", "str1", "str2", "str3"], "{shards} shards");
    }
}

const ACCESS_SCRIPTS: &[(&str, &str)] = &[(
    "object-freq-idletime",
    r#"
    SET k v
    # OBJECT IDLETIME k reads 0 or 1 on either server (a whole-second clock
    # may tick between the two commands): access_times_follow_reads_and_writes
    # checks it.
    OBJECT IDLETIME nokey
    OBJECT FREQ k
    OBJECT FREQ nokey
    OBJECT FOO k
    CONFIG SET maxmemory-policy allkeys-lfu
    SET f v
    OBJECT FREQ f
    GET f
    OBJECT FREQ f
    RPUSH l a
    OBJECT FREQ l
    OBJECT IDLETIME f
    CONFIG SET maxmemory-policy allkeys-lru
    RESTORE r 0 payload IDLETIME 10 FREQ 5
    RESTORE r 0 payload FREQ 5 IDLETIME 10
    RESTORE r 0 payload IDLETIME -1
    RESTORE r 0 payload FREQ 256
    RESTORE r 0 payload IDLETIME
    "#,
)];

#[test]
fn object_freq_and_idletime_replies_match_redis() {
    run_scripts(ACCESS_SCRIPTS, 1);
    run_scripts(ACCESS_SCRIPTS, 4);
}

fn idle(c: &mut Raw, key: &str) -> i64 {
    int(c, &["OBJECT", "IDLETIME", key])
}

/// Whether `key` was touched just now: Redis's LRU clock counts whole
/// seconds, so a touch at x.999 s read at (x+1).001 s is 1 second idle.
fn fresh(c: &mut Raw, key: &str) -> bool {
    (0..=1).contains(&idle(c, key))
}

/// What touches a key and what does not, with a clock that really moves.
#[test]
fn access_times_follow_reads_and_writes() {
    for shards in [1, 4] {
        let b = Basalt::start_with(shards, &["--enable-debug-command", "yes"]);
        let mut c = b.raw();
        for k in ["a", "b", "c", "d", "e", "m1", "m2", "f"] {
            c.cmd(&["SET", k, "v"]);
        }
        c.cmd(&["RPUSH", "l", "x"]);
        assert!(fresh(&mut c, "a"));
        std::thread::sleep(std::time::Duration::from_millis(2100));
        c.cmd(&["GET", "a"]);
        c.cmd(&["RPUSH", "l", "y"]);
        c.cmd(&["MGET", "m1", "nope"]);
        c.cmd(&["MSET", "m2", "w"]);
        // TYPE, TTL, PTTL, EXISTS and OBJECT leave the time alone.
        for cmd in ["TYPE", "TTL", "PTTL", "EXISTS", "EXPIRETIME"] {
            c.cmd(&[cmd, "b"]);
        }
        c.cmd(&["OBJECT", "ENCODING", "b"]);
        c.cmd(&["TOUCH", "c"]);
        c.cmd(&["CLIENT", "NO-TOUCH", "ON"]);
        c.cmd(&["GET", "d"]);
        c.cmd(&["TOUCH", "e"]);
        c.cmd(&["CLIENT", "NO-TOUCH", "OFF"]);
        // RESET ends NO-TOUCH.
        c.cmd(&["CLIENT", "NO-TOUCH", "ON"]);
        c.cmd(&["RESET"]);
        c.cmd(&["GET", "f"]);
        assert!(fresh(&mut c, "a"), "{shards} shards: GET touches");
        assert!(fresh(&mut c, "f"), "{shards} shards: RESET ends NO-TOUCH");
        assert!(fresh(&mut c, "l"), "{shards} shards: RPUSH touches");
        assert!(fresh(&mut c, "m1"), "{shards} shards: MGET touches");
        assert!(fresh(&mut c, "m2"), "{shards} shards: MSET over a key touches");
        assert!(idle(&mut c, "b") >= 2, "{shards} shards: TYPE/TTL/EXISTS/OBJECT do not touch");
        assert!(fresh(&mut c, "c"), "{shards} shards: TOUCH touches");
        assert!(idle(&mut c, "d") >= 2, "{shards} shards: NO-TOUCH");
        assert!(fresh(&mut c, "e"), "{shards} shards: TOUCH touches under NO-TOUCH");
        let line = show(&c.cmd(&["DEBUG", "OBJECT", "b"]));
        // Redis's LRU clock counts whole seconds: 2.1 s reads as 2 or 3.
        assert!(
            line.starts_with("+Value at:")
                && line.contains("encoding:embstr")
                && (line.contains("lru_seconds_idle:2") || line.contains("lru_seconds_idle:3")),
            "{line}"
        );
        assert_eq!(show(&c.cmd(&["DEBUG", "OBJECT", "nope"])), "-ERR no such key\\r\\n");
        // A key written anew is fresh.
        c.cmd(&["SET", "b", "w"]);
        assert!(fresh(&mut c, "b"));
        // RESTORE's IDLETIME and FREQ.
        let dump = c.cmd(&["DUMP", "a"]);
        let payload = {
            let text = dump.clone();
            let start = text.iter().position(|&x| x == b'\n').unwrap() + 1;
            text[start..text.len() - 2].to_vec()
        };
        let ok = |c: &mut Raw, args: Vec<Vec<u8>>| assert_eq!(c.cmd(&args), b"+OK\r\n");
        ok(
            &mut c,
            vec![
                b"RESTORE".to_vec(),
                b"r1".to_vec(),
                b"0".to_vec(),
                payload.clone(),
                b"IDLETIME".to_vec(),
                b"1000".to_vec(),
            ],
        );
        assert!((1000..1005).contains(&idle(&mut c, "r1")));
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
        ok(
            &mut c,
            vec![
                b"RESTORE".to_vec(),
                b"r2".to_vec(),
                b"0".to_vec(),
                payload,
                b"FREQ".to_vec(),
                b"100".to_vec(),
            ],
        );
        assert_eq!(int(&mut c, &["OBJECT", "FREQ", "r2"]), 100);
        for _ in 0..200 {
            c.cmd(&["GET", "a"]);
        }
        let f = int(&mut c, &["OBJECT", "FREQ", "a"]);
        assert!(f > 5, "{shards} shards: 200 GETs raise the counter: {f}");
    }
}

/// CLIENT PAUSE: writes (or everything) wait, not fail; errors of the
/// checks come at once; UNPAUSE or the timeout lets them run, in order.
const PAUSE_CLIENTS: &str = r#"
    A: CLIENT PAUSE x
    A: CLIENT PAUSE -1
    A: CLIENT PAUSE 10 FOO
    A: CLIENT PAUSE 10 WRITE x
    A: SET k old
    D: MULTI
    D: INCR n
    A: CLIENT PAUSE 100000 WRITE
    B: GET k
    B> SET k new
    C> PUBLISH ch m
    D> EXEC
    SLEEP 100
    A: GET k
    A: SET k
    A: CLIENT UNPAUSE
    B<
    C<
    D<
    A: GET k
    A: CLIENT PAUSE 300 ALL
    B> GET k
    SLEEP 50
    B<
    A: CLIENT PAUSE 10 WRITE
    A: CLIENT UNPAUSE
"#;

#[test]
fn client_pause_matches_redis() {
    run_clients("client-pause", PAUSE_CLIENTS, 1, false);
    run_clients("client-pause", PAUSE_CLIENTS, 4, true);
}

/// Paused clients count as blocked; keys neither expire actively nor when
/// read during the pause, and do once it ends.
#[test]
fn client_pause_holds_expiry_and_counts_blocked() {
    let b = Basalt::start(2);
    let (mut a, mut w) = (b.raw(), b.raw());
    a.cmd(&["SET", "x", "1", "PX", "50"]);
    a.cmd(&["SET", "y", "1", "PX", "50"]);
    assert_eq!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(a.cmd(&["GET", "x"]), b"$-1\r\n", "expired keys read as gone");
    let info = String::from_utf8_lossy(&a.cmd(&["INFO"])).to_string();
    assert!(info.contains("expired_keys:0\r"), "nothing expired during the pause: {info}");
    assert!(info.contains("paused_actions:write\r"), "{info}");
    w.send_bytes(&Raw::encode(&["SET", "z", "1"]));
    std::thread::sleep(std::time::Duration::from_millis(100));
    let info = String::from_utf8_lossy(&a.cmd(&["INFO", "clients"])).to_string();
    assert!(info.contains("blocked_clients:1\r"), "{info}");
    a.cmd(&["CLIENT", "UNPAUSE"]);
    assert_eq!(w.reply(), b"+OK\r\n");
    a.cmd(&["GET", "x"]);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let info = String::from_utf8_lossy(&a.cmd(&["INFO"])).to_string();
    assert!(
        info.contains("expired_keys:2\r") && info.contains("paused_actions:none\r"),
        "{info}"
    );
}

/// A CLIENT LIST field of the client named `name`.
fn field(list: &str, name: &str, f: &str) -> u64 {
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no {name} in {list}"));
    let v = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
        .unwrap_or_else(|| panic!("no {f} in {line}"));
    v.parse().unwrap_or_else(|_| panic!("{f}={v}"))
}

/// CLIENT LIST's buffer figures follow the connection: a half-sent big
/// argument sits in qbuf, and the buffer shrinks once it ran; MULTI's queue
/// shows in multi-mem; the caller's own command in argv-mem.
#[test]
fn client_list_shows_real_buffer_figures() {
    let b = Basalt::start(2);
    let (mut a, mut w) = (b.raw(), b.raw());
    a.cmd(&["CLIENT", "SETNAME", "watcher"]);
    w.cmd(&["CLIENT", "SETNAME", "writer"]);
    let value = vec![b'x'; 100_000];
    let whole = Raw::encode(&[b"SET".to_vec(), b"big".to_vec(), value]);
    w.send_bytes(&whole[..60_000]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let list = String::from_utf8_lossy(&a.cmd(&["CLIENT", "LIST"])).to_string();
    assert!(field(&list, "writer", "qbuf") >= 59_000, "{list}");
    assert!(field(&list, "writer", "tot-mem") >= 60_000, "{list}");
    assert!(field(&list, "writer", "rbs") > 0 && field(&list, "writer", "rbp") > 0, "{list}");
    assert_eq!(field(&list, "watcher", "argv-mem"), 10, "CLIENT LIST's own arguments: {list}");
    w.send_bytes(&whole[60_000..]);
    assert_eq!(w.reply(), b"+OK\r\n");
    w.cmd(&["MULTI"]);
    w.cmd(&["SET", "k", "0123456789"]);
    let list = String::from_utf8_lossy(&a.cmd(&["CLIENT", "LIST"])).to_string();
    assert_eq!(field(&list, "writer", "qbuf"), 0, "{list}");
    assert!(field(&list, "writer", "qbuf-free") < 32 << 10, "the big buffer went back: {list}");
    assert!(field(&list, "writer", "multi-mem") >= 14, "{list}");
    w.cmd(&["EXEC"]);
    let info = String::from_utf8_lossy(&w.cmd(&["CLIENT", "INFO"])).to_string();
    assert!(info.contains(" multi-mem=0 ") && info.contains(" argv-mem=10 "), "{info}");
}

/// Subcommands have stats of their own, named as Redis names them.
#[test]
fn subcommand_stats_are_named_like_redis() {
    let redis = RedisServer::start();
    let b = Basalt::start(2);
    let (mut r, mut c) = (redis.raw(), b.raw());
    for raw in [&mut r, &mut c] {
        raw.cmd(&["CONFIG", "RESETSTAT"]);
        raw.cmd(&["CONFIG", "GET", "port"]);
        raw.cmd(&["CLIENT", "ID"]);
        raw.cmd(&["CONFIG", "FOO"]);
    }
    let lines = |raw: &mut Raw| {
        let info = String::from_utf8_lossy(&raw.cmd(&["INFO", "commandstats"])).to_string();
        let mut names: Vec<String> = info
            .lines()
            .filter_map(|l| l.strip_prefix("cmdstat_"))
            .filter_map(|l| l.split(':').next().map(str::to_string))
            .collect();
        names.sort();
        names
    };
    assert_eq!(lines(&mut c), lines(&mut r));
    let hist = |raw: &mut Raw| {
        let h = String::from_utf8_lossy(&raw.cmd(&["LATENCY", "HISTOGRAM", "config", "client|id", "nope"])).to_string();
        let mut names: Vec<String> = h.lines().filter(|l| l.contains('|')).map(str::to_string).collect();
        names.sort();
        names
    };
    assert_eq!(hist(&mut c), hist(&mut r));
}

/// SLOWLOG's entries (arguments cut as Redis cuts them, client name) and
/// its length limit over every shard, against redis-server.
#[test]
fn slowlog_entries_and_limit_match_redis() {
    let redis = RedisServer::start();
    let b = Basalt::start(4);
    let entries = |port: u16| {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("client");
        let run = |c: &mut redis::Connection, args: &[&str]| {
            let mut cmd = redis::cmd(args[0]);
            for a in &args[1..] {
                cmd.arg(*a);
            }
            cmd.query::<redis::Value>(c).expect("command");
        };
        run(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        run(&mut c, &["SLOWLOG", "RESET"]);
        run(&mut c, &["CLIENT", "SETNAME", "me"]);
        let long = "a".repeat(200);
        run(&mut c, &["SET", &long, "1"]);
        let many: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        let mut mget = vec!["MGET"];
        mget.extend(many.iter().map(String::as_str));
        run(&mut c, &mget);
        let got: Vec<(i64, i64, i64, Vec<String>, String, String)> = redis::cmd("SLOWLOG").arg("GET").arg(3).query(&mut c).expect("GET");
        let all: Vec<(Vec<String>, String)> = got.into_iter().map(|e| (e.3, e.5)).collect();
        run(&mut c, &["CONFIG", "SET", "slowlog-max-len", "2"]);
        run(&mut c, &["PING"]);
        let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(&mut c).expect("LEN");
        let got: Vec<(i64, i64, i64, Vec<String>, String, String)> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query(&mut c).expect("GET");
        let after: Vec<Vec<String>> = got.into_iter().map(|e| e.3).collect();
        (all, len, after)
    };
    assert_eq!(entries(b.port), entries(redis.port));
}

/// A log written to a file (not a terminal) has no colour codes.
#[test]
fn logs_to_a_file_are_plain_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("log");
    let port = common::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args([
            "--port",
            &port.to_string(),
            "--dir",
            &tmp.path().join("d").display().to_string(),
            "--shards",
            "1",
        ])
        .args(["--block-cache-size", "16mb", "--write-buffer-size", "4mb"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).expect("read log");
    assert!(text.contains("Basalt starting"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in a log file: {text:?}");
}

/// GETKEYS of a command with more than 256 keys (Redis's key buffer grows).
#[test]
fn getkeys_of_many_keys() {
    let redis = RedisServer::start();
    let b = Basalt::start(1);
    let mut args = vec!["COMMAND".to_string(), "GETKEYS".to_string(), "MGET".to_string()];
    args.extend((0..300).map(|i| format!("key{i}")));
    let mut sinter = vec![
        "COMMAND".to_string(),
        "GETKEYS".to_string(),
        "SINTERCARD".to_string(),
        "300".to_string(),
    ];
    sinter.extend((0..300).map(|i| format!("key{i}")));
    for a in [args, sinter] {
        let (want, got) = (redis.raw().cmd(&a), b.raw().cmd(&a));
        assert!(got.starts_with(b"*300\r\n"), "{}", show(&got[..40.min(got.len())]));
        assert_eq!(got, want);
    }
}
