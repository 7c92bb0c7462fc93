//! Reads that miss memory leave the shard free (issue 12,
//! docs/larger-than-memory.md). The I/O pool's reads are slowed with
//! `DEBUG SET-DISK-READ-DELAY`, so a miss stays in flight long enough to
//! see what the shard does meanwhile.

mod common;

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use common::{show, Basalt, Raw};

const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

/// A 1-shard server on `dir` whose keys `cold:0..50` (values [`val`]) are
/// on disk only: written, then SHUTDOWN (which flushes the memtables), a
/// new process, and DEBUG DROP-CACHES (the startup key count read them).
fn cold_server(dir: &Path) -> Basalt {
    let mut b = Basalt::start_in(dir, 1, DEBUG);
    let mut c = b.raw();
    for i in 0..50 {
        assert_eq!(c.cmd(&["SET", &format!("cold:{i}"), &val(i)]), b"+OK\r\n");
    }
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(dir, 1, DEBUG);
    assert_eq!(b.raw().cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    b
}

/// Cold key `i`'s value: larger than a 4 KiB block, so every key has its
/// own data blocks and reading one key (or looking up another) does not
/// bring in the next.
fn val(i: usize) -> String {
    format!("v{i}-{}", "x".repeat(6000))
}

fn bulk(s: &str) -> Vec<u8> {
    format!("${}\r\n{s}\r\n", s.len()).into_bytes()
}

/// `disk_read_jobs` and `disk_read_keys` from INFO stats.
fn pool_stats(c: &mut Raw) -> (u64, u64) {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "stats"])).into_owned();
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in INFO stats: {info}"))
    };
    (field("disk_read_jobs"), field("disk_read_keys"))
}

#[test]
fn a_hit_is_answered_while_a_miss_is_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let b = cold_server(tmp.path());
    let mut hot = b.raw();
    assert_eq!(hot.cmd(&["SET", "hot", "h"]), b"+OK\r\n");
    assert_eq!(hot.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "1500"]), b"+OK\r\n");
    let before = pool_stats(&mut hot);
    let mut cold = b.raw();
    let t0 = Instant::now();
    cold.send_bytes(&Raw::encode(&["GET", "cold:1"]));
    thread::sleep(Duration::from_millis(100));
    // The shard answers the hit at once, with the miss still in the pool.
    for _ in 0..20 {
        assert_eq!(hot.cmd(&["GET", "hot"]), bulk("h"));
    }
    let hit_at = t0.elapsed();
    assert_eq!(cold.reply(), bulk(&val(1)));
    let miss_at = t0.elapsed();
    assert!(hit_at < Duration::from_millis(1000), "hits waited for the miss: {hit_at:?}");
    assert!(
        miss_at >= Duration::from_millis(1500),
        "the miss did not go through the pool: {miss_at:?}"
    );
    let after = pool_stats(&mut hot);
    assert_eq!(after.0, before.0 + 1, "one pool job");
    assert!(after.1 > before.1);
}

#[test]
fn a_write_that_arrives_while_a_read_is_in_flight_is_ordered_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let b = cold_server(tmp.path());
    let mut admin = b.raw();
    assert_eq!(admin.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "800"]), b"+OK\r\n");
    let mut reader = b.raw();
    reader.send_bytes(&Raw::encode(&["GET", "cold:2"]));
    thread::sleep(Duration::from_millis(150));
    // SET arrives after the GET: the GET sees the old value and the SET is
    // acknowledged after it, as Redis would order them.
    let port = b.port;
    let writer = thread::spawn(move || {
        let mut w = Raw::connect(port);
        let ok = w.cmd(&["SET", "cold:2", "new"]);
        (ok, Instant::now())
    });
    assert_eq!(reader.reply(), bulk(&val(2)));
    let read_done = Instant::now();
    let (ok, write_done) = writer.join().unwrap();
    assert_eq!(ok, b"+OK\r\n");
    assert!(write_done >= read_done, "the write was acknowledged before the read in flight");
    assert_eq!(admin.cmd(&["GET", "cold:2"]), bulk("new"));
    // A write to another key (in memory) does not wait.
    reader.send_bytes(&Raw::encode(&["GET", "cold:3"]));
    thread::sleep(Duration::from_millis(150));
    let t = Instant::now();
    assert_eq!(admin.cmd(&["SET", "cold:2", "x"]), b"+OK\r\n");
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "an unrelated write waited: {:?}",
        t.elapsed()
    );
    assert_eq!(reader.reply(), bulk(&val(3)));
}

