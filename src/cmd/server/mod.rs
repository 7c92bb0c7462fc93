//! Server commands: INFO CONFIG TIME SHUTDOWN LASTSAVE SAVE BGSAVE DEBUG
//! SLOWLOG LATENCY (and the keyspace-wide DBSIZE FLUSHDB FLUSHALL SWAPDB,
//! which `coord` runs). They gather per-shard counters with `broadcast` and act
//! on the process. INFO is in `info`, SLOWLOG and LATENCY in `logs`.

mod debug;
mod info;
mod logs;
mod memory;

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::args::{is, one_of, text, Args};
use super::keys::help_reply;
use super::{commands, subcommands, CommandSpec, Conn, SubSpec};
use crate::clock::{now_ms, now_us};
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::global::Global;
use crate::resp::Reply;
use crate::shard::ShardState;
use debug::debug;
use info::info;
use logs::{latency, slowlog};
use memory::memory;

/// The server commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "dbsize"   1  [readonly fast]                                    0 0 0 Conn(dbsize)                  server "1.0.0"  "Returns the number of keys in the database.";
    "flushdb"  -1 [write]                                            0 0 0 Conn(flushdb)                 server "1.0.0"  "Remove all keys from the current database.";
    "flushall" -1 [write]                                            0 0 0 Conn(flushall)                server "1.0.0"  "Removes all keys from all databases.";
    "swapdb"   3  [write fast]                                       0 0 0 Conn(swapdb)                  server "4.0.0"  "Swaps two Redis databases.";
    "info"     -1 [loading stale]                                    0 0 0 Conn(info)                    server "1.0.0"  "Returns information and statistics about the server.";
    "config"   -2 []                                                 0 0 0 Conn(config)                  server "2.0.0"  "A container for server configuration commands." subs CONFIG_SUBS;
    "time"     1  [loading stale fast]                               0 0 0 Conn(time)                    server "2.6.0"  "Returns the server time.";
    "shutdown" -1 [admin noscript loading stale no_multi allow_busy] 0 0 0 Conn(shutdown)                server "1.0.0"  "Synchronously saves the database(s) to disk and shuts down the Redis server.";
    "lastsave" 1  [loading stale fast]                               0 0 0 Conn(lastsave)                server "1.0.0"  "Returns the Unix timestamp of the last successful save to disk.";
    "save"     1  [admin noscript no_async_loading no_multi]         0 0 0 Conn(save)                    server "1.0.0"  "Synchronously saves the database(s) to disk.";
    "bgsave"   -1 [admin noscript no_async_loading]                  0 0 0 Conn(bgsave)                  server "1.0.0"  "Asynchronously saves the database(s) to disk.";
    "bgrewriteaof" 1 [admin noscript no_async_loading]               0 0 0 Conn(bgrewriteaof)            server "1.0.0"  "Asynchronously rewrites the append-only file to disk.";
    "compact"  1  [admin noscript]                                   0 0 0 Conn(compact)                 server "0.1.0"  "Compacts the whole database on disk (Basalt, as Kvrocks).";
    "role"     1  [noscript loading stale fast]                      0 0 0 Conn(role)                    server "2.8.12" "Returns the replication role.";
    "lolwut"   -1 [readonly fast]                                    0 0 0 Conn(lolwut)                  server "5.0.0"  "Displays computer art and the Redis version";
    "debug"    -2 [admin noscript loading stale protected]           0 0 0 Conn(debug)                   server "1.0.0"  "A container for debugging commands.";
    "slowlog"  -2 []                                                 0 0 0 Conn(slowlog)                 server "2.2.12" "A container for slow log commands." subs SLOWLOG_SUBS;
    "latency"  -2 []                                                 0 0 0 Conn(latency)                 server "2.8.13" "A container for latency diagnostics commands." subs LATENCY_SUBS;
    "memory"   -2 []                                                 0 0 0 Conn(memory)                  server "4.0.0"  "A container for memory diagnostics commands." subs MEMORY_SUBS;
    "command"  -1 [loading stale]                                    0 0 0 Conn(super::command::command) server "2.8.13" "Returns detailed information about all commands." subs super::command::COMMAND_SUBS;
};

/// CONFIG's subcommands.
#[rustfmt::skip]
const CONFIG_SUBS: &[SubSpec] = subcommands! {
    "get"       -3 [admin noscript loading stale] "Returns the effective values of configuration parameters.";
    "set"       -4 [admin noscript loading stale] "Sets configuration parameters in-flight.";
    "resetstat" 2  [admin noscript loading stale] "Resets the server's statistics.";
    "rewrite"   2  [admin noscript loading stale] "Persists the effective configuration to file.";
    "help"      2  [loading stale]                "Returns helpful text about the different subcommands.";
};

