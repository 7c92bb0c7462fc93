//! Cluster mode (docs/cluster.md): the replies of CLUSTER and of the
//! cluster checks compared with a redis-server started with
//! `cluster-enabled yes` owning every slot (node ids, addresses and ports
//! masked), the per-shard node ports (MOVED, the same topology on every
//! port), and real cluster clients: redis-py's RedisCluster, the `redis`
//! crate's cluster client, `redis-cli -c`, `redis-cli --cluster check`,
//! `redis-benchmark --cluster`.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use basalt::slot::{shard_of_slot, slot_of};
use common::{free_port, show, split, Basalt, Raw, RedisServer};

/// A reply as text with what differs between two nodes masked: node ids,
/// the node's address and ports, bulk lengths (they follow the masking).
fn masked(reply: &[u8], port: u16) -> String {
    fn value(b: &[u8], i: &mut usize, out: &mut String, mask: &dyn Fn(&str) -> String) {
        let end = *i + b[*i..].windows(2).position(|w| w == b"\r\n").expect("line");
        let line = String::from_utf8_lossy(&b[*i..end]).to_string();
        *i = end + 2;
        let (tag, rest) = line.split_at(1);
        let n: i64 = rest.parse().unwrap_or(-1);
        match tag {
            "$" | "=" | "!" if n >= 0 => {
                let body = String::from_utf8_lossy(&b[*i..*i + n as usize]).to_string();
                *i += n as usize + 2;
                out.push_str(&format!("{tag}{}\n", mask(&body)));
            }
            "*" | "~" | ">" if n > 0 => {
                out.push_str(&format!("{tag}{n}\n"));
                (0..n).for_each(|_| value(b, i, out, mask));
            }
            "%" | "|" if n > 0 => {
                out.push_str(&format!("{tag}{n}\n"));
                (0..2 * n).for_each(|_| value(b, i, out, mask));
            }
            _ => out.push_str(&format!("{}\n", mask(&line))),
        }
    }
    let mask = |s: &str| -> String {
        let mut t = s.replace("127.0.0.1", "");
        t = t.replace(&(port as u32 + 10000).to_string(), "BUSPORT");
        t = t.replace(&port.to_string(), "PORT");
        // 40 hex digits: a node id.
        let chars: Vec<char> = t.chars().collect();
        let mut out = String::new();
        let mut k = 0;
        while k < chars.len() {
            if k + 40 <= chars.len() && chars[k..k + 40].iter().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()) {
                out.push_str("<ID>");
                k += 40;
            } else {
                out.push(chars[k]);
                k += 1;
            }
        }
        out
    };
    let mut out = String::new();
    let mut i = 0;
    value(reply, &mut i, &mut out, &mask);
    out
}

/// A redis-server in cluster mode owning every slot, its state `ok`.
fn redis_cluster() -> RedisServer {
    let redis = RedisServer::start_with(&["--cluster-enabled", "yes"]);
    let mut r = redis.raw();
    assert_eq!(r.cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), b"+OK\r\n");
    wait_state(&mut r, "ok");
    redis
}

