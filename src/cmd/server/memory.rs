//! MEMORY: USAGE (a key's bytes, `types::memory`, run on its owner),
//! STATS (Redis's fields with Basalt's figures, then Basalt's own: block
//! cache, memtables, table readers, meta cache, read-ahead, connections),
//! DOCTOR, MALLOC-STATS (glibc's counters), PURGE (`malloc_trim`), HELP.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::info::{heap_bytes, rss_bytes};
use crate::cmd::args::{is, Args};
use crate::cmd::keys::help_reply;
use crate::cmd::Conn;
use crate::coord::{fan_out, Access};
use crate::error::{CmdResult, SYNTAX};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::types::memory::{usage, DEFAULT_SAMPLES};

const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// The most the allocator has held, as far as MEMORY STATS and INFO saw.
static PEAK: AtomicU64 = AtomicU64::new(0);

/// What the allocator holds now, and the peak so far.
pub(super) fn allocated() -> (u64, u64) {
    let now = heap_bytes().unwrap_or_else(rss_bytes);
    (now, PEAK.fetch_max(now, Ordering::Relaxed).max(now))
}

pub async fn memory(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let sub = args.bytes()?;
    if is(sub, "usage") {
        return memory_usage(c, argv, r).await;
    }
    // The other subcommands' arity was checked with the command's.
    if is(sub, "stats") {
        stats(c, r).await;
    } else if is(sub, "doctor") {
        let (total, _) = allocated();
        // Redis's own threshold for "too little to say anything".
        let text = if total < 5 << 20 {
            "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
        } else {
            "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
        };
        r.verbatim(text);
    } else if is(sub, "malloc-stats") {
        r.verbatim(&malloc_stats());
    } else if is(sub, "purge") {
        crate::allocs::collect();
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free pages to the kernel.
        unsafe {
            libc::malloc_trim(0);
        }
        r.ok();
    } else {
        help_reply(r, MEMORY_HELP);
    }
    Ok(())
}

/// MEMORY USAGE key [SAMPLES count], on the key's owner (a key on disk
/// only is read by the pool first, as any read).
async fn memory_usage(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = argv[2].clone();
    let mut args = Args::at(argv, 3);
    let mut samples = DEFAULT_SAMPLES;
    while !args.is_empty() {
        if args.option("samples", 1) {
            let n = args.int()?;
            if n < 0 {
                return Err(SYNTAX);
            }
            samples = n as u64;
        } else {
            return Err(SYNTAX);
        }
    }
    let db = c.db();
    let found = fan_out(c.shard, db, &[(2, key)], Access::Read, move |st: &ShardState, keys: &[Bytes]| {
        usage(&st.ks, db, &keys[0], crate::clock::now_ms(), samples)
    })
    .await;
    match found.into_iter().next().map(|(_, res)| res).transpose()?.flatten() {
        Some(n) => r.int(n as i64),
        None => r.null(),
    }
    Ok(())
}

/// What each shard reports for MEMORY STATS: keys per db, meta cache and
/// read-ahead bytes.
struct ShardMemory {
    keys: Vec<i64>,
    meta_cache: u64,
    read_ahead: u64,
}

