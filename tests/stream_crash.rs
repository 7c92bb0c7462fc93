//! kill -9 loops with stream writers (issue 34): producers XADD, consumers
//! XREADGROUP `>` and XACK, on two streams of two shards, while the server
//! is killed at random moments. After each restart: every XADD that was
//! answered is in its stream, every XACK that was answered left its entry
//! unpending, and no `>` read ever hands out an entry a `>` read handed out
//! before (the group's last ID and its PEL survive together).

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Basalt, Rng};
use redis::Value;

const SHARDS: usize = 2;
const CYCLES: usize = 8;

fn stream_names() -> [String; 2] {
    let a = "jobs:a".to_string();
    let b = (0..)
        .map(|n| format!("jobs:b{n}"))
        .find(|k| basalt::slot::owner(k.as_bytes(), SHARDS) != basalt::slot::owner(a.as_bytes(), SHARDS))
        .unwrap_or_default();
    [a, b]
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// The entry IDs of an XREADGROUP reply (one stream).
fn read_ids(v: &Value) -> Vec<String> {
    let Value::Array(streams) = v else { return Vec::new() };
    let mut out = Vec::new();
    for s in streams {
        let Value::Array(pair) = s else { continue };
        let Some(Value::Array(entries)) = pair.get(1) else { continue };
        for e in entries {
            if let Value::Array(fields) = e {
                out.extend(fields.first().and_then(text));
            }
        }
    }
    out
}

#[derive(Default)]
struct Seen {
    added: HashSet<(usize, String)>,
    delivered: HashSet<(usize, String)>,
    acked: HashSet<(usize, String)>,
}

fn producer(port: u16, s: usize, stop: Arc<AtomicBool>, seen: Arc<Mutex<Seen>>) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return;
    };
    let Ok(mut c) = client.get_connection() else { return };
    let key = &stream_names()[s];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        match redis::cmd("XADD").arg(key).arg("*").arg("n").arg(n).query::<String>(&mut c) {
            Ok(id) => {
                seen.lock().unwrap_or_else(|e| e.into_inner()).added.insert((s, id));
            }
            Err(_) => return,
        }
    }
}

fn consumer(port: u16, s: usize, stop: Arc<AtomicBool>, seen: Arc<Mutex<Seen>>) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return;
    };
    let Ok(mut c) = client.get_connection() else { return };
    let key = &stream_names()[s];
    while !stop.load(Ordering::Relaxed) {
        let Ok(v) = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg(format!("c{s}"))
            .arg("COUNT")
            .arg(7)
            .arg("STREAMS")
            .arg(key)
            .arg(">")
            .query::<Value>(&mut c)
        else {
            return;
        };
        let ids = read_ids(&v);
        {
            let mut g = seen.lock().unwrap_or_else(|e| e.into_inner());
            for id in &ids {
                assert!(
                    g.delivered.insert((s, id.clone())),
                    "entry {id} of stream {s} delivered twice by `>`"
                );
            }
        }
        if ids.is_empty() {
            continue;
        }
        if redis::cmd("XACK").arg(key).arg("g").arg(&ids).query::<i64>(&mut c).is_err() {
            return;
        }
        let mut g = seen.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            g.acked.insert((s, id));
        }
    }
}

fn check(b: &Basalt, seen: &Seen, cycle: usize) {
    let mut c = b.client();
    for (s, key) in stream_names().iter().enumerate() {
        let entries: Value = redis::cmd("XRANGE").arg(key).arg("-").arg("+").query(&mut c).expect("XRANGE");
        let Value::Array(entries) = entries else { panic!("XRANGE reply") };
        let present: HashSet<String> = entries
            .iter()
            .filter_map(|e| match e {
                Value::Array(f) => f.first().and_then(text),
                _ => None,
            })
            .collect();
        for (t, id) in &seen.added {
            assert!(
                *t != s || present.contains(id),
                "cycle {cycle}: acknowledged XADD {id} of stream {s} lost"
            );
        }
        let pending: Value = redis::cmd("XPENDING")
            .arg(key)
            .arg("g")
            .arg("-")
            .arg("+")
            .arg(10_000_000)
            .query(&mut c)
            .expect("XPENDING");
        let Value::Array(pending) = pending else { panic!("XPENDING reply") };
        for p in &pending {
            if let Value::Array(f) = p {
                let id = f.first().and_then(text).unwrap_or_default();
                assert!(
                    !seen.acked.contains(&(s, id.clone())),
                    "cycle {cycle}: acknowledged entry {id} of stream {s} pending again"
                );
            }
        }
    }
}

#[test]
fn stream_writers_survive_kill_9() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut rng = Rng(0x5eed_5eed);
    let seen = Arc::new(Mutex::new(Seen::default()));
    {
        let b = Basalt::start_in(&dir, SHARDS, &[]);
        let mut c = b.client();
        for key in stream_names() {
            let _: () = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(&key)
                .arg("g")
                .arg("$")
                .arg("MKSTREAM")
                .query(&mut c)
                .expect("XGROUP");
        }
    }
    for cycle in 0..CYCLES {
        let mut b = Basalt::start_in(&dir, SHARDS, &[]);
        check(&b, &seen.lock().unwrap_or_else(|e| e.into_inner()), cycle);
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for s in 0..2 {
            let (port, st, sn) = (b.port, stop.clone(), seen.clone());
            handles.push(std::thread::spawn(move || producer(port, s, st, sn)));
            let (port, st, sn) = (b.port, stop.clone(), seen.clone());
            handles.push(std::thread::spawn(move || consumer(port, s, st, sn)));
        }
        std::thread::sleep(Duration::from_millis(150 + rng.below(350) as u64));
        b.signal_and_wait("-KILL");
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().expect("a writer failed");
        }
    }
    let b = Basalt::start_in(&dir, SHARDS, &[]);
    let g = seen.lock().unwrap_or_else(|e| e.into_inner());
    check(&b, &g, CYCLES);
    assert!(
        g.added.len() > 100 && g.acked.len() > 50,
        "the writers did work: {} added, {} acked",
        g.added.len(),
        g.acked.len()
    );
}