/// MEMORY's subcommands.
#[rustfmt::skip]
const MEMORY_SUBS: &[SubSpec] = subcommands! {
    "doctor"       2  []                  "Outputs a memory problems report.";
    "malloc-stats" 2  []                  "Returns the allocator statistics.";
    "purge"        2  []                  "Asks the allocator to release memory.";
    "stats"        2  []                  "Returns details about memory usage.";
    "usage"        -3 [readonly]          "Estimates the memory usage of a key.";
    "help"         2  [loading stale]     "Returns helpful text about the different subcommands.";
};

/// SLOWLOG's subcommands.
#[rustfmt::skip]
const SLOWLOG_SUBS: &[SubSpec] = subcommands! {
    "get"   -2 [admin loading stale] "Returns the slow log's entries.";
    "len"   2  [admin loading stale] "Returns the number of entries in the slow log.";
    "reset" 2  [admin loading stale] "Clears all entries from the slow log.";
    "help"  2  [loading stale]       "Show helpful text about the different subcommands";
};

/// LATENCY's subcommands.
#[rustfmt::skip]
const LATENCY_SUBS: &[SubSpec] = subcommands! {
    "doctor"    2  [admin noscript loading stale] "Returns a human-readable latency analysis report.";
    "graph"     3  [admin noscript loading stale] "Returns a latency graph for an event.";
    "histogram" -2 [admin noscript loading stale] "Returns the cumulative distribution of latencies of a subset or all commands.";
    "history"   3  [admin noscript loading stale] "Returns timestamp-latency samples for an event.";
    "latest"    2  [admin noscript loading stale] "Returns the latest latency samples for all events.";
    "reset"     -2 [admin noscript loading stale] "Resets the latency data for one or more events.";
    "help"      2  [loading stale]                "Returns helpful text about the different subcommands.";
};

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
    "    Prints this help.",
];

