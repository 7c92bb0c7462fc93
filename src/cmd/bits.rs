//! Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITFIELD and
//! BITFIELD_RO on one shard, BITOP over keys on any shards. A bitmap is a
//! string; these commands read and write only the bytes they reach (a big
//! string's chunks, `types::bigstr`), so a bit at offset 2^32-1 costs one
//! chunk, not the whole value (docs/encoding.md, "Bitmaps").

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::args::{is, parse_i64, Args};
use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult, NOT_INT, SYNTAX, WRONGTYPE};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::bigstr::{self, Str};
use crate::types::bitmap::{self, BitOp, Field, Overflow};
use crate::types::keyspace::Keyspace;
use crate::types::notify::class::{GENERIC, STRING};

/// The bitmap commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "setbit"      4  [write denyoom]      1 1 1  Shard(setbit)      bitmap "2.2.0" "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.";
    "getbit"      3  [readonly fast]      1 1 1  Shard(getbit)      bitmap "2.2.0" "Returns a bit value by offset.";
    "bitcount"    -2 [readonly]           1 1 1  Shard(bitcount)    bitmap "2.6.0" "Counts the number of set bits (population counting) in a string.";
    "bitpos"      -3 [readonly]           1 1 1  Shard(bitpos)      bitmap "2.8.7" "Finds the first set (1) or clear (0) bit in a string.";
    "bitfield"    -2 [write denyoom]      1 1 1  Shard(bitfield)    bitmap "3.2.0" "Performs arbitrary bitfield integer operations on strings.";
    "bitfield_ro" -2 [readonly fast]      1 1 1  Shard(bitfield_ro) bitmap "6.0.0" "Performs arbitrary read-only bitfield integer operations on strings.";
    "bitop"       -4 [write denyoom]      2 -1 1 Conn(bitop)        bitmap "2.6.0" "Performs bitwise operations on multiple strings, and stores the result.";
};

const BAD_OFFSET: CmdError = CmdError(Cow::Borrowed("ERR bit offset is not an integer or out of range"));
const BAD_BIT: CmdError = CmdError(Cow::Borrowed("ERR bit is not an integer or out of range"));

/// A bit offset as Redis reads it: not negative, inside
/// `proto-max-bulk-len` bytes; `#n` means n fields of `hash_bits` bits
/// (BITFIELD).
fn bit_offset(ctx: &Ctx, arg: &[u8], hash_bits: Option<u32>) -> CmdResult<u64> {
    let (digits, mul) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], bits as i64),
        _ => (arg, 1),
    };
    let n = parse_i64(digits).and_then(|n| n.checked_mul(mul)).ok_or(BAD_OFFSET)?;
    if n < 0 || (n >> 3) as u64 >= ctx.shard.global.max_string_len() as u64 {
        return Err(BAD_OFFSET);
    }
    Ok(n as u64)
}

/// A live string key: its form and expiry; None when missing; WRONGTYPE
/// for other types.
fn string_of(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<(Owned, u64)>> {
    ctx.ks().read(ctx.db, key, ctx.now_ms, |m| match m {
        None => Ok(None),
        Some(m) => match bigstr::of(&m)? {
            Some(Str::Inline(v)) => Ok(Some((Owned::Inline(v.to_vec()), m.expire_ms))),
            Some(Str::Big { version, len, chunk }) => Ok(Some((Owned::Big { version, len, chunk }, m.expire_ms))),
            None => Err(WRONGTYPE),
        },
    })?
}

/// Runs `f` on a live string key's value where it is stored (no copy of
/// an inline value); None when missing; WRONGTYPE for other types.
fn in_place<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(Option<Str<'_>>) -> CmdResult<R>) -> CmdResult<R> {
    ctx.ks().read(ctx.db, key, ctx.now_ms, |m| match m {
        None => f(None),
        Some(m) => match bigstr::of(&m)? {
            Some(s) => f(Some(s)),
            None => Err(WRONGTYPE),
        },
    })?
}

/// [`Str`] without the borrow of the read.
enum Owned {
    Inline(Vec<u8>),
    Big { version: u64, len: u64, chunk: u64 },
}

impl Owned {
    fn len(&self) -> u64 {
        match self {
            Owned::Inline(v) => v.len() as u64,
            Owned::Big { len, .. } => *len,
        }
    }

    fn as_str(&self) -> Str<'_> {
        match self {
            Owned::Inline(v) => Str::Inline(v),
            Owned::Big { version, len, chunk } => Str::Big {
                version: *version,
                len: *len,
                chunk: *chunk,
            },
        }
    }

    /// Bytes `[from, to)` (clamped to the length).
    fn bytes(&self, ks: &Keyspace, db: u8, key: &[u8], from: u64, to: u64) -> CmdResult<Vec<u8>> {
        bigstr::read_range(ks, db, key, self.as_str(), from, to)
    }
}