#[test]
fn a_write_of_a_key_on_disk_waits_for_the_pool_and_later_writes_wait_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let b = cold_server(tmp.path());
    let mut admin = b.raw();
    // One miss first: after it, every write checks its key before it runs
    // (before one, only a sample of writes does).
    assert_eq!(admin.cmd(&["GET", "cold:0"]), bulk(&val(0)));
    assert_eq!(admin.cmd(&["SET", "hot", "h"]), b"+OK\r\n");
    assert_eq!(admin.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "800"]), b"+OK\r\n");
    let before = pool_stats(&mut admin);
    let t0 = Instant::now();
    let mut first = b.raw();
    first.send_bytes(&Raw::encode(&["SET", "cold:5", "first", "GET"]));
    thread::sleep(Duration::from_millis(150));
    // The second write's own fetch would be quick: it still waits for the
    // first, which holds the key.
    assert_eq!(admin.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "0"]), b"+OK\r\n");
    let mut second = b.raw();
    second.send_bytes(&Raw::encode(&["SET", "cold:5", "second", "GET"]));
    thread::sleep(Duration::from_millis(100));
    // Hits meanwhile are answered at once.
    assert_eq!(admin.cmd(&["GET", "hot"]), bulk("h"));
    assert!(
        t0.elapsed() < Duration::from_millis(600),
        "a hit waited for a write's fetch: {:?}",
        t0.elapsed()
    );
    // The writes apply in arrival order.
    assert_eq!(show(&first.reply()), show(&bulk(&val(5))));
    assert_eq!(show(&second.reply()), show(&bulk("first")));
    assert!(t0.elapsed() >= Duration::from_millis(800));
    assert_eq!(admin.cmd(&["GET", "cold:5"]), bulk("second"));
    assert!(pool_stats(&mut admin).0 > before.0);
}

#[test]
fn a_pipeline_of_misses_keeps_its_order_and_reads_ahead_together() {
    let tmp = tempfile::tempdir().unwrap();
    let b = cold_server(tmp.path());
    let mut c = b.raw();
    assert_eq!(c.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "300"]), b"+OK\r\n");
    let before = pool_stats(&mut c);
    // Reads and writes of cold keys, in one pipeline.
    let mut pipe = Vec::new();
    let mut want = Vec::new();
    for i in 10..30 {
        pipe.extend(Raw::encode(&["GET", &format!("cold:{i}")]));
        want.push(bulk(&val(i)));
        if i % 5 == 0 {
            pipe.extend(Raw::encode(&["SET", &format!("cold:{i}"), "w"]));
            want.push(b"+OK\r\n".to_vec());
            pipe.extend(Raw::encode(&["GET", &format!("cold:{i}")]));
            want.push(bulk("w"));
        }
        pipe.extend(Raw::encode(&["EXISTS", &format!("cold:{}", i + 100)]));
        want.push(b":0\r\n".to_vec());
    }
    let t = Instant::now();
    c.send_bytes(&pipe);
    for (k, w) in want.iter().enumerate() {
        let got = c.reply();
        assert_eq!(show(&got), show(w), "reply {k}");
    }
    // 20 misses one pool round each would take 6 s; read ahead, they go
    // out together (a few rounds: each write ends a run).
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "misses went out one by one: {:?}",
        t.elapsed()
    );
    let after = pool_stats(&mut c);
    let jobs = after.0 - before.0;
    assert!((1..10).contains(&jobs), "{jobs} pool jobs for 20 misses");
}