fn wait_state(c: &mut Raw, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&c.cmd(&["CLUSTER", "INFO"])).contains(&format!("cluster_state:{want}")) {
        assert!(Instant::now() < deadline, "cluster_state never became {want}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A key (a hash tag) whose slot is `slot`.
fn key_in_slot(slot: u16) -> String {
    (0..)
        .map(|i| format!("{{t{i}}}k"))
        .find(|k| slot_of(k.as_bytes()) == slot)
        .expect("key")
}

/// Runs `script` on both servers, comparing masked replies. `$MYID` is
/// each server's own node id; `SLEEP ms` waits (Redis updates its cluster
/// state in its event loop); `$SLOT100` is a key of slot 100.
fn compare(name: &str, script: &str, r: &mut Raw, rport: u16, b: &mut Raw, bport: u16) {
    let id = |c: &mut Raw| {
        let reply = c.cmd(&["CLUSTER", "MYID"]);
        String::from_utf8_lossy(&reply).lines().nth(1).unwrap_or("").to_string()
    };
    let (rid, bid) = (id(r), id(b));
    let k100 = key_in_slot(100);
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(ms) = line.strip_prefix("SLEEP ") {
            std::thread::sleep(Duration::from_millis(ms.parse().expect("ms")));
            continue;
        }
        let (unordered, line) = match line.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        let line = line.replace("$SLOT100", &k100);
        let want = r.cmd(&split(&line.replace("$MYID", &rid)));
        let got = b.cmd(&split(&line.replace("$MYID", &bid)));
        let order = |s: String| {
            if !unordered {
                return s;
            }
            let mut lines: Vec<&str> = s.lines().collect();
            lines.sort();
            lines.join("\n")
        };
        assert_eq!(
            order(masked(&want, rport)),
            order(masked(&got, bport)),
            "[{name}] `{line}`\n redis:  {}\n basalt: {}",
            show(&want),
            show(&got)
        );
    }
}

const CLUSTER_REPLIES: &str = r#"
CLUSTER INFO
CLUSTER NODES
CLUSTER SLOTS
CLUSTER SHARDS
CLUSTER LINKS
CLUSTER MYID
CLUSTER KEYSLOT foo
CLUSTER KEYSLOT {user1000}.following
CLUSTER KEYSLOT ""
CLUSTER KEYSLOT foo{}{bar}
CLUSTER KEYSLOT
CLUSTER KEYSLOT a b
SET foo 1
SET {foo}x 2
CLUSTER COUNTKEYSINSLOT 12182
CLUSTER COUNTKEYSINSLOT 0
CLUSTER COUNTKEYSINSLOT 16384
CLUSTER COUNTKEYSINSLOT -1
CLUSTER COUNTKEYSINSLOT x
# Redis does not define the order of a slot's keys.
~CLUSTER GETKEYSINSLOT 12182 10
CLUSTER GETKEYSINSLOT 12182 0
CLUSTER GETKEYSINSLOT 12182 -1
CLUSTER GETKEYSINSLOT 16384 1
CLUSTER GETKEYSINSLOT x 1
CLUSTER GETKEYSINSLOT 1 x
CLUSTER ADDSLOTS 5
CLUSTER ADDSLOTS 16384
CLUSTER ADDSLOTS x
CLUSTER ADDSLOTSRANGE 5 1
CLUSTER ADDSLOTSRANGE 1 2 3
CLUSTER ADDSLOTSRANGE 1
CLUSTER DELSLOTS 16384
CLUSTER FOO
CLUSTER
CLUSTER RESET
CLUSTER RESET HARD
CLUSTER RESET FOO
CLUSTER RESET SOFT x
CLUSTER FLUSHSLOTS
CLUSTER COUNT-FAILURE-REPORTS 0000000000000000000000000000000000000000
CLUSTER COUNT-FAILURE-REPORTS $MYID
CLUSTER REPLICAS 0000000000000000000000000000000000000000
CLUSTER REPLICAS $MYID
CLUSTER SLAVES $MYID
CLUSTER FORGET 0000000000000000000000000000000000000000
CLUSTER FORGET $MYID
CLUSTER REPLICATE 0000000000000000000000000000000000000000
CLUSTER REPLICATE $MYID
CLUSTER FAILOVER
CLUSTER FAILOVER FORCE
CLUSTER FAILOVER NOW
CLUSTER FAILOVER FORCE x
CLUSTER SETSLOT 5 STABLE
CLUSTER SETSLOT 5 NODE $MYID
CLUSTER SETSLOT 5 NODE 0000000000000000000000000000000000000000
CLUSTER SETSLOT 16384 STABLE
CLUSTER SETSLOT 5 FOO
CLUSTER SETSLOT 5 IMPORTING $MYID
CLUSTER SAVECONFIG
CLUSTER BUMPEPOCH
CLUSTER INFO
CLUSTER BUMPEPOCH
CLUSTER SET-CONFIG-EPOCH 9
CLUSTER NODES
READONLY
READWRITE
ASKING
READONLY x
# CROSSSLOT, as Redis checks every key of a command.
MGET foo bar
MGET foo {foo}x foo
MSET foo 1 bar 2
MSET foo 1 {foo}y 2
DEL foo bar
EXISTS foo bar
RENAME foo bar
SUNIONSTORE foo bar
SINTERCARD 2 foo bar
ZUNIONSTORE foo 2 bar foo
LMOVE foo bar LEFT LEFT
XREAD STREAMS foo bar 0 0
SORT foo STORE bar
SORT foo BY bar
BLPOP foo bar 1
EVAL "return 1" 2 foo bar
EVAL "return 1" 2 foo {foo}z
EVAL "return redis.call('get','bar')" 1 foo
SSUBSCRIBE foo bar
SPUBLISH foo x
OBJECT ENCODING foo
MIGRATE 127.0.0.1 1 "" 0 1000 KEYS foo bar
COMMAND GETKEYS MGET foo bar
# Redis Cluster has database 0 only.
SELECT 1
SELECT 0
SELECT x
MOVE foo 1
SWAPDB 0 1
COPY foo {foo}n DB 1
COPY foo {foo}n DB 0
COPY foo {foo}n DB x
GET {foo}n
# Transactions: a refused command spoils the queue; EXEC across slots is refused whole.
MULTI
SET foo 1
SET bar 2
EXEC
GET bar
MULTI
MSET foo 1 bar 2
SET foo 3
EXEC
EXEC
MULTI
SET foo 10
SET {foo}q 11
EXEC
# Slots not served: CLUSTERDOWN.
DELSLOTS 100
CLUSTER DELSLOTS 100
CLUSTER DELSLOTS 100
SLEEP 300
CLUSTER INFO
GET $SLOT100
GET foo
SET foo 1
CONFIG SET cluster-allow-reads-when-down yes
SLEEP 300
GET foo
SET foo 1
GET $SLOT100
CONFIG SET cluster-require-full-coverage no
SLEEP 300
CLUSTER INFO
SET foo 1
GET $SLOT100
CLUSTER SLOTS
CLUSTER SHARDS
CONFIG SET cluster-require-full-coverage yes
CONFIG SET cluster-allow-reads-when-down no
CLUSTER ADDSLOTS 100
SLEEP 300
CLUSTER INFO
GET $SLOT100
CLUSTER DELSLOTSRANGE 10 20 30 40
CLUSTER NODES
CLUSTER ADDSLOTSRANGE 10 20 30 40
SLEEP 300
CLUSTER NODES
DBSIZE
"#;

#[test]
fn cluster_replies_match_redis_cluster() {
    let redis = redis_cluster();
    let basalt = Basalt::start_with(2, &["--cluster-enabled", "yes"]);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    compare("cluster", CLUSTER_REPLIES, &mut r, redis.port, &mut b, basalt.port);
    // RESP3 shapes.
    r.cmd(&["HELLO", "3"]);
    b.cmd(&["HELLO", "3"]);
    compare(
        "cluster resp3",
        "CLUSTER INFO\nCLUSTER NODES\nCLUSTER SLOTS\nCLUSTER SHARDS\nCLUSTER LINKS\n~CLUSTER GETKEYSINSLOT 12182 5\nMGET a b",
        &mut r,
        redis.port,
        &mut b,
        basalt.port,
    );
}

#[test]
fn outside_cluster_mode_nothing_changes() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let script = "CLUSTER INFO\nCLUSTER NODES\nCLUSTER KEYSLOT foo\nCLUSTER HELP\nREADONLY\nREADWRITE\nASKING\nMGET foo bar\nSELECT 1\nSELECT 0\nINFO cluster";
    compare("not a cluster", script, &mut r, redis.port, &mut b, basalt.port);
}