pub fn setbit(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let offset = bit_offset(ctx, &argv[2], None)?;
    let on = match parse_i64(&argv[3]).ok_or(BAD_BIT)? {
        0 => false,
        1 => true,
        _ => return Err(BAD_BIT),
    };
    let key = &argv[1][..];
    let cur = string_of(ctx, key)?;
    let byte = offset >> 3;
    let old = match &cur {
        Some((s, _)) => s.bytes(ctx.ks(), ctx.db, key, byte, byte + 1)?.first().copied().unwrap_or(0),
        None => 0,
    };
    let was = bitmap::get_bit(&[old], offset & 7);
    let grows = cur.as_ref().map_or(0, |(s, _)| s.len()) <= byte;
    if grows || (was == 1) != on {
        let new = bitmap::with_bit(old, offset, on);
        write_runs(ctx, key, cur.as_ref(), &[(byte, vec![new])])?;
        ctx.notify(STRING, "setbit", key);
    }
    r.int(was as i64);
    Ok(())
}

/// Writes `runs` (offset, bytes) into the string at `key` in one batch.
fn write_runs(ctx: &Ctx, key: &[u8], cur: Option<&(Owned, u64)>, runs: &[(u64, Vec<u8>)]) -> CmdResult<u64> {
    let s = cur.map(|(s, _)| s.as_str());
    let expire = cur.map_or(0, |(_, e)| *e);
    bigstr::write_runs(ctx.ks(), ctx.db, key, s, expire, runs, true)
}

pub fn getbit(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let offset = bit_offset(ctx, &argv[2], None)?;
    let key = &argv[1][..];
    let byte = offset >> 3;
    // In place: an inline value is not copied, a big one yields the one
    // byte of its chunk.
    let bit = in_place(ctx, key, |s| match s {
        None => Ok(0),
        Some(Str::Inline(v)) => Ok(bitmap::get_bit(v, offset)),
        Some(big) => Ok(bitmap::get_bit(
            &bigstr::read_range(ctx.ks(), ctx.db, key, big, byte, byte + 1)?,
            offset & 7,
        )),
    })?;
    r.int(bit as i64);
    Ok(())
}

/// BITCOUNT/BITPOS's `start end [BYTE|BIT]`: (start, end, bit unit).
fn range_args(args: &[Bytes]) -> CmdResult<(i64, i64, bool)> {
    let start = parse_i64(&args[0]).ok_or(NOT_INT)?;
    let end = parse_i64(&args[1]).ok_or(NOT_INT)?;
    Ok((start, end, unit(args.get(2))?))
}

/// The optional `BYTE|BIT` unit: true for bits.
fn unit(arg: Option<&Bytes>) -> CmdResult<bool> {
    match arg {
        None => Ok(false),
        Some(u) if is(u, "bit") => Ok(true),
        Some(u) if is(u, "byte") => Ok(false),
        Some(_) => Err(SYNTAX),
    }
}

pub fn bitcount(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    let range = match argv.len() {
        2 => None,
        4 | 5 => Some(range_args(&argv[2..])?),
        _ => return Err(SYNTAX),
    };
    let (start, end, unit) = range.unwrap_or((0, -1, false));
    let wrong_way = start < 0 && end < 0 && start > end;
    let n = in_place(ctx, key, |s| {
        let Some(s) = s else { return Ok(0) };
        let Some((first, last)) = bitmap::bit_range(s.len(), start, end, unit).filter(|_| !wrong_way) else {
            return Ok(0);
        };
        let mut n = 0;
        bigstr::visit_range(ctx.ks(), ctx.db, key, s, first >> 3, (last >> 3) + 1, |at, part| {
            n += bitmap::count_bits(part, at, first, last);
            true
        })?;
        Ok(n)
    })?;
    r.int(n as i64);
    Ok(())
}

