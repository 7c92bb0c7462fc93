//! INFO: every section Redis prints, gathered from every shard.

use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use hdrhistogram::Histogram;
use shards::Shard;

use crate::clock::now_us;
use crate::cmd::args::{text, Args};
use crate::cmd::Conn;
use crate::error::CmdResult;
use crate::global::Global;
use crate::pubsub::Class;
use crate::resp::Reply;
use crate::shard::{CmdStat, ShardState};
use crate::types::keyspace::CacheStats;

pub async fn info(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = c.st().global.clone();
    let text = info_text(c.shard, &g, argv).await;
    r.verbatim(&text);
    Ok(())
}

/// What every shard reports for INFO.
struct ShardReport {
    keys: Vec<i64>,
    expires: Vec<i64>,
    stats: Vec<CmdStat>,
    expired: u64,
    expired_fields: u64,
    /// Active expiry: the stale share, cycles capped, cycle time (µs).
    expiry: (f64, u64, u64),
    /// Per db: the mean time left of keys with an expiry, and how many.
    avg_ttl: Vec<u64>,
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
    member_cache: CacheStats,
    /// The write tier's records and bytes.
    wtier: crate::storage::TierSize,
    /// The key filter's (bytes, keys entered, keys sized for, reads it
    /// answered absent).
    key_filter: (usize, usize, usize, u64),
    /// Bytes of the shard's Lua interpreter (0 while a gated script has it).
    lua: u64,
}

async fn gather(shard: &Rc<Shard<ShardState>>, with_latency: bool) -> Vec<ShardReport> {
    shard
        .broadcast(move |st: &ShardState| ShardReport {
            keys: (0..st.ks.databases()).map(|d| st.ks.count(d as u8)).collect(),
            expires: (0..st.ks.databases()).map(|d| st.ks.expires(d as u8)).collect(),
            stats: st.cmd_stats.borrow().clone(),
            expired: st.ks.stats.expired_keys.get(),
            expired_fields: st.ks.stats.expired_fields.get(),
            expiry: (
                st.ks.stats.stale_share.get(),
                st.ks.stats.time_cap_reached.get(),
                st.ks.stats.cycle_us.get(),
            ),
            avg_ttl: (0..st.ks.databases())
                .map(|d| st.ks.avg_ttl(d as u8, crate::clock::wall_ms()))
                .collect(),
            hits: st.ks.stats.hits.get(),
            misses: st.ks.stats.misses.get(),
            net_in: st.net.borrow().0,
            net_out: st.net.borrow().1,
            latency: if with_latency { st.latency.borrow().clone() } else { Vec::new() },
            errors: st.errors.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect(),
            rates: st.rates.borrow().mean(),
            connections: st.connections.get(),
            meta_cache: st.ks.meta_cache_stats(),
            member_cache: st.ks.member_cache_stats(),
            wtier: st.ks.write_tier_size(),
            key_filter: st.ks.key_filter_stats(),
            lua: st
                .lua
                .try_borrow()
                .ok()
                .and_then(|l| l.as_ref().map(|(vm, _)| vm.used_memory() as u64))
                .unwrap_or(0),
        })
        .await
}

