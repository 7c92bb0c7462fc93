//! Hash commands that run on one shard, field expiration included. The
//! whole-hash reads (HGETALL, HKEYS, HVALS) stream in slices from `coord`.

use bytes::Bytes;

use super::args::{float, int, is, one_of, parse_i64, scan_cursor, text, Args, ScanKind, ScanOpts};
use super::{commands, conn_fn, CommandSpec};
use super::{Conn, Ctx};
use crate::coord::coll::{self as gather, Keep, SLICE};
use crate::error::{invalid_expire, CmdError, CmdResult, NOT_FLOAT, OVERFLOW, SYNTAX};
use crate::resp::Reply;
use crate::types::coll::{self, Rng, View, Writer};
use crate::types::hash;
use crate::types::notify::class::HASH;
use crate::types::string::{incr_by_float, FloatIncrError};
use crate::types::KeyType;

/// The hash commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "hset"         -4 [write denyoom fast] 1 1 1 Shard(hset)                  hash "2.0.0" "Creates or modifies the value of a field in a hash.";
    "hsetnx"       4  [write denyoom fast] 1 1 1 Shard(hsetnx)                hash "2.0.0" "Sets the value of a field in a hash only when the field doesn't exist.";
    "hmset"        -4 [write denyoom fast] 1 1 1 Shard(hmset)                 hash "2.0.0" "Sets the values of multiple fields.";
    "hget"         3  [readonly fast]      1 1 1 Shard(hget)                  hash "2.0.0" "Returns the value of a field in a hash.";
    "hmget"        -3 [readonly fast]      1 1 1 Shard(hmget)                 hash "2.0.0" "Returns the values of all fields in a hash.";
    "hdel"         -3 [write fast]         1 1 1 Shard(hdel)                  hash "2.0.0" "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.";
    "hlen"         2  [readonly fast]      1 1 1 Shard(hlen)                  hash "2.0.0" "Returns the number of fields in a hash.";
    "hstrlen"      3  [readonly fast]      1 1 1 Shard(hstrlen)               hash "3.2.0" "Returns the length of the value of a field.";
    "hexists"      3  [readonly fast]      1 1 1 Shard(hexists)               hash "2.0.0" "Determines whether a field exists in a hash.";
    "hkeys"        2  [readonly]           1 1 1 Shard(super::whole::hkeys)   hash "2.0.0" "Returns all fields in a hash.";
    "hvals"        2  [readonly]           1 1 1 Shard(super::whole::hvals)   hash "2.0.0" "Returns all values in a hash.";
    "hgetall"      2  [readonly]           1 1 1 Shard(super::whole::hgetall) hash "2.0.0" "Returns all fields and values in a hash.";
    "hincrby"      4  [write denyoom fast] 1 1 1 Shard(hincrby)               hash "2.0.0" "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.";
    "hincrbyfloat" 4  [write denyoom fast] 1 1 1 Shard(hincrbyfloat)          hash "2.6.0" "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.";
    "hrandfield"   -2 [readonly]           1 1 1 Shard(hrandfield)            hash "6.2.0" "Returns one or more random fields from a hash.";
    "hscan"        -3 [readonly]           1 1 1 Shard(hscan)                 hash "2.8.0" "Iterates over fields and values of a hash.";
    "hgetdel"      -5 [write fast]         1 1 1 Shard(hgetdel)               hash "8.0.0" "Returns the value of a field and deletes it from the hash.";
    "hgetex"       -5 [write fast]         1 1 1 Shard(hgetex)                hash "8.0.0" "Get the value of one or more fields of a given hash key, and optionally set their expiration.";
    "hsetex"       -6 [write denyoom fast] 1 1 1 Shard(hsetex)                hash "8.0.0" "Set the value of one or more fields of a given hash key, and optionally set their expiration.";
    "hexpire"      -6 [write denyoom fast] 1 1 1 Shard(hexpire)               hash "7.4.0" "Set expiry for hash field using relative time to expire (seconds)";
    "hpexpire"     -6 [write denyoom fast] 1 1 1 Shard(hpexpire)              hash "7.4.0" "Set expiry for hash field using relative time to expire (milliseconds)";
    "hexpireat"    -6 [write denyoom fast] 1 1 1 Shard(hexpireat)             hash "7.4.0" "Set expiry for hash field using an absolute Unix timestamp (seconds)";
    "hpexpireat"   -6 [write denyoom fast] 1 1 1 Shard(hpexpireat)            hash "7.4.0" "Set expiry for hash field using an absolute Unix timestamp (milliseconds)";
    "httl"         -5 [readonly fast]      1 1 1 Shard(httl)                  hash "7.4.0" "Returns the TTL in seconds of a hash field.";
    "hpttl"        -5 [readonly fast]      1 1 1 Shard(hpttl)                 hash "7.4.0" "Returns the TTL in milliseconds of a hash field.";
    "hexpiretime"  -5 [readonly fast]      1 1 1 Shard(hexpiretime)           hash "7.4.0" "Returns the expiration time of a hash field as a Unix timestamp, in seconds.";
    "hpexpiretime" -5 [readonly fast]      1 1 1 Shard(hpexpiretime)          hash "7.4.0" "Returns the expiration time of a hash field as a Unix timestamp, in msec.";
    "hpersist"     -5 [write fast]         1 1 1 Shard(hpersist)              hash "7.4.0" "Removes the expiration time for each specified field";
};