#[test]
fn a_multi_field_read_fetches_all_its_missing_fields_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut b = Basalt::start_in(dir, 1, DEBUG);
    let mut c = b.raw();
    let mut hmget = vec!["HMGET".to_string(), "h".to_string()];
    let mut want = b"*20\r\n".to_vec();
    for i in 0..20 {
        // Each field's value fills its own blocks.
        assert_eq!(c.cmd(&["HSET", "h", &format!("f{i}"), &val(i)]), b":1\r\n");
        hmget.push(format!("f{i}"));
        want.extend(bulk(&val(i)));
    }
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(dir, 1, DEBUG);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    let before = pool_stats(&mut c);
    assert_eq!(show(&c.cmd(&hmget)), show(&want));
    // The hash's meta record, then the 20 fields together. Failing each
    // probe at its first miss took a round per field, and after 4 rounds
    // the shard read the other 16 itself.
    let jobs = pool_stats(&mut c).0 - before.0;
    assert!((1..=2).contains(&jobs), "{jobs} pool jobs for 20 fields");
    // The probe passes that missed were not counted as keyspace misses.
    assert_eq!(info_field(&mut c, "stats", "keyspace_misses"), "0");
}

#[test]
fn every_read_command_answers_the_same_from_disk_as_from_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut b = Basalt::start_in(dir, 1, DEBUG);
    let mut c = b.raw();
    let setup: &[&[&str]] = &[
        &["SET", "s", "hello"],
        &["HSET", "h", "a", "1", "b", "2"],
        &["SADD", "z", "x", "y"],
        &["SET", "n", "12"],
        &["PEXPIRE", "n", "100000000"],
    ];
    for cmd in setup {
        c.cmd(cmd);
    }
    let reads: &[&[&str]] = &[
        &["GET", "s"],
        &["STRLEN", "s"],
        &["GETRANGE", "s", "1", "3"],
        &["HGET", "h", "a"],
        &["HMGET", "h", "a", "zz", "b"],
        &["HLEN", "h"],
        &["HEXISTS", "h", "b"],
        &["SISMEMBER", "z", "y"],
        &["SCARD", "z"],
        &["TYPE", "h"],
        &["TTL", "n"],
        &["GET", "missing"],
        &["HGET", "s", "a"],
    ];
    let warm: Vec<Vec<u8>> = reads.iter().map(|r| c.cmd(r)).collect();
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(dir, 1, DEBUG);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "20"]), b"+OK\r\n");
    let before = pool_stats(&mut c);
    for (r, w) in reads.iter().zip(&warm) {
        let got = c.cmd(r);
        // TTL counts down; the rest is exact.
        if r[0] == "TTL" {
            assert_eq!(got[0], b':');
        } else {
            assert_eq!(show(&got), show(w), "{r:?}");
        }
    }
    assert!(pool_stats(&mut c).0 > before.0, "nothing was read by the pool");
}

/// One `name:value` line of an INFO section.
fn info_field(c: &mut Raw, section: &str, name: &str) -> String {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", section])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| panic!("no {name} in INFO {section}: {info}"))
}

