//! DEBUG: the subcommands Redis's test suites and client libraries reach
//! for (SLEEP, ERROR, RELOAD, SET-ACTIVE-EXPIRE, CHANGE-REPL-ID, OBJECT),
//! and Basalt's own for tests of the disk tier. Refused unless
//! `enable-debug-command` allows the client, as Redis refuses it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;

use crate::cmd::args::{is, text, Args};
use crate::cmd::keys::help_reply;
use crate::cmd::Conn;
use crate::coord::{fan_out, Access as KeyAccess};
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::types::{coll, memory};

const DEBUG_HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory (Basalt: the data is",
    "    on disk already; the memtables are flushed). Options NOSAVE, NOFLUSH",
    "    and MERGE are accepted.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "COMPACT",
    "    Compact the whole database on disk, as COMPACT does (Basalt).",
    "DROP-CACHES",
    "    Write the write tiers back, flush the memtables and empty the block and meta caches (Basalt).",
    "SET-CLOCK-OFFSET <milliseconds>",
    "    Run the clock this far ahead of the system's, for every expiry (Basalt;",
    "    for tests; it only moves forward).",
    "SET-DISK-READ-DELAY <milliseconds>",
    "    Delay each read of the I/O pool (Basalt; for tests).",
    "ALLOCATIONS",
    "    The allocations (reallocations included) and their bytes since the server",
    "    started, all threads (Basalt; counted only when it was started with",
    "    BASALT_COUNT_ALLOCS=1, else an error).",
    "HELP",
    "    Prints this help.",
];

fn allowed(c: &Conn<'_>) -> bool {
    match c.st().global.config.get("enable-debug-command").as_str() {
        "yes" => true,
        "local" => c.client.info.addr.starts_with("127.") || c.client.info.addr.starts_with("[::1]"),
        _ => false,
    }
}

pub async fn debug(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if !allowed(&c) {
        return Err(CmdError::new("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."));
    }
    let g = c.st().global.clone();
    let mut args = Args::new(argv);
    let sub = args.bytes()?;
    if is(sub, "sleep") && args.left() == 1 {
        let secs = args.float()?;
        shards::rt::sleep(Duration::from_secs_f64(secs.max(0.0))).await;
        r.ok();
    } else if is(sub, "error") && args.left() == 1 {
        // As Redis: the argument is the whole error line, newlines blanked
        // (`DEBUG ERROR "LOADING ..."` answers `-LOADING ...`).
        let msg = text(args.bytes()?).replace(['\r', '\n'], " ");
        return Err(CmdError::new(msg));
    } else if is(sub, "reload") {
        for a in args.rest() {
            if !(is(a, "merge") || is(a, "nosave") || is(a, "noflush")) {
                return Err(CmdError::new(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                ));
            }
        }
        // Nothing to load: the data never left the disk. Flushing the
        // memtables is what comes closest to Redis's save-and-load.
        super::write_back(&c).await?;
        let engine = g.engine;
        shards::rt::spawn_blocking(move || engine.flush_memtables()).await?;
        r.ok();
    } else if is(sub, "compact") && args.is_empty() {
        super::write_back(&c).await?;
        let engine = g.engine;
        shards::rt::spawn_blocking(move || engine.compact_all()).await?;
        r.ok();
    } else if is(sub, "set-active-expire") && args.left() == 1 {
        let on = args.int()? != 0;
        g.active_expire.store(on, Ordering::Relaxed);
        r.ok();
    } else if is(sub, "change-repl-id") && args.is_empty() {
        // No replication yet: nothing to change.
        r.ok();
    } else if is(sub, "object") && args.left() == 1 {
        let line = debug_object(&c, argv[2].clone()).await?;
        r.simple(&line);
    } else if is(sub, "set-clock-offset") && args.left() == 1 {
        let ms = args.int()?;
        if ms < 0 || !crate::clock::set_offset_ms(ms as u64) {
            return Err(CmdError::new("ERR the clock only moves forward"));
        }
        r.ok();
    } else if is(sub, "set-disk-read-delay") && args.left() == 1 {
        // Basalt's own: each read of the I/O pool first sleeps this long
        // (milliseconds), so tests can keep a miss in flight.
        let ms = args.int()?;
        g.engine.set_read_delay(Duration::from_millis(ms.max(0) as u64));
        r.ok();
    } else if is(sub, "drop-caches") && args.is_empty() {
        // Basalt's own: write the write tiers back, flush the memtables and
        // empty the caches, so every record is on disk only (tests of the
        // read pool; a restart's log replay puts the last writes back in
        // the tier, and range reads no longer write it out).
        super::write_back(&c).await?;
        g.engine.drop_caches().map_err(CmdError::from)?;
        r.ok();
    } else if is(sub, "allocations") && args.is_empty() {
        // Basalt's own: what perf/allocs divides by the requests.
        if !crate::allocs::enabled() {
            return Err(CmdError::new(
                "ERR allocations are counted only when the server starts with BASALT_COUNT_ALLOCS=1",
            ));
        }
        let (n, bytes) = crate::allocs::counts();
        r.array(2);
        r.int(n as i64);
        r.int(bytes as i64);
    } else if is(sub, "help") {
        help_reply(r, DEBUG_HELP);
    } else {
        return Err(CmdError::new(format!("ERR unknown subcommand '{}'. Try DEBUG HELP.", text(sub))));
    }
    Ok(())
}

/// DEBUG OBJECT key: Redis's line from what Basalt has of the key, on its
/// owner: the encoding OBJECT ENCODING names, the bytes MEMORY USAGE
/// counts as `serializedlength`, and the access time (`types::access`) as
/// Redis's 24-bit LRU clock and `lru_seconds_idle`.
async fn debug_object(c: &Conn<'_>, key: Bytes) -> CmdResult<String> {
    let db = c.db();
    let enc = c.st().global.config.encodings();
    let found = fan_out(c.shard, db, &[(2, key)], KeyAccess::Read, move |st: &ShardState, keys: &[Bytes]| {
        let now = crate::clock::wall_ms();
        let Some(encoding) = coll::encoding_of(&st.ks, db, &keys[0], now, enc)? else {
            return Ok(None);
        };
        let size = memory::usage(&st.ks, db, &keys[0], now, memory::DEFAULT_SAMPLES)?.unwrap_or(0);
        let idle = st.ks.idle_ms(db, &keys[0], now);
        Ok(Some((encoding, size, idle, now)))
    })
    .await;
    let Some((encoding, size, idle, now)) = found.into_iter().next().map(|(_, res)| res).transpose()?.flatten() else {
        return Err(CmdError::new("ERR no such key"));
    };
    let lru = (now.saturating_sub(idle) / 1000) & ((1 << 24) - 1);
    Ok(format!(
        "Value at:0x0 refcount:1 encoding:{encoding} serializedlength:{size} lru:{lru} lru_seconds_idle:{}",
        idle / 1000
    ))
}
