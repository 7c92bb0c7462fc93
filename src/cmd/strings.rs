//! String commands that run on one shard: argument parsing and replies.
//! Value logic shared with other commands lives in `types::string`.

use bytes::Bytes;

use super::args::{int, is, Args};
use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::clock::now_ms;
use crate::coord;
use crate::error::{invalid_expire, CmdError, CmdResult, NOT_FLOAT, NOT_INT, OVERFLOW, STRING_TOO_LONG, SYNTAX, WRONGTYPE};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::bigstr;
use crate::types::multi;
use crate::types::notify::class::{GENERIC, STRING};
use crate::types::string::{self as logic, FloatIncrError};

/// The string commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "get"         2  [readonly fast]      1 1 1  Shard(get)         string "1.0.0" "Returns the string value of a key.";
    "set"         -3 [write denyoom]      1 1 1  Shard(set)         string "1.0.0" "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.";
    "setnx"       3  [write denyoom fast] 1 1 1  Shard(setnx)       string "1.0.0" "Set the string value of a key only when the key doesn't exist.";
    "setex"       4  [write denyoom]      1 1 1  Shard(setex)       string "2.0.0" "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.";
    "psetex"      4  [write denyoom]      1 1 1  Shard(psetex)      string "2.6.0" "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.";
    "getset"      3  [write denyoom fast] 1 1 1  Shard(getset)      string "1.0.0" "Returns the previous string value of a key after setting it to a new value.";
    "getdel"      2  [write fast]         1 1 1  Shard(getdel)      string "6.2.0" "Returns the string value of a key after deleting the key.";
    "getex"       -2 [write fast]         1 1 1  Shard(getex)       string "6.2.0" "Returns the string value of a key after setting its expiration time.";
    "mget"        -2 [readonly fast]      1 -1 1 Conn(mget)         string "1.0.0" "Atomically returns the string values of one or more keys.";
    "mset"        -3 [write denyoom]      1 -1 2 Conn(mset)         string "1.0.1" "Atomically creates or modifies the string values of one or more keys.";
    "msetnx"      -3 [write denyoom]      1 -1 2 Conn(msetnx)       string "1.0.1" "Atomically modifies the string values of one or more keys only when all keys don't exist.";
    "append"      3  [write denyoom fast] 1 1 1  Shard(append)      string "2.0.0" "Appends a string to the value of a key. Creates the key if it doesn't exist.";
    "strlen"      2  [readonly fast]      1 1 1  Shard(strlen)      string "2.2.0" "Returns the length of a string value.";
    "incr"        2  [write denyoom fast] 1 1 1  Shard(incr)        string "1.0.0" "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.";
    "decr"        2  [write denyoom fast] 1 1 1  Shard(decr)        string "1.0.0" "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.";
    "incrby"      3  [write denyoom fast] 1 1 1  Shard(incrby)      string "1.0.0" "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.";
    "decrby"      3  [write denyoom fast] 1 1 1  Shard(decrby)      string "1.0.0" "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.";
    "incrbyfloat" 3  [write denyoom fast] 1 1 1  Shard(incrbyfloat) string "2.6.0" "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.";
    "getrange"    4  [readonly]           1 1 1  Shard(getrange)    string "2.4.0" "Returns a substring of the string stored at a key.";
    "substr"      4  [readonly]           1 1 1  Shard(getrange)    string "1.0.0" "Returns a substring from a string value.";
    "setrange"    4  [write denyoom]      1 1 1  Shard(setrange)    string "2.2.0" "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.";
    "lcs"         -3 [readonly]           1 2 1  Conn(lcs)          string "7.0.0" "Finds the longest common substring.";
};