pub fn bitpos(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    let bit = match parse_i64(&argv[2]).ok_or(NOT_INT)? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::new("ERR The bit argument must be 1 or 0.")),
    };
    // Redis's order: start, then the unit, then end.
    let (start, end, unit, end_given) = match argv.len() {
        3 => (0, -1, false, false),
        4..=6 => {
            let start = parse_i64(&argv[3]).ok_or(NOT_INT)?;
            let unit = unit(argv.get(5))?;
            match argv.get(4) {
                Some(e) => (start, parse_i64(e).ok_or(NOT_INT)?, unit, true),
                None => (start, -1, unit, false),
            }
        }
        _ => return Err(SYNTAX),
    };
    let pos = in_place(ctx, key, |s| {
        // A missing key is an endless run of zeros.
        let Some(s) = s else { return Ok(if bit { -1 } else { 0 }) };
        let Some((first, last)) = bitmap::bit_range(s.len(), start, end, unit) else {
            return Ok(-1);
        };
        let mut found = None;
        bigstr::visit_range(ctx.ks(), ctx.db, key, s, first >> 3, (last >> 3) + 1, |at, part| {
            found = bitmap::find_bit(part, at, first, last, bit);
            found.is_none()
        })?;
        Ok(match found {
            Some(p) => p as i64,
            // No clear bit: the string reads as padded with zeros past its
            // end, unless the caller gave the end of the range.
            None if !bit && !end_given => last as i64 + 1,
            None => -1,
        })
    })?;
    r.int(pos);
    Ok(())
}

/// One BITFIELD operation.
enum FieldOp {
    Get(Field, u64),
    Set(Field, u64, i64, Overflow),
    Incr(Field, u64, i64, Overflow),
}

impl FieldOp {
    fn at(&self) -> (Field, u64) {
        match *self {
            FieldOp::Get(f, o) | FieldOp::Set(f, o, ..) | FieldOp::Incr(f, o, ..) => (f, o),
        }
    }
}

fn parse_field_ops(ctx: &Ctx, argv: &[Bytes]) -> CmdResult<Vec<FieldOp>> {
    let mut ops = Vec::new();
    let mut ow = Overflow::Wrap;
    let mut args = Args::at(argv, 2);
    while let Some(sub) = args.peek() {
        let left = args.left() - 1;
        let _ = args.arg();
        let kind = if is(sub, "get") && left >= 2 {
            0
        } else if is(sub, "set") && left >= 3 {
            1
        } else if is(sub, "incrby") && left >= 3 {
            2
        } else if is(sub, "overflow") && left >= 1 {
            let t = args.bytes()?;
            ow = if is(t, "wrap") {
                Overflow::Wrap
            } else if is(t, "sat") {
                Overflow::Sat
            } else if is(t, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::new("ERR Invalid OVERFLOW type specified"));
            };
            continue;
        } else {
            return Err(SYNTAX);
        };
        let field = Field::parse(args.bytes()?).ok_or_else(|| {
            CmdError::new("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
        })?;
        let offset = bit_offset(ctx, args.bytes()?, Some(field.bits))?;
        ops.push(match kind {
            0 => FieldOp::Get(field, offset),
            k => {
                let v = parse_i64(args.bytes()?).ok_or(NOT_INT)?;
                if k == 1 {
                    FieldOp::Set(field, offset, v, ow)
                } else {
                    FieldOp::Incr(field, offset, v, ow)
                }
            }
        });
    }
    Ok(ops)
}

pub fn bitfield(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bitfield_generic(ctx, argv, r, false)
}

pub fn bitfield_ro(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bitfield_generic(ctx, argv, r, true)
}

