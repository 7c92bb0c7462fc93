//! Writes that go past the write tier while it holds other records (a DEL
//! of a hash is a range delete of its members) leave those records in the
//! tier (`storage::wtier`, `tier_clear_for`). Under `appendfsync always`
//! every acknowledged write survives kill -9 in order: a deleted hash
//! stays deleted, a hash written after its DEL keeps its fields, and the
//! strings the tier held around them keep their last values. A FLUSHDB of
//! database 1 (a range delete over a database: the tier forgets its
//! records there and keeps database 0's) stays flushed: no record the
//! tier held of it comes back from the log.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::{Basalt, Rng};

const CYCLES: usize = 6;
const STRINGS: usize = 40;
const HASHES: usize = 6;
const FIELDS: usize = 4;

/// What a key holds: a string's value, or a hash's fields as
/// `f=v` pairs in field order, joined by commas; None: no key.
type Model = HashMap<String, Option<String>>;

/// A hash's model value with `field` set to `v`.
fn with_field(now: Option<&String>, field: &str, v: &str) -> String {
    let mut fields: BTreeMap<String, String> = now
        .into_iter()
        .flat_map(|s| s.split(','))
        .filter_map(|p| p.split_once('=').map(|(f, v)| (f.to_string(), v.to_string())))
        .collect();
    fields.insert(field.to_string(), v.to_string());
    fields.iter().map(|(f, v)| format!("{f}={v}")).collect::<Vec<_>>().join(",")
}

/// The connections: database 0's, database 1's (keys `d1:...`).
struct Conns {
    c0: redis::Connection,
    c1: redis::Connection,
}

impl Conns {
    fn of(&mut self, k: &str) -> &mut redis::Connection {
        if k.starts_with("d1:") {
            &mut self.c1
        } else {
            &mut self.c0
        }
    }
}

/// One op: the keys it changes with what the model holds for each once
/// acknowledged, and the reply.
fn op(c: &mut Conns, model: &Model, rng: &mut Rng, i: u64) -> (Vec<(String, Option<String>)>, redis::RedisResult<()>) {
    let v = format!("v{i}");
    match rng.below(20) {
        0..=9 => {
            let k = format!("s:{}", rng.below(STRINGS));
            let r = redis::cmd("SET").arg(&k).arg(&v).query::<()>(&mut c.c0);
            (vec![(k, Some(v))], r)
        }
        10..=11 => {
            let k = format!("d1:s:{}", rng.below(STRINGS));
            let r = redis::cmd("SET").arg(&k).arg(&v).query::<()>(&mut c.c1);
            (vec![(k, Some(v))], r)
        }
        12..=15 => {
            let k = format!("h:{}", rng.below(HASHES));
            let f = format!("f{}", rng.below(FIELDS));
            let r = redis::cmd("HSET").arg(&k).arg(&f).arg(&v).query::<i64>(&mut c.c0).map(|_| ());
            let now = model.get(&k).and_then(Option::as_ref);
            (vec![(k.clone(), Some(with_field(now, &f, &v)))], r)
        }
        16 if rng.below(4) == 0 => {
            let r = redis::cmd("FLUSHDB").query::<()>(&mut c.c1);
            let gone = model.keys().filter(|k| k.starts_with("d1:")).map(|k| (k.clone(), None));
            (gone.collect(), r)
        }
        _ => {
            let k = format!("h:{}", rng.below(HASHES));
            let r = redis::cmd("DEL").arg(&k).query::<i64>(&mut c.c0).map(|_| ());
            (vec![(k, None)], r)
        }
    }
}

fn read(c: &mut Conns, k: &str) -> Option<String> {
    let c = c.of(k);
    if k.starts_with("h:") {
        let f: BTreeMap<String, String> = redis::cmd("HGETALL").arg(k).query(c).expect("HGETALL");
        (!f.is_empty()).then(|| f.iter().map(|(f, v)| format!("{f}={v}")).collect::<Vec<_>>().join(","))
    } else {
        redis::cmd("GET").arg(k).query(c).expect("GET")
    }
}

#[test]
fn writes_past_the_tier_and_the_records_it_keeps_survive_kill_9() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(0x5EED_D1EC);
    let mut model: Model = HashMap::new();
    // The op in flight at the last kill: either outcome is allowed, key
    // by key.
    let mut pending: Vec<(String, Option<String>)> = Vec::new();
    let mut i = 0u64;
    for cycle in 0..=CYCLES {
        // Odd cycles with a small tier (1 MB: a generation is draining
        // most of the time), the others with the default one.
        let mut args = vec!["--appendfsync", "always"];
        if cycle % 2 == 1 {
            args.extend(["--write-tier-memory", "1048576"]);
        }
        let mut b = Basalt::start_in(tmp.path(), 1, &args);
        let mut c = Conns {
            c0: b.client(),
            c1: b.client(),
        };
        redis::cmd("SELECT").arg(1).query::<()>(&mut c.c1).expect("SELECT 1");
        for (k, v) in std::mem::take(&mut pending) {
            let got = read(&mut c, &k);
            let before = model.get(&k).cloned().flatten();
            assert!(
                got == v || got == before,
                "cycle {cycle}: {k} holds {got:?}, not {v:?} nor {before:?}"
            );
            model.insert(k, got);
        }
        for (k, want) in &model {
            assert_eq!(&read(&mut c, k), want, "cycle {cycle}: {k}");
        }
        if cycle == CYCLES {
            break;
        }
        let (pid, wait) = (b.pid(), Duration::from_millis(200 + rng.below(300) as u64));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(wait);
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        });
        loop {
            i += 1;
            let (changes, r) = op(&mut c, &model, &mut rng, i);
            if r.is_err() {
                pending = changes;
                break;
            }
            model.extend(changes);
        }
        killer.join().expect("killer");
        b.signal_and_wait("-KILL");
    }
    assert!(i > 1000, "{i} ops over the cycles");
    assert!(model.values().any(Option::is_none) && model.keys().any(|k| k.starts_with("h:")));
    assert!(model.keys().any(|k| k.starts_with("d1:")), "database 1 was written");
}
