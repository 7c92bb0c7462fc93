//! Redis's DUMP format both ways (issue 37, item 3): every type and
//! encoding redis-server 7.0 dumps (streams with their nodes, groups,
//! consumers and pending entries too) restores in Basalt and reads the
//! same, and what Basalt dumps restores in redis-server; older encodings
//! (ziplists, zipmaps, intsets, quicklists of ziplists) built by hand;
//! hashes with field TTLs; streams whose consumers need Redis 7.2's type;
//! malformed payloads; MIGRATE both ways with its options.

mod common;

use common::{Basalt, Raw, RedisServer, Rng};
use crc::{Crc, CRC_64_REDIS};
use redis::Value;

/// A reply as its lines, arrays flattened, sorted when `sorted` (sets and
/// hashes come back in an order neither server defines).
fn lines(reply: &[u8], sorted: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(reply).to_string();
    let mut out: Vec<String> = text.split("\r\n").map(str::to_string).collect();
    if sorted {
        // Pair a bulk's length line with its body before sorting.
        let mut items = Vec::new();
        let mut it = out.into_iter().skip(1).peekable();
        while let Some(l) = it.next() {
            if l.starts_with('$') && l != "$-1" {
                let body = it.next().unwrap_or_default();
                items.push(format!("{l} {body}"));
            } else if !l.is_empty() {
                items.push(l);
            }
        }
        items.sort();
        out = items;
    }
    out
}

/// What a key holds, read with the commands of its type.
fn read(c: &mut Raw, key: &str) -> Vec<String> {
    let ty = String::from_utf8_lossy(&c.cmd(&["TYPE", key])).trim().to_string();
    let mut out = vec![ty.clone()];
    match ty.as_str() {
        "+string" => out.extend(lines(&c.cmd(&["GET", key]), false)),
        "+list" => out.extend(lines(&c.cmd(&["LRANGE", key, "0", "-1"]), false)),
        "+set" => out.extend(lines(&c.cmd(&["SMEMBERS", key]), true)),
        "+zset" => out.extend(lines(&c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]), false)),
        "+hash" => {
            // Field and value together.
            let flat = lines(&c.cmd(&["HGETALL", key]), false);
            let mut pairs: Vec<String> = flat[1..].chunks(4).filter(|p| p.len() == 4).map(|p| p.join(" ")).collect();
            pairs.sort();
            out.extend(pairs);
        }
        "+stream" => out.extend(stream_view(c, key, false)),
        _ => {}
    }
    out
}

/// An element of a reply of alternating names and values.
fn field<'a>(v: &'a Value, name: &str) -> &'a Value {
    let Value::Array(items) = v else { panic!("not an array: {v:?}") };
    let at = items
        .chunks(2)
        .position(|p| matches!(&p[0], Value::BulkString(n) if n == name.as_bytes()))
        .unwrap_or_else(|| panic!("no {name} in {v:?}"));
    &items[2 * at + 1]
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        _ => panic!("not an array: {v:?}"),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).to_string(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        Value::Array(a) => format!("[{}]", a.iter().map(text).collect::<Vec<_>>().join(" ")),
        other => format!("{other:?}"),
    }
}

/// A stream as XRANGE and XINFO STREAM FULL show it: entries, counters,
/// node count, groups with their pending entries (delivery times and
/// counts) and consumers (seen time; `active`: the active time too, which
/// redis-server 7.0 does not have).
fn stream_view(c: &mut Raw, key: &str, active: bool) -> Vec<String> {
    let mut out = lines(&c.cmd(&["XRANGE", key, "-", "+"]), false);
    let full = redis::parse_redis_value(&c.cmd(&["XINFO", "STREAM", key, "FULL", "COUNT", "0"])).expect("XINFO");
    for f in [
        "length",
        "radix-tree-keys",
        "last-generated-id",
        "max-deleted-entry-id",
        "entries-added",
        "recorded-first-entry-id",
    ] {
        out.push(format!("{f}={}", text(field(&full, f))));
    }
    for g in items(field(&full, "groups")) {
        for f in ["name", "last-delivered-id", "entries-read", "lag", "pel-count", "pending"] {
            out.push(format!("group {f}={}", text(field(g, f))));
        }
        for con in items(field(g, "consumers")) {
            let mut fs = vec!["name", "seen-time", "pel-count", "pending"];
            if active {
                fs.push("active-time");
            }
            for f in fs {
                out.push(format!("consumer {f}={}", text(field(con, f))));
            }
        }
    }
    out
}

