//! Server commands: INFO CONFIG TIME SHUTDOWN LASTSAVE SAVE BGSAVE DEBUG.
//! They gather per-shard counters with `broadcast` and act on the process.

use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use hdrhistogram::Histogram;
use shards::Shard;

use super::args::{float, int, is, text};
use super::keys::help_reply;
use super::{ConnCmd, TABLE};
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::resp::Reply;
use crate::server::conn::Client;
use crate::server::global::{now_ms, now_us, Global};
use crate::shard::{CmdStat, ShardState};
use crate::storage::cache::CacheStats;
use crate::storage::Fsync;

/// What every shard reports for INFO.
struct ShardReport {
    keys: Vec<i64>,
    expires: Vec<i64>,
    stats: Vec<CmdStat>,
    expired: u64,
    expired_fields: u64,
    hits: u64,
    misses: u64,
    net_in: u64,
    net_out: u64,
    /// Only gathered when INFO asks for latencystats.
    latency: Vec<Option<Box<Histogram<u64>>>>,
    errors: Vec<(String, u64)>,
    rates: (f64, f64, f64),
    connections: u64,
    meta_cache: CacheStats,
}

async fn gather(shard: &Rc<Shard<ShardState>>, with_latency: bool) -> Vec<ShardReport> {
    shard
        .broadcast(move |st: &ShardState| ShardReport {
            keys: (0..st.ks.databases()).map(|d| st.ks.count(d as u8)).collect(),
            expires: (0..st.ks.databases()).map(|d| st.ks.expires(d as u8)).collect(),
            stats: st.cmd_stats.borrow().clone(),
            expired: st.ks.stats.expired_keys.get(),
            expired_fields: st.ks.stats.expired_fields.get(),
            hits: st.ks.stats.hits.get(),
            misses: st.ks.stats.misses.get(),
            net_in: st.net.borrow().0,
            net_out: st.net.borrow().1,
            latency: if with_latency { st.latency.borrow().clone() } else { Vec::new() },
            errors: st.errors.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect(),
            rates: st.rates.borrow().mean(),
            connections: st.connections.get(),
            meta_cache: st.ks.store.meta_cache_stats().unwrap_or_default(),
        })
        .await
}

/// Command `idx`'s latency histogram summed over every shard's histograms;
/// `None` when no shard has recorded a call.
fn command_histogram<'a>(per_shard: impl Iterator<Item = &'a Vec<Option<Box<Histogram<u64>>>>>, idx: usize) -> Option<Box<Histogram<u64>>> {
    let mut merged: Option<Box<Histogram<u64>>> = None;
    for h in per_shard.filter_map(|hs| hs.get(idx).and_then(|h| h.as_ref())) {
        match &mut merged {
            // Same bounds everywhere (monitor::new_histogram): adding cannot fail.
            Some(m) => {
                let _ = m.add(&**h);
            }
            None => merged = Some(h.clone()),
        }
    }
    merged.filter(|h| !h.is_empty())
}