const H: KeyType = KeyType::Hash;

fn view(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<View>> {
    coll::view(ctx.ks(), ctx.db, key, H, ctx.now_ms)
}

fn live(ctx: &Ctx, key: &[u8], v: &View, field: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
    coll::live_member(ctx.ks(), ctx.db, key, &v.c, field, ctx.now_ms)
}

fn writer<'a>(ctx: &'a Ctx, key: &'a [u8], create: bool) -> CmdResult<Option<Writer<'a>>> {
    Writer::open(ctx.ks(), ctx.db, key, H, ctx.now_ms, create)
}

fn hset_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, hmset: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, pairs) = (args.key()?, args.rest());
    if pairs.len() % 2 == 1 {
        return Err(CmdError::new(super::arity_error(if hmset { "hmset" } else { "hset" })));
    }
    let mut w = Writer::upsert(ctx.ks(), ctx.db, key, H, ctx.now_ms)?;
    let mut created = 0;
    for pair in pairs.chunks(2) {
        // A plain set discards the field's TTL (Redis's hashTypeSet).
        let was_live = w.is_live(&pair[0])?;
        w.put(&pair[0], 0, &pair[1])?;
        created += !was_live as i64;
    }
    w.commit_with(HASH, &["hset"])?;
    if hmset {
        r.ok();
    } else {
        r.int(created);
    }
    Ok(())
}

pub fn hset(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hset_generic(ctx, argv, r, false)
}

pub fn hmset(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hset_generic(ctx, argv, r, true)
}

pub fn hsetnx(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field, value) = (args.key()?, args.bytes()?, args.bytes()?);
    let mut w = Writer::upsert(ctx.ks(), ctx.db, key, H, ctx.now_ms)?;
    if w.is_live(field)? {
        r.int(0);
        return Ok(());
    }
    w.put(field, 0, value)?;
    w.commit_with(HASH, &["hset"])?;
    r.int(1);
    Ok(())
}

pub fn hget(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field) = (args.key()?, args.bytes()?);
    let found = match view(ctx, key)? {
        Some(v) => live(ctx, key, &v, field)?,
        None => None,
    };
    match found {
        Some((_, val)) => r.bulk(&val),
        None => r.null(),
    }
    Ok(())
}

pub fn hmget(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, fields) = (args.key()?, args.rest());
    let v = view(ctx, key)?;
    r.array(fields.len());
    for f in fields {
        match v.as_ref().map(|v| live(ctx, key, v, f)).transpose()?.flatten() {
            Some((_, val)) => r.bulk(&val),
            None => r.null(),
        }
    }
    Ok(())
}