async fn stats(c: Conn<'_>, r: &mut Reply) {
    let g = c.st().global.clone();
    let per_shard = c
        .shard
        .broadcast(|st: &ShardState| ShardMemory {
            keys: (0..st.ks.databases()).map(|d| st.ks.count(d as u8)).collect(),
            meta_cache: st.ks.meta_cache_stats().bytes,
            read_ahead: st.ks.store.ahead().bytes() as u64,
        })
        .await;
    let m = g.engine.memory(g.shards);
    let (total, peak) = allocated();
    let rss = rss_bytes();
    let startup = g.startup_allocated.min(total);
    // Each connection holds at least one read chunk.
    let clients = g.connected() as u64 * (16 << 10);
    let meta_cache: u64 = per_shard.iter().map(|s| s.meta_cache).sum();
    let read_ahead: u64 = per_shard.iter().map(|s| s.read_ahead).sum();
    let caches = m.block_cache_usage + m.memtables + m.table_readers + meta_cache + read_ahead;
    let overhead = startup + clients + caches;
    let keys: i64 = per_shard.iter().flat_map(|s| s.keys.iter()).sum();
    let net = total.saturating_sub(startup);
    let dataset = total.saturating_sub(overhead);
    let dbs: Vec<usize> = (0..g.databases)
        .filter(|&d| per_shard.iter().map(|s| s.keys.get(d).copied().unwrap_or(0)).sum::<i64>() > 0)
        .collect();
    let pct = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 * 100.0 / b as f64 };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    r.map(27 + dbs.len() + 6);
    let int = |r: &mut Reply, k: &str, v: u64| {
        r.bulk(k.as_bytes());
        r.int(v as i64);
    };
    int(r, "peak.allocated", peak);
    int(r, "total.allocated", total);
    int(r, "startup.allocated", startup);
    int(r, "replication.backlog", 0);
    int(r, "clients.slaves", 0);
    int(r, "clients.normal", clients);
    int(r, "cluster.links", 0);
    int(r, "aof.buffer", 0);
    int(r, "lua.caches", 0);
    int(r, "functions.caches", 0);
    for d in &dbs {
        r.bulk(format!("db.{d}").as_bytes());
        r.map(2);
        // No hash tables: the keys are in RocksDB, their overhead is the
        // caches' (below).
        int(r, "overhead.hashtable.main", 0);
        int(r, "overhead.hashtable.expires", 0);
    }
    int(r, "overhead.total", overhead);
    int(r, "keys.count", keys.max(0) as u64);
    int(r, "keys.bytes-per-key", if keys > 0 { net / keys as u64 } else { 0 });
    int(r, "dataset.bytes", dataset);
    let dbl = |r: &mut Reply, k: &str, v: f64| {
        r.bulk(k.as_bytes());
        r.double(v);
    };
    dbl(r, "dataset.percentage", pct(dataset, net));
    dbl(r, "peak.percentage", pct(total, peak));
    int(r, "allocator.allocated", total);
    int(r, "allocator.active", total);
    int(r, "allocator.resident", rss);
    dbl(r, "allocator-fragmentation.ratio", 1.0);
    int(r, "allocator-fragmentation.bytes", 0);
    dbl(r, "allocator.rss-ratio", ratio(rss, total));
    int(r, "allocator.rss-bytes", rss.saturating_sub(total));
    dbl(r, "rss-overhead.ratio", 1.0);
    int(r, "rss-overhead.bytes", 0);
    dbl(r, "fragmentation", ratio(rss, total));
    int(r, "fragmentation.bytes", rss.saturating_sub(total));
    // Basalt's own: where the memory that is not data goes.
    int(r, "rocksdb.block-cache", m.block_cache_usage);
    int(r, "rocksdb.memtables", m.memtables);
    int(r, "rocksdb.table-readers", m.table_readers);
    int(r, "meta-cache", meta_cache);
    int(r, "read-ahead", read_ahead);
    int(r, "connections", g.connected() as u64);
}

/// The allocators' counters, one per line: mimalloc's committed bytes
/// (Rust's allocations) and glibc's `mallinfo2` (RocksDB's).
fn malloc_stats() -> String {
    let mimalloc = format!("mimalloc\ncommitted:{}\n", crate::allocs::heap_bytes());
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let mi = unsafe { libc::mallinfo2() };
        format!(
            "{mimalloc}glibc malloc (mallinfo2)\narena:{}\nordblks:{}\nsmblks:{}\nhblks:{}\nhblkhd:{}\nusmblks:{}\nfsmblks:{}\nuordblks:{}\nfordblks:{}\nkeepcost:{}\n",
            mi.arena, mi.ordblks, mi.smblks, mi.hblks, mi.hblkhd, mi.usmblks, mi.fsmblks, mi.uordblks, mi.fordblks, mi.keepcost
        )
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    mimalloc
}
