//! Generic key commands that run on one shard: TYPE, the EXPIRE and TTL
//! families, PERSIST, MOVE, OBJECT, DUMP, RESTORE. Also the per-shard halves
//! of multi-key commands (DEL, EXISTS, MGET, MSET, RENAME...) that `coord`
//! calls on each owner.

use bytes::Bytes;

use super::args::{db_index, int, is, scan_cursor, text, Args, ScanKind, ScanOpts};
use super::{commands, subcommands, CommandSpec, SubSpec};
use super::{Conn, Ctx};
use crate::clock::now_ms;
use crate::coord;
use crate::error::{invalid_expire, CmdError, CmdResult, NO_SUCH_KEY, SYNTAX};
use crate::glob;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::{first_slot_of, shard_of_slot, SLOTS};
use crate::types::coll;
use crate::types::dump;
use crate::types::notify::class::GENERIC;

/// The generic (key space) commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "del"         -2 [write]         1 -1 1 Conn(del)          generic "1.0.0" "Deletes one or more keys.";
    "unlink"      -2 [write fast]    1 -1 1 Conn(del)          generic "4.0.0" "Asynchronously deletes one or more keys.";
    "exists"      -2 [readonly fast] 1 -1 1 Conn(exists)       generic "1.0.0" "Determines whether one or more keys exist.";
    "touch"       -2 [readonly fast] 1 -1 1 Conn(exists)       generic "3.2.1" "Returns the number of existing keys out of those specified after updating the time they were last accessed.";
    "type"        2  [readonly fast] 1 1 1  Shard(type_)       generic "1.0.0" "Determines the type of value stored at a key.";
    "expire"      -3 [write fast]    1 1 1  Shard(expire)      generic "1.0.0" "Sets the expiration time of a key in seconds.";
    "pexpire"     -3 [write fast]    1 1 1  Shard(pexpire)     generic "2.6.0" "Sets the expiration time of a key in milliseconds.";
    "expireat"    -3 [write fast]    1 1 1  Shard(expireat)    generic "1.2.0" "Sets the expiration time of a key to a Unix timestamp.";
    "pexpireat"   -3 [write fast]    1 1 1  Shard(pexpireat)   generic "2.6.0" "Sets the expiration time of a key to a Unix milliseconds timestamp.";
    "ttl"         2  [readonly fast] 1 1 1  Shard(ttl)         generic "1.0.0" "Returns the expiration time in seconds of a key.";
    "pttl"        2  [readonly fast] 1 1 1  Shard(pttl)        generic "2.6.0" "Returns the expiration time in milliseconds of a key.";
    "expiretime"  2  [readonly fast] 1 1 1  Shard(expiretime)  generic "7.0.0" "Returns the expiration time of a key as a Unix timestamp.";
    "pexpiretime" 2  [readonly fast] 1 1 1  Shard(pexpiretime) generic "7.0.0" "Returns the expiration time of a key as a Unix milliseconds timestamp.";
    "persist"     2  [write fast]    1 1 1  Shard(persist)     generic "2.2.0" "Removes the expiration time of a key.";
    "rename"      3  [write]         1 2 1  Conn(rename)       generic "1.0.0" "Renames a key and overwrites the destination.";
    "renamenx"    3  [write fast]    1 2 1  Conn(renamenx)     generic "1.0.0" "Renames a key only when the target key name doesn't exist.";
    "copy"        -3 [write denyoom] 1 2 1  Conn(copy)         generic "6.2.0" "Copies the value of a key to a new key.";
    "move"        3  [write fast]    1 1 1  Conn(move_)        generic "1.0.0" "Moves a key to another database.";
    "scan"        -2 [readonly]      0 0 0  Conn(scan)         generic "2.8.0" "Iterates over the key names in the database.";
    "keys"        2  [readonly]      0 0 0  Conn(keys)         generic "1.0.0" "Returns all key names that match a pattern.";
    "randomkey"   1  [readonly]      0 0 0  Conn(randomkey)    generic "1.0.0" "Returns a random key name from the database.";
    "object"      -2 []              2 2 1  Shard(object)      generic "2.2.3" "A container for object introspection commands." subs OBJECT_SUBS;
    "dump"        2  [readonly]      1 1 1  Shard(dump)        generic "2.6.0" "Returns a serialized representation of the value stored at a key.";
    "restore"     -4 [write denyoom] 1 1 1  Shard(restore)     generic "2.6.0" "Creates a key from the serialized representation of a value.";
    "restore-asking" -4 [write denyoom asking] 1 1 1 Shard(restore) generic "3.0.0" "An internal command for migrating keys in a cluster.";
};