pub fn hdel(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, fields) = (args.key()?, args.rest());
    let Some(mut w) = writer(ctx, key, false)? else {
        r.int(0);
        return Ok(());
    };
    let mut n = 0;
    for f in fields {
        n += w.is_live(f)? as i64;
        w.delete(f)?;
    }
    w.commit_with(HASH, if n > 0 { &["hdel"] } else { &[] })?;
    r.int(n);
    Ok(())
}

pub fn hlen(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).key()?;
    let n = match view(ctx, key)? {
        // A big hash whose counts cannot answer is counted in slices from a
        // snapshot, not repaired in one scan (1M fields: 130 ms of the core).
        Some(v) if v.c.size > SLICE as u64 && hash::fast_len(&v.c, ctx.now_ms) == hash::FastLen::Scan => {
            return ctx.later(conn_fn!(stream_hlen));
        }
        Some(v) => coll::hash_len(ctx.ks(), ctx.db, key, &v, ctx.now_ms)?,
        None => 0,
    };
    r.int(n as i64);
    Ok(())
}

/// HLEN of a big hash with fields due: its live fields counted in slices
/// from one snapshot (`coord::coll::gather_with`); its sweep fixes the
/// metadata (`types::hashsweep`).
async fn stream_hlen(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).arg()?;
    let g = gather::gather_with(c.shard, c.db(), key, KeyType::Hash, Keep::Count, false).await?;
    r.int(g.map_or(0, |g| g.count) as i64);
    Ok(())
}

pub fn hstrlen(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field) = (args.key()?, args.bytes()?);
    let n = match view(ctx, key)? {
        Some(v) => live(ctx, key, &v, field)?.map_or(0, |(_, val)| val.len()),
        None => 0,
    };
    r.int(n as i64);
    Ok(())
}

pub fn hexists(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field) = (args.key()?, args.bytes()?);
    let n = match view(ctx, key)? {
        Some(v) => live(ctx, key, &v, field)?.is_some(),
        None => false,
    };
    r.int(n as i64);
    Ok(())
}

pub fn hincrby(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field, incr) = (args.key()?, args.bytes()?, args.int()?);
    let mut w = Writer::upsert(ctx.ks(), ctx.db, key, H, ctx.now_ms)?;
    let (ttl, cur) = match w.live(field)? {
        Some((ttl, v)) => (ttl, parse_i64(&v).ok_or_else(|| CmdError::new("ERR hash value is not an integer"))?),
        None => (0, 0),
    };
    let next = cur.checked_add(incr).ok_or(OVERFLOW)?;
    // The field keeps its TTL (HASH_SET_KEEP_TTL).
    let mut digits = [0u8; 21];
    w.put(field, ttl, crate::resp::reply::i64_digits(next, &mut digits))?;
    w.commit_with(HASH, &["hincrby"])?;
    r.int(next);
    Ok(())
}

pub fn hincrbyfloat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, field, raw) = (args.key()?, args.bytes()?, args.bytes()?);
    let incr = float(raw)?;
    if incr.is_infinite() {
        return Err(CmdError::new("ERR value is NaN or Infinity"));
    }
    let mut w = Writer::upsert(ctx.ks(), ctx.db, key, H, ctx.now_ms)?;
    let cur = w.live(field)?;
    let next = incr_by_float(cur.as_ref().map(|(_, v)| &v[..]), raw).map_err(|e| match e {
        FloatIncrError::NotFloat => CmdError::new("ERR hash value is not a float"),
        FloatIncrError::BadIncrement => NOT_FLOAT,
        FloatIncrError::NanOrInf => CmdError::new("ERR increment would produce NaN or Infinity"),
    })?;
    w.put(field, cur.map_or(0, |(t, _)| t), &next)?;
    w.commit_with(HASH, &["hincrbyfloat"])?;
    r.bulk(&next);
    Ok(())
}

/// getRangeLongFromObjectOrReply's text for a count outside ±LONG_MAX.
pub const RANDOM_COUNT_RANGE: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// Writes one field (and its value) of an HRANDFIELD reply.
fn rand_entry(r: &mut Reply, e: &coll::Entry, withvalues: bool) {
    if withvalues && r.resp3 {
        r.array(2);
    }
    r.bulk(&e.0);
    if withvalues {
        r.bulk(&e.2);
    }
}