/// A live string key's value and expiry (`types::bigstr::read`).
fn read_string(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<(Vec<u8>, u64)>> {
    bigstr::read(ctx.ks(), ctx.db, key, ctx.now_ms)
}

/// A live string key's value that must be a number (`types::bigstr::read_number`).
fn read_number(ctx: &Ctx, key: &[u8], not_number: CmdError) -> CmdResult<Option<(Vec<u8>, u64)>> {
    bigstr::read_number(ctx.ks(), ctx.db, key, ctx.now_ms, not_number)
}

/// GET's reply for a value (None: nil); true when there was one.
pub fn reply_value(r: &mut Reply, v: Option<&[u8]>) -> bool {
    match v {
        Some(v) => r.bulk(v),
        None => r.null(),
    }
    v.is_some()
}

pub fn get(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).key()?;
    // Zero-copy: the value goes from RocksDB's pinned slice to the reply.
    bigstr::with_value(ctx.ks(), ctx.db, key, ctx.now_ms, |v| reply_value(r, v))?;
    Ok(())
}

/// How SET-like commands treat an existing expiry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expiry {
    /// Remove any expiry.
    Clear,
    /// Keep the key's expiry (KEEPTTL).
    Keep,
    /// Absolute Unix ms.
    At(u64),
}

/// Options of SET / GETEX, parsed as Redis's `parseExtendedStringArgumentsOrReply`.
#[derive(Default, Debug)]
pub struct SetOpts {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keepttl: bool,
    pub persist: bool,
    /// (unit is seconds, absolute, raw argument)
    pub expire: Option<(bool, bool, Bytes)>,
}

/// Parses SET (`for_getex == false`) or GETEX options: the rest of `args`.
pub fn parse_set_opts(args: &mut Args, for_getex: bool) -> CmdResult<SetOpts> {
    let mut o = SetOpts::default();
    while let Ok(a) = args.arg() {
        let next = args.peek();
        let has_expire = o.expire.is_some();
        let same_expire = |secs: bool, abs: bool| o.expire.as_ref().is_none_or(|(s, a, _)| *s == secs && *a == abs);
        if !for_getex && is(a, "nx") && !o.xx {
            o.nx = true;
        } else if !for_getex && is(a, "xx") && !o.nx {
            o.xx = true;
        } else if !for_getex && is(a, "get") {
            o.get = true;
        } else if !for_getex && is(a, "keepttl") && !o.persist && !has_expire {
            o.keepttl = true;
        } else if for_getex && is(a, "persist") && !o.keepttl && !has_expire {
            o.persist = true;
        } else if let (Some(v), Some((secs, abs))) = (
            next,
            [
                ("ex", true, false),
                ("px", false, false),
                ("exat", true, true),
                ("pxat", false, true),
            ]
            .iter()
            .find(|(w, _, _)| is(a, w))
            .map(|(_, s, ab)| (*s, *ab)),
        ) {
            if o.keepttl || o.persist || !same_expire(secs, abs) {
                return Err(SYNTAX);
            }
            o.expire = Some((secs, abs, v.clone()));
            args.arg()?;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok(o)
}

/// Turns an EX/PX/EXAT/PXAT argument into absolute ms, with Redis's checks.
pub fn expire_at(cmd: &str, secs: bool, abs: bool, raw: &[u8], now_ms: u64) -> CmdResult<u64> {
    let v = int(raw)?;
    if v <= 0 || (secs && v > i64::MAX / 1000) {
        return Err(invalid_expire(cmd));
    }
    let ms = if secs { v * 1000 } else { v };
    if abs {
        return Ok(ms as u64);
    }
    let now = now_ms as i64;
    if ms > i64::MAX - now {
        return Err(invalid_expire(cmd));
    }
    Ok((ms + now) as u64)
}

/// The shared core of SET, SETNX, SETEX, PSETEX, GETSET: returns whether the
/// value was written and the old value when `want_old`.
fn set_generic(ctx: &Ctx, key: &[u8], value: &[u8], o: &SetOpts, expiry: Expiry) -> CmdResult<(bool, Option<Vec<u8>>)> {
    let ks = ctx.ks();
    let old = ks.read(ctx.db, key, ctx.now_ms, |m| -> CmdResult<_> {
        let Some(m) = m else { return Ok(None) };
        let value = match bigstr::of(&m)? {
            Some(s) if o.get => Some(bigstr::read_all(ks, ctx.db, key, s)?),
            None if o.get => return Err(WRONGTYPE),
            _ => None,
        };
        // Boxed: this result is moved through the lookup's layers on
        // every SET (with a 270-byte `Coll` inline, 4% of SET -P16 was
        // memmove, tuning.md session 37); an old collection is rare here.
        Ok(Some((m.ty, m.expire_ms, value, m.coll().map(Box::new))))
    })??;
    let existed = old.is_some();
    let old_value = old.as_ref().and_then(|(_, _, v, _)| v.clone());
    if (o.nx && existed) || (o.xx && !existed) {
        return Ok((false, old_value));
    }
    let expire_ms = match expiry {
        Expiry::Clear => 0,
        Expiry::Keep => old.as_ref().map_or(0, |(_, e, _, _)| *e),
        Expiry::At(at) => at,
    };
    if expire_ms != 0 && expire_ms <= ctx.now_ms {
        // Already expired: the write is a delete, as Redis's checkAlreadyExpired.
        if existed {
            ks.delete(ctx.db, key, ctx.now_ms)?;
            ctx.notify(GENERIC, "del", key);
        }
        return Ok((true, old_value));
    }
    let (prior, old_coll) = (old.as_ref().map(|o| o.1), old.as_ref().and_then(|o| o.3.as_deref().cloned()));
    bigstr::put(ks, ctx.db, key, expire_ms, value, prior, old_coll)?;
    ctx.notify(STRING, "set", key);
    if matches!(expiry, Expiry::At(_)) {
        ctx.notify(GENERIC, "expire", key);
    }
    Ok((true, old_value))
}

pub fn set(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, value) = (args.key()?, args.bytes()?);
    let o = parse_set_opts(&mut args, false)?;
    let expiry = match &o.expire {
        Some((secs, abs, raw)) => Expiry::At(expire_at("set", *secs, *abs, raw, ctx.now_ms)?),
        None if o.keepttl => Expiry::Keep,
        None => Expiry::Clear,
    };
    let (written, old) = set_generic(ctx, key, value, &o, expiry)?;
    if o.get {
        match old {
            Some(v) => r.bulk(&v),
            None => r.null(),
        }
    } else if written {
        r.ok();
    } else {
        r.null();
    }
    Ok(())
}

pub fn setnx(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, value) = (args.key()?, args.bytes()?);
    args.finish()?;
    let o = SetOpts {
        nx: true,
        ..SetOpts::default()
    };
    let (written, _) = set_generic(ctx, key, value, &o, Expiry::Clear)?;
    r.int(written as i64);
    Ok(())
}