fn dump(c: &mut Raw, key: &str) -> Vec<u8> {
    let reply = c.cmd(&["DUMP", key]);
    assert!(reply.starts_with(b"$"), "DUMP {key}: {}", String::from_utf8_lossy(&reply));
    let at = reply.iter().position(|&b| b == b'\n').unwrap() + 1;
    reply[at..reply.len() - 2].to_vec()
}

fn restore(c: &mut Raw, key: &str, payload: &[u8], extra: &[&str]) -> Vec<u8> {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"0", payload];
    args.extend(extra.iter().map(|a| a.as_bytes()));
    c.cmd(&args)
}

/// Fills `c` with one key per type and encoding, named by what they are.
fn fill(c: &mut Raw, rng: &mut Rng) -> Vec<String> {
    let mut keys = Vec::new();
    let mut run = |c: &mut Raw, key: &str, cmds: Vec<Vec<String>>| {
        for cmd in cmds {
            let reply = c.cmd(&cmd);
            assert!(!reply.starts_with(b"-"), "{cmd:?}: {}", String::from_utf8_lossy(&reply));
        }
        keys.push(key.to_string());
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    for (name, n, big) in [
        ("small", 5usize, false),
        ("mid", 200, false),
        ("bigval", 3, true),
        ("large", 3000, false),
    ] {
        let val = |i: usize, rng: &mut Rng| -> String {
            match (big, rng.below(4)) {
                (true, _) => "x".repeat(100 + rng.below(20000)),
                (_, 0) => i.to_string(),
                (_, 1) => format!("-{}", rng.next() % 100_000_000_000),
                (_, 2) => String::new(),
                _ => format!("v{i}-{}", rng.below(1000)),
            }
        };
        let mut list = s(&["RPUSH", &format!("list:{name}")]);
        let mut set = s(&["SADD", &format!("set:{name}")]);
        let mut iset = s(&["SADD", &format!("intset:{name}")]);
        let mut hash = s(&["HSET", &format!("hash:{name}")]);
        let mut zset = s(&["ZADD", &format!("zset:{name}")]);
        for i in 0..n {
            list.push(val(i, rng));
            set.push(format!("{}-{i}", val(i, rng)));
            iset.push((i as i64 * 7 - 300).to_string());
            hash.push(format!("f{i}"));
            hash.push(val(i, rng));
            let score = match rng.below(5) {
                0 => "inf".to_string(),
                1 => "-1.5".to_string(),
                // Scores whose text is the same in 7.0's %.17g and the
                // shortest form Basalt (and 7.2) prints.
                2 => (rng.below(1000) as f64 / 4.0).to_string(),
                _ => i.to_string(),
            };
            zset.push(score);
            zset.push(format!("m{i}-{}", val(i, rng).len()));
        }
        run(c, &format!("list:{name}"), vec![list]);
        run(c, &format!("set:{name}"), vec![set]);
        run(c, &format!("intset:{name}"), vec![iset]);
        run(c, &format!("hash:{name}"), vec![hash]);
        run(c, &format!("zset:{name}"), vec![zset]);
    }
    // Streams: entries with the master's fields and others, deleted ones,
    // many nodes (entries and bytes), groups with pending entries, claimed
    // ones, consumers without any, an empty stream with a group.
    let small = [
        "XADD stream:small 1-1 a 1 b 2",
        "XADD stream:small 1-2 a 3 b 4",
        "XADD stream:small 2-0 c 5",
        "XADD stream:small 3-0 a 1 b 2 c -70000",
        "XDEL stream:small 1-2",
        "XGROUP CREATE stream:small g1 0",
        "XREADGROUP GROUP g1 alice COUNT 2 STREAMS stream:small >",
        "XREADGROUP GROUP g1 bob COUNT 1 STREAMS stream:small >",
        "XACK stream:small g1 1-1",
        "XGROUP CREATE stream:small g2 $ ENTRIESREAD 3",
        "XGROUP CREATECONSUMER stream:small g2 idle",
    ];
    let words = |l: &str| l.split(' ').map(str::to_string).collect::<Vec<_>>();
    run(c, "stream:small", small.iter().map(|l| words(l)).collect());
    let mut cmds = Vec::new();
    for i in 1..=3000usize {
        let mut x = s(&["XADD", "stream:large", &format!("{i}-{}", rng.below(3))]);
        match rng.below(10) {
            0 => x.extend(s(&["other", &i.to_string()])),
            1 => x.extend(s(&["name", &"y".repeat(3000 + rng.below(3000)), "value", "1"])),
            2 => x.extend(s(&["value", "2", "name", "swapped"])),
            _ => x.extend(s(&["name", &format!("n{i}"), "value", &(rng.next() % 1_000_000).to_string()])),
        }
        cmds.push(x);
    }
    for _ in 0..100 {
        cmds.push(s(&["XDEL", "stream:large", &format!("{}-0", 1 + rng.below(3000))]));
    }
    for l in [
        "XTRIM stream:large MAXLEN 2800",
        "XGROUP CREATE stream:large g 0",
        "XREADGROUP GROUP g c1 COUNT 400 STREAMS stream:large >",
        "XREADGROUP GROUP g c2 COUNT 300 STREAMS stream:large >",
        "XAUTOCLAIM stream:large g c3 0 0-0 COUNT 50",
        "XGROUP CREATE stream:large h $",
    ] {
        cmds.push(words(l));
    }
    run(c, "stream:large", cmds);
    let empty = [
        "XADD stream:empty 5-0 a 1",
        "XDEL stream:empty 5-0",
        "XGROUP CREATE stream:empty g 0",
        "XGROUP CREATECONSUMER stream:empty g idle",
    ];
    run(c, "stream:empty", empty.iter().map(|l| words(l)).collect());
    run(c, "string:int", vec![s(&["SET", "string:int", "12345"])]);
    run(c, "string:raw", vec![s(&["SET", "string:raw", &"ab".repeat(5000)])]);
    run(
        c,
        "ttl:list",
        vec![s(&["RPUSH", "ttl:list", "a", "b"]), s(&["PEXPIRE", "ttl:list", "500000"])],
    );
    keys
}

#[test]
fn redis_dumps_restore_here_and_back() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(42);
    for key in fill(&mut r, &mut rng) {
        let want = read(&mut r, &key);
        let p = dump(&mut r, &key);
        assert_eq!(restore(&mut b, &key, &p, &[]), b"+OK\r\n", "{key}");
        assert_eq!(read(&mut b, &key), want, "{key}: redis -> basalt");
        // And back: Basalt's payload into redis-server.
        let p = dump(&mut b, &key);
        let back = format!("{key}:back");
        let got = restore(&mut r, &back, &p, &[]);
        assert_eq!(got, b"+OK\r\n", "{key}: {}", String::from_utf8_lossy(&got));
        assert_eq!(read(&mut r, &back), want, "{key}: basalt -> redis");
        // Same OBJECT ENCODING once redis-server loaded it as its own.
        assert_eq!(
            r.cmd(&["OBJECT", "ENCODING", &back]),
            r.cmd(&["OBJECT", "ENCODING", &key]),
            "{key}: encoding after the round trip"
        );
    }
    // BUSYKEY, REPLACE, ABSTTL and the TTL of a Redis payload.
    let p = dump(&mut r, "list:small");
    assert_eq!(
        restore(&mut b, "list:small", &p, &[]),
        b"-BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(restore(&mut b, "list:small", &p, &["REPLACE"]), b"+OK\r\n");
    let args: [&[u8]; 4] = [b"RESTORE", b"k:ttl", b"100000", &p];
    assert_eq!(b.cmd(&args), b"+OK\r\n");
    let ttl = String::from_utf8_lossy(&b.cmd(&["PTTL", "k:ttl"])).to_string();
    let ttl: i64 = ttl.trim().trim_start_matches(':').parse().unwrap();
    assert!(ttl > 90_000 && ttl <= 100_000, "{ttl}");
}

/// Payloads of older encodings, built by hand: type, body, RDB version 9,
/// CRC-64.
fn sealed(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = Crc::<u64>::new(&CRC_64_REDIS).checksum(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

fn ziplist(items: &[&[u8]]) -> Vec<u8> {
    let mut zl = vec![0u8; 10];
    let mut prev = 0usize;
    for it in items {
        let start = zl.len();
        if prev < 254 {
            zl.push(prev as u8);
        } else {
            zl.push(0xFE);
            zl.extend_from_slice(&(prev as u32).to_le_bytes());
        }
        match std::str::from_utf8(it)
            .ok()
            .and_then(|s| s.parse::<i16>().ok())
            .filter(|v| v.to_string().as_bytes() == *it)
        {
            Some(v) => {
                zl.push(0xC0);
                zl.extend_from_slice(&v.to_le_bytes());
            }
            None => {
                assert!(it.len() < 64);
                zl.push(it.len() as u8);
                zl.extend_from_slice(it);
            }
        }
        prev = zl.len() - start;
    }
    zl.push(0xFF);
    let n = zl.len() as u32;
    let tail = (zl.len() - 1 - prev) as u32;
    zl[..4].copy_from_slice(&n.to_le_bytes());
    zl[4..8].copy_from_slice(&tail.to_le_bytes());
    zl[8..10].copy_from_slice(&(items.len() as u16).to_le_bytes());
    zl
}

fn with_blob(ty: u8, blob: &[u8]) -> Vec<u8> {
    let mut body = vec![ty];
    assert!(blob.len() < 16384);
    body.push(0x40 | (blob.len() >> 8) as u8);
    body.push(blob.len() as u8);
    body.extend_from_slice(blob);
    sealed(&body, 9)
}

#[test]
fn older_encodings_restore() {
    let basalt = Basalt::start(1);
    let mut b = basalt.raw();
    let ok = |c: &mut Raw, key: &str, p: &[u8]| {
        let got = restore(c, key, p, &[]);
        assert_eq!(got, b"+OK\r\n", "{key}: {}", String::from_utf8_lossy(&got));
    };
    // A list as a ziplist (type 10), and as a quicklist of ziplists (14).
    ok(&mut b, "zl", &with_blob(10, &ziplist(&[b"a", b"300", b"-2", b"hello"])));
    assert_eq!(
        read(&mut b, "zl"),
        ["+list", "*4", "$1", "a", "$3", "300", "$2", "-2", "$5", "hello", ""]
    );
    let mut body = vec![14u8, 2];
    for part in [ziplist(&[b"a", b"b"]), ziplist(&[b"7"])] {
        body.push(part.len() as u8);
        body.extend_from_slice(&part);
    }
    ok(&mut b, "ql", &sealed(&body, 9));
    assert_eq!(read(&mut b, "ql"), ["+list", "*3", "$1", "a", "$1", "b", "$1", "7", ""]);
    // A hash as a ziplist (13) and a zipmap (9); a sorted set as a ziplist (12).
    ok(&mut b, "hz", &with_blob(13, &ziplist(&[b"f", b"1", b"g", b"two"])));
    assert_eq!(read(&mut b, "hz"), ["+hash", "$1 f $1 1", "$1 g $3 two"]);
    let zipmap = [2u8, 1, b'a', 1, 0, b'b', 2, b'c', b'd', 3, 2, b'e', b'f', b'g', 0, 0, 0xff];
    ok(&mut b, "zm", &with_blob(9, &zipmap));
    assert_eq!(read(&mut b, "zm"), ["+hash", "$1 a $1 b", "$2 cd $3 efg"]);
    ok(&mut b, "zz", &with_blob(12, &ziplist(&[b"x", b"2.5", b"y", b"-1"])));
    assert_eq!(
        read(&mut b, "zz"),
        ["+zset", "*4", "$1", "y", "$2", "-1", "$1", "x", "$3", "2.5", ""]
    );
    // An intset (11), 16-bit.
    let mut is = vec![2, 0, 0, 0, 3, 0, 0, 0];
    for v in [-5i16, 0, 900] {
        is.extend_from_slice(&v.to_le_bytes());
    }
    ok(&mut b, "is", &with_blob(11, &is));
    assert_eq!(read(&mut b, "is"), ["+set", "$1 0", "$2 -5", "$3 900"]);
    // A sorted set with text scores (3): a length byte, 254 for +inf.
    let mut body = vec![3u8, 2, 1, b'a', 3, b'1', b'.', b'5', 1, b'b', 254];
    let p = sealed(&body, 6);
    ok(&mut b, "z3", &p);
    assert_eq!(
        read(&mut b, "z3"),
        ["+zset", "*4", "$1", "a", "$3", "1.5", "$1", "b", "$3", "inf", ""]
    );
    // Refusals: a duplicate member, an empty set, a NaN score.
    body = vec![2u8, 2, 1, b'a', 1, b'a'];
    assert_eq!(restore(&mut b, "dup", &sealed(&body, 9), &[]), b"-ERR Bad data format\r\n");
    assert_eq!(restore(&mut b, "empty", &sealed(&[2u8, 0], 9), &[]), b"-ERR Bad data format\r\n");
    body = vec![3u8, 1, 1, b'a', 253];
    assert_eq!(restore(&mut b, "nan", &sealed(&body, 9), &[]), b"-ERR Bad data format\r\n");
    assert_eq!(
        restore(&mut b, "v13", &sealed(&[2u8, 1, 1, b'a'], 13), &[]),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert_eq!(b.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn hash_field_ttls_survive_dump_and_restore() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    b.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    b.cmd(&["HPEXPIRE", "h", "500000", "FIELDS", "1", "a"]);
    b.cmd(&["HPEXPIRE", "h", "900000", "FIELDS", "1", "c"]);
    let p = dump(&mut b, "h");
    // RDB version 12 (Redis 7.4's hash with metadata).
    assert_eq!(u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]), 12);
    assert_eq!(restore(&mut b, "h2", &p, &[]), b"+OK\r\n");
    assert_eq!(read(&mut b, "h2"), read(&mut b, "h"));
    let ttls = String::from_utf8_lossy(&b.cmd(&["HPTTL", "h2", "FIELDS", "3", "a", "b", "c"])).to_string();
    let ttls: Vec<i64> = ttls
        .split("\r\n")
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|v| v.parse().ok())
        .collect();
    assert!(
        ttls[0] > 400_000 && ttls[0] <= 500_000 && ttls[1] == -1 && ttls[2] > 800_000,
        "{ttls:?}"
    );
    // redis-server 7.0 reads RDB 10 at most: Redis's own refusal.
    assert_eq!(
        restore(&mut r, "h", &p, &[]),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
}

#[test]
fn basalt_streams_dump_as_redis_streams() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let version = |p: &[u8]| (p[0], u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]));
    // Consumers that read (seen and active at once): type 19, RDB 10,
    // which redis-server 7.0 loads.
    for i in 0..500 {
        let f = if i % 3 == 0 { "x" } else { "f" };
        b.cmd(&["XADD", "s", &format!("{}-{}", 1000 + i / 3, i % 3), f, &i.to_string(), "g", "v"]);
    }
    b.cmd(&["XDEL", "s", "1100-1"]);
    b.cmd(&["XGROUP", "CREATE", "s", "grp", "0"]);
    b.cmd(&["XREADGROUP", "GROUP", "grp", "alice", "COUNT", "120", "STREAMS", "s", ">"]);
    b.cmd(&["XREADGROUP", "GROUP", "grp", "bob", "COUNT", "30", "STREAMS", "s", ">"]);
    let p = dump(&mut b, "s");
    assert_eq!(version(&p), (19, 10));
    assert_eq!(restore(&mut b, "s2", &p, &[]), b"+OK\r\n");
    assert_eq!(stream_view(&mut b, "s2", true), stream_view(&mut b, "s", true));
    assert_eq!(restore(&mut r, "s", &p, &[]), b"+OK\r\n");
    assert_eq!(stream_view(&mut r, "s", false), stream_view(&mut b, "s", false));
    // Both go on the same way: an XADD lands in the same node.
    for c in [&mut r, &mut b] {
        c.cmd(&["XADD", "s", "9999999999999-0", "f", "1", "g", "v"]);
    }
    assert_eq!(stream_view(&mut r, "s", false), stream_view(&mut b, "s", false));
    // A consumer never active (or active apart from seen): type 21 at RDB
    // 11, which keeps the active time; redis-server 7.0 refuses it as it
    // refuses any RDB version past 10.
    b.cmd(&["XGROUP", "CREATECONSUMER", "s", "grp", "lazy"]);
    let p = dump(&mut b, "s");
    assert_eq!(version(&p), (21, 11));
    assert_eq!(restore(&mut b, "s3", &p, &[]), b"+OK\r\n");
    assert_eq!(stream_view(&mut b, "s3", true), stream_view(&mut b, "s", true));
    assert_eq!(
        restore(&mut r, "s3", &p, &[]),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
    // An empty stream, and one whose entries were all trimmed.
    b.cmd(&["XGROUP", "CREATE", "e", "g", "$", "MKSTREAM"]);
    b.cmd(&["XADD", "t", "5-5", "a", "1"]);
    b.cmd(&["XTRIM", "t", "MAXLEN", "0"]);
    for k in ["e", "t"] {
        let p = dump(&mut b, k);
        assert_eq!(restore(&mut r, k, &p, &[]), b"+OK\r\n");
        assert_eq!(stream_view(&mut r, k, false), stream_view(&mut b, k, false), "{k}");
    }
    // Refusals: a consumer owning an entry its group does not hold.
    let mut body = vec![19u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, b'g', 0, 0, 0, 0, 1, 1, b'c'];
    body.extend_from_slice(&7u64.to_le_bytes());
    body.push(1);
    body.extend_from_slice(&[0u8; 16]);
    assert_eq!(restore(&mut b, "bad", &sealed(&body, 10), &[]), b"-ERR Bad data format\r\n");
}

#[test]
fn malformed_payloads_never_hurt() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(7);
    let keys = fill(&mut r, &mut rng);
    let mut payloads: Vec<Vec<u8>> = keys.iter().map(|k| dump(&mut r, k)).collect();
    payloads.push(sealed(&[2u8, 1, 1, b'a'], 9));
    let crc = Crc::<u64>::new(&CRC_64_REDIS);
    let mut accepted = 0;
    for round in 0..600 {
        let mut p = payloads[rng.below(payloads.len())].clone();
        let body_len = p.len() - 10;
        match rng.below(4) {
            0 => {
                let at = rng.below(body_len);
                p[at] ^= 1 << rng.below(8);
            }
            1 => p.truncate(1 + rng.below(body_len)),
            2 => {
                let at = rng.below(body_len);
                p.insert(at, rng.next() as u8);
            }
            _ => {
                let at = rng.below(body_len);
                p[at] = rng.next() as u8;
            }
        }
        // Half of them get a right checksum, so the body is what is judged.
        if round % 2 == 0 && p.len() >= 10 {
            let n = p.len() - 8;
            let sum = crc.checksum(&p[..n]);
            p[n..].copy_from_slice(&sum.to_le_bytes());
        }
        let key = format!("fuzz{round}");
        let got = restore(&mut b, &key, &p, &[]);
        match got.as_slice() {
            b"+OK\r\n" => {
                accepted += 1;
                // What was accepted reads back without an error.
                let back = read(&mut b, &key);
                assert!(
                    back[0].starts_with('+') && back.iter().all(|l| !l.starts_with("-ERR") && !l.starts_with("-WRONGTYPE")),
                    "{back:?}"
                );
            }
            b"-ERR Bad data format\r\n" | b"-ERR DUMP payload version or checksum are wrong\r\n" => {}
            other => panic!("round {round}: {}", String::from_utf8_lossy(other)),
        }
        assert_eq!(b.cmd(&["PING"]), b"+PONG\r\n");
    }
    assert!(accepted < 600);
}