pub fn hrandfield(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut rng = Rng::seeded();
    let mut args = Args::new(argv);
    let key = args.key()?;
    let pick = |count: i64, rng: &mut Rng| -> CmdResult<Vec<coll::Entry>> {
        match view(ctx, key)? {
            Some(v) => coll::random_members(ctx.ks(), ctx.db, key, &v.c, ctx.now_ms, count, rng),
            None => Ok(Vec::new()),
        }
    };
    if args.is_empty() {
        match pick(-1, &mut rng)?.first() {
            Some(e) => r.bulk(&e.0),
            None => r.null(),
        }
        return Ok(());
    }
    let l = args.int()?;
    if l == i64::MIN {
        return Err(CmdError::new(RANDOM_COUNT_RANGE));
    }
    let withvalues = args.flag("withvalues");
    args.finish()?;
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(CmdError::new("ERR value is out of range"));
    }
    let picks = pick(l, &mut rng)?;
    let n = picks.len();
    r.array(if withvalues && !r.resp3 { n * 2 } else { n });
    for e in &picks {
        rand_entry(r, e, withvalues);
    }
    Ok(())
}

/// HSCAN / SSCAN over one collection. A small collection (as many members
/// as Redis would keep as a listpack or intset, by CONFIG's thresholds)
/// comes back whole with cursor 0, as Redis does. Otherwise the cursor counts members visited; the shard remembers
/// where each cursor it handed out stops, so resuming is a seek (a cursor
/// it forgot is resumed by skipping that many members).
pub fn scan_collection(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, ty: KeyType) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let cursor = scan_cursor(args.arg()?)?;
    let kind = if ty == KeyType::Hash { ScanKind::Hash } else { ScanKind::Members };
    let a = ScanOpts::parse(&mut args, kind)?;
    let Some(v) = coll::view(ctx.ks(), ctx.db, key, ty, ctx.now_ms)? else {
        r.array(2);
        r.bulk(b"0");
        r.array(0);
        return Ok(());
    };
    let enc = ctx.shard.global.config.encodings();
    let small = if ty == KeyType::Hash {
        enc.hash_entries
    } else {
        enc.set_entries.max(enc.set_intset_entries)
    };
    let whole = v.c.size <= small;
    let mut found: Vec<coll::Entry> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    let mut next = 0u64;
    if whole {
        found = coll::all_members(ctx.ks(), ctx.db, key, &v.c, ctx.now_ms)?;
    } else {
        let cursors = &ctx.shard.scan_cursors;
        let resume = cursors.borrow().get(&(ctx.db, key.to_vec(), v.c.version, cursor)).cloned();
        let mut skip = if resume.is_some() { 0 } else { cursor };
        let mut visited = 0u64;
        let mut taken = 0usize;
        coll::scan_members(ctx.ks(), None, (ctx.db, key), &v.c, resume.as_deref(), ctx.now_ms, |s, t, val| {
            if skip > 0 {
                skip -= 1;
                return true;
            }
            visited += 1;
            found.push((s.to_vec(), t, val.to_vec()));
            last = Some(s.to_vec());
            taken += 1;
            taken < a.count
        })?;
        if taken >= a.count {
            next = cursor + visited;
            let mut map = cursors.borrow_mut();
            if map.len() >= 4096 {
                map.clear();
            }
            if let Some(l) = last {
                map.insert((ctx.db, key.to_vec(), v.c.version, next), l);
            }
        }
    }
    let keep: Vec<&coll::Entry> = found
        .iter()
        .filter(|e| a.pattern.as_ref().is_none_or(|p| crate::glob::matches(p, &e.0, false)))
        .collect();
    let with_values = ty == KeyType::Hash && !a.novalues;
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(if with_values { keep.len() * 2 } else { keep.len() });
    for e in keep {
        r.bulk(&e.0);
        if with_values {
            r.bulk(&e.2);
        }
    }
    Ok(())
}