#[test]
fn maxmemory_sizes_the_caches_and_info_memory_reports_each_part() {
    // The test servers get `--block-cache-size 16mb` (tests/common).
    let b = Basalt::start_with(2, &["--maxmemory", "256mb"]);
    let mut c = b.raw();
    let num = |c: &mut Raw, name: &str| -> u64 { info_field(c, "memory", name).parse().unwrap() };
    assert_eq!(num(&mut c, "maxmemory"), 256 << 20);
    assert_eq!(info_field(&mut c, "memory", "maxmemory_source"), "maxmemory");
    assert_eq!(info_field(&mut c, "memory", "maxmemory_human"), "256.00M");
    // The meta caches and the memtables come from the budget; the block
    // cache size given on the command line stands.
    let meta = num(&mut c, "meta_cache_capacity");
    let memtables = num(&mut c, "rocksdb_memtables_cap");
    assert!(meta > 32 << 20 && meta < 128 << 20, "meta caches {meta}");
    assert!(memtables > 8 << 20 && memtables < 64 << 20, "memtables {memtables}");
    assert_eq!(num(&mut c, "rocksdb_block_cache_capacity"), 16 << 20);
    let cfg = c.cmd(&["CONFIG", "GET", "meta-cache-size"]);
    assert!(String::from_utf8_lossy(&cfg).contains(&meta.to_string()), "{}", show(&cfg));
    // Parts fill as data comes in; used_memory counts them.
    for i in 0..2000 {
        c.cmd(&["SET", &format!("k{i}"), &"v".repeat(1000)]);
    }
    // (In the memtables, or in the write tier's memory when it is on.)
    assert!(num(&mut c, "rocksdb_memtables") + num(&mut c, "wtier_bytes") > 1 << 20);
    // Reads fill the meta caches (a write of a new key no longer leaves
    // an absent entry there: the key filter answers its check).
    for i in 0..2000 {
        c.cmd(&["GET", &format!("k{i}")]);
    }
    assert!(num(&mut c, "meta_cache_bytes") > 0);
    assert!(num(&mut c, "used_memory") > num(&mut c, "rocksdb_memtables"));
    assert!(num(&mut c, "used_memory_rss") > 0);
    // Without a budget (and outside a memory cgroup), nothing says 0 twice.
    let b = Basalt::start(1);
    let mut c = b.raw();
    let source = info_field(&mut c, "memory", "maxmemory_source");
    assert!(source == "none" || source == "cgroup", "{source}");
}

/// Redis Cluster's key slot (CRC16/XMODEM of the key, no hash tags here).
fn slot(key: &str) -> u16 {
    let mut crc: u16 = 0;
    for &b in key.as_bytes() {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc & 16383
}

#[test]
fn a_cold_key_of_another_shard_is_fetched_while_this_shard_serves_hits() {
    // Only shard 0 accepts connections; slots 8192.. belong to shard 1, and
    // shard 0 reads them from shard 1's column family (the cross-shard GET).
    let args = ["--enable-debug-command", "yes", "--listen-shards", "0"];
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Basalt::start_in(tmp.path(), 2, &args);
    let mut c = b.raw();
    let far: Vec<usize> = (0..50).filter(|i| slot(&format!("cold:{i}")) >= 8192).collect();
    assert!(far.len() >= 2);
    for &i in &far {
        c.cmd(&["SET", &format!("cold:{i}"), &val(i)]);
    }
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(tmp.path(), 2, &args);
    let mut hot = b.raw();
    // Every shard has counted its keys (a read of all of them) before
    // DBSIZE answers; the caches are emptied after that.
    assert_eq!(hot.cmd(&["DBSIZE"]), format!(":{}\r\n", far.len()).into_bytes());
    assert_eq!(hot.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    assert_eq!(hot.cmd(&["SET", "hot", "h"]), b"+OK\r\n");
    assert_eq!(hot.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "1000"]), b"+OK\r\n");
    let before = pool_stats(&mut hot);
    let mut cold = b.raw();
    let t0 = Instant::now();
    cold.send_bytes(&Raw::encode(&["GET", &format!("cold:{}", far[0])]));
    thread::sleep(Duration::from_millis(100));
    assert_eq!(hot.cmd(&["GET", "hot"]), bulk("h"));
    assert!(t0.elapsed() < Duration::from_millis(700), "a hit waited: {:?}", t0.elapsed());
    assert_eq!(show(&cold.reply()), show(&bulk(&val(far[0]))));
    assert!(t0.elapsed() >= Duration::from_millis(1000));
    assert_eq!(pool_stats(&mut hot).0, before.0 + 1);
}