fn setex_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, cmd: &str, secs: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, ttl, value) = (args.key()?, args.bytes()?, args.bytes()?);
    args.finish()?;
    let at = expire_at(cmd, secs, false, ttl, ctx.now_ms)?;
    set_generic(ctx, key, value, &SetOpts::default(), Expiry::At(at))?;
    r.ok();
    Ok(())
}

pub fn setex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    setex_generic(ctx, argv, r, "setex", true)
}

pub fn psetex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    setex_generic(ctx, argv, r, "psetex", false)
}

pub fn getset(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, value) = (args.key()?, args.bytes()?);
    args.finish()?;
    let o = SetOpts {
        get: true,
        ..SetOpts::default()
    };
    let (_, old) = set_generic(ctx, key, value, &o, Expiry::Clear)?;
    match old {
        Some(v) => r.bulk(&v),
        None => r.null(),
    }
    Ok(())
}

pub fn getdel(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).key()?;
    match read_string(ctx, key)? {
        None => r.null(),
        Some((v, _)) => {
            ctx.ks().delete(ctx.db, key, ctx.now_ms)?;
            ctx.notify(GENERIC, "del", key);
            r.bulk(&v);
        }
    }
    Ok(())
}

pub fn getex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let o = parse_set_opts(&mut args, true)?;
    let at = match &o.expire {
        Some((secs, abs, raw)) => Some(expire_at("getex", *secs, *abs, raw, ctx.now_ms)?),
        None => None,
    };
    let ks = ctx.ks();
    let Some(stored) = ks.get(ctx.db, key, ctx.now_ms)? else {
        r.null();
        return Ok(());
    };
    let m = stored.meta();
    let v = bigstr::read_all(ks, ctx.db, key, bigstr::of(&m)?.ok_or(WRONGTYPE)?)?;
    let old_expire = m.expire_ms;
    // A new expiry rewrites only the meta record (a big string's chunks stay).
    match at {
        Some(at) if at <= ctx.now_ms => {
            ks.delete(ctx.db, key, ctx.now_ms)?;
            ctx.notify(GENERIC, "del", key);
        }
        Some(at) => {
            ks.set_expire(ctx.db, key, &stored, at)?;
            ctx.notify(GENERIC, "expire", key);
        }
        None if o.persist && old_expire != 0 => {
            ks.set_expire(ctx.db, key, &stored, 0)?;
            ctx.notify(GENERIC, "persist", key);
        }
        None => {}
    }
    r.bulk(&v);
    Ok(())
}