pub fn hscan(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    scan_collection(ctx, argv, r, H)
}

// ---- field expiration ----

/// The largest field expire time Redis accepts, in ms (EB_EXPIRE_TIME_MAX >> 2).
const HFE_MAX_MS: i64 = ((1i64 << 48) - 1) >> 2;

/// Redis's `parseExpireTime` for hash fields: a non-negative integer in
/// `unit`, plus `base` (0 for absolute times).
fn parse_field_expire(raw: &[u8], secs: bool, base: u64, cmd: &str) -> CmdResult<u64> {
    let mut v = int(raw)?;
    if v < 0 {
        return Err(CmdError::new("ERR invalid expire time, must be >= 0"));
    }
    if secs {
        if v > HFE_MAX_MS / 1000 {
            return Err(invalid_expire(cmd));
        }
        v *= 1000;
    }
    if v > HFE_MAX_MS - base as i64 {
        return Err(invalid_expire(cmd));
    }
    Ok((v + base as i64) as u64)
}

/// `FIELDS numfields field...`, the rest of `args`: the fields.
fn fields_arg<'a>(args: &mut Args<'a>, cmd: &str, count_msg: &'static str) -> CmdResult<&'a [Bytes]> {
    if !args.flag("fields") {
        return Err(CmdError::new(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    if args.is_empty() {
        return Err(CmdError::new(super::arity_error(cmd)));
    }
    let n = parse_i64(args.arg()?).filter(|n| *n >= 1).ok_or_else(|| CmdError::new(count_msg))?;
    if n != args.left() as i64 {
        return Err(CmdError::new("ERR The `numfields` parameter must match the number of arguments"));
    }
    Ok(args.rest())
}

const NUM_FIELDS_POSITIVE: &str = "ERR Number of fields must be a positive integer";

fn replies_all(r: &mut Reply, n: usize, v: i64) {
    r.array(n);
    for _ in 0..n {
        r.int(v);
    }
}

/// HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT.
fn hexpire_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, cmd: &str, secs: bool, abs: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let w = writer(ctx, key, false)?;
    let at = parse_field_expire(args.bytes()?, secs, if abs { 0 } else { ctx.now_ms }, cmd)?;
    let cond = args.word(&["nx", "xx", "gt", "lt"]);
    let fields = fields_arg(&mut args, cmd, "ERR Parameter `numFields` should be greater than 0")?;
    let Some(mut w) = w else {
        replies_all(r, fields.len(), -2);
        return Ok(());
    };
    w.ensure_hfe()?;
    r.array(fields.len());
    let mut changed = false;
    for f in fields {
        let Some((prev, val)) = w.live(f)? else {
            r.int(-2);
            continue;
        };
        let met = match cond {
            None => true,
            Some(0) => prev == 0,
            Some(1) => prev != 0,
            // A field without TTL counts as infinite: GT never, LT always.
            Some(2) => prev != 0 && at > prev,
            _ => prev == 0 || at < prev,
        };
        if !met {
            r.int(0);
            continue;
        }
        changed = true;
        if at <= ctx.now_ms {
            w.delete(f)?;
            r.int(2);
        } else {
            w.put(f, at, &val)?;
            r.int(1);
        }
    }
    // Redis 8: fields a past time deleted are `hexpired`, as if they had
    // expired; new times are `hexpire`.
    let event: &[&'static str] = match (changed, at <= ctx.now_ms) {
        (false, _) => &[],
        (true, true) => &["hexpired"],
        (true, false) => &["hexpire"],
    };
    w.commit_with(HASH, event)?;
    Ok(())
}

pub fn hexpire(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hexpire_generic(ctx, argv, r, "hexpire", true, false)
}

pub fn hpexpire(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hexpire_generic(ctx, argv, r, "hpexpire", false, false)
}

pub fn hexpireat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hexpire_generic(ctx, argv, r, "hexpireat", true, true)
}

pub fn hpexpireat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hexpire_generic(ctx, argv, r, "hpexpireat", false, true)
}

