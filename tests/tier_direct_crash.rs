//! Writes that go past the write tier while it holds other records (a DEL
//! of a hash is a range delete of its members) leave those records in the
//! tier (`storage::wtier`, `tier_clear_for`). Under `appendfsync always`
//! every acknowledged write survives kill -9 in order: a deleted hash
//! stays deleted, a hash written after its DEL keeps its fields, and the
//! strings the tier held around them keep their last values.

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

/// One op on `c`: its key, what the model holds for it once acknowledged,
/// and the reply.
fn op(c: &mut redis::Connection, model: &Model, rng: &mut Rng, i: u64) -> (String, Option<String>, redis::RedisResult<()>) {
    let v = format!("v{i}");
    match rng.below(10) {
        0..=5 => {
            let k = format!("s:{}", rng.below(STRINGS));
            let r = redis::cmd("SET").arg(&k).arg(&v).query::<()>(c);
            (k, Some(v), r)
        }
        6..=7 => {
            let k = format!("h:{}", rng.below(HASHES));
            let f = format!("f{}", rng.below(FIELDS));
            let r = redis::cmd("HSET").arg(&k).arg(&f).arg(&v).query::<i64>(c).map(|_| ());
            let now = model.get(&k).and_then(Option::as_ref);
            (k, Some(with_field(now, &f, &v)), r)
        }
        _ => {
            let k = format!("h:{}", rng.below(HASHES));
            let r = redis::cmd("DEL").arg(&k).query::<i64>(c).map(|_| ());
            (k, None, r)
        }
    }
}

fn read(c: &mut redis::Connection, k: &str) -> Option<String> {
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
    // The op in flight at the last kill: either outcome is allowed.
    let mut pending: Option<(String, Option<String>)> = None;
    let mut i = 0u64;
    for cycle in 0..=CYCLES {
        // Odd cycles with a small tier (1 MB: a generation is draining
        // most of the time), the others with the default one.
        let mut args = vec!["--appendfsync", "always"];
        if cycle % 2 == 1 {
            args.extend(["--write-tier-memory", "1048576"]);
        }
        let mut b = Basalt::start_in(tmp.path(), 1, &args);
        let mut c = b.client();
        if let Some((k, v)) = pending.take() {
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
            let (k, v, r) = op(&mut c, &model, &mut rng, i);
            if r.is_err() {
                pending = Some((k, v));
                break;
            }
            model.insert(k, v);
        }
        killer.join().expect("killer");
        b.signal_and_wait("-KILL");
    }
    assert!(i > 1000, "{i} ops over the cycles");
    assert!(model.values().any(Option::is_none) && model.keys().any(|k| k.starts_with("h:")));
}