/// Writes `data` at `offset` (None: at the end) of the string at `key`, as
/// APPEND and SETRANGE do; returns the new length. Only the chunks a big
/// string has at those offsets are read and rewritten (`types::bigstr`).
fn write_string(ctx: &Ctx, key: &[u8], offset: Option<u64>, data: &[u8]) -> CmdResult<u64> {
    let ks = ctx.ks();
    let stored = ks.get(ctx.db, key, ctx.now_ms)?;
    let m = stored.as_ref().map(|s| s.meta());
    let s = match &m {
        Some(m) => Some(bigstr::of(m)?.ok_or(WRONGTYPE)?),
        None => None,
    };
    let len = s.map_or(0, |s| s.len());
    let append = offset.is_none();
    let offset = offset.unwrap_or(len);
    if data.is_empty() {
        // SETRANGE with nothing to write creates nothing; APPEND of "" to
        // a missing key creates an empty string, as in Redis.
        if s.is_none() && append {
            ks.put_string(ctx.db, key, 0, b"", None)?;
            ctx.notify(STRING, "append", key);
        }
        return Ok(len);
    }
    if offset + data.len() as u64 > ctx.shard.global.max_string_len() as u64 {
        return Err(STRING_TOO_LONG);
    }
    let expire = m.map_or(0, |m| m.expire_ms);
    let n = bigstr::write_at(ks, ctx.db, key, s, expire, offset, data)?;
    ctx.notify(STRING, if append { "append" } else { "setrange" }, key);
    Ok(n)
}

pub fn append(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, data) = (args.key()?, args.bytes()?);
    args.finish()?;
    let n = write_string(ctx, key, None, data)?;
    r.int(n as i64);
    Ok(())
}

pub fn strlen(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).key()?;
    // A big string's length is in its meta record: no chunk is read.
    let n = ctx.ks().read(ctx.db, key, ctx.now_ms, |m| match m {
        None => Ok::<u64, CmdError>(0),
        Some(m) => Ok(bigstr::of(&m)?.ok_or(WRONGTYPE)?.len()),
    })??;
    r.int(n as i64);
    Ok(())
}

fn incr_generic(ctx: &Ctx, key: &[u8], by: i64, r: &mut Reply) -> CmdResult {
    let (cur, expire, prior) = match bigstr::read_number_with(ctx.ks(), ctx.db, key, ctx.now_ms, NOT_INT, super::args::parse_i64)? {
        Some((v, e)) => (v.ok_or(NOT_INT)?, e, Some(e)),
        None => (0, 0, None),
    };
    let next = cur.checked_add(by).ok_or(OVERFLOW)?;
    // The digits on the stack (`write!` through fmt was ~230 of INCR's
    // ~5900 instructions).
    let mut digits = [0u8; 21];
    let text = crate::resp::reply::i64_digits(next, &mut digits);
    ctx.ks().put_string(ctx.db, key, expire, text, prior)?;
    ctx.notify(STRING, "incrby", key);
    r.int(next);
    Ok(())
}

