//! Hashes and sets through the real server: the Redis docs' examples for
//! the 7.4/8 hash field expiration commands (Debian's redis-server 7.0 has
//! none of them, so these are not differential), field expiry over time,
//! cross-shard set algebra with 4 shards, big collections read in slices,
//! and collections surviving a restart.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::thread::sleep;
use std::time::Duration;

use common::Basalt;
use redis::{Commands, Connection, Value};

fn q(c: &mut Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn err(c: &mut Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
            .trim()
            .to_string(),
    }
}

fn ints(c: &mut Connection, args: &[&str]) -> Vec<i64> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// https://redis.io/docs/latest/commands/hexpire/ and its siblings.
#[test]
fn hexpire_family_docs_examples() {
    let s = Basalt::start(2);
    let mut c = s.client();
    // HEXPIRE: "HEXPIRE no-key 20 NX FIELDS 2 field1 field2" -> -2 -2
    assert_eq!(
        ints(&mut c, &["HEXPIRE", "no-key", "20", "NX", "FIELDS", "2", "field1", "field2"]),
        vec![-2, -2]
    );
    let _: () = c.hset_multiple("mykey", &[("field1", "hello"), ("field2", "world")]).unwrap();
    assert_eq!(
        ints(&mut c, &["HEXPIRE", "mykey", "10", "FIELDS", "3", "field1", "field2", "field3"]),
        vec![1, 1, -2]
    );
    assert_eq!(ints(&mut c, &["HEXPIRE", "mykey", "10", "NX", "FIELDS", "1", "field1"]), vec![0]);
    assert_eq!(ints(&mut c, &["HEXPIRE", "mykey", "20", "XX", "FIELDS", "1", "field1"]), vec![1]);
    assert_eq!(ints(&mut c, &["HEXPIRE", "mykey", "5", "GT", "FIELDS", "1", "field1"]), vec![0]);
    assert_eq!(ints(&mut c, &["HEXPIRE", "mykey", "5", "LT", "FIELDS", "1", "field1"]), vec![1]);
    let ttl = ints(&mut c, &["HTTL", "mykey", "FIELDS", "2", "field1", "field2"]);
    assert!((4..=5).contains(&ttl[0]) && (9..=10).contains(&ttl[1]), "{ttl:?}");
    let pttl = ints(&mut c, &["HPTTL", "mykey", "FIELDS", "2", "field1", "nofield"]);
    assert!((4000..=5000).contains(&pttl[0]) && pttl[1] == -2, "{pttl:?}");
    // HPERSIST: 1 removed, -1 no TTL, -2 no field.
    assert_eq!(
        ints(&mut c, &["HPERSIST", "mykey", "FIELDS", "3", "field1", "field1", "nofield"]),
        vec![1, -1, -2]
    );
    assert_eq!(ints(&mut c, &["HTTL", "mykey", "FIELDS", "1", "field1"]), vec![-1]);
    // HEXPIREAT / HEXPIRETIME / HPEXPIRETIME.
    let at = now_secs() + 100;
    let at_s = at.to_string();
    assert_eq!(ints(&mut c, &["HEXPIREAT", "mykey", &at_s, "FIELDS", "1", "field1"]), vec![1]);
    assert_eq!(
        ints(&mut c, &["HEXPIRETIME", "mykey", "FIELDS", "2", "field1", "nofield"]),
        vec![at, -2]
    );
    assert_eq!(ints(&mut c, &["HPEXPIRETIME", "mykey", "FIELDS", "1", "field1"]), vec![at * 1000]);
    let pat = ((at + 10) * 1000).to_string();
    assert_eq!(ints(&mut c, &["HPEXPIREAT", "mykey", &pat, "FIELDS", "1", "field1"]), vec![1]);
    // A time in the past deletes the field: 2; the last field gone deletes the key.
    assert_eq!(
        ints(&mut c, &["HPEXPIRE", "mykey", "0", "FIELDS", "2", "field1", "field2"]),
        vec![2, 2]
    );
    assert_eq!(q(&mut c, &["EXISTS", "mykey"]), Value::Int(0));
    // Errors, with Redis's texts.
    let _: () = c.hset("h", "f", "v").unwrap();
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "10", "FIELDS", "0", "f"]),
        "ERR Parameter `numFields` should be greater than 0"
    );
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "10", "FIELDS", "2", "f"]),
        "ERR The `numfields` parameter must match the number of arguments"
    );
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "10", "FOO", "1", "f"]),
        "ERR Mandatory argument FIELDS is missing or not at the right position"
    );
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "-1", "FIELDS", "1", "f"]),
        "ERR invalid expire time, must be >= 0"
    );
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "x", "FIELDS", "1", "f"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["HEXPIRE", "h", "9223372036854775", "FIELDS", "1", "f"]),
        "ERR invalid expire time in 'hexpire' command"
    );
    assert_eq!(
        err(&mut c, &["HTTL", "h", "FIELDS", "0", "f"]),
        "ERR Number of fields must be a positive integer"
    );
    let _: () = c.set("str", "v").unwrap();
    assert!(err(&mut c, &["HEXPIRE", "str", "10", "FIELDS", "1", "f"]).starts_with("WRONGTYPE"));
    assert!(err(&mut c, &["HTTL", "str", "FIELDS", "1", "f"]).starts_with("WRONGTYPE"));
}