/// HTTL family: -2 no such field, -1 no TTL, else `f(expire ms)`.
fn httl_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, cmd: &str, f: impl Fn(u64) -> i64) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let v = view(ctx, key)?;
    let fields = fields_arg(&mut args, cmd, NUM_FIELDS_POSITIVE)?;
    let Some(v) = v else {
        replies_all(r, fields.len(), -2);
        return Ok(());
    };
    r.array(fields.len());
    for field in fields {
        r.int(match live(ctx, key, &v, field)? {
            None => -2,
            Some((0, _)) => -1,
            Some((at, _)) => f(at),
        });
    }
    Ok(())
}

pub fn httl(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let now = ctx.now_ms;
    httl_generic(ctx, argv, r, "httl", |at| (at - now).div_ceil(1000) as i64)
}

pub fn hpttl(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let now = ctx.now_ms;
    httl_generic(ctx, argv, r, "hpttl", |at| (at - now) as i64)
}

pub fn hexpiretime(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    httl_generic(ctx, argv, r, "hexpiretime", |at| at.div_ceil(1000) as i64)
}

pub fn hpexpiretime(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    httl_generic(ctx, argv, r, "hpexpiretime", |at| at as i64)
}

pub fn hpersist(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let w = writer(ctx, key, false)?;
    let fields = fields_arg(&mut args, "hpersist", NUM_FIELDS_POSITIVE)?;
    let Some(mut w) = w else {
        replies_all(r, fields.len(), -2);
        return Ok(());
    };
    r.array(fields.len());
    let mut changed = false;
    for f in fields {
        match w.live(f)? {
            None => r.int(-2),
            Some((0, _)) => r.int(-1),
            Some((_, val)) => {
                w.put(f, 0, &val)?;
                changed = true;
                r.int(1);
            }
        }
    }
    w.commit_with(HASH, if changed { &["hpersist"] } else { &[] })?;
    Ok(())
}

pub fn hgetdel(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let w = writer(ctx, key, false)?;
    let fields = fields_arg(&mut args, "hgetdel", NUM_FIELDS_POSITIVE)?;
    r.array(fields.len());
    let Some(mut w) = w else {
        (0..fields.len()).for_each(|_| r.null());
        return Ok(());
    };
    let mut deleted = false;
    for f in fields {
        match w.live(f)? {
            Some((_, val)) => {
                r.bulk(&val);
                w.delete(f)?;
                deleted = true;
            }
            None => r.null(),
        }
    }
    w.commit_with(HASH, if deleted { &["hdel"] } else { &[] })?;
    Ok(())
}

/// What HGETEX does to each field it returns.
enum GetExAction {
    Nothing,
    Persist,
    At(u64),
}

pub fn hgetex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let w = writer(ctx, key, false)?;
    let action = if let Some(u) = args.word(&["ex", "px", "exat", "pxat"]) {
        let raw = args.arg().map_err(|_| CmdError::new(super::arity_error("hgetex")))?;
        let base = if u < 2 { ctx.now_ms } else { 0 };
        GetExAction::At(parse_field_expire(raw, u % 2 == 0, base, "hgetex")?)
    } else if args.flag("persist") {
        GetExAction::Persist
    } else {
        GetExAction::Nothing
    };
    let fields = fields_arg(&mut args, "hgetex", NUM_FIELDS_POSITIVE)?;
    r.array(fields.len());
    let Some(mut w) = w else {
        (0..fields.len()).for_each(|_| r.null());
        return Ok(());
    };
    if matches!(action, GetExAction::At(_)) {
        w.ensure_hfe()?;
    }
    let (mut persisted, mut expiring, mut deleted) = (false, false, false);
    for f in fields {
        let Some((ttl, val)) = w.live(f)? else {
            r.null();
            continue;
        };
        r.bulk(&val);
        match action {
            GetExAction::Nothing => {}
            GetExAction::Persist if ttl != 0 => {
                w.put(f, 0, &val)?;
                persisted = true;
            }
            GetExAction::Persist => {}
            GetExAction::At(t) if t <= ctx.now_ms => {
                w.delete(f)?;
                deleted = true;
            }
            GetExAction::At(t) => {
                w.put(f, t, &val)?;
                expiring = true;
            }
        }
    }
    // Redis 8: a past time deletes the fields as if they had expired.
    let events: Vec<&'static str> = [(persisted, "hpersist"), (expiring, "hexpire"), (deleted, "hexpired")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, e)| *e)
        .collect();
    w.commit_with(HASH, &events)?;
    Ok(())
}