/// Scripts in cluster mode, Redis 7.2's rules (redis-server 7.0 lacks
/// the cross-slot one): a script with a shebang or a function keeps to
/// one slot unless it allows cross-slot keys; a plain EVAL may cross.
#[test]
fn scripts_keep_to_their_slot() {
    let basalt = Basalt::start_with(2, &["--cluster-enabled", "yes"]);
    let mut b = basalt.raw();
    let err = |reply: Vec<u8>| String::from_utf8_lossy(&reply).to_string();
    let cross = "#!lua\nredis.call('set', 'foo', 'bar')\nredis.call('set', 'bar', 'foo')\nreturn 'OK'";
    let got = err(b.cmd(&["EVAL", cross, "0"]));
    assert!(
        got.starts_with("-ERR Script attempted to access keys that do not hash to the same slot script: "),
        "{got}"
    );
    let flagged = "#!lua flags=allow-cross-slot-keys\nredis.call('set', 'foo', 'bar'); redis.call('set', 'bar', 'foo')";
    assert_eq!(b.cmd(&["EVAL", flagged, "0"]), b"$-1\r\n");
    assert_eq!(
        b.cmd(&[
            "EVAL",
            "redis.call('set', 'foo', 'bar'); return redis.call('set', 'bar', 'foo')",
            "0"
        ]),
        b"+OK\r\n"
    );
    // Declared keys fix the slot.
    let got = err(b.cmd(&["EVAL", "#!lua\nredis.call('set', 'foo', 'bar')\nreturn 'OK'", "1", "bar"]));
    assert!(
        got.contains("Script attempted to access keys that do not hash to the same slot"),
        "{got}"
    );
    assert_eq!(b.cmd(&["EVAL", "redis.call('set', 'foo', 'bar')", "1", "bar"]), b"$-1\r\n");
    assert_eq!(b.cmd(&["CLUSTER", "COUNTKEYSINSLOT", "12182"]), b":1\r\n");
    // Functions keep to one slot unless flagged.
    let lib = "#!lua name=crossslot\nredis.register_function('f', function(keys, args) redis.call('set', 'foo', 'bar') redis.call('set', 'bar', 'foo') return 'OK' end)\nredis.register_function{function_name='g', callback=function(keys, args) redis.call('set', 'foo', 'bar') redis.call('set', 'bar', 'foo') return 'OK' end, flags={'allow-cross-slot-keys'}}\nredis.register_function{function_name='h', callback=function() return 'hello' end, flags={'no-cluster'}}";
    assert_eq!(b.cmd(&["FUNCTION", "LOAD", lib]), b"$9\r\ncrossslot\r\n");
    let got = err(b.cmd(&["FCALL", "f", "0"]));
    assert!(
        got.contains("Script attempted to access keys that do not hash to the same slot"),
        "{got}"
    );
    assert_eq!(b.cmd(&["FCALL", "g", "0"]), b"$2\r\nOK\r\n");
    assert_eq!(
        err(b.cmd(&["FCALL", "h", "0"])),
        "-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n"
    );
    assert_eq!(
        err(b.cmd(&["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"])),
        "-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n"
    );
    let got = err(b.cmd(&["EVAL", "return redis.call('select', 1)", "0"]));
    assert!(got.starts_with("-ERR SELECT is not allowed in cluster mode"), "{got}");
    // One command across slots, inside a plain EVAL too (Redis 7.2).
    let got = err(b.cmd(&["EVAL", "return redis.call('mget', 'foo', 'bar')", "0"]));
    assert!(
        got.starts_with("-ERR Command 'mget' in script attempted to access keys that don't hash to the same slot script: "),
        "{got}"
    );
    // A slot not served.
    assert_eq!(b.cmd(&["CLUSTER", "DELSLOTS", "12182"]), b"+OK\r\n");
    let got = err(b.cmd(&["EVAL", "return redis.call('get', 'foo')", "0"]));
    assert!(
        got.starts_with("-ERR Script attempted to access a slot not served script: "),
        "{got}"
    );
    assert_eq!(b.cmd(&["CLUSTER", "ADDSLOTS", "12182"]), b"+OK\r\n");
}