/// Command `idx`'s latency histogram summed over every shard's histograms;
/// `None` when no shard has recorded a call.
pub(super) fn command_histogram<'a>(
    per_shard: impl Iterator<Item = &'a Vec<Option<Box<Histogram<u64>>>>>,
    idx: usize,
) -> Option<Box<Histogram<u64>>> {
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

pub(super) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// Bytes the allocators hold: Redis's `used_memory`. glibc's handed-out
/// bytes (mallinfo2: arenas and mmapped chunks; RocksDB's caches and
/// memtables) plus mimalloc's committed pages (every Rust allocation:
/// the meta and member caches, the write tier, connections). The page
/// cache and thread stacks are not in it.
pub(super) fn heap_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let mi = unsafe { libc::mallinfo2() };
        Some((mi.uordblks + mi.hblkhd) as u64 + crate::allocs::heap_bytes())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    Some(crate::allocs::heap_bytes())
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

async fn info_text(shard: &Rc<Shard<ShardState>>, g: &Global, argv: &[Bytes]) -> String {
    let wanted: Vec<String> = Args::new(argv).rest().iter().map(|a| text(a).to_ascii_lowercase()).collect();
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
            crate::cmd::connection::SERVER_VERSION,
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
        let paused = crate::pause::info(crate::clock::wall_ms());
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\npubsub_clients:{}\r\npaused_reason:{}\r\npaused_actions:{}\r\npaused_timeout_milliseconds:{}\r\n\r\n",
            g.connected(),
            g.config.maxclients.load(Ordering::Relaxed),
            // Clients parked by CLIENT PAUSE count as blocked, as in Redis.
            g.clients.lock().map_or(0, |c| c
                .values()
                .filter(|c| c.waiter().is_some() || c.paused.load(Ordering::Relaxed))
                .count()),
            g.clients.lock().map_or(0, |c| c.values().filter(|c| c.is_pubsub()).count()),
            paused.0,
            paused.1,
            paused.2,
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
            "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_source:{}\r\nmaxmemory_policy:noeviction\r\nrocksdb_block_cache_capacity:{}\r\nrocksdb_block_cache_usage:{}\r\nrocksdb_block_cache_pinned_usage:{}\r\nrocksdb_index_filter_in_cache:{}\r\nrocksdb_memtables:{}\r\nrocksdb_memtables_cap:{}\r\nrocksdb_table_readers:{}\r\nmeta_cache_capacity:{}\r\nmeta_cache_bytes:{meta}\r\nmeta_cache_entries:{}\r\nmember_cache_bytes:{}\r\nmember_cache_entries:{}\r\nwtier_records:{}\r\nwtier_bytes:{}\r\nwtier_log_bytes:{}\r\nwtier_budget:{}\r\nwtier_room:{}\r\nkey_filter_bytes:{}\r\nkey_filter_keys:{}\r\nkey_filter_capacity:{}\r\nkey_filter_absent_reads:{}\r\n\r\n",
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
            reports.iter().map(|r| r.member_cache.bytes).sum::<u64>(),
            reports.iter().map(|r| r.member_cache.entries).sum::<u64>(),
            reports.iter().map(|r| r.wtier.records).sum::<u64>(),
            reports.iter().map(|r| r.wtier.bytes).sum::<u64>(),
            reports.iter().map(|r| r.wtier.log_bytes).sum::<u64>(),
            reports.iter().map(|r| r.wtier.budget).sum::<u64>(),
            reports.iter().map(|r| r.wtier.room).sum::<u64>(),
            reports.iter().map(|r| r.key_filter.0).sum::<usize>(),
            reports.iter().map(|r| r.key_filter.1).sum::<usize>(),
            reports.iter().map(|r| r.key_filter.2).sum::<usize>(),
            reports.iter().map(|r| r.key_filter.3).sum::<u64>(),
        );
        // Scripts: every shard's interpreter (EVAL scripts and functions
        // share it), the script store, the function libraries.
        let lua: u64 = reports.iter().map(|r| r.lua).sum();
        let (scripts, script_bytes) = g.scripts.stats();
        let libs = g.functions.all();
        let functions: usize = libs.iter().map(|l| l.functions.len()).sum();
        let function_bytes: u64 = libs.iter().map(|l| l.code.len() as u64).sum();
        let scripts_total = script_bytes as u64 + function_bytes;
        out.truncate(out.len() - 2);
        let _ = write!(
            out,
            "used_memory_lua:{lua}\r\nused_memory_vm_eval:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{script_bytes}\r\nnumber_of_cached_scripts:{scripts}\r\nnumber_of_functions:{functions}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:{lua}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{function_bytes}\r\nused_memory_scripts:{scripts_total}\r\nused_memory_scripts_human:{}\r\n\r\n",
            human(lua),
            libs.len(),
            human(lua),
            human(scripts_total),
        );
    }
    if want("persistence") {
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\naof_enabled:1\r\nappendfsync:{}\r\nwal_group_syncs:{}\r\nrocksdb_wal_bytes:{}\r\nrocksdb_live_sst_bytes:{}\r\nrocksdb_pending_compaction_bytes:{}\r\nrocksdb_running_compactions:{}\r\nrocksdb_delayed_write_rate:{}\r\nrocksdb_write_stopped:{}\r\nrocksdb_write_amp:{:.2}\r\nrocksdb_compaction_written_bytes:{}\r\naof_last_write_status:{}\r\ndisk_free_bytes:{}\r\nmin_free_disk:{}\r\nwrite_error:{}\r\n\r\n",
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
            g.engine.compaction_written(g.shards),
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
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ninstantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nexpired_subkeys:{}\r\nexpired_stale_perc:{:.2}\r\nexpired_time_cap_reached_count:{}\r\nexpire_cycle_cpu_milliseconds:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nmeta_cache_hits:{}\r\nmeta_cache_misses:{}\r\nmember_cache_hits:{}\r\nmember_cache_misses:{}\r\ndisk_read_jobs:{}\r\ndisk_read_keys:{}\r\ndisk_read_batches:{}\r\ntotal_error_replies:{}\r\nclient_output_buffer_limit_disconnections:{}\r\nacl_access_denied_auth:{}\r\nacl_access_denied_cmd:{}\r\nacl_access_denied_key:{}\r\nacl_access_denied_channel:{}\r\n\r\n",
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
            // The shards' estimates weigh alike: keys spread evenly over slots.
            reports.iter().map(|r| r.expiry.0).sum::<f64>() * 100.0 / reports.len().max(1) as f64,
            reports.iter().map(|r| r.expiry.1).sum::<u64>(),
            reports.iter().map(|r| r.expiry.2).sum::<u64>() / 1000,
            reports.iter().map(|r| r.hits).sum::<u64>(),
            reports.iter().map(|r| r.misses).sum::<u64>(),
            g.pubsub.active(Class::Channel),
            g.pubsub.active(Class::Pattern),
            g.pubsub.active(Class::Shard),
            reports.iter().map(|r| r.meta_cache.hits).sum::<u64>(),
            reports.iter().map(|r| r.meta_cache.misses).sum::<u64>(),
            reports.iter().map(|r| r.member_cache.hits).sum::<u64>(),
            reports.iter().map(|r| r.member_cache.misses).sum::<u64>(),
            g.engine.read_pool_stats().0,
            g.engine.read_pool_stats().1,
            g.engine.read_pool_stats().2,
            reports.iter().flat_map(|r| r.errors.iter()).map(|(_, n)| n).sum::<u64>(),
            g.output_limit_cuts.load(Ordering::Relaxed),
            g.acl.denied(crate::acl::Reason::Auth),
            g.acl.denied(crate::acl::Reason::Command),
            g.acl.denied(crate::acl::Reason::Key),
            g.acl.denied(crate::acl::Reason::Channel),
        );
    }
    if want("replication") {
        // No replication yet: a master without replicas, as redis-server
        // alone reports itself.
        let _ = write!(
            out,
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n\r\n",
            g.run_id
        );
    }
    if want("cpu") {
        let (sys, user) = cpu_times();
        let _ = write!(out, "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n\r\n");
    }
    if want("modules") || want("module_list") {
        out.push_str("# Modules\r\n\r\n");
    }
    if want("commandstats") {
        out.push_str("# Commandstats\r\n");
        for i in 0..crate::cmd::stat_count() {
            let Some(name) = crate::cmd::stat_name(i) else { continue };
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
                name, s.calls, s.usec, per, s.rejected, s.failed
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
        for i in 0..crate::cmd::stat_count() {
            let Some(name) = crate::cmd::stat_name(i) else { continue };
            if let Some(h) = command_histogram(reports.iter().map(|r| &r.latency), i) {
                let _ = write!(
                    out,
                    "latency_percentiles_usec_{}:{}\r\n",
                    name,
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
    if want("cluster") {
        let on = g.cluster.enabled as u8;
        out.push_str(&format!("# Cluster\r\ncluster_enabled:{on}\r\n\r\n"));
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        for db in 0..g.databases {
            let keys: i64 = reports.iter().map(|r| r.keys.get(db).copied().unwrap_or(0)).sum();
            let expires: i64 = reports.iter().map(|r| r.expires.get(db).copied().unwrap_or(0)).sum();
            if keys > 0 {
                // Each shard's exact mean, weighed by its keys with an expiry.
                let weighted: u128 = reports
                    .iter()
                    .map(|r| r.avg_ttl.get(db).copied().unwrap_or(0) as u128 * r.expires.get(db).copied().unwrap_or(0).max(0) as u128)
                    .sum();
                let avg_ttl = if expires > 0 { weighted / expires as u128 } else { 0 };
                let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl={avg_ttl}\r\n");
            }
        }
        out.push_str("\r\n");
    }
    while out.ends_with("\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    out
}