/// HSETEX's parsed options.
struct SetExArgs {
    fnx: bool,
    fxx: bool,
    keepttl: bool,
    at: Option<u64>,
}

/// HSETEX's options, then `FIELDS numfields field value ...`: the options
/// and the field-value pairs.
fn hsetex_args<'a>(ctx: &Ctx, args: &mut Args<'a>) -> CmdResult<(SetExArgs, &'a [Bytes])> {
    let mut a = SetExArgs {
        fnx: false,
        fxx: false,
        keepttl: false,
        at: None,
    };
    let mut expiry_set = false;
    let conflict = || CmdError::new("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
    while let Ok(arg) = args.arg() {
        if is(arg, "fields") {
            if args.left() < 3 {
                return Err(CmdError::new(super::arity_error("hsetex")));
            }
            let n = parse_i64(args.arg()?)
                .filter(|n| (1..=i32::MAX as i64).contains(n))
                .ok_or_else(|| CmdError::new("ERR invalid number of fields"))?;
            let pairs = args.rest();
            if !pairs.len().is_multiple_of(2) || n as usize != pairs.len() / 2 {
                return Err(CmdError::new(super::arity_error("hsetex")));
            }
            return Ok((a, pairs));
        }
        if let Some(u) = one_of(arg, &["ex", "px", "exat", "pxat"]) {
            if expiry_set {
                return Err(conflict());
            }
            let raw = args.arg().map_err(|_| CmdError::new("ERR missing expire time"))?;
            expiry_set = true;
            let base = if u < 2 { ctx.now_ms } else { 0 };
            a.at = Some(parse_field_expire(raw, u % 2 == 0, base, "hsetex")?);
        } else if is(arg, "keepttl") {
            if expiry_set {
                return Err(conflict());
            }
            expiry_set = true;
            a.keepttl = true;
        } else if is(arg, "fxx") || is(arg, "fnx") {
            if a.fxx || a.fnx {
                return Err(CmdError::new("ERR Only one of FXX or FNX arguments can be specified"));
            }
            a.fxx = is(arg, "fxx");
            a.fnx = !a.fxx;
        } else {
            return Err(CmdError::new(format!("ERR unknown argument: {}", text(arg))));
        }
    }
    Err(SYNTAX)
}

pub fn hsetex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let (a, pairs) = hsetex_args(ctx, &mut args)?;
    let Some(mut w) = writer(ctx, key, !a.fxx)? else {
        r.int(0);
        return Ok(());
    };
    if a.fnx || a.fxx {
        let mut found = 0;
        for p in pairs.chunks(2) {
            found += w.is_live(&p[0])? as usize;
        }
        if (a.fnx && found != 0) || (a.fxx && found != pairs.len() / 2) {
            r.int(0);
            return Ok(());
        }
    }
    if a.at.is_some() {
        w.ensure_hfe()?;
    }
    for p in pairs.chunks(2) {
        let prev = w.live(&p[0])?.map_or(0, |(t, _)| t);
        match a.at {
            // Set, then deleted at once: its time is already past.
            Some(t) if t <= ctx.now_ms => {
                w.delete(&p[0])?;
            }
            Some(t) => {
                w.put(&p[0], t, &p[1])?;
            }
            None => {
                w.put(&p[0], if a.keepttl { prev } else { 0 }, &p[1])?;
            }
        }
    }
    let events: &[&'static str] = match a.at {
        // Redis 8: set and expired at once is only `hexpired`.
        Some(t) if t <= ctx.now_ms => &["hexpired"],
        Some(_) => &["hset", "hexpire"],
        None => &["hset"],
    };
    w.commit_with(HASH, events)?;
    r.int(1);
    Ok(())
}