fn bitfield_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, ro: bool) -> CmdResult {
    let key = &argv[1][..];
    let ops = parse_field_ops(ctx, argv)?;
    let writes = ops.iter().any(|o| !matches!(o, FieldOp::Get(..)));
    if writes && ro {
        return Err(CmdError::new("ERR BITFIELD_RO only supports the GET subcommand"));
    }
    let cur = string_of(ctx, key)?;
    let old_len = cur.as_ref().map_or(0, |(s, _)| s.len());
    // The bytes the operations reach, read once each: the string's own
    // bytes then what the operations wrote.
    let mut bytes: BTreeMap<u64, u8> = BTreeMap::new();
    let mut touched: BTreeSet<u64> = BTreeSet::new();
    // A write makes room up to the farthest field written first, as
    // Redis sizes the string before it runs the operations.
    let highest = ops
        .iter()
        .filter(|o| !matches!(o, FieldOp::Get(..)))
        .map(|o| (o.at().1 + o.at().0.bits as u64 - 1) >> 3)
        .max();
    let grows = highest.is_some_and(|h| h >= old_len);
    for op in &ops {
        let (f, offset) = op.at();
        let (lo, hi) = (offset >> 3, (offset + f.bits as u64 - 1) >> 3);
        if (lo..=hi).all(|b| bytes.contains_key(&b)) {
            continue;
        }
        let got = match &cur {
            Some((s, _)) => s.bytes(ctx.ks(), ctx.db, key, lo, hi + 1)?,
            None => Vec::new(),
        };
        for b in lo..=hi {
            bytes.entry(b).or_insert_with(|| got.get((b - lo) as usize).copied().unwrap_or(0));
        }
    }
    let mut changes = 0;
    // Replies wait for the write: a failed write answers its error alone.
    let mut replies: Vec<Option<i64>> = Vec::with_capacity(ops.len());
    for op in &ops {
        let (f, offset) = op.at();
        let (lo, hi) = (offset >> 3, (offset + f.bits as u64 - 1) >> 3);
        let mut buf: Vec<u8> = (lo..=hi).map(|b| bytes.get(&b).copied().unwrap_or(0)).collect();
        let old = f.value(bitmap::get_field(&buf, lo, offset, f.bits));
        let (new, reply) = match *op {
            FieldOp::Get(..) => {
                replies.push(Some(old));
                continue;
            }
            FieldOp::Set(_, _, v, ow) => (f.add(v, 0, ow), old),
            FieldOp::Incr(_, _, v, ow) => {
                let new = f.add(old, v, ow);
                (new, new.unwrap_or(0))
            }
        };
        let Some(new) = new else {
            replies.push(None);
            continue;
        };
        replies.push(Some(reply));
        bitmap::set_field(&mut buf, lo, offset, f.bits, new as u64);
        for (i, b) in (lo..=hi).enumerate() {
            bytes.insert(b, buf[i]);
            touched.insert(b);
        }
        if new != old || grows {
            changes += 1;
        }
    }
    // The string grows even when an overflow FAIL wrote nothing.
    if changes > 0 || grows {
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        for b in touched {
            let v = bytes.get(&b).copied().unwrap_or(0);
            match runs.last_mut() {
                Some((start, run)) if *start + run.len() as u64 == b => run.push(v),
                _ => runs.push((b, vec![v])),
            }
        }
        if let Some(h) = highest.filter(|&h| h >= old_len) {
            // The new last byte, so the length reaches it.
            if runs.last().is_none_or(|(s, run)| s + run.len() as u64 <= h) {
                runs.push((h, vec![bytes.get(&h).copied().unwrap_or(0)]));
            }
        }
        write_runs(ctx, key, cur.as_ref(), &runs)?;
        if changes > 0 {
            ctx.notify(STRING, "setbit", key);
        }
    }
    r.array(replies.len());
    for v in replies {
        match v {
            Some(n) => r.int(n),
            None => r.null(),
        }
    }
    Ok(())
}

/// A source of BITOP: its bytes, read on its owner (missing: empty).
async fn source(c: &Conn<'_>, key: &Bytes) -> CmdResult<Vec<u8>> {
    let (shard, db, key) = (c.shard, c.db(), key.clone());
    shard
        .invoke_on(owner(&key, shard.count()), move |st: &ShardState| {
            st.ks.read(db, &key, now_ms(), |m| match m {
                None => Ok(Vec::new()),
                Some(m) => match bigstr::of(&m)? {
                    Some(s) => bigstr::read_all(&st.ks, db, &key, s),
                    None => Err(WRONGTYPE),
                },
            })?
        })
        .await
}

pub async fn bitop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let op = BitOp::parse(&argv[1]).ok_or(SYNTAX)?;
    let srcs = &argv[3..];
    if op == BitOp::Not && srcs.len() != 1 {
        return Err(CmdError::new("ERR BITOP NOT must be called with a single source key."));
    }
    if matches!(op, BitOp::Diff | BitOp::Diff1 | BitOp::AndOr) && srcs.len() < 2 {
        return Err(CmdError::new(format!(
            "ERR BITOP {} must be called with at least two source keys.",
            String::from_utf8_lossy(&argv[1]).to_uppercase()
        )));
    }
    let mut values = Vec::with_capacity(srcs.len());
    for k in srcs {
        values.push(source(&c, k).await?);
    }
    let out = op.apply(&values);
    let len = out.len();
    if len as u64 > c.shard.state().global.max_string_len() as u64 {
        return Err(crate::error::STRING_TOO_LONG);
    }
    let (shard, db, dst) = (c.shard, c.db(), argv[2].clone());
    shard
        .invoke_on(owner(&dst, shard.count()), move |st: &ShardState| store(&st.ks, db, &dst, &out))
        .await?;
    r.int(len as i64);
    Ok(())
}

/// BITOP's destination: the result as a plain string (no TTL), or no key
/// when the result is empty.
fn store(ks: &Keyspace, db: u8, dst: &[u8], out: &[u8]) -> CmdResult {
    let now = now_ms();
    if out.is_empty() {
        if ks.delete(db, dst, now)? {
            ks.notify(GENERIC, "del", db, dst);
        }
        return Ok(());
    }
    let old = ks.read(db, dst, now, |m| m.map(|m| (m.expire_ms, m.coll())))?;
    bigstr::put(ks, db, dst, 0, out, old.as_ref().map(|o| o.0), old.and_then(|o| o.1))?;
    ks.notify(STRING, "set", db, dst);
    Ok(())
}