/// https://redis.io/docs/latest/commands/hgetex/, hsetex/, hgetdel/.
#[test]
fn hgetex_hsetex_hgetdel_docs_examples() {
    let s = Basalt::start(2);
    let mut c = s.client();
    let _: () = c.hset_multiple("mykey", &[("field1", "Hello"), ("field2", "World")]).unwrap();
    let v: Vec<String> = redis::cmd("HGETEX")
        .arg(&["mykey", "EX", "120", "FIELDS", "1", "field1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["Hello"]);
    let v: Vec<String> = redis::cmd("HGETEX")
        .arg(&["mykey", "EX", "100", "FIELDS", "1", "field2"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["World"]);
    let t = ints(&mut c, &["HTTL", "mykey", "FIELDS", "3", "field1", "field2", "field3"]);
    assert!(t[0] > 100 && t[0] <= 120 && t[1] > 90 && t[1] <= 100 && t[2] == -2, "{t:?}");
    let v: Vec<Option<String>> = redis::cmd("HGETEX")
        .arg(&["mykey", "PERSIST", "FIELDS", "2", "field1", "nofield"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec![Some("Hello".into()), None]);
    assert_eq!(ints(&mut c, &["HTTL", "mykey", "FIELDS", "1", "field1"]), vec![-1]);
    // PXAT in the past deletes what it returns.
    let v: Vec<String> = redis::cmd("HGETEX")
        .arg(&["mykey", "PXAT", "1", "FIELDS", "2", "field1", "field2"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["Hello", "World"]);
    assert_eq!(q(&mut c, &["EXISTS", "mykey"]), Value::Int(0));
    assert_eq!(
        err(&mut c, &["HGETEX", "mykey", "FIELDS", "0", "a"]),
        "ERR Number of fields must be a positive integer"
    );

    // HSETEX: the docs' example.
    let at = (now_secs() + 1000).to_string();
    assert_eq!(
        q(
            &mut c,
            &["HSETEX", "mykey", "EXAT", &at, "FIELDS", "2", "field1", "Hello", "field2", "World"]
        ),
        Value::Int(1)
    );
    let t = ints(&mut c, &["HTTL", "mykey", "FIELDS", "2", "field1", "field2"]);
    assert!(t.iter().all(|&x| x > 990 && x <= 1000), "{t:?}");
    assert_eq!(
        q(
            &mut c,
            &["HSETEX", "mykey", "FNX", "EX", "60", "FIELDS", "2", "field1", "Hello", "field2", "World"]
        ),
        Value::Int(0)
    );
    assert_eq!(
        err(
            &mut c,
            &["HSETEX", "mykey", "FXX", "EX", "60", "KEEPTTL", "FIELDS", "2", "field1", "hello", "field2", "world"]
        ),
        "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"
    );
    assert_eq!(
        q(
            &mut c,
            &["HSETEX", "mykey", "FXX", "KEEPTTL", "FIELDS", "2", "field1", "hello", "field2", "world"]
        ),
        Value::Int(1)
    );
    let t = ints(&mut c, &["HTTL", "mykey", "FIELDS", "2", "field1", "field2"]);
    assert!(t.iter().all(|&x| x > 990), "KEEPTTL keeps: {t:?}");
    // Without an expiry option the TTL is discarded.
    assert_eq!(q(&mut c, &["HSETEX", "mykey", "FIELDS", "1", "field1", "x"]), Value::Int(1));
    assert_eq!(ints(&mut c, &["HTTL", "mykey", "FIELDS", "1", "field1"]), vec![-1]);
    assert_eq!(q(&mut c, &["HSETEX", "nokey", "FXX", "FIELDS", "1", "a", "b"]), Value::Int(0));
    assert_eq!(q(&mut c, &["EXISTS", "nokey"]), Value::Int(0));
    assert_eq!(
        err(&mut c, &["HSETEX", "k", "FNX", "FXX", "FIELDS", "1", "a", "b"]),
        "ERR Only one of FXX or FNX arguments can be specified"
    );
    assert_eq!(
        err(&mut c, &["HSETEX", "k", "FOO", "FIELDS", "1", "a", "b"]),
        "ERR unknown argument: FOO"
    );
    assert_eq!(
        err(&mut c, &["HSETEX", "k", "FIELDS", "2", "a", "b"]),
        "ERR wrong number of arguments for 'hsetex' command"
    );
    assert_eq!(
        err(&mut c, &["HSETEX", "k", "FIELDS", "0", "a", "b"]),
        "ERR invalid number of fields"
    );

    // HGETDEL: the docs' example.
    let _: () = c
        .hset_multiple("h", &[("field1", "Hello"), ("field2", "World"), ("field3", "!")])
        .unwrap();
    let v: Vec<String> = redis::cmd("HGETDEL")
        .arg(&["h", "FIELDS", "2", "field3", "field1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["!", "Hello"]);
    let all: BTreeMap<String, String> = c.hgetall("h").unwrap();
    assert_eq!(all, BTreeMap::from([("field2".into(), "World".into())]));
    let v: Vec<Option<String>> = redis::cmd("HGETDEL")
        .arg(&["h", "FIELDS", "2", "field2", "nofield"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec![Some("World".into()), None]);
    assert_eq!(q(&mut c, &["EXISTS", "h"]), Value::Int(0));
    assert_eq!(
        err(&mut c, &["HGETDEL", "h", "FIELDS", "2", "a"]),
        "ERR The `numfields` parameter must match the number of arguments"
    );
}

/// Expired fields vanish from every read, HLEN counts only live ones, and
/// the key goes when its last field expires (real time, short TTLs).
#[test]
fn expired_fields_are_invisible_and_the_last_one_takes_the_key() {
    let s = Basalt::start(1);
    let mut c = s.client();
    let _: () = c.hset_multiple("h", &[("a", "1"), ("b", "2"), ("c", "3")]).unwrap();
    assert_eq!(ints(&mut c, &["HPEXPIRE", "h", "150", "FIELDS", "2", "a", "b"]), vec![1, 1]);
    assert_eq!(q(&mut c, &["HLEN", "h"]), Value::Int(3));
    sleep(Duration::from_millis(300));
    assert_eq!(q(&mut c, &["HLEN", "h"]), Value::Int(1));
    assert_eq!(q(&mut c, &["HGET", "h", "a"]), Value::Nil);
    assert_eq!(q(&mut c, &["HEXISTS", "h", "b"]), Value::Int(0));
    assert_eq!(q(&mut c, &["HSTRLEN", "h", "a"]), Value::Int(0));
    let all: BTreeMap<String, String> = c.hgetall("h").unwrap();
    assert_eq!(all, BTreeMap::from([("c".into(), "3".into())]));
    let keys: Vec<String> = c.hkeys("h").unwrap();
    assert_eq!(keys, vec!["c"]);
    let f: String = redis::cmd("HRANDFIELD").arg("h").query(&mut c).unwrap();
    assert_eq!(f, "c");
    assert_eq!(ints(&mut c, &["HTTL", "h", "FIELDS", "2", "a", "c"]), vec![-2, -1]);
    assert_eq!(ints(&mut c, &["HPEXPIRE", "h", "100", "FIELDS", "1", "c"]), vec![1]);
    assert_eq!(q(&mut c, &["TYPE", "h"]), Value::SimpleString("hash".into()));
    sleep(Duration::from_millis(250));
    assert_eq!(q(&mut c, &["EXISTS", "h"]), Value::Int(0));
    assert_eq!(q(&mut c, &["TYPE", "h"]), Value::SimpleString("none".into()));
    assert_eq!(q(&mut c, &["DBSIZE"]), Value::Int(0));
}

fn info_field(c: &mut Connection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO"))
}

/// Active field expiration: hashes nobody touches lose their expired
/// fields, and a hash whose fields all expired leaves DBSIZE, without any
/// read of those keys (DBSIZE reads only counters).
#[test]
fn expired_fields_go_without_being_read() {
    let s = Basalt::start(2);
    let mut c = s.client();
    for i in 0..20 {
        let k = format!("gone{i}");
        let _: () = c.hset_multiple(&k, &[("a", "1"), ("b", "2")]).unwrap();
        assert_eq!(ints(&mut c, &["HPEXPIRE", &k, "100", "FIELDS", "2", "a", "b"]), vec![1, 1]);
    }
    let _: () = c.hset_multiple("kept", &[("a", "1"), ("b", "2")]).unwrap();
    assert_eq!(ints(&mut c, &["HPEXPIRE", "kept", "100", "FIELDS", "1", "a"]), vec![1]);
    assert_eq!(q(&mut c, &["DBSIZE"]), Value::Int(21));
    let mut left = 21;
    for _ in 0..50 {
        sleep(Duration::from_millis(100));
        left = match q(&mut c, &["DBSIZE"]) {
            Value::Int(n) => n,
            v => panic!("{v:?}"),
        };
        if left == 1 {
            break;
        }
    }
    assert_eq!(left, 1, "hashes whose fields all expired are deleted actively");
    assert_eq!(info_field(&mut c, "expired_subkeys"), 41);
    let all: BTreeMap<String, String> = c.hgetall("kept").unwrap();
    assert_eq!(all, BTreeMap::from([("b".into(), "2".into())]));
}

/// A big hash with expired fields still on disk (active expiry off): HLEN
/// counts it in slices (also inside MULTI), and HRANDFIELD's random seeks
/// step over expired fields for every count form.
#[test]
fn big_hashes_with_expired_fields_count_and_sample_live_ones() {
    let s = Basalt::start_with(2, &["--enable-debug-command", "yes"]);
    let mut c = s.client();
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut c).unwrap();
    let mut pipe = redis::pipe();
    let due: Vec<String> = (0..5_000).filter(|i| i % 3 != 0).map(|i| format!("f{i}")).collect();
    for chunk in (0..5_000).collect::<Vec<_>>().chunks(1000) {
        let mut hset = redis::cmd("HSET");
        hset.arg("h");
        for i in chunk {
            hset.arg(format!("f{i}")).arg(i);
        }
        pipe.add_command(hset).ignore();
    }
    for chunk in due.chunks(1000) {
        pipe.cmd("HPEXPIRE")
            .arg("h")
            .arg(50)
            .arg("FIELDS")
            .arg(chunk.len())
            .arg(chunk)
            .ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    sleep(Duration::from_millis(150));
    let live = 5_000 - due.len() as i64;
    assert_eq!(q(&mut c, &["HLEN", "h"]), Value::Int(live));
    let in_multi: Vec<i64> = redis::pipe()
        .atomic()
        .cmd("HLEN")
        .arg("h")
        .cmd("HLEN")
        .arg("nope")
        .query(&mut c)
        .unwrap();
    assert_eq!(in_multi, vec![live, 0]);
    let is_live = |f: &str| f[1..].parse::<i64>().unwrap() % 3 == 0;
    for _ in 0..50 {
        let f: String = redis::cmd("HRANDFIELD").arg("h").query(&mut c).unwrap();
        assert!(is_live(&f), "{f} expired");
    }
    let some: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(100).query(&mut c).unwrap();
    assert_eq!(some.iter().collect::<BTreeSet<_>>().len(), 100, "distinct");
    assert!(some.iter().all(|f| is_live(f)));
    let rep: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(-200).query(&mut c).unwrap();
    assert_eq!(rep.len(), 200);
    assert!(rep.iter().all(|f| is_live(f)));
    let all: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(4_000).query(&mut c).unwrap();
    assert_eq!(all.len() as i64, live, "more than there are: every live field once");
    assert!(all.iter().all(|f| is_live(f)));
    let pairs: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(3).arg("WITHVALUES").query(&mut c).unwrap();
    assert_eq!(pairs.len(), 6);
    assert!(pairs.chunks(2).all(|p| is_live(&p[0]) && p[0][1..] == p[1]));
}

fn members(c: &mut Connection, args: &[&str]) -> BTreeSet<String> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Keys on different shards: set algebra gathers from every owner and
/// stores on the destination's owner.
#[test]
fn cross_shard_set_operations_with_four_shards() {
    let s = Basalt::start(4);
    let mut c = s.client();
    // Single-letter keys spread over the 4 shards' slot ranges.
    let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut model: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let m: Vec<String> = (0..40).filter(|x| x % (i + 2) == 0).map(|x| x.to_string()).collect();
        let _: i64 = c.sadd(*k, &m).unwrap();
        model.insert(k, m.into_iter().collect());
    }
    let inter = |ks: &[&str]| -> BTreeSet<String> {
        ks.iter()
            .skip(1)
            .fold(model[ks[0]].clone(), |acc, k| acc.intersection(&model[k]).cloned().collect())
    };
    let union = |ks: &[&str]| -> BTreeSet<String> { ks.iter().flat_map(|k| model[k].iter().cloned()).collect() };
    let diff = |ks: &[&str]| -> BTreeSet<String> {
        ks.iter()
            .skip(1)
            .fold(model[ks[0]].clone(), |acc, k| acc.difference(&model[k]).cloned().collect())
    };
    assert_eq!(members(&mut c, &["SINTER", "a", "b", "e"]), inter(&["a", "b", "e"]));
    assert_eq!(members(&mut c, &["SUNION", "c", "g", "h"]), union(&["c", "g", "h"]));
    assert_eq!(members(&mut c, &["SDIFF", "a", "b", "d", "h"]), diff(&["a", "b", "d", "h"]));
    assert_eq!(
        q(&mut c, &["SINTERCARD", "2", "a", "b"]),
        Value::Int(inter(&["a", "b"]).len() as i64)
    );
    assert_eq!(q(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "3"]), Value::Int(3));
    for (cmd, dst, f) in [("SINTERSTORE", "x1", 0), ("SUNIONSTORE", "x2", 1), ("SDIFFSTORE", "x3", 2)] {
        let want = match f {
            0 => inter(&["a", "c", "f"]),
            1 => union(&["a", "c", "f"]),
            _ => diff(&["a", "c", "f"]),
        };
        assert_eq!(q(&mut c, &[cmd, dst, "a", "c", "f"]), Value::Int(want.len() as i64), "{cmd}");
        assert_eq!(members(&mut c, &["SMEMBERS", dst]), want, "{cmd}");
        assert_eq!(q(&mut c, &["SCARD", dst]), Value::Int(want.len() as i64));
    }
    // Storing over a key of another type on another shard replaces it.
    let _: () = c.set("y", "string").unwrap();
    assert_eq!(q(&mut c, &["SUNIONSTORE", "y", "a"]), Value::Int(model["a"].len() as i64));
    assert_eq!(q(&mut c, &["TYPE", "y"]), Value::SimpleString("set".into()));
    // SMOVE across shards, and its WRONGTYPE checks.
    assert_eq!(q(&mut c, &["SMOVE", "a", "h", "2"]), Value::Int(1));
    assert_eq!(q(&mut c, &["SISMEMBER", "a", "2"]), Value::Int(0));
    assert_eq!(q(&mut c, &["SISMEMBER", "h", "2"]), Value::Int(1));
    assert_eq!(q(&mut c, &["SMOVE", "a", "h", "2"]), Value::Int(0));
    let _: () = c.set("str", "v").unwrap();
    assert!(err(&mut c, &["SMOVE", "a", "str", "4"]).starts_with("WRONGTYPE"));
    assert_eq!(q(&mut c, &["SISMEMBER", "a", "4"]), Value::Int(1), "nothing moved on WRONGTYPE");
    assert!(err(&mut c, &["SUNION", "a", "str"]).starts_with("WRONGTYPE"));
    assert!(err(&mut c, &["SINTER", "nokey", "str"]).starts_with("WRONGTYPE"));
    // RENAME and COPY of sets and hashes across shards.
    let _: () = c.hset_multiple("hh", &[("f1", "v1"), ("f2", "v2")]).unwrap();
    assert_eq!(ints(&mut c, &["HEXPIRE", "hh", "1000", "FIELDS", "1", "f1"]), vec![1]);
    for (src, dst) in [("hh", "zz9"), ("zz9", "qq1"), ("b", "bb7")] {
        let _: () = redis::cmd("RENAME").arg(src).arg(dst).query(&mut c).unwrap();
        assert_eq!(q(&mut c, &["EXISTS", src]), Value::Int(0));
    }
    let all: BTreeMap<String, String> = c.hgetall("qq1").unwrap();
    assert_eq!(all.len(), 2);
    let t = ints(&mut c, &["HTTL", "qq1", "FIELDS", "2", "f1", "f2"]);
    assert!(t[0] > 990 && t[1] == -1, "field TTLs travel: {t:?}");
    assert_eq!(members(&mut c, &["SMEMBERS", "bb7"]), model["b"]);
    assert_eq!(q(&mut c, &["COPY", "bb7", "cc3"]), Value::Int(1));
    let _: i64 = c.srem("bb7", "0").unwrap();
    assert_eq!(members(&mut c, &["SMEMBERS", "cc3"]), model["b"], "a copy is independent");
    // DUMP / RESTORE of both types.
    for k in ["qq1", "cc3"] {
        let payload: Vec<u8> = redis::cmd("DUMP").arg(k).query(&mut c).unwrap();
        let dst = format!("{k}-restored");
        let _: () = redis::cmd("RESTORE").arg(&dst).arg(0).arg(payload).query(&mut c).unwrap();
        assert_eq!(q(&mut c, &["TYPE", &dst]), q(&mut c, &["TYPE", k]));
    }
    let all: BTreeMap<String, String> = c.hgetall("qq1-restored").unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(members(&mut c, &["SMEMBERS", "cc3-restored"]), model["b"]);
    // SCAN TYPE sees the types.
    let (mut found, mut cursor) = (Vec::new(), 0u64);
    loop {
        let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .arg("TYPE")
            .arg("hash")
            .query(&mut c)
            .unwrap();
        found.extend(page);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    found.sort();
    assert_eq!(found, vec!["qq1", "qq1-restored"]);
}

/// A collection of many slices: HGETALL, HKEYS, SMEMBERS, SSCAN and HSCAN
/// return every member exactly once, and the data survives a restart.
#[test]
fn big_collections_read_in_slices_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5000;
    {
        let s = Basalt::start_in(dir.path(), 2, &[]);
        let mut c = s.client();
        for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
            let pairs: Vec<(String, String)> = chunk.iter().map(|i| (format!("f{i:05}"), format!("v{i}"))).collect();
            let _: () = c.hset_multiple("big", &pairs).unwrap();
            let mem: Vec<String> = chunk.iter().map(|i| format!("m{i}")).collect();
            let _: i64 = c.sadd("bigset", &mem).unwrap();
        }
        assert_eq!(q(&mut c, &["HLEN", "big"]), Value::Int(n));
        assert_eq!(q(&mut c, &["SCARD", "bigset"]), Value::Int(n));
        assert_eq!(q(&mut c, &["OBJECT", "ENCODING", "big"]), Value::BulkString(b"hashtable".to_vec()));
        let all: BTreeMap<String, String> = c.hgetall("big").unwrap();
        assert_eq!(all.len() as i64, n);
        assert_eq!(all["f04999"], "v4999");
        let keys: Vec<String> = c.hkeys("big").unwrap();
        assert_eq!(keys.len() as i64, n);
        let set: BTreeSet<String> = c.smembers("bigset").unwrap();
        assert_eq!(set.len() as i64, n);
        // SSCAN / HSCAN page through with cursors and see each member once.
        let mut seen = BTreeSet::new();
        let mut cursor = 0u64;
        loop {
            let (next, page): (u64, Vec<String>) = redis::cmd("SSCAN")
                .arg("bigset")
                .arg(cursor)
                .arg("COUNT")
                .arg(700)
                .query(&mut c)
                .unwrap();
            for m in page {
                assert!(seen.insert(m), "SSCAN returned a member twice");
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len() as i64, n);
        let (mut fields, mut cursor) = (0, 0u64);
        loop {
            let (next, page): (u64, Vec<String>) = redis::cmd("HSCAN")
                .arg("big")
                .arg(cursor)
                .arg("COUNT")
                .arg(999)
                .arg("NOVALUES")
                .query(&mut c)
                .unwrap();
            fields += page.len();
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(fields as i64, n);
        assert_eq!(q(&mut c, &["SINTERCARD", "2", "bigset", "bigset"]), Value::Int(n));
        // Random picks on a big set come from random seeks: real members,
        // distinct for a positive count, and SPOP removes what it returns.
        let picks: Vec<String> = redis::cmd("SRANDMEMBER").arg("bigset").arg(-20).query(&mut c).unwrap();
        assert_eq!(picks.len(), 20);
        assert!(picks.iter().all(|m| set.contains(m)));
        let popped: BTreeSet<String> = redis::cmd("SPOP").arg("bigset").arg(10).query(&mut c).unwrap();
        assert_eq!(popped.len(), 10);
        for m in &popped {
            assert_eq!(q(&mut c, &["SISMEMBER", "bigset", m]), Value::Int(0));
        }
        assert_eq!(q(&mut c, &["SCARD", "bigset"]), Value::Int(n - 10));
        let one: String = redis::cmd("SPOP").arg("bigset").query(&mut c).unwrap();
        assert!(set.contains(&one) && !popped.contains(&one));
        let f: Vec<String> = redis::cmd("HRANDFIELD").arg("big").arg(7).query(&mut c).unwrap();
        assert_eq!(f.iter().collect::<BTreeSet<_>>().len(), 7);
        let _: i64 = c.sadd("bigset", popped.iter().chain([&one]).collect::<Vec<_>>()).unwrap();
        assert_eq!(q(&mut c, &["SUNIONSTORE", "copy", "bigset"]), Value::Int(n));
        assert_eq!(q(&mut c, &["SCARD", "copy"]), Value::Int(n));
        let _: i64 = c.del("copy").unwrap();
        assert_eq!(q(&mut c, &["DBSIZE"]), Value::Int(2));
    }
    let s = Basalt::start_in(dir.path(), 4, &[]);
    let mut c = s.client();
    assert_eq!(q(&mut c, &["HLEN", "big"]), Value::Int(n));
    assert_eq!(q(&mut c, &["SCARD", "bigset"]), Value::Int(n));
    assert_eq!(q(&mut c, &["HGET", "big", "f00042"]), Value::BulkString(b"v42".to_vec()));
    assert_eq!(q(&mut c, &["SISMEMBER", "bigset", "m4321"]), Value::Int(1));
    assert_eq!(q(&mut c, &["DBSIZE"]), Value::Int(2));
}

/// A big HGETALL/SMEMBERS inside a pipeline: the shard leaves its reply to
/// the connection, which streams it into its place, both when the key is on
/// the connection's own shard and when it is in the middle of a batch sent
/// to another shard. Only shard 0 accepts; {b} lives there, {a} on shard 1.
#[test]
fn big_reads_stream_in_place_inside_pipelines() {
    let s = Basalt::start_with(2, &["--listen-shards", "0"]);
    let mut c = s.client();
    let fields: Vec<(String, String)> = (0..3000).map(|i| (format!("f{i:05}"), format!("v{i}"))).collect();
    let _: () = c.hset_multiple("{a}big", &fields).unwrap();
    let members: Vec<String> = (0..3000).map(|i| format!("m{i:05}")).collect();
    let _: i64 = c.sadd("{b}big", &members).unwrap();
    let _: () = c.hset("{a}small", "k", "v").unwrap();
    type Out = (
        (),
        BTreeMap<String, String>,
        String,
        i64,
        BTreeSet<String>,
        Vec<String>,
        String,
        Vec<String>,
        BTreeMap<String, String>,
    );
    let out: Out = redis::pipe()
        .cmd("SET")
        .arg("{a}x")
        .arg("1")
        .cmd("HGETALL")
        .arg("{a}big")
        .cmd("GET")
        .arg("{a}x")
        .cmd("HLEN")
        .arg("{a}big")
        .cmd("SMEMBERS")
        .arg("{b}big")
        .cmd("HKEYS")
        .arg("{a}big")
        .cmd("PING")
        .cmd("HVALS")
        .arg("{a}small")
        .cmd("HGETALL")
        .arg("{a}nokey")
        .query(&mut c)
        .unwrap();
    assert_eq!(out.1.len(), 3000);
    assert_eq!(out.1["f02999"], "v2999");
    assert_eq!((out.2.as_str(), out.3), ("1", 3000));
    assert_eq!(out.4.len(), 3000);
    assert_eq!(out.5.len(), 3000);
    assert_eq!((out.6.as_str(), out.7.clone()), ("PONG", vec!["v".to_string()]));
    assert!(out.8.is_empty());
    // The streamed commands are counted like any other.
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut c).unwrap();
    assert!(info.contains("cmdstat_hgetall:calls=2,"), "{info}");
    assert!(info.contains("cmdstat_smembers:calls=1,"), "{info}");
    assert!(err(&mut c, &["HGETALL", "{b}big"]).starts_with("WRONGTYPE"));
}

/// Redis 7.2+ reports small non-integer sets as listpack (7.0 said hashtable).
#[test]
fn object_encoding_names_for_collection_sizes() {
    let s = Basalt::start(1);
    let mut c = s.client();
    let _: i64 = c.sadd("ints", &[1, 2, 3]).unwrap();
    let _: i64 = c.sadd("words", &["a", "b"]).unwrap();
    let _: () = c.hset("h", "f", "v").unwrap();
    let _: () = c.hset("hx", "f", "v").unwrap();
    assert_eq!(ints(&mut c, &["HEXPIRE", "hx", "100", "FIELDS", "1", "f"]), vec![1]);
    for (k, want) in [("ints", "intset"), ("words", "listpack"), ("h", "listpack"), ("hx", "listpackex")] {
        assert_eq!(
            q(&mut c, &["OBJECT", "ENCODING", k]),
            Value::BulkString(want.as_bytes().to_vec()),
            "{k}"
        );
    }
}