/// Starts a 2-shard Basalt whose shards are cluster nodes on their own
/// ports; returns it with those ports (and its data dir, to keep). Free
/// ports may be taken by a parallel test before the server binds them: a
/// start that fails, or whose node ports answer with another server's
/// ids, is tried again on new ports.
fn per_shard() -> (Basalt, Vec<u16>, tempfile::TempDir) {
    for _ in 0..10 {
        let ports = [free_port(), free_port(), free_port()];
        if ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
            continue;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let list = format!("{},{}", ports[1], ports[2]);
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-port-per-shard",
            "yes",
            "--cluster-shard-ports",
            &list,
        ];
        let Ok(b) = Basalt::start_at(tmp.path(), ports[0], 2, &args) else {
            continue;
        };
        let nodes = nodes_of(&mut b.raw()).join("\n");
        let ours = ports[1..].iter().all(|&p| {
            std::net::TcpStream::connect(("127.0.0.1", p)).is_ok() && {
                let id = id_of(&mut Raw::connect(p));
                id.len() == 40 && nodes.contains(&id)
            }
        });
        if ours {
            return (b, ports[1..].to_vec(), tmp);
        }
    }
    panic!("no free ports for the shard nodes");
}

fn nodes_of(c: &mut Raw) -> Vec<String> {
    let reply = String::from_utf8_lossy(&c.cmd(&["CLUSTER", "NODES"])).to_string();
    let mut lines: Vec<String> = reply.lines().skip(1).filter(|l| !l.is_empty()).map(str::to_string).collect();
    lines.sort();
    lines
}