#[test]
fn migrate_both_ways() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(3);
    // 10k keys of every type on redis-server, moved to Basalt in batches.
    let mut keys = Vec::new();
    for i in 0..10_000 {
        let k = format!("key:{i}");
        let reply = match i % 6 {
            0 => r.cmd(&["SET", &k, &format!("v{}", rng.below(1000))]),
            1 => r.cmd(&["RPUSH", &k, "a", &i.to_string(), "c"]),
            2 => r.cmd(&["SADD", &k, "x", &i.to_string()]),
            3 => r.cmd(&["HSET", &k, "f", &i.to_string(), "g", "h"]),
            4 => r.cmd(&["ZADD", &k, &i.to_string(), "m", "1.5", "n"]),
            _ => {
                r.cmd(&["XADD", &k, &format!("{i}-1"), "f", &i.to_string()]);
                r.cmd(&["XGROUP", "CREATE", &k, "g", "0"]);
                r.cmd(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", &k, ">"])
            }
        };
        assert!(!reply.starts_with(b"-"));
        keys.push(k);
    }
    r.cmd(&["PEXPIRE", "key:0", "600000"]);
    let want: Vec<Vec<String>> = keys.iter().map(|k| read(&mut r, k)).collect();
    let port = basalt.port.to_string();
    let port = port.as_str();
    for chunk in keys.chunks(1000) {
        let mut args = vec!["MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"];
        args.extend(chunk.iter().map(String::as_str));
        assert_eq!(r.cmd(&args), b"+OK\r\n");
    }
    assert_eq!(r.cmd(&["DBSIZE"]), b":0\r\n");
    for (k, w) in keys.iter().zip(&want) {
        assert_eq!(&read(&mut b, k), w, "{k}");
    }
    let ttl: i64 = String::from_utf8_lossy(&b.cmd(&["PTTL", "key:0"])).trim()[1..].parse().unwrap();
    assert!(ttl > 500_000, "{ttl}");
    // And back to redis-server, from Basalt.
    let rport = redis.port.to_string();
    let rport = rport.as_str();
    for chunk in keys.chunks(1000) {
        let mut args = vec!["MIGRATE", "127.0.0.1", rport, "", "0", "5000", "KEYS"];
        args.extend(chunk.iter().map(String::as_str));
        assert_eq!(b.cmd(&args), b"+OK\r\n");
    }
    assert_eq!(b.cmd(&["DBSIZE"]), b":0\r\n");
    for (k, w) in keys.iter().zip(&want) {
        assert_eq!(&read(&mut r, k), w, "{k}");
    }
    // One key, COPY and REPLACE, errors, AUTH.
    b.cmd(&["SET", "one", "1"]);
    assert_eq!(b.cmd(&["MIGRATE", "127.0.0.1", rport, "one", "0", "1000", "COPY"]), b"+OK\r\n");
    assert_eq!(b.cmd(&["GET", "one"]), b"$1\r\n1\r\n");
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", rport, "one", "0", "1000", "COPY"]),
        b"-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(b.cmd(&["MIGRATE", "127.0.0.1", rport, "one", "0", "1000", "REPLACE"]), b"+OK\r\n");
    assert_eq!(b.cmd(&["EXISTS", "one"]), b":0\r\n");
    assert_eq!(b.cmd(&["MIGRATE", "127.0.0.1", rport, "nothing", "0", "1000"]), b"+NOKEY\r\n");
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", rport, "a", "0", "1000", "KEYS", "b"]),
        b"-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n"
    );
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", rport, "a", "x", "1000"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", rport, "a", "0", "1000", "FOO"]),
        b"-ERR syntax error\r\n"
    );
    b.cmd(&["SET", "two", "2"]);
    let closed = common::free_port().to_string();
    let closed = closed.as_str();
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", closed, "two", "0", "500"]),
        b"-IOERR error or timeout connecting to the client\r\n"
    );
    // To a server with a password: AUTH and AUTH2.
    let locked = RedisServer::start_with(&["--requirepass", "sekret"]);
    let lport = locked.port.to_string();
    let lport = lport.as_str();
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", lport, "two", "0", "1000", "COPY"]),
        b"-ERR Target instance replied with error: NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", lport, "two", "0", "1000", "COPY", "AUTH", "sekret"]),
        b"+OK\r\n"
    );
    assert_eq!(
        b.cmd(&["MIGRATE", "127.0.0.1", lport, "two", "3", "1000", "AUTH2", "default", "sekret"]),
        b"+OK\r\n"
    );
    let mut l = locked.raw();
    l.cmd(&["AUTH", "sekret"]);
    assert_eq!(l.cmd(&["GET", "two"]), b"$1\r\n2\r\n");
    l.cmd(&["SELECT", "3"]);
    assert_eq!(l.cmd(&["GET", "two"]), b"$1\r\n2\r\n");
    assert_eq!(b.cmd(&["EXISTS", "two"]), b":0\r\n");
}