/// OBJECT's subcommands.
#[rustfmt::skip]
const OBJECT_SUBS: &[SubSpec] = subcommands! {
    "encoding" 3 [readonly]      "Returns the internal encoding of a Redis object.";
    "refcount" 3 [readonly]      "Returns the reference count of a value of a key.";
    "idletime" 3 [readonly]      "Returns the time since the last access to a Redis object.";
    "freq"     3 [readonly]      "Returns the logarithmic access frequency counter of a Redis object.";
    "help"     2 [loading stale] "Returns helpful text about the different subcommands.";
};

pub fn type_(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let t = ctx.ks().type_of(ctx.db, Args::new(argv).key()?, ctx.now_ms)?;
    r.simple(t.map_or("none", |t| t.name()));
    Ok(())
}

/// Condition flags of EXPIRE and friends.
#[derive(Default, Clone, Copy)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_expire_flags(args: &mut Args) -> CmdResult<ExpireFlags> {
    let mut f = ExpireFlags::default();
    for a in args.rest() {
        if is(a, "nx") {
            f.nx = true;
        } else if is(a, "xx") {
            f.xx = true;
        } else if is(a, "gt") {
            f.gt = true;
        } else if is(a, "lt") {
            f.lt = true;
        } else {
            return Err(CmdError::new(format!("ERR Unsupported option {}", text(a))));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err(CmdError::new("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if f.gt && f.lt {
        return Err(CmdError::new("ERR GT and LT options at the same time are not compatible"));
    }
    Ok(f)
}

fn expire_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, cmd: &str, secs: bool, abs: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, when) = (args.key()?, args.bytes()?);
    // Redis reads the flags before the time.
    let flags = parse_expire_flags(&mut args)?;
    let mut when = int(when)?;
    if secs {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(invalid_expire(cmd));
        }
        when *= 1000;
    }
    if !abs {
        let base = ctx.now_ms as i64;
        if when > i64::MAX - base {
            return Err(invalid_expire(cmd));
        }
        when += base;
    }
    let ks = ctx.ks();
    let Some(stored) = ks.get(ctx.db, key, ctx.now_ms)? else {
        r.int(0);
        return Ok(());
    };
    let cur = stored.meta().expire_ms;
    // A key with no expiry counts as an infinite TTL for GT and LT.
    let ok = !((flags.nx && cur != 0)
        || (flags.xx && cur == 0)
        || (flags.gt && (cur == 0 || when <= cur as i64))
        || (flags.lt && cur != 0 && when >= cur as i64));
    if !ok {
        r.int(0);
        return Ok(());
    }
    if when <= ctx.now_ms as i64 {
        ks.delete(ctx.db, key, ctx.now_ms)?;
        ctx.notify(GENERIC, "del", key);
    } else {
        ks.set_expire(ctx.db, key, &stored, when as u64)?;
        ctx.notify(GENERIC, "expire", key);
    }
    r.int(1);
    Ok(())
}

pub fn expire(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    expire_generic(ctx, argv, r, "expire", true, false)
}

pub fn pexpire(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    expire_generic(ctx, argv, r, "pexpire", false, false)
}

pub fn expireat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    expire_generic(ctx, argv, r, "expireat", true, true)
}

pub fn pexpireat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    expire_generic(ctx, argv, r, "pexpireat", false, true)
}

/// TTL-family reply: -2 missing, -1 no expiry, else `f(expire_ms)`.
fn ttl_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, f: impl FnOnce(u64) -> i64) -> CmdResult {
    let e = ctx
        .ks()
        .read(ctx.db, Args::new(argv).key()?, ctx.now_ms, |m| m.map(|m| m.expire_ms))?;
    r.int(match e {
        None => -2,
        Some(0) => -1,
        Some(at) => f(at),
    });
    Ok(())
}

pub fn ttl(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let now = ctx.now_ms;
    ttl_generic(ctx, argv, r, |at| ((at.saturating_sub(now) + 500) / 1000) as i64)
}

pub fn pttl(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let now = ctx.now_ms;
    ttl_generic(ctx, argv, r, |at| at.saturating_sub(now) as i64)
}

pub fn expiretime(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    ttl_generic(ctx, argv, r, |at| (at.saturating_add(500) / 1000) as i64)
}

pub fn pexpiretime(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    ttl_generic(ctx, argv, r, |at| at as i64)
}

pub fn persist(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let ks = ctx.ks();
    let key = Args::new(argv).key()?;
    match ks.get(ctx.db, key, ctx.now_ms)? {
        Some(s) if s.meta().expire_ms != 0 => {
            ks.set_expire(ctx.db, key, &s, 0)?;
            ctx.notify(GENERIC, "persist", key);
            r.int(1);
        }
        _ => r.int(0),
    }
    Ok(())
}