/// The `ip:port` of the node owning `key`, from CLUSTER NODES.
fn id_of(c: &mut Raw) -> String {
    String::from_utf8_lossy(&c.cmd(&["CLUSTER", "MYID"]))
        .lines()
        .nth(1)
        .unwrap_or("")
        .to_string()
}

#[test]
fn each_shard_is_a_node_on_its_own_port() {
    let (basalt, ports, _dir) = per_shard();
    let mut main = basalt.raw();
    let mut n0 = Raw::connect(ports[0]);
    let mut n1 = Raw::connect(ports[1]);
    // Every port shows the same two masters, `myself` on the answering one.
    let (a, b) = (nodes_of(&mut n0), nodes_of(&mut n1));
    assert_eq!(a.len(), 2, "{a:?}");
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                format!("{} {} {} {}", f[0], f[1], f[2].replace("myself,", ""), f[8..].join(" "))
            })
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
    assert_eq!(strip(&a), strip(&nodes_of(&mut main)));
    let (id0, id1) = (id_of(&mut n0), id_of(&mut n1));
    assert_ne!(id0, id1);
    let mine = |v: &[String]| v.iter().find(|l| l.contains("myself")).cloned().unwrap_or_default();
    assert!(mine(&a).starts_with(&id0) && mine(&a).contains(&format!(":{}@", ports[0])), "{a:?}");
    assert!(mine(&b).starts_with(&id1) && mine(&b).contains(&format!(":{}@", ports[1])), "{b:?}");
    assert!(mine(&a).ends_with(" 0-8191") && mine(&b).ends_with(" 8192-16383"), "{a:?}");
    // CLUSTER SLOTS: the same on every port, a range per shard.
    let slots = n0.cmd(&["CLUSTER", "SLOTS"]);
    assert_eq!(slots, n1.cmd(&["CLUSTER", "SLOTS"]));
    let text = show(&slots);
    assert!(
        text.contains(&format!(":{}\\r\\n", ports[0])) && text.contains(&format!(":{}\\r\\n", ports[1])),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&n1.cmd(&["CLUSTER", "INFO"])).contains("cluster_known_nodes:2\r\ncluster_size:2"));
    // A key of the other shard is MOVED there; the main port serves all.
    let k1 = key_in_slot(9000);
    assert_eq!(shard_of_slot(9000, 2), 1);
    assert_eq!(n1.cmd(&["SET", &k1, "v"]), b"+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&n0.cmd(&["GET", &k1])),
        format!("-MOVED 9000 127.0.0.1:{}\r\n", ports[1])
    );
    assert_eq!(main.cmd(&["GET", &k1]), b"$1\r\nv\r\n");
    assert_eq!(n1.cmd(&["GET", &k1]), b"$1\r\nv\r\n");
    // In MULTI, a MOVED spoils the transaction.
    assert_eq!(n0.cmd(&["MULTI"]), b"+OK\r\n");
    assert!(n0.cmd(&["SET", &k1, "w"]).starts_with(b"-MOVED 9000"));
    assert!(n0.cmd(&["EXEC"]).starts_with(b"-EXECABORT"));
    // A script may not reach the other shard's keys.
    let got = String::from_utf8_lossy(&n0.cmd(&["EVAL", &format!("return redis.call('get', '{k1}')"), "0"])).to_string();
    assert!(
        got.starts_with("-ERR Script attempted to access a non local key in a cluster node script: "),
        "{got}"
    );
    assert_eq!(n1.cmd(&["EVAL", &format!("return redis.call('get', '{k1}')"), "0"]), b"$1\r\nv\r\n");
    // cluster-announce-port moves every node's port by the same offset.
    assert_eq!(main.cmd(&["CONFIG", "SET", "cluster-announce-ip", "10.1.2.3"]), b"+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&n0.cmd(&["GET", &k1])),
        format!("-MOVED 9000 10.1.2.3:{}\r\n", ports[1])
    );
    assert_eq!(main.cmd(&["CONFIG", "SET", "cluster-announce-ip", ""]), b"+OK\r\n");
    // The node ids survive a restart.
    drop((main, n0, n1));
    let dir = basalt.dir.clone();
    let ids = std::fs::read_to_string(dir.join("nodes.conf")).expect("nodes.conf");
    assert!(ids.contains(&id0) && ids.contains(&id1), "{ids}");
}