pub fn incr(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    incr_generic(ctx, Args::new(argv).key()?, 1, r)
}

pub fn decr(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    incr_generic(ctx, Args::new(argv).key()?, -1, r)
}

pub fn incrby(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, by) = (args.key()?, args.int()?);
    incr_generic(ctx, key, by, r)
}

pub fn decrby(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, by) = (args.key()?, args.int()?);
    if by == i64::MIN {
        return Err(CmdError::new("ERR decrement would overflow"));
    }
    incr_generic(ctx, key, -by, r)
}

pub fn incrbyfloat(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, by) = (args.key()?, args.bytes()?);
    let current = read_number(ctx, key, NOT_FLOAT)?;
    let next = logic::incr_by_float(current.as_ref().map(|(v, _)| &v[..]), by).map_err(|e| match e {
        FloatIncrError::NotFloat | FloatIncrError::BadIncrement => NOT_FLOAT,
        FloatIncrError::NanOrInf => CmdError::new("ERR increment would produce NaN or Infinity"),
    })?;
    let prior = current.map(|(_, e)| e);
    ctx.ks().put_string(ctx.db, key, prior.unwrap_or(0), &next, prior)?;
    ctx.notify(STRING, "incrbyfloat", key);
    r.bulk(&next);
    Ok(())
}

pub fn getrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, start, end) = (args.key()?, args.int()?, args.int()?);
    ctx.ks().read(ctx.db, key, ctx.now_ms, |m| match m {
        None => {
            r.bulk(b"");
            Ok(())
        }
        Some(m) => match bigstr::of(&m)?.ok_or(WRONGTYPE)? {
            bigstr::Str::Inline(body) => {
                r.bulk(logic::range_of(body, start, end));
                Ok(())
            }
            // Only the chunks the range overlaps are read.
            big @ bigstr::Str::Big { len, .. } => {
                let (from, to) = logic::range_bounds(len, start, end).unwrap_or((0, 0));
                r.bulk(&bigstr::read_range(ctx.ks(), ctx.db, key, big, from, to)?);
                Ok(())
            }
        },
    })?
}

pub fn setrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, offset, data) = (args.key()?, args.int()?, args.bytes()?);
    if offset < 0 {
        return Err(CmdError::new("ERR offset is out of range"));
    }
    let n = write_string(ctx, key, Some(offset as u64), data)?;
    r.int(n as i64);
    Ok(())
}

// ---- commands over keys of several shards (`coord` sends the halves) ----

pub async fn mget(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let touch = !c.client.info.no_touch.load(std::sync::atomic::Ordering::Relaxed);
    let parts = coord::fan_out(c.shard, db, &coord::keys_from(argv, 1, 1), coord::Access::Read, move |st, ks| {
        st.ks.begin_lookups();
        let now = now_ms();
        st.ks.access.begin(touch, now);
        let values = multi::mget_keys(&st.ks, db, ks, now);
        st.ks.access.end();
        values
    })
    .await;
    let mut values: Vec<Option<Bytes>> = vec![None; argv.len()];
    for (pos, res) in parts {
        for (p, v) in pos.into_iter().zip(res?) {
            values[p] = v;
        }
    }
    r.array(argv.len() - 1);
    for v in &values[1..] {
        match v {
            Some(v) => r.bulk(v),
            None => r.null(),
        }
    }
    Ok(())
}

pub async fn mset(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new(super::arity_error("mset")));
    }
    coord::mset(c.shard, c.db(), argv, false).await?;
    r.ok();
    Ok(())
}

pub async fn msetnx(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new(super::arity_error("msetnx")));
    }
    let done = coord::mset(c.shard, c.db(), argv, true).await?;
    r.int(done as i64);
    Ok(())
}