/// Size of the WAL files under the data dir.
fn wal_bytes(g: &Global) -> u64 {
    std::fs::read_dir(g.engine.dir().join("db"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// Bytes the allocator has handed out (glibc's mallinfo2: arenas and
/// mmapped chunks): Redis's `used_memory`. RocksDB's caches and memtables
/// are in it; the page cache and thread stacks are not.
fn heap_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let mi = unsafe { libc::mallinfo2() };
        Some((mi.uordblks + mi.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// Redis's human-readable byte counts: "0B", "512.00K", "1.50M", "2.00G".
fn human(n: u64) -> String {
    let f = n as f64;
    match n {
        n if n < 1 << 10 => format!("{n}B"),
        n if n < 1 << 20 => format!("{:.2}K", f / 1024.0),
        n if n < 1 << 30 => format!("{:.2}M", f / 1048576.0),
        n if n < 1 << 40 => format!("{:.2}G", f / 1073741824.0),
        _ => format!("{:.2}T", f / 1099511627776.0),
    }
}

fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe {
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_stime), t(ru.ru_utime))
}

async fn info(shard: &Rc<Shard<ShardState>>, g: &Global, argv: &[Bytes]) -> String {
    let wanted: Vec<String> = argv[1..].iter().map(|a| text(a).to_ascii_lowercase()).collect();
    let all = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s) || (default && s != "commandstats" && s != "latencystats");
    let reports = gather(shard, want("latencystats")).await;
    let mut out = String::new();
    let uptime = g.started.elapsed().as_secs();
    if want("server") {
        let _ = write!(
            out,
            "# Server\r\nredis_version:{}\r\nbasalt_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nmultiplexing_api:io_uring\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nshards:{}\r\n\r\n",
            super::connection::SERVER_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            g.run_id,
            g.port,
            now_us(),
            uptime,
            uptime / 86400,
            g.config.hz.load(Ordering::Relaxed),
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            g.config.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            g.shards,
        );
    }
    if want("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\n\r\n",
            g.connected(),
            g.config.maxclients.load(Ordering::Relaxed)
        );
    }
    if want("memory") {
        let rss = rss_bytes();
        let m = g.engine.memory(g.shards);
        let used = heap_bytes().unwrap_or(rss);
        let meta: u64 = reports.iter().map(|r| r.meta_cache.bytes).sum();
        let budget = &g.memory;
        let _ = write!(
            out,
            "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_source:{}\r\nmaxmemory_policy:noeviction\r\nrocksdb_block_cache_capacity:{}\r\nrocksdb_block_cache_usage:{}\r\nrocksdb_block_cache_pinned_usage:{}\r\nrocksdb_index_filter_in_cache:{}\r\nrocksdb_memtables:{}\r\nrocksdb_memtables_cap:{}\r\nrocksdb_table_readers:{}\r\nmeta_cache_capacity:{}\r\nmeta_cache_bytes:{meta}\r\nmeta_cache_entries:{}\r\n\r\n",
            human(used),
            human(rss),
            budget.total,
            human(budget.total),
            budget.source.name(),
            m.block_cache_capacity,
            m.block_cache_usage,
            m.block_cache_pinned,
            m.index_filter_in_cache,
            m.memtables,
            m.memtables_cap,
            m.table_readers,
            budget.meta_cache,
            reports.iter().map(|r| r.meta_cache.entries).sum::<u64>(),
        );
    }
    if want("persistence") {
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\naof_enabled:1\r\nappendfsync:{}\r\nwal_group_syncs:{}\r\nrocksdb_wal_bytes:{}\r\nrocksdb_live_sst_bytes:{}\r\nrocksdb_pending_compaction_bytes:{}\r\nrocksdb_running_compactions:{}\r\nrocksdb_delayed_write_rate:{}\r\nrocksdb_write_stopped:{}\r\nrocksdb_write_amp:{:.2}\r\naof_last_write_status:{}\r\ndisk_free_bytes:{}\r\nmin_free_disk:{}\r\nwrite_error:{}\r\n\r\n",
            g.bgsave_running.load(Ordering::Relaxed) as u8,
            g.lastsave.load(Ordering::Relaxed),
            g.engine.fsync().name(),
            g.engine.group_syncs.load(Ordering::Relaxed),
            wal_bytes(g),
            g.engine.property_sum(g.shards, "rocksdb.live-sst-files-size"),
            g.engine.property_sum(g.shards, "rocksdb.estimate-pending-compaction-bytes"),
            g.engine.property_sum(g.shards, "rocksdb.num-running-compactions"),
            g.engine.property_sum(g.shards, "rocksdb.actual-delayed-write-rate"),
            (g.engine.property_sum(g.shards, "rocksdb.is-write-stopped") > 0 || g.engine.disk.refused()) as u8,
            g.engine.write_amp(g.shards),
            if g.engine.disk.refused() { "err" } else { "ok" },
            g.engine.disk.free(),
            g.config.get_int("min-free-disk"),
            g.engine.disk.last_error().unwrap_or_default().replace(['\r', '\n'], " "),
        );
    }
    if want("stats") {
        let calls: u64 = reports.iter().flat_map(|r| r.stats.iter()).map(|s| s.calls).sum();
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nexpired_subkeys:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\nmeta_cache_hits:{}\r\nmeta_cache_misses:{}\r\ndisk_read_jobs:{}\r\ndisk_read_keys:{}\r\ndisk_read_batches:{}\r\ntotal_error_replies:{}\r\n\r\n",
            g.total_connections.load(Ordering::Relaxed),
            calls,
            reports.iter().map(|r| r.rates.0).sum::<f64>().round() as u64,
            reports.iter().map(|r| r.net_in).sum::<u64>(),
            reports.iter().map(|r| r.net_out).sum::<u64>(),
            reports.iter().map(|r| r.rates.1).sum::<f64>() / 1024.0,
            reports.iter().map(|r| r.rates.2).sum::<f64>() / 1024.0,
            g.rejected_connections.load(Ordering::Relaxed),
            reports.iter().map(|r| r.expired).sum::<u64>(),
            reports.iter().map(|r| r.expired_fields).sum::<u64>(),
            reports.iter().map(|r| r.hits).sum::<u64>(),
            reports.iter().map(|r| r.misses).sum::<u64>(),
            reports.iter().map(|r| r.meta_cache.hits).sum::<u64>(),
            reports.iter().map(|r| r.meta_cache.misses).sum::<u64>(),
            g.engine.read_pool_stats().0,
            g.engine.read_pool_stats().1,
            g.engine.read_pool_stats().2,
            reports.iter().flat_map(|r| r.errors.iter()).map(|(_, n)| n).sum::<u64>(),
        );
    }
    if want("cpu") {
        let (sys, user) = cpu_times();
        let _ = write!(out, "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n\r\n");
    }
    if want("commandstats") {
        out.push_str("# Commandstats\r\n");
        for (i, spec) in TABLE.iter().enumerate() {
            let mut s = CmdStat::default();
            for r in &reports {
                if let Some(c) = r.stats.get(i) {
                    s.calls += c.calls;
                    s.usec += c.usec;
                    s.failed += c.failed;
                    s.rejected += c.rejected;
                }
            }
            if s.calls + s.rejected == 0 {
                continue;
            }
            let per = if s.calls > 0 { s.usec as f64 / s.calls as f64 } else { 0.0 };
            let _ = write!(
                out,
                "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
                spec.name, s.calls, s.usec, per, s.rejected, s.failed
            );
        }
        out.push_str("\r\n");
    }
    if want("errorstats") {
        out.push_str("# Errorstats\r\n");
        let mut by_code: std::collections::BTreeMap<&str, u64> = Default::default();
        for (code, n) in reports.iter().flat_map(|r| r.errors.iter()) {
            *by_code.entry(code.as_str()).or_default() += n;
        }
        for (code, n) in by_code {
            let _ = write!(out, "errorstat_{code}:count={n}\r\n");
        }
        out.push_str("\r\n");
    }
    if want("latencystats") {
        out.push_str("# Latencystats\r\n");
        let percentiles = crate::monitor::parse_percentiles(&g.config.get("latency-tracking-info-percentiles")).unwrap_or_default();
        for (i, spec) in TABLE.iter().enumerate() {
            if let Some(h) = command_histogram(reports.iter().map(|r| &r.latency), i) {
                let _ = write!(
                    out,
                    "latency_percentiles_usec_{}:{}\r\n",
                    spec.name,
                    crate::monitor::percentiles_line(&h, &percentiles)
                );
            }
        }
        out.push_str("\r\n");
    }
    if want("shards") {
        out.push_str("# Shards\r\n");
        let depths = shard.queue_depths();
        for (i, r) in reports.iter().enumerate() {
            let _ = write!(
                out,
                "shard{i}:ops={},instantaneous_ops_per_sec={},keys={},connected_clients={},queue_depth={}\r\n",
                r.stats.iter().map(|s| s.calls).sum::<u64>(),
                r.rates.0.round() as u64,
                r.keys.iter().sum::<i64>(),
                r.connections,
                depths.get(i).copied().unwrap_or(0)
            );
        }
        out.push_str("\r\n");
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        for db in 0..g.databases {
            let keys: i64 = reports.iter().map(|r| r.keys.get(db).copied().unwrap_or(0)).sum();
            let expires: i64 = reports.iter().map(|r| r.expires.get(db).copied().unwrap_or(0)).sum();
            if keys > 0 {
                // avg_ttl is Redis's sampled estimate; Basalt does not sample (0 = unknown).
                let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
        out.push_str("\r\n");
    }
    while out.ends_with("\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    out
}

const CONFIG_HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Print this help.",
];

async fn config(shard: &Rc<Shard<ShardState>>, g: &Global, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = text(&argv[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" => {
            let pats: Vec<&[u8]> = argv[2..].iter().map(|a| &a[..]).collect();
            let found = g.config.matching(&pats);
            r.map(found.len());
            for (k, v) in found {
                r.bulk(k.as_bytes());
                r.bulk(v.as_bytes());
            }
        }
        "set" => {
            if !argv.len().is_multiple_of(2) {
                return Err(CmdError::new(super::arity_error("config|set")));
            }
            let pairs: Vec<(String, String)> = argv[2..].chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect();
            let applied = g.config.set_many(&pairs).map_err(CmdError::new)?;
            for (k, v) in applied {
                if k == "appendfsync" {
                    if let Some(f) = Fsync::parse(&v) {
                        g.engine.set_fsync(f);
                    }
                }
                if k == "min-free-disk" {
                    g.engine.disk.set_min_free(g.config.get_int("min-free-disk").max(0) as u64);
                }
            }
            r.ok();
        }
        "resetstat" => {
            shard.broadcast(|st: &ShardState| st.reset_stats()).await;
            g.total_connections.store(0, Ordering::Relaxed);
            g.rejected_connections.store(0, Ordering::Relaxed);
            r.ok();
        }
        "rewrite" => {
            g.config.rewrite().map_err(|e| CmdError::new(format!("ERR {e}")))?;
            r.ok();
        }
        _ => help_reply(r, CONFIG_HELP),
    }
    Ok(())
}

/// Creates a checkpoint of the whole database under `<dir>/checkpoint`.
fn save(g: &Global) -> CmdResult {
    let path = g.engine.dir().join("checkpoint");
    g.engine.checkpoint(&path)?;
    g.lastsave.store(now_ms() / 1000, Ordering::Relaxed);
    Ok(())
}

/// Flushes everything and exits the process: used by SHUTDOWN and signals.
pub fn shutdown_now(g: &Global) -> ! {
    // Stop listening first, as Redis: a listener's queued accept keeps its
    // socket listening until the ring is torn down after exit, and a
    // restart on the port would find it taken. shutdown(2) takes a
    // listening socket out of LISTEN at once; the fds stay open until exit.
    if let Ok(mut l) = g.listeners.lock() {
        for fd in std::mem::take(&mut *l) {
            // SAFETY: a plain syscall on an fd this process owns.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
    }
    tracing::info!("shutting down: syncing the WAL and flushing memtables");
    if let Err(e) = g.engine.shutdown() {
        tracing::error!(error = %e, "flush at shutdown failed");
    }
    std::process::exit(0)
}

pub async fn run(
    shard: &Rc<Shard<ShardState>>,
    st: &ShardState,
    client: &mut Client,
    c: ConnCmd,
    argv: &[Bytes],
    r: &mut Reply,
) -> CmdResult {
    let g = st.global.clone();
    match c {
        ConnCmd::Info => {
            let text = info(shard, &g, argv).await;
            r.verbatim(&text);
        }
        ConnCmd::Config => config(shard, &g, argv, r).await?,
        ConnCmd::Slowlog => slowlog(shard, argv, r).await?,
        ConnCmd::Latency if argv.len() >= 2 && is(&argv[1], "histogram") => latency_histogram(shard, argv, r).await,
        ConnCmd::Latency => latency(&g, argv, r)?,
        ConnCmd::Time => {
            let us = now_us();
            r.array(2);
            r.bulk((us / 1_000_000).to_string().as_bytes());
            r.bulk((us % 1_000_000).to_string().as_bytes());
        }
        ConnCmd::Lastsave => r.int(g.lastsave.load(Ordering::Relaxed) as i64),
        ConnCmd::Save => {
            if g.bgsave_running.load(Ordering::Relaxed) {
                return Err(CmdError::new("ERR Background save already in progress"));
            }
            save(&g)?;
            r.ok();
        }
        ConnCmd::Bgsave => {
            if argv.len() > 2 || (argv.len() == 2 && !is(&argv[1], "schedule")) {
                return Err(SYNTAX);
            }
            if g.bgsave_running.swap(true, Ordering::SeqCst) {
                return Err(CmdError::new("ERR Background save already in progress"));
            }
            let g2 = g.clone();
            shards::rt::spawn(async move {
                let g3 = g2.clone();
                let res = shards::rt::spawn_blocking(move || save(&g3)).await;
                if let Err(e) = res {
                    tracing::error!(error = %e.0, "background save failed");
                }
                g2.bgsave_running.store(false, Ordering::SeqCst);
            });
            r.simple("Background saving started");
        }
        ConnCmd::Shutdown => {
            for a in &argv[1..] {
                if !["nosave", "save", "now", "force", "abort"].iter().any(|w| is(a, w)) {
                    return Err(SYNTAX);
                }
                if is(a, "abort") {
                    return Err(CmdError::new("ERR No shutdown in progress."));
                }
            }
            shutdown_now(&g);
        }
        ConnCmd::Debug => {
            let allowed = match g.config.get("enable-debug-command").as_str() {
                "yes" => true,
                "local" => client.info.addr.starts_with("127.") || client.info.addr.starts_with("[::1]"),
                _ => false,
            };
            if !allowed {
                return Err(CmdError::new("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
            }
            if is(&argv[1], "sleep") && argv.len() == 3 {
                let secs = float(&argv[2])?;
                shards::rt::sleep(Duration::from_secs_f64(secs.max(0.0))).await;
                r.ok();
            } else if is(&argv[1], "set-disk-read-delay") && argv.len() == 3 {
                // Basalt's own: each read of the I/O pool first sleeps this
                // long (milliseconds), so tests can keep a miss in flight.
                let ms = int(&argv[2])?;
                g.engine.set_read_delay(Duration::from_millis(ms.max(0) as u64));
                r.ok();
            } else if is(&argv[1], "drop-caches") && argv.len() == 2 {
                // Basalt's own: flush the memtables and empty the caches, so
                // every record is on disk only (tests of the read pool).
                g.engine.drop_caches().map_err(CmdError::from)?;
                r.ok();
            } else if is(&argv[1], "help") {
                help_reply(
                    r,
                    &[
                        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                        "SLEEP <seconds>",
                        "    Stop the connection for <seconds> (decimals allowed).",
                        "DROP-CACHES",
                        "    Flush the memtables and empty the block and meta caches (Basalt).",
                        "SET-DISK-READ-DELAY <milliseconds>",
                        "    Delay each read of the I/O pool (Basalt; for tests).",
                        "HELP",
                        "    Print this help.",
                    ],
                );
            } else {
                return Err(CmdError::new(format!(
                    "ERR unknown subcommand '{}'. Try DEBUG HELP.",
                    text(&argv[1])
                )));
            }
        }
        _ => return Err(CmdError::new("ERR internal routing error")),
    }
    Ok(())
}

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

/// SLOWLOG GET/LEN/RESET/HELP over every shard's log, merged by entry id.
async fn slowlog(shard: &Rc<Shard<ShardState>>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = text(&argv[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if argv.len() > 3 => {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
                text(&argv[1])
            )));
        }
        "get" => {
            let count = match argv.get(2) {
                None => 10,
                // As Redis: one message for non-numbers and numbers below -1.
                Some(a) => match text(a).parse::<i64>() {
                    Ok(n) if n >= -1 => n,
                    _ => return Err(CmdError::new("ERR count should be greater than or equal to -1")),
                },
            };
            let mut entries: Vec<crate::monitor::SlowEntry> = shard
                .broadcast(|st: &ShardState| st.slowlog.borrow().iter().cloned().collect::<Vec<_>>())
                .await
                .into_iter()
                .flatten()
                .collect();
            entries.sort_by_key(|e| std::cmp::Reverse(e.id));
            if count >= 0 {
                entries.truncate(count as usize);
            }
            r.array(entries.len());
            for e in &entries {
                r.array(6);
                r.int(e.id as i64);
                r.int(e.unix_secs as i64);
                r.int(e.micros as i64);
                r.bulk_array(&e.args);
                r.bulk(e.addr.as_bytes());
                r.bulk(e.name.as_bytes());
            }
        }
        "len" => {
            let n: usize = shard.broadcast(|st: &ShardState| st.slowlog.borrow().len()).await.into_iter().sum();
            r.int(n as i64);
        }
        "reset" => {
            shard.broadcast(|st: &ShardState| st.slowlog.borrow_mut().clear()).await;
            r.ok();
        }
        _ => help_reply(r, SLOWLOG_HELP),
    }
    Ok(())
}

const LATENCY_HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Print this help.",
];

/// LATENCY LATEST/HISTORY/RESET/DOCTOR/HELP over the process-wide monitor.
/// Events: "command" (a command at least `latency-monitor-threshold` ms),
/// "wal-fsync" (the everysec WAL sync), "write-stall" (RocksDB stopped or
/// delayed writes).
fn latency(g: &Global, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = text(&argv[1]).to_ascii_lowercase();
    match sub.as_str() {
        "latest" => {
            let latest = g.latency.latest();
            r.array(latest.len());
            for (event, t, ms, max) in latest {
                r.array(4);
                r.bulk(event.as_bytes());
                r.int(t as i64);
                r.int(ms as i64);
                r.int(max as i64);
            }
        }
        "history" => {
            let h = g.latency.history(&text(&argv[2]));
            r.array(h.len());
            for (t, ms) in h {
                r.array(2);
                r.int(t as i64);
                r.int(ms as i64);
            }
        }
        "reset" => {
            let events: Vec<String> = argv[2..].iter().map(|a| text(a)).collect();
            r.int(g.latency.reset(&events) as i64);
        }
        "doctor" => {
            let latest = g.latency.latest();
            let mut report = String::new();
            if g.config.latency_monitor_threshold.load(Ordering::Relaxed) == 0 {
                report.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Basalt instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n");
            } else if latest.is_empty() {
                report.push_str(
                    "Dave, no latency spike was observed during the lifetime of this Basalt instance, not in the slightest bit.\n",
                );
            } else {
                for (event, _, ms, max) in latest {
                    let _ = writeln!(report, "{event}: latest spike {ms} ms, worst {max} ms.");
                }
            }
            r.verbatim(&report);
        }
        _ => help_reply(r, LATENCY_HELP),
    }
    Ok(())
}

/// LATENCY HISTOGRAM [command ...]: per command, its calls and the
/// cumulative count of calls at or under each power-of-two bucket of
/// microseconds, as Redis replies it (a map of maps). Unknown commands and
/// commands never called are left out.
async fn latency_histogram(shard: &Rc<Shard<ShardState>>, argv: &[Bytes], r: &mut Reply) {
    let wanted: Vec<usize> = if argv.len() > 2 {
        argv[2..].iter().filter_map(|a| super::lookup(a).map(|(i, _)| i)).collect()
    } else {
        (0..TABLE.len()).collect()
    };
    let per_shard = shard.broadcast(|st: &ShardState| st.latency.borrow().clone()).await;
    let mut found: Vec<(usize, Box<Histogram<u64>>)> = Vec::new();
    for i in wanted {
        if found.iter().any(|(j, _)| *j == i) {
            continue;
        }
        if let Some(h) = command_histogram(per_shard.iter(), i) {
            found.push((i, h));
        }
    }
    r.map(found.len());
    for (i, h) in &found {
        r.bulk(TABLE[*i].name.as_bytes());
        r.map(2);
        r.bulk(b"calls");
        r.int(h.len() as i64);
        r.bulk(b"histogram_usec");
        let buckets = crate::monitor::cumulative_log2_buckets(h);
        r.map(buckets.len());
        for (usec, cumulative) in buckets {
            r.int(usec as i64);
            r.int(cumulative as i64);
        }
    }
}