#[test]
fn the_node_id_is_kept_in_the_data_dir() {
    let tmp = tempfile::tempdir().expect("tmp");
    let port = free_port();
    let mut b = Basalt::start_at(tmp.path(), port, 1, &["--cluster-enabled", "yes"]).expect("start");
    let mut c = b.raw();
    let id = id_of(&mut c);
    assert_eq!(id.len(), 40);
    assert_eq!(c.cmd(&["CLUSTER", "DELSLOTSRANGE", "0", "99"]), b"+OK\r\n");
    drop(c);
    b.signal_and_wait("-TERM");
    let b = Basalt::start_at(tmp.path(), port, 1, &["--cluster-enabled", "yes"]).expect("restart");
    let mut c = b.raw();
    assert_eq!(id_of(&mut c), id);
    assert!(String::from_utf8_lossy(&c.cmd(&["CLUSTER", "INFO"])).contains("cluster_slots_assigned:16284"));
    assert_eq!(c.cmd(&["CLUSTER", "RESET", "HARD"]), b"+OK\r\n");
    assert_ne!(id_of(&mut c), id);
    assert!(String::from_utf8_lossy(&c.cmd(&["CLUSTER", "INFO"])).contains("cluster_state:fail\r\ncluster_slots_assigned:0"));
    assert_eq!(c.cmd(&["GET", "foo"]), b"-CLUSTERDOWN Hash slot not served\r\n");
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
}