#[test]
fn another_shards_misses_in_mget_and_pipelines_go_to_the_pool_together() {
    // Only shard 0 accepts connections; slots 8192.. belong to shard 1. An
    // MGET's share and a pipeline's share for shard 1 run there: their
    // misses must leave shard 1 free, all of a share's keys in one job.
    let args = ["--enable-debug-command", "yes", "--listen-shards", "0"];
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Basalt::start_in(tmp.path(), 2, &args);
    let mut c = b.raw();
    let far: Vec<usize> = (0..80).filter(|i| slot(&format!("cold:{i}")) >= 8192).take(20).collect();
    assert!(far.len() >= 10);
    for &i in &far {
        c.cmd(&["SET", &format!("cold:{i}"), &val(i)]);
    }
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(tmp.path(), 2, &args);
    let mut hot = b.raw();
    assert_eq!(hot.cmd(&["DBSIZE"]), format!(":{}\r\n", far.len()).into_bytes());
    assert_eq!(hot.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    let hot_key = (0..).map(|i| format!("hot:{i}")).find(|k| slot(k) >= 8192).unwrap();
    assert_eq!(hot.cmd(&["SET", &hot_key, "hh"]), b"+OK\r\n");
    assert_eq!(hot.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "1000"]), b"+OK\r\n");

    // MGET of the first half: one job for all of shard 1's keys; shard 1
    // answers a hit meanwhile.
    let (half, rest) = far.split_at(far.len() / 2);
    let before = pool_stats(&mut hot);
    let mut mget = vec!["MGET".to_string()];
    let mut want = format!("*{}\r\n", half.len()).into_bytes();
    for &i in half {
        mget.push(format!("cold:{i}"));
        want.extend(bulk(&val(i)));
    }
    let mut cold = b.raw();
    let t0 = Instant::now();
    cold.send_bytes(&Raw::encode(&mget));
    thread::sleep(Duration::from_millis(100));
    assert_eq!(hot.cmd(&["STRLEN", &hot_key]), b":2\r\n");
    assert!(t0.elapsed() < Duration::from_millis(700), "shard 1 was busy: {:?}", t0.elapsed());
    assert_eq!(show(&cold.reply()), show(&want));
    assert!(t0.elapsed() >= Duration::from_millis(1000), "the MGET did not use the pool");
    assert_eq!(pool_stats(&mut hot).0, before.0 + 1, "one pool job for the MGET");

    // A pipeline's share for shard 1 (STRLEN: a GET would be read from
    // here), with a write of one of its keys in the middle: in order, the
    // misses read ahead together.
    let before = pool_stats(&mut hot);
    let mut pipe = Vec::new();
    let mut want = Vec::new();
    for (n, &i) in rest.iter().enumerate() {
        pipe.extend(Raw::encode(&["STRLEN", &format!("cold:{i}")]));
        want.push(format!(":{}\r\n", val(i).len()).into_bytes());
        if n == 2 {
            pipe.extend(Raw::encode(&["APPEND", &format!("cold:{i}"), "++"]));
            want.push(format!(":{}\r\n", val(i).len() + 2).into_bytes());
        }
    }
    let t0 = Instant::now();
    cold.send_bytes(&pipe);
    thread::sleep(Duration::from_millis(100));
    assert_eq!(hot.cmd(&["STRLEN", &hot_key]), b":2\r\n");
    assert!(t0.elapsed() < Duration::from_millis(700), "shard 1 was busy: {:?}", t0.elapsed());
    for (k, w) in want.iter().enumerate() {
        assert_eq!(show(&cold.reply()), show(w), "reply {k}");
    }
    let jobs = pool_stats(&mut hot).0 - before.0;
    assert!((1..=2).contains(&jobs), "{jobs} pool jobs for {} misses", rest.len());
    assert!(t0.elapsed() < Duration::from_millis(3500), "misses went out one by one");

    // A DEL of a key an MGET is reading waits for the MGET.
    let victim = format!("cold:{}", half[0]);
    assert_eq!(hot.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    cold.send_bytes(&Raw::encode(&["MGET", &victim]));
    thread::sleep(Duration::from_millis(150));
    let mut deleter = b.raw();
    assert_eq!(deleter.cmd(&["DEL", &victim, "nokey:1", "nokey:2"]), b":1\r\n");
    assert_eq!(show(&cold.reply()), show(&[b"*1\r\n".to_vec(), bulk(&val(half[0]))].concat()));
    assert_eq!(hot.cmd(&["EXISTS", &victim]), b":0\r\n");
}

