//! Issue 31's randomized test: SET/EXPIRE/PEXPIREAT/PERSIST/GETEX/RENAME/
//! COPY/MOVE/HPEXPIREAT/HPERSIST and reads against a model, with the
//! server's clock moved forward a second at a time (`DEBUG
//! SET-CLOCK-OFFSET`): no read ever returns expired data, and once active
//! expiry has caught up, DBSIZE and INFO keyspace's `keys=`/`expires=`
//! match the model, on 1 and 4 shards.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Basalt, Rng};
use redis::Value;

const KEYS: &[&str] = &["a", "b", "c", "{t}x", "{t}y", "d", "e", "f"];
const FIELDS: &[&str] = &["f1", "f2", "f3"];

#[derive(Clone, Debug)]
enum Val {
    Str(String),
    /// field -> (value, expiry ms or 0)
    Hash(BTreeMap<String, (String, u64)>),
}

#[derive(Clone, Debug)]
struct Entry {
    val: Val,
    /// Absolute expiry in ms, 0: none.
    exp: u64,
}

/// The model: two dbs (0 and 1), and the clock.
struct Model {
    dbs: [BTreeMap<String, Entry>; 2],
    now: u64,
}

impl Model {
    /// Drops what is expired at `now`, as a read would see it.
    fn settle(&mut self) {
        let now = self.now;
        for db in self.dbs.iter_mut() {
            db.retain(|_, e| e.exp == 0 || e.exp > now);
            for e in db.values_mut() {
                if let Val::Hash(h) = &mut e.val {
                    h.retain(|_, (_, x)| *x == 0 || *x > now);
                }
            }
            db.retain(|_, e| !matches!(&e.val, Val::Hash(h) if h.is_empty()));
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn q(c: &mut redis::Connection, args: &[String]) -> Value {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn bulk(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).to_string()),
        Value::Nil => None,
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// One random write, applied to the server and the model alike.
fn write(rng: &mut Rng, c: &mut redis::Connection, m: &mut Model, t0: u64) {
    let k = rng.pick(KEYS).to_string();
    let k2 = rng.pick(KEYS).to_string();
    let f = rng.pick(FIELDS).to_string();
    let v = rng.below(1000).to_string();
    // Expiry times fall on whole steps ahead of the clock, never between.
    let at = t0 + (m.now - t0) / 1000 * 1000 + 1000 * (1 + rng.below(6) as u64);
    let db = &mut m.dbs[0];
    match rng.below(15) {
        0 => {
            q(c, &s(&["SET", &k, &v]));
            db.insert(k, Entry { val: Val::Str(v), exp: 0 });
        }
        1 => {
            q(c, &s(&["SET", &k, &v, "PXAT", &at.to_string()]));
            db.insert(k, Entry { val: Val::Str(v), exp: at });
        }
        2 => {
            if matches!(db.get(&k), Some(Entry { val: Val::Hash(_), .. })) {
                return;
            }
            let r = q(c, &s(&["SET", &k, &v, "KEEPTTL", "GET"]));
            let exp = match db.get(&k) {
                Some(Entry { val: Val::Str(old), exp }) => {
                    assert_eq!(bulk(&r).as_deref(), Some(old.as_str()), "SET GET {k}");
                    *exp
                }
                Some(_) => unreachable!(),
                None => 0,
            };
            db.insert(k, Entry { val: Val::Str(v), exp });
        }
        3 => {
            let r = int(&q(c, &s(&["PEXPIREAT", &k, &at.to_string()])));
            let e = db.get_mut(&k);
            assert_eq!(r, e.is_some() as i64, "PEXPIREAT {k}");
            if let Some(e) = e {
                e.exp = at;
            }
        }
        4 => {
            let r = int(&q(c, &s(&["PERSIST", &k])));
            let e = db.get_mut(&k);
            assert_eq!(r, e.as_ref().is_some_and(|e| e.exp != 0) as i64, "PERSIST {k}");
            if let Some(e) = e {
                e.exp = 0;
            }
        }
        5 => {
            if matches!(db.get(&k), Some(Entry { val: Val::Hash(_), .. })) {
                return;
            }
            let r = q(c, &s(&["GETEX", &k, "PXAT", &at.to_string()]));
            match db.get_mut(&k) {
                Some(Entry { val: Val::Str(old), exp }) => {
                    assert_eq!(bulk(&r).as_deref(), Some(old.as_str()), "GETEX {k}");
                    *exp = at;
                }
                _ => assert_eq!(bulk(&r), None, "GETEX {k}"),
            }
        }
        6 => {
            if !db.contains_key(&k) {
                return;
            }
            q(c, &s(&["RENAME", &k, &k2]));
            if let Some(e) = db.remove(&k) {
                db.insert(k2, e);
            }
        }
        7 => {
            if k == k2 {
                return;
            }
            let r = int(&q(c, &s(&["COPY", &k, &k2, "REPLACE"])));
            assert_eq!(r, db.contains_key(&k) as i64, "COPY {k} {k2}");
            if let Some(e) = db.get(&k).cloned() {
                db.insert(k2, e);
            }
        }
        8 => {
            let r = int(&q(c, &s(&["MOVE", &k, "1"])));
            let moved = db.contains_key(&k) && !m.dbs[1].contains_key(&k);
            assert_eq!(r, moved as i64, "MOVE {k}");
            if moved {
                let e = m.dbs[0].remove(&k).unwrap();
                m.dbs[1].insert(k, e);
            }
        }
        9 | 10 => {
            if matches!(db.get(&k), Some(Entry { val: Val::Str(_), .. })) {
                return;
            }
            q(c, &s(&["HSET", &k, &f, &v]));
            let e = db.entry(k).or_insert(Entry {
                val: Val::Hash(BTreeMap::new()),
                exp: 0,
            });
            if let Val::Hash(h) = &mut e.val {
                h.insert(f, (v, 0));
            }
        }
        11 | 13 | 14 => {
            if !matches!(db.get(&k), Some(Entry { val: Val::Hash(_), .. })) {
                return;
            }
            let r = q(c, &s(&["HPEXPIREAT", &k, &at.to_string(), "FIELDS", "1", &f]));
            if let Some(Entry { val: Val::Hash(h), .. }) = db.get_mut(&k) {
                let code = if let Some(x) = h.get_mut(&f) {
                    x.1 = at;
                    1
                } else {
                    -2
                };
                assert_eq!(r, Value::Array(vec![Value::Int(code)]), "HPEXPIREAT {k} {f}");
            }
        }
        _ => {
            if !matches!(db.get(&k), Some(Entry { val: Val::Hash(_), .. })) {
                return;
            }
            let r = q(c, &s(&["HPERSIST", &k, "FIELDS", "1", &f]));
            if let Some(Entry { val: Val::Hash(h), .. }) = db.get_mut(&k) {
                let code = match h.get_mut(&f) {
                    Some(x) if x.1 != 0 => {
                        x.1 = 0;
                        1
                    }
                    Some(_) => -1,
                    None => -2,
                };
                assert_eq!(r, Value::Array(vec![Value::Int(code)]), "HPERSIST {k} {f}");
            }
        }
    }
}

/// Reads every key of db `i` and checks them against the model.
fn check_reads(c: &mut redis::Connection, m: &Model, i: usize) {
    q(c, &s(&["SELECT", &i.to_string()]));
    for k in KEYS {
        let e = m.dbs[i].get(*k);
        let ty: String = redis::cmd("TYPE").arg(*k).query(c).expect("TYPE");
        let pttl = int(&q(c, &s(&["PTTL", k])));
        match e {
            None => {
                assert_eq!(ty, "none", "db{i} {k} expired or gone but TYPE says {ty} at {}", m.now);
                assert_eq!(pttl, -2, "db{i} {k}");
                assert_eq!(int(&q(c, &s(&["EXISTS", k]))), 0, "db{i} {k}");
            }
            Some(e) => {
                assert_eq!(pttl == -1, e.exp == 0, "db{i} {k}: PTTL {pttl}, model expiry {}", e.exp);
                assert!(
                    pttl == -1 || (pttl > 0 && pttl as u64 <= e.exp - m.now + 1000),
                    "db{i} {k} PTTL {pttl}"
                );
                match &e.val {
                    Val::Str(v) => assert_eq!(bulk(&q(c, &s(&["GET", k]))).as_deref(), Some(v.as_str()), "db{i} {k}"),
                    Val::Hash(h) => {
                        assert_eq!(ty, "hash");
                        assert_eq!(int(&q(c, &s(&["HLEN", k]))), h.len() as i64, "HLEN db{i} {k}");
                        let all: BTreeMap<String, String> = redis::cmd("HGETALL").arg(*k).query(c).expect("HGETALL");
                        let want: BTreeMap<String, String> = h.iter().map(|(f, (v, _))| (f.clone(), v.clone())).collect();
                        assert_eq!(all, want, "HGETALL db{i} {k}");
                        for f in FIELDS {
                            let got = bulk(&q(c, &s(&["HGET", k, f])));
                            assert_eq!(got.as_deref(), h.get(*f).map(|x| x.0.as_str()), "HGET db{i} {k} {f}");
                        }
                    }
                }
            }
        }
    }
    q(c, &s(&["SELECT", "0"]));
}

/// `(keys, expires)` of INFO keyspace for db `i`.
fn keyspace(c: &mut redis::Connection, i: usize) -> (i64, i64) {
    let info: String = redis::cmd("INFO").arg("keyspace").query(c).expect("INFO");
    let prefix = format!("db{i}:");
    let Some(line) = info.lines().find(|l| l.starts_with(&prefix)) else {
        return (0, 0);
    };
    let field = |name: &str| {
        line[prefix.len()..]
            .split(',')
            .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    };
    (field("keys"), field("expires"))
}

/// Waits until active expiry has deleted every key that is due: DBSIZE and
/// INFO keyspace must then match the model.
fn check_counts(c: &mut redis::Connection, m: &Model) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let want: Vec<(i64, i64)> = (0..2)
            .map(|i| (m.dbs[i].len() as i64, m.dbs[i].values().filter(|e| e.exp != 0).count() as i64))
            .collect();
        let got: Vec<(i64, i64)> = (0..2).map(|i| keyspace(c, i)).collect();
        if got == want {
            let n: i64 = redis::cmd("DBSIZE").query(c).expect("DBSIZE");
            assert_eq!(n, want[0].0, "DBSIZE");
            return;
        }
        assert!(Instant::now() < deadline, "counts {got:?}, model {want:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run(shards: usize, seed: u64) {
    let b = Basalt::start_with(shards, &["--enable-debug-command", "yes"]);
    let mut c = b.client();
    let mut rng = Rng(seed);
    // The server's clock runs `offset` ahead of the real one; the model's
    // clock is the server's, to within the few ms a step takes.
    let start = now_ms();
    let t0 = start + 10_000;
    let mut m = Model {
        dbs: Default::default(),
        now: t0,
    };
    for step in 0..150u64 {
        // Half a second into a whole step: no expiry time is near.
        m.now = t0 + step * 1000 + 500;
        let offset = m.now - now_ms();
        q(&mut c, &s(&["DEBUG", "SET-CLOCK-OFFSET", &offset.to_string()]));
        m.settle();
        check_reads(&mut c, &m, 0);
        check_reads(&mut c, &m, 1);
        for _ in 0..30 {
            write(&mut rng, &mut c, &mut m, t0);
        }
        check_reads(&mut c, &m, 0);
        if step % 5 == 4 {
            check_counts(&mut c, &m);
        }
        assert!(now_ms() + offset < m.now + 400, "a step took too long for the model's clock");
    }
    // The run did expire keys and fields, actively and lazily.
    let info: String = redis::cmd("INFO").arg("stats").query(&mut c).expect("INFO");
    let stat = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    assert!(stat("expired_keys") > 50, "{info}");
    assert!(stat("expired_subkeys") > 0, "{info}");
}

#[test]
fn reads_never_see_expired_data_and_counts_match_one_shard() {
    run(1, 0x5eed_0031);
}

#[test]
fn reads_never_see_expired_data_and_counts_match_four_shards() {
    run(4, 0x5eed_3104);
}