pub async fn config(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (shard, g) = (c.shard, c.st().global.clone());
    let mut args = Args::new(argv);
    let sub = text(args.bytes()?).to_ascii_lowercase();
    match sub.as_str() {
        "get" => {
            let pats: Vec<&[u8]> = args.rest().iter().map(|a| &a[..]).collect();
            let found = g.config.matching(&pats);
            r.map(found.len());
            for (k, v) in found {
                r.bulk(k.as_bytes());
                r.bulk(v.as_bytes());
            }
        }
        "set" => {
            let rest = args.rest();
            if !rest.len().is_multiple_of(2) {
                return Err(CmdError::new(super::arity_error("config|set")));
            }
            let pairs: Vec<(String, String)> = rest.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect();
            g.config.set_many(&pairs).map_err(CmdError::new)?;
            for (k, v) in &pairs {
                if k.eq_ignore_ascii_case("requirepass") {
                    g.acl.set_default_password((!v.is_empty()).then_some(v.as_bytes()));
                } else if k.eq_ignore_ascii_case("acllog-max-len") {
                    g.acl.log_max.store(v.parse().unwrap_or(128), Ordering::Relaxed);
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
fn checkpoint(g: &Global) -> CmdResult {
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

pub async fn time(_: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let us = now_us();
    r.array(2);
    r.bulk((us / 1_000_000).to_string().as_bytes());
    r.bulk((us % 1_000_000).to_string().as_bytes());
    Ok(())
}

pub async fn lastsave(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(c.st().global.lastsave.load(Ordering::Relaxed) as i64);
    Ok(())
}

pub async fn save(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = &c.st().global;
    if g.bgsave_running.load(Ordering::Relaxed) {
        return Err(CmdError::new("ERR Background save already in progress"));
    }
    checkpoint(g)?;
    r.ok();
    Ok(())
}

pub async fn bgsave(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    args.flag("schedule");
    args.finish()?;
    let g = c.st().global.clone();
    if g.bgsave_running.swap(true, Ordering::SeqCst) {
        return Err(CmdError::new("ERR Background save already in progress"));
    }
    shards::rt::spawn(async move {
        let g2 = g.clone();
        let res = shards::rt::spawn_blocking(move || checkpoint(&g2)).await;
        if let Err(e) = res {
            tracing::error!(error = %e.0, "background save failed");
        }
        g.bgsave_running.store(false, Ordering::SeqCst);
    });
    r.simple("Background saving started");
    Ok(())
}

/// BGREWRITEAOF: Basalt's append-only file is RocksDB's WAL. Its rewrite
/// is a flush of every memtable, after which RocksDB drops the WAL files
/// they covered (docs/commands.md, "Server").
pub async fn bgrewriteaof(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = c.st().global.clone();
    if g.aof_rewriting.swap(true, Ordering::SeqCst) {
        return Err(CmdError::new("ERR Background append only file rewriting already in progress"));
    }
    shards::rt::spawn(async move {
        let engine = g.engine;
        if let Err(e) = shards::rt::spawn_blocking(move || engine.flush_memtables()).await {
            tracing::error!(error = %e.0, "background WAL rewrite (memtable flush) failed");
        }
        g.aof_rewriting.store(false, Ordering::SeqCst);
    });
    r.simple("Background append only file rewriting started");
    Ok(())
}

/// COMPACT (as Kvrocks has it): compacts every shard's column families
/// whole, so deleted and expired data gives its disk space back, and
/// answers once it is done. The work runs off the shards' threads; the
/// client waits, the core does not.
pub async fn compact(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    write_back(&c).await?;
    let engine = c.st().global.engine;
    shards::rt::spawn_blocking(move || engine.compact_all()).await?;
    r.ok();
    Ok(())
}

/// Has every shard write what its write tier holds to RocksDB, so that a
/// flush and a compaction after it reach every write so far.
pub(super) async fn write_back(c: &Conn<'_>) -> CmdResult {
    let res = c.shard.broadcast(|st: &ShardState| st.ks.store.write_back()).await;
    res.into_iter().try_for_each(|r| r.map_err(CmdError::from))
}

/// ROLE: a master with no replicas (there is no replication yet).
pub async fn role(_: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    r.array(3);
    r.bulk(b"master");
    r.int(0);
    r.array(0);
    Ok(())
}

/// LOLWUT [VERSION v [args...]]: Redis's captions for its versions 5 and
/// 6 (without their generative drawings) and its plain version line for
/// any other (the default, 7, too), as a verbatim string. The numeric arguments are checked as
/// Redis checks them.
pub async fn lolwut(_: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // Redis's default is its major version (7): the plain version line.
    let mut version = 7;
    if argv.len() >= 3 && is(&argv[1], "version") {
        version = super::args::int(&argv[2])?;
        for a in argv.iter().skip(3).take(3) {
            super::args::int(a)?;
        }
    }
    let ver = super::connection::SERVER_VERSION;
    let text = match version {
        5 => format!("Georg Nees - schotter, plotter on paper, 1968. Redis ver. {ver}\n"),
        6 => format!(
            "Dedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. {ver}\n"
        ),
        _ => format!("Redis ver. {ver}\n"),
    };
    r.verbatim(&text);
    Ok(())
}

pub async fn shutdown(c: Conn<'_>, argv: &[Bytes], _: &mut Reply) -> CmdResult {
    for a in Args::new(argv).rest() {
        match one_of(a, &["nosave", "save", "now", "force", "abort"]) {
            None => return Err(SYNTAX),
            Some(4) => return Err(CmdError::new("ERR No shutdown in progress.")),
            Some(_) => {}
        }
    }
    shutdown_now(&c.st().global);
}

pub async fn dbsize(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let counts = c.shard.broadcast(move |st: &ShardState| st.ks.count(db)).await;
    r.int(counts.iter().sum());
    Ok(())
}

/// Bytes the allocator holds now (the server's startup figure).
pub fn allocated_now() -> u64 {
    memory::allocated().0
}

/// SWAPDB index1 index2: every shard's two databases swap in one step no
/// command can see half done (`coord::swapdb`).
pub async fn swapdb(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if c.st().global.cluster.enabled {
        return Err(CmdError::new("ERR SWAPDB is not allowed in cluster mode"));
    }
    // Redis's getIntFromObjectOrReply: a number that fits an int, or its own text.
    let index = |a: &[u8], what: &str| {
        super::args::parse_i64(a)
            .filter(|v| i32::try_from(*v).is_ok())
            .ok_or_else(|| CmdError::new(format!("ERR invalid {what} DB index")))
    };
    let (a, b) = (index(&argv[1], "first")?, index(&argv[2], "second")?);
    let databases = c.st().global.databases as i64;
    if !(0..databases).contains(&a) || !(0..databases).contains(&b) {
        return Err(CmdError::new("ERR DB index is out of range"));
    }
    crate::coord::swapdb::swap_dbs(c.shard, c.client.info.id, c.client.in_exec, a as u8, b as u8).await?;
    r.ok();
    Ok(())
}

pub async fn flushdb(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    flush(c, argv, r, false).await
}

pub async fn flushall(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    flush(c, argv, r, true).await
}

/// FLUSHDB and FLUSHALL, each with an optional SYNC or ASYNC (both run
/// the same: a range delete per column family is quick).
async fn flush(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, all: bool) -> CmdResult {
    let mut args = Args::new(argv);
    args.word(&["sync", "async"]);
    args.finish()?;
    let db = c.db();
    let res = c
        .shard
        .broadcast(move |st: &ShardState| {
            if all {
                (0..st.ks.databases()).try_for_each(|d| st.ks.flush_db(d as u8))
            } else {
                st.ks.flush_db(db)
            }
        })
        .await;
    res.into_iter().collect::<CmdResult<Vec<()>>>()?;
    r.ok();
    Ok(())
}
