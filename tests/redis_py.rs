//! redis-py, as an application uses it (tests/redis_py.py): transactional
//! pipelines, `transaction()` with WATCH from several threads, pub/sub
//! with `get_message` and callbacks, `monitor()`. Runs against redis-server first (the
//! script's own expectations), then Basalt on 4 shards. Needs Debian's
//! python3-redis, which .ci/install-deps installs.

mod common;

use common::{Basalt, RedisServer};

fn run_app(server: &str, port: u16) {
    let script = &common::project_file("tests/redis_py.py");
    let out = std::process::Command::new("/usr/bin/python3")
        .arg(script)
        .arg(port.to_string())
        .output()
        .expect("run /usr/bin/python3 (install python3-redis: bash .ci/install-deps)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "ok",
        "{server}: redis-py application failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_py_application_works_as_on_redis() {
    let redis = RedisServer::start();
    run_app("redis-server", redis.port);
    let basalt = Basalt::start(4);
    run_app("basalt", basalt.port);
}
