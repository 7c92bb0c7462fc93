//! A consumer-group worker written with redis-py (tests/stream_worker.py:
//! XAUTOCLAIM, XREADGROUP, XACK) processes 100k entries while the server is
//! killed with kill -9 and restarted in the middle: every entry is
//! processed at least once, and at the end all are acknowledged (nothing
//! pending, the group's last ID the stream's last). Needs Debian's
//! python3-redis, which .ci/install-deps installs.

mod common;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, show, Basalt, Raw};

const ENTRIES: usize = 100_000;

fn processed(path: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
        .collect()
}

#[test]
fn a_redis_py_worker_survives_kill_9_and_acknowledges_every_entry() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let port = free_port();
    let mut b = Basalt::start_at(&data, port, 2, &[]).unwrap_or_else(|e| panic!("start: {e}"));
    let mut c = Raw::connect(port);
    assert_eq!(show(&c.cmd(&["XGROUP", "CREATE", "jobs", "workers", "$", "MKSTREAM"])), "+OK\\r\\n");
    // The entries, 1000 per pipeline.
    for chunk in 0..ENTRIES / 1000 {
        let mut req = Vec::new();
        for i in 0..1000 {
            let n = (chunk * 1000 + i + 1).to_string();
            req.extend(Raw::encode(&["XADD", "jobs", "*", "n", &n]));
        }
        c.send_bytes(&req);
        for _ in 0..1000 {
            let r = c.reply();
            assert!(r.starts_with(b"$"), "{}", show(&r));
        }
    }
    let out = tmp.path().join("processed.txt");
    let script = &common::project_file("tests/stream_worker.py");
    let worker = Command::new("/usr/bin/python3")
        .args([script, &port.to_string(), "jobs", &out.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run /usr/bin/python3 (install python3-redis: bash .ci/install-deps)");
    // Kill the server once the worker is a third of the way through.
    let start = Instant::now();
    while processed(&out).len() < ENTRIES / 3 {
        assert!(start.elapsed() < Duration::from_secs(120), "the worker made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    b.signal_and_wait("-KILL");
    drop(b);
    std::thread::sleep(Duration::from_millis(300));
    let _b = Basalt::start_at(&data, port, 2, &[]).unwrap_or_else(|e| panic!("restart on the same port: {e}"));
    let done = worker.wait_with_output().expect("worker");
    assert!(
        done.status.success() && String::from_utf8_lossy(&done.stdout).trim() == "ok",
        "worker: {}\n{}",
        String::from_utf8_lossy(&done.stdout),
        String::from_utf8_lossy(&done.stderr)
    );
    let got = processed(&out);
    let ns: HashSet<&str> = got.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(ns.len(), ENTRIES, "every entry processed at least once ({} lines)", got.len());
    let mut c = Raw::connect(port);
    let pending = show(&c.cmd(&["XPENDING", "jobs", "workers"]));
    assert!(pending.starts_with("*4\\r\\n:0\\r\\n"), "nothing pending: {pending}");
    assert_eq!(show(&c.cmd(&["XLEN", "jobs"])), format!(":{ENTRIES}\\r\\n"));
    let last = show(&c.cmd(&["XREVRANGE", "jobs", "+", "-", "COUNT", "1"]));
    let groups = show(&c.cmd(&["XINFO", "GROUPS", "jobs"]));
    let last_id = last.split("\\r\\n").nth(2).unwrap_or_default().to_string();
    assert!(
        groups.contains(&last_id),
        "the group's last ID is the stream's last: {groups} / {last}"
    );
}