pub async fn lcs(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (shard, db) = (c.shard, c.db());
    let mut args = Args::new(argv);
    let (a, b) = (args.arg()?, args.arg()?);
    let (mut want_len, mut want_idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    while !args.is_empty() {
        if args.flag("idx") {
            want_idx = true;
        } else if args.flag("len") {
            want_len = true;
        } else if args.flag("withmatchlen") {
            with_len = true;
        } else if args.option("minmatchlen", 1) {
            min_len = args.int()?.max(0);
        } else {
            return Err(SYNTAX);
        }
    }
    let mut values = Vec::with_capacity(2);
    for key in [a, b] {
        let key = key.clone();
        let v = shard
            .invoke_on(owner(&key, shard.count()), move |st: &ShardState| {
                st.ks.read(db, &key, now_ms(), |m| match m {
                    None => Ok(Vec::new()),
                    Some(m) => match crate::types::bigstr::of(&m)? {
                        Some(s) => crate::types::bigstr::read_all(&st.ks, db, &key, s),
                        None => Err(CmdError::new("ERR The specified keys must contain string values")),
                    },
                })?
            })
            .await?;
        values.push(v);
    }
    if want_len && want_idx {
        return Err(CmdError::new("ERR If you want both the length and indexes, please just use IDX."));
    }
    if (values[0].len() as u64 + 1) * (values[1].len() as u64 + 1) * 4 > shard.state().global.max_string_len() as u64 {
        return Err(CmdError::new(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let res = crate::types::string::lcs(&values[0], &values[1]);
    if want_len {
        r.int(res.seq.len() as i64);
    } else if want_idx {
        let kept: Vec<_> = res.matches.iter().filter(|m| (m.1 - m.0 + 1) as i64 >= min_len).collect();
        r.map(2);
        r.bulk(b"matches");
        r.array(kept.len());
        for (a0, a1, b0, b1) in kept {
            r.array(if with_len { 3 } else { 2 });
            r.array(2);
            r.int(*a0 as i64);
            r.int(*a1 as i64);
            r.array(2);
            r.int(*b0 as i64);
            r.int(*b1 as i64);
            if with_len {
                r.int((a1 - a0 + 1) as i64);
            }
        }
        r.bulk(b"len");
        r.int(res.seq.len() as i64);
    } else {
        r.bulk(&res.seq);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn set_option_grammar() {
        let ok = |a: &[&str]| parse_set_opts(&mut Args::at(&argv(a), 3), false).is_ok();
        assert!(ok(&["set", "k", "v", "NX", "GET", "EX", "10"]));
        assert!(ok(&["set", "k", "v", "ex", "1", "ex", "2"]));
        assert!(!ok(&["set", "k", "v", "NX", "XX"]));
        assert!(!ok(&["set", "k", "v", "EX", "1", "PX", "2"]));
        assert!(!ok(&["set", "k", "v", "KEEPTTL", "EX", "1"]));
        assert!(!ok(&["set", "k", "v", "EX"]));
        assert!(!ok(&["set", "k", "v", "PERSIST"]));
        assert!(parse_set_opts(&mut Args::at(&argv(&["getex", "k", "PERSIST"]), 2), true).is_ok());
        assert!(parse_set_opts(&mut Args::at(&argv(&["getex", "k", "PERSIST", "EX", "1"]), 2), true).is_err());
        assert!(parse_set_opts(&mut Args::at(&argv(&["getex", "k", "NX"]), 2), true).is_err());
    }

    #[test]
    fn expire_arguments() {
        assert_eq!(expire_at("set", true, false, b"10", 1000), Ok(11_000));
        assert_eq!(expire_at("set", false, true, b"5", 1000), Ok(5));
        assert_eq!(expire_at("set", true, false, b"0", 1000), Err(invalid_expire("set")));
        assert_eq!(expire_at("set", true, false, b"-1", 1000), Err(invalid_expire("set")));
        assert_eq!(expire_at("set", true, false, b"x", 1000), Err(NOT_INT));
        assert_eq!(
            expire_at("set", true, false, b"9223372036854775807", 1000),
            Err(invalid_expire("set"))
        );
        assert_eq!(
            expire_at("set", false, false, b"9223372036854775807", 1000),
            Err(invalid_expire("set"))
        );
    }
}