/// A pipeline of GETs of random keys over two shards: every other GET is
/// the other shard's (read from here, `misses::peer_get`). Each shard's
/// misses must go to the pool together, not one GET at a time: read-ahead
/// passes over the other shard's keys instead of stopping at them.
#[test]
fn a_pipeline_of_gets_over_two_shards_reads_each_shards_misses_together() {
    let args = ["--enable-debug-command", "yes", "--listen-shards", "0"];
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Basalt::start_in(tmp.path(), 2, &args);
    let mut c = b.raw();
    let near: Vec<usize> = (0..100).filter(|i| slot(&format!("cold:{i}")) < 8192).take(8).collect();
    let far: Vec<usize> = (0..100).filter(|i| slot(&format!("cold:{i}")) >= 8192).take(8).collect();
    assert_eq!((near.len(), far.len()), (8, 8));
    for &i in near.iter().chain(&far) {
        c.cmd(&["SET", &format!("cold:{i}"), &val(i)]);
    }
    c.send_bytes(&Raw::encode(&["SHUTDOWN"]));
    assert!(b.wait_exit().success());
    let b = Basalt::start_in(tmp.path(), 2, &args);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["DBSIZE"]), b":16\r\n");
    assert_eq!(c.cmd(&["DEBUG", "DROP-CACHES"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["DEBUG", "SET-DISK-READ-DELAY", "300"]), b"+OK\r\n");
    let before = pool_stats(&mut c);
    let mut pipe = Vec::new();
    let mut want = Vec::new();
    for (&n, &f) in near.iter().zip(&far) {
        for i in [n, f] {
            pipe.extend(Raw::encode(&["GET", &format!("cold:{i}")]));
            want.push(bulk(&val(i)));
        }
    }
    let t0 = Instant::now();
    c.send_bytes(&pipe);
    for (k, w) in want.iter().enumerate() {
        assert_eq!(show(&c.reply()), show(w), "reply {k}");
    }
    // One job per shard (a few more if blocks were evicted between fetch
    // and run); one per GET was 16 jobs and 4.8 s.
    let jobs = pool_stats(&mut c).0 - before.0;
    assert!((2..=4).contains(&jobs), "{jobs} pool jobs for 16 misses on 2 shards");
    assert!(
        t0.elapsed() < Duration::from_millis(2000),
        "misses went out one by one: {:?}",
        t0.elapsed()
    );
}

#[test]
fn bottommost_compression_is_a_startup_choice() {
    let b = Basalt::start_with(1, &["--bottommost-compression", "lz4"]);
    let mut c = b.raw();
    assert_eq!(
        show(&c.cmd(&["CONFIG", "GET", "bottommost-compression"])),
        show(b"*2\r\n$22\r\nbottommost-compression\r\n$3\r\nlz4\r\n")
    );
    assert_eq!(
        show(&c.cmd(&["CONFIG", "SET", "bottommost-compression", "zstd"])),
        show(b"-ERR CONFIG SET failed (possibly related to argument 'bottommost-compression') - can't set immutable config\r\n")
    );
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

/// `background-priority` is fixed at startup; each value starts a server
/// that stores and compacts (COMPACT runs a flush and a compaction on the
/// pools it names).
#[test]
fn background_priority_is_a_startup_choice() {
    for value in ["low-flush", "low", "normal"] {
        let b = Basalt::start_with(1, &["--background-priority", value]);
        let mut c = b.raw();
        let want = format!("*2\r\n$19\r\nbackground-priority\r\n${}\r\n{value}\r\n", value.len());
        assert_eq!(show(&c.cmd(&["CONFIG", "GET", "background-priority"])), show(want.as_bytes()));
        assert_eq!(
            show(&c.cmd(&["CONFIG", "SET", "background-priority", "normal"])),
            show(b"-ERR CONFIG SET failed (possibly related to argument 'background-priority') - can't set immutable config\r\n")
        );
        assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["COMPACT"]), b"+OK\r\n");
        assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    }
}