pub async fn move_(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if c.st().global.cluster.enabled {
        return Err(CmdError::new("ERR MOVE is not allowed in cluster mode"));
    }
    let mut args = Args::new(argv);
    let key = args.arg()?.clone();
    let dst = db_index(args.bytes()?, c.st().ks.databases())?;
    if dst == c.db() {
        return Err(CmdError::new("ERR source and destination objects are the same"));
    }
    r.int(coord::move_db(c.shard, c.db(), &key, dst).await? as i64);
    Ok(())
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// Writes a HELP reply: status lines, as Redis's `addReplyHelp`.
pub fn help_reply(r: &mut Reply, lines: &[&str]) {
    r.array(lines.len());
    for l in lines {
        r.simple(l);
    }
}

pub fn object(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let sub = args.bytes()?;
    if is(sub, "help") {
        help_reply(r, OBJECT_HELP);
        return Ok(());
    }
    let key = args.key()?;
    let enc = ctx.shard.global.config.encodings();
    let Some(encoding) = coll::encoding_of(ctx.ks(), ctx.db, key, ctx.now_ms, enc)? else {
        r.null();
        return Ok(());
    };
    if is(sub, "encoding") {
        r.bulk(encoding.as_bytes());
    } else if is(sub, "refcount") {
        r.int(1);
    } else {
        // Which of the two Redis tracks follows `maxmemory-policy`.
        let lfu = ctx.shard.global.config.get("maxmemory-policy").contains("lfu");
        let now = crate::clock::wall_ms();
        if is(sub, "idletime") {
            if lfu {
                return Err(CmdError::new("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
            }
            r.int((ctx.ks().idle_ms(ctx.db, key, now) / 1000) as i64);
        } else {
            if !lfu {
                return Err(CmdError::new("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
            }
            r.int(ctx.ks().freq(ctx.db, key, now) as i64);
        }
    }
    Ok(())
}

pub fn dump(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    match coll::take(ctx.ks(), ctx.db, Args::new(argv).key()?, ctx.now_ms)? {
        None => r.null(),
        Some(v) => r.bulk(&dump::payload(&v, ctx.now_ms)?),
    }
    Ok(())
}

pub fn restore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, ttl, payload) = (args.key()?, args.int()?, args.bytes()?);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    while !args.is_empty() {
        if args.flag("replace") {
            replace = true;
        } else if args.flag("absttl") {
            absttl = true;
        } else if freq.is_none() && args.option("idletime", 1) {
            let t = args.int()?;
            if t < 0 {
                return Err(CmdError::new("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(t as u64);
        } else if idle.is_none() && args.option("freq", 1) {
            let f = args.int()?;
            if !(0..=255).contains(&f) {
                return Err(CmdError::new("ERR Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(f as u8);
        } else {
            return Err(SYNTAX);
        }
    }
    if ttl < 0 {
        return Err(CmdError::new("ERR Invalid TTL value, must be >= 0"));
    }
    let ks = ctx.ks();
    let prior = ks.read(ctx.db, key, ctx.now_ms, |m| m.map(|m| m.expire_ms))?;
    let existed = prior.is_some();
    if existed && !replace {
        return Err(CmdError::new("BUSYKEY Target key name already exists."));
    }
    let expire_ms = match (ttl, absttl) {
        (0, _) => 0,
        (t, true) => t as u64,
        (t, false) => ctx.now_ms.saturating_add(t as u64),
    };
    let v = dump::parse(payload, expire_ms, ctx.now_ms).map_err(CmdError::new)?;
    if expire_ms != 0 && expire_ms <= ctx.now_ms {
        if existed {
            ks.delete(ctx.db, key, ctx.now_ms)?;
            ctx.notify(GENERIC, "del", key);
        }
    } else {
        coll::place(ks, ctx.db, key, &v, ctx.now_ms)?;
        if idle.is_some() || freq.is_some() {
            ks.set_access(ctx.db, key, crate::clock::wall_ms(), idle, freq);
        }
        ctx.notify(GENERIC, "restore", key);
        crate::coord::serve::key_ready(ctx.shard, ctx.db, key);
    }
    r.ok();
    Ok(())
}

// ---- commands over keys of several shards, or all of them (`coord`) ----

pub async fn del(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(coord::sum(c.shard, c.db(), argv, true, false).await?);
    Ok(())
}

/// EXISTS and TOUCH.
pub async fn exists(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(coord::sum(c.shard, c.db(), argv, false, is(&argv[0], "touch")).await?);
    Ok(())
}

pub async fn rename(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?, args.arg()?);
    let db = c.db();
    coord::move_key(c.shard, db, src, db, dst, true, true).await?.ok_or(NO_SUCH_KEY)?;
    r.ok();
    Ok(())
}

pub async fn renamenx(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?, args.arg()?);
    let db = c.db();
    let done = coord::move_key(c.shard, db, src, db, dst, false, true).await?.ok_or(NO_SUCH_KEY)?;
    r.int(done as i64);
    Ok(())
}

pub async fn copy(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?, args.arg()?);
    let mut dst_db = db;
    let mut replace = false;
    while !args.is_empty() {
        if args.flag("replace") {
            replace = true;
        } else if args.option("db", 1) {
            dst_db = db_index(args.bytes()?, c.st().ks.databases())?;
        } else {
            return Err(SYNTAX);
        }
    }
    if c.st().global.cluster.enabled && (db != 0 || dst_db != 0) {
        return Err(CmdError::new("ERR Copying to another database is not allowed in cluster mode"));
    }
    if dst_db == db && src == dst {
        return Err(CmdError::new("ERR source and destination objects are the same"));
    }
    let done = coord::move_key(c.shard, db, src, dst_db, dst, replace, false).await?;
    r.int(done.unwrap_or(false) as i64);
    Ok(())
}

pub async fn keys(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let pattern = Args::new(argv).arg()?.clone();
    // Each shard's slots in steps of at most KEYS_STEP records, so KEYS over
    // a big keyspace never holds a core for long (docs/encoding.md).
    let n = c.shard.count();
    let mut all = Vec::new();
    for target in 0..n {
        let (mut next, to) = (first_slot_of(target, n), first_slot_of(target + 1, n));
        while next < to {
            let pattern = pattern.clone();
            let (after, found) = c
                .shard
                .invoke_on(target, move |st: &ShardState| {
                    let mut out = Vec::new();
                    let (after, _) = st.ks.scan_slots_bounded(db, next, to, now_ms(), KEYS_STEP, |key, _| {
                        if glob::matches(&pattern, key, false) {
                            out.push(Bytes::copy_from_slice(key));
                        }
                        true
                    })?;
                    Ok::<_, CmdError>((after, out))
                })
                .await?;
            all.extend(found);
            next = after;
            if next < to && target == c.shard.id() {
                shards::rt::yield_now().await;
            }
        }
    }
    r.array(all.len());
    for key in &all {
        r.bulk(key);
    }
    Ok(())
}

/// Meta records a step of KEYS visits on a shard: about a millisecond.
const KEYS_STEP: usize = 4096;

/// SCAN: the cursor is the next hash slot to visit. Each call visits whole
/// slots, from the shard owning the cursor's slot on into the next shards'
/// until COUNT keys were visited, so a key present for the whole scan is
/// returned exactly once, and the cursor is a plain number.
pub async fn scan(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (shard, db) = (c.shard, c.db());
    let mut args = Args::new(argv);
    let cursor = scan_cursor(args.arg()?)?;
    let ScanOpts { pattern, count, ty, .. } = ScanOpts::parse(&mut args, ScanKind::Keys)?;
    if cursor >= SLOTS as u64 {
        r.array(2);
        r.bulk(b"0");
        r.array(0);
        return Ok(());
    }
    // One call goes on into the next shard's slots until it has done
    // COUNT keys' worth of work, so a keyspace smaller than COUNT comes back
    // whole with cursor 0, as Redis returns a small keyspace.
    let n = shard.count();
    let mut next = cursor as u16;
    let mut keys: Vec<Bytes> = Vec::new();
    let mut work = 0usize;
    while (next as usize) < SLOTS as usize && work < count {
        let (slot, budget) = (next, count - work);
        let target = shard_of_slot(slot, n);
        let end = first_slot_of(target + 1, n);
        let (pattern, ty) = (pattern.clone(), ty.clone());
        let (after, found, visited) = shard
            .invoke_on(target, move |st: &ShardState| {
                let mut out = Vec::new();
                let mut visited = 0usize;
                // Expired keys not yet reclaimed are work too: a call over a
                // keyspace of them stops after COUNT records' worth.
                let (next, records) = st.ks.scan_slots_bounded(db, slot, end, now_ms(), budget, |key, m| {
                    visited += 1;
                    let type_ok = ty.as_deref().is_none_or(|t| t == m.ty.name());
                    let match_ok = pattern.as_ref().is_none_or(|p| glob::matches(p, key, false));
                    if type_ok && match_ok {
                        out.push(Bytes::copy_from_slice(key));
                    }
                    visited < budget
                })?;
                Ok::<_, CmdError>((next, out, records))
            })
            .await?;
        keys.extend(found);
        // A shard with nothing left in its slots costs a little work too,
        // so a call over many empty shards still ends.
        work += visited.max(1);
        next = after;
    }
    let next = if next >= SLOTS { 0 } else { next };
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(keys.len());
    for key in &keys {
        r.bulk(key);
    }
    Ok(())
}

pub async fn randomkey(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    match coord::random_key(c.shard, c.db()).await? {
        Some(key) => r.bulk(&key),
        None => r.null(),
    }
    Ok(())
}