fn run_redis_py(port: u16, nodes: usize) {
    let script = &common::project_file("tests/redis_py_cluster.py");
    let out = Command::new("/usr/bin/python3")
        .args([script, &port.to_string(), &nodes.to_string()])
        .output()
        .expect("run /usr/bin/python3 (install python3-redis: bash .ci/install-deps)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "ok",
        "redis-py RedisCluster on port {port} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_py_cluster_client_works() {
    let redis = redis_cluster();
    run_redis_py(redis.port, 1);
    let one = Basalt::start_with(2, &["--cluster-enabled", "yes"]);
    run_redis_py(one.port, 1);
    let (per, ports, _dir) = per_shard();
    run_redis_py(ports[0], 2);
    // The seed may be the main port too.
    run_redis_py(per.port, 2);
}

fn rust_cluster_client(port: u16) {
    use redis::Commands;
    let client = redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{port}/")]).expect("cluster client");
    let mut c = client.get_connection().expect("cluster connection");
    for i in 0..10_000 {
        let key = if i % 2 == 0 {
            format!("rk{i}")
        } else {
            format!("{{tag{}}}:{i}", i % 50)
        };
        let _: () = c.set(&key, i).expect("set");
    }
    for i in 0..10_000 {
        let key = if i % 2 == 0 {
            format!("rk{i}")
        } else {
            format!("{{tag{}}}:{i}", i % 50)
        };
        let v: i64 = c.get(&key).expect("get");
        assert_eq!(v, i);
        if i % 97 == 0 {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key).query(&mut c).expect("keyslot");
            assert_eq!(slot as u16, slot_of(key.as_bytes()));
        }
    }
    // A command across slots that the client does not split: refused.
    let err = redis::cmd("SUNIONSTORE").arg("a").arg("b").query::<i64>(&mut c).unwrap_err();
    assert_eq!(err.kind(), redis::ErrorKind::CrossSlot, "{err}");
    // A pipeline over the nodes.
    let mut p = redis::cluster::cluster_pipe();
    for i in 0..500 {
        p.set(format!("pk{i}"), i).ignore();
    }
    p.get("pk7");
    let (v,): (i64,) = p.query(&mut c).expect("pipeline");
    assert_eq!(v, 7);
}

#[test]
fn redis_crate_cluster_client_works() {
    let one = Basalt::start_with(2, &["--cluster-enabled", "yes"]);
    rust_cluster_client(one.port);
    let (_per, ports, _dir) = per_shard();
    rust_cluster_client(ports[1]);
}

fn tool(bin: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(bin).args(args).output().unwrap_or_else(|e| panic!("run {bin}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn redis_tools_work_with_the_nodes() {
    let one = Basalt::start_with(2, &["--cluster-enabled", "yes"]);
    let (per, ports, _dir) = per_shard();
    for (what, port) in [("one node", one.port), ("per-shard", ports[0]), ("per-shard main port", per.port)] {
        let p = port.to_string();
        let (ok, text) = tool("redis-cli", &["--cluster", "check", &format!("127.0.0.1:{port}")]);
        assert!(ok && text.contains("[OK] All 16384 slots covered."), "{what}: {text}");
        assert!(!text.contains("[ERR]") && !text.contains("[WARNING]"), "{what}: {text}");
        // redis-cli -c follows a MOVED.
        let k = key_in_slot(9000);
        let (_, set) = tool("redis-cli", &["-c", "-p", &p, "SET", &k, "moved-value"]);
        assert_eq!(set.trim(), "OK", "{what}");
        let (_, get) = tool("redis-cli", &["-c", "-p", &p, "GET", &k]);
        assert_eq!(get.trim(), "moved-value", "{what}");
        // redis-benchmark --cluster wants two nodes at least (it refuses a
        // one-node redis-server alike: "Invalid cluster: 1 node(s).").
        if what == "one node" {
            continue;
        }
        let (ok, text) = tool(
            "redis-benchmark",
            &["--cluster", "-p", &p, "-n", "20000", "-r", "100000", "-t", "set,get", "-q"],
        );
        assert!(
            ok && !text.contains("ERR") && !text.contains("MOVED") && text.contains("GET"),
            "{what}: {text}"
        );
    }
}
