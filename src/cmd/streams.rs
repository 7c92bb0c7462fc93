//! Stream commands on one key (`types::stream` has the encoding): XADD,
//! XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, with Redis's option
//! parsing and error texts (`t_stream.c`'s `streamParseAddOrTrimArgsOrReply`
//! and friends, read for behaviour).

use bytes::Bytes;

use super::args::{is, Args};
use super::{commands, CommandSpec, Ctx};
use crate::error::{CmdError, CmdResult, INVALID_STREAM_ID as INVALID_ID, NOT_INT, SYNTAX};
use crate::resp::parse::string2ll;
use crate::resp::Reply;
use crate::types::notify::class;
use crate::types::stream::{Entry, Id, NewId, RawEntry, Refs, Stream, Trim, TrimBy};

/// The stream commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "xadd"       -5 [write denyoom fast]   1 1 1  Shard(xadd)       stream "5.0.0" "Appends a new message to a stream. Creates the key if it doesn't exist.";
    "xlen"       2  [readonly fast]        1 1 1  Shard(xlen)       stream "5.0.0" "Return the number of messages in a stream.";
    "xrange"     -4 [readonly]             1 1 1  Shard(xrange)     stream "5.0.0" "Returns the messages from a stream within a range of IDs.";
    "xrevrange"  -4 [readonly]             1 1 1  Shard(xrevrange)  stream "5.0.0" "Returns the messages from a stream within a range of IDs in reverse order.";
    "xdel"       -3 [write fast]           1 1 1  Shard(xdel)       stream "5.0.0" "Returns the number of messages after removing them from a stream.";
    "xtrim"      -4 [write]                1 1 1  Shard(xtrim)      stream "5.0.0" "Deletes messages from the beginning of a stream.";
    "xsetid"     -3 [write denyoom fast]   1 1 1  Shard(xsetid)     stream "5.0.0" "An internal command for replicating stream values.";
};

/// Redis's `string2ull`: a non-negative `string2ll`, else what `strtoull`
/// takes whole (leading blanks, a sign).
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = string2ll(s) {
        return (v >= 0).then_some(v as u64);
    }
    let t = std::str::from_utf8(s).ok()?;
    let t = t.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'+') => (false, &t[1..]),
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = digits.parse().ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A parsed ID argument: the ID, and whether its sequence was given
/// (`ms-*` says no).
fn parse_id_full(s: &[u8], strict: bool, missing_seq: u64, star_ok: bool) -> Option<(Id, bool)> {
    if s.len() > 127 {
        return None;
    }
    match s {
        b"-" if !strict => return Some((Id::MIN, true)),
        b"+" if !strict => return Some((Id::MAX, true)),
        b"-" | b"+" => return None,
        _ => {}
    }
    let (ms, seq) = match memchr::memchr(b'-', s) {
        Some(d) => (&s[..d], Some(&s[d + 1..])),
        None => (s, None),
    };
    let ms = string2ull(ms)?;
    match seq {
        None => Some((Id::new(ms, missing_seq), true)),
        Some(b"*") if star_ok => Some((Id::new(ms, 0), false)),
        Some(q) => Some((Id::new(ms, string2ull(q)?), true)),
    }
}

/// A strict ID (no `-` or `+`).
pub fn parse_id(s: &[u8], missing_seq: u64) -> CmdResult<Id> {
    parse_id_full(s, true, missing_seq, false).map(|(id, _)| id).ok_or(INVALID_ID)
}

/// A range bound of XRANGE: `-`, `+`, an ID, or `(` ID (exclusive).
pub(super) fn parse_bound(s: &[u8], missing_seq: u64, start: bool) -> CmdResult<Id> {
    if s.len() > 1 && s[0] == b'(' {
        let id = parse_id(&s[1..], missing_seq)?;
        let stepped = if start { id.incr() } else { id.decr() };
        return stepped.ok_or_else(|| {
            CmdError::new(if start {
                "ERR invalid start ID for the interval"
            } else {
                "ERR invalid end ID for the interval"
            })
        });
    }
    parse_id_full(s, false, missing_seq, false).map(|(id, _)| id).ok_or(INVALID_ID)
}

/// XADD's and XTRIM's options.
struct AddArgs {
    trim: Option<Trim>,
    nomkstream: bool,
    /// XADD's ID and where the fields start.
    id: Option<(NewId, usize)>,
}

fn parse_trim_args(ctx: &Ctx, argv: &[Bytes], xadd: bool) -> CmdResult<AddArgs> {
    let mut i = 2;
    let (mut by, mut approx, mut limit, mut limit_given, mut nomk) = (None, false, 0i64, false, false);
    let mut refs = None;
    let mut id = None;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i][..];
        if xadd && opt == b"*" {
            id = Some((NewId::Auto, i + 1));
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if by.is_some() {
                return Err(CmdError::new(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            approx = false;
            if more >= 2 && (&argv[i + 1][..] == b"~" || &argv[i + 1][..] == b"=") {
                approx = &argv[i + 1][..] == b"~";
                i += 1;
            }
            by = Some(if is(opt, "maxlen") {
                let n = string2ll(&argv[i + 1]).ok_or(NOT_INT)?;
                if n < 0 {
                    return Err(CmdError::new("ERR The MAXLEN argument must be >= 0."));
                }
                TrimBy::MaxLen(n as u64)
            } else {
                TrimBy::MinId(parse_id(&argv[i + 1], 0)?)
            });
            i += 2;
        } else if is(opt, "limit") && more > 0 {
            limit = string2ll(&argv[i + 1]).ok_or(NOT_INT)?;
            if limit < 0 {
                return Err(CmdError::new("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 2;
        } else if let Some(r) = refs_word(opt) {
            if refs.is_some() {
                return Err(SYNTAX);
            }
            refs = Some(r);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            nomk = true;
            i += 1;
        } else if xadd {
            let (parsed, seq_given) = parse_id_full(opt, true, 0, true).ok_or(INVALID_ID)?;
            let want = if seq_given { NewId::Exact(parsed) } else { NewId::Ms(parsed.ms) };
            id = Some((want, i + 1));
            break;
        } else {
            return Err(SYNTAX);
        }
    }
    if limit_given && by.is_none() {
        return Err(CmdError::new(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && by.is_none() {
        return Err(CmdError::new("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    if limit_given && !approx {
        return Err(CmdError::new("ERR syntax error, LIMIT cannot be used without the special ~ option"));
    }
    if !limit_given && approx {
        let per = ctx.shard.global.config.encodings().stream_node_entries as i64;
        limit = (100 * per).clamp(1, 1_000_000);
        if per <= 0 {
            limit = 10_000;
        }
    }
    Ok(AddArgs {
        trim: by.map(|by| Trim {
            by,
            approx,
            limit: limit as u64,
            refs: refs.unwrap_or_default(),
        }),
        nomkstream: nomk,
        id,
    })
}

/// KEEPREF, DELREF or ACKED (Redis 8.2).
pub(super) fn refs_word(a: &[u8]) -> Option<Refs> {
    if is(a, "keepref") {
        Some(Refs::Keep)
    } else if is(a, "delref") {
        Some(Refs::Delete)
    } else if is(a, "acked") {
        Some(Refs::Acked)
    } else {
        None
    }
}

fn wrong_args(name: &str) -> CmdError {
    CmdError::new(format!("ERR wrong number of arguments for '{name}' command"))
}

/// Writes entries as XRANGE replies them.
pub fn entries_reply(r: &mut Reply, got: &[Entry]) {
    r.array(got.len());
    for (id, fields) in got {
        r.array(2);
        id_reply(r, *id);
        r.bulk_array(fields);
    }
}

/// An ID as a bulk string.
pub fn id_reply(r: &mut Reply, id: Id) {
    r.bulk(id.format(&mut [0; 41]));
}

/// Entries read whole ([`Stream::range_raw`]) as XRANGE replies them.
pub fn raw_entries_reply(r: &mut Reply, got: &[RawEntry]) {
    r.array(got.len());
    for e in got {
        r.array(2);
        id_reply(r, e.id);
        r.array(e.len());
        for f in e.fields() {
            r.bulk(f);
        }
    }
}

pub fn xadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let a = parse_trim_args(ctx, argv, true)?;
    let Some((want, at)) = a.id else {
        return Err(wrong_args("xadd"));
    };
    let fields = &argv[at..];
    if fields.is_empty() || fields.len() % 2 == 1 {
        return Err(wrong_args("xadd"));
    }
    if let NewId::Exact(Id { ms: 0, seq: 0 }) = want {
        return Err(CmdError::new("ERR The ID specified in XADD must be greater than 0-0"));
    }
    let key = &argv[1][..];
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, !a.nomkstream)? else {
        r.null();
        return Ok(());
    };
    if s.last_id() == Id::MAX {
        return Err(CmdError::new(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = s.next_id(want, crate::clock::wall_ms()).map_err(CmdError::new)?;
    let parts: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
    s.add(id, &parts, ctx.shard.global.config.encodings());
    let trimmed = match a.trim {
        Some(t) => s.trim(t)?,
        None => 0,
    };
    s.commit()?;
    let ks = ctx.ks();
    ks.notify(class::STREAM, "xadd", ctx.db, key);
    if trimmed > 0 {
        ks.notify(class::STREAM, "xtrim", ctx.db, key);
    }
    crate::coord::serve::key_ready(ctx.shard, ctx.db, key);
    id_reply(r, id);
    Ok(())
}

pub fn xtrim(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let a = parse_trim_args(ctx, argv, false)?;
    let key = &argv[1][..];
    let (Some(t), Some(mut s)) = (a.trim, Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?) else {
        r.int(0);
        return Ok(());
    };
    let n = s.trim(t)?;
    s.commit()?;
    if n > 0 {
        ctx.ks().notify(class::STREAM, "xtrim", ctx.db, key);
    }
    r.int(n as i64);
    Ok(())
}

pub fn xlen(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let n = Stream::open(ctx.ks(), ctx.db, &argv[1], ctx.now_ms, false)?.map_or(0, |s| s.len());
    r.int(n as i64);
    Ok(())
}

fn range(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, rev: bool) -> CmdResult {
    let key = &argv[1][..];
    let (a, b) = (&argv[2][..], &argv[3][..]);
    let (start, end) = if rev { (b, a) } else { (a, b) };
    let from = parse_bound(start, 0, true)?;
    let to = parse_bound(end, u64::MAX, false)?;
    let mut count: i64 = -1;
    let mut args = Args::at(argv, 4);
    while !args.is_empty() {
        if args.left() >= 2 && is(args.peek().map_or(&[][..], |a| &a[..]), "count") {
            args.arg()?;
            count = args.int()?.max(0);
        } else {
            return Err(SYNTAX);
        }
    }
    let Some(s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        r.array(0);
        return Ok(());
    };
    // COUNT 0 on a stream: a null array, as Redis answers.
    if count == 0 {
        r.null_array();
        return Ok(());
    }
    let got = if from <= to {
        s.range_raw(from, to, count.max(0) as u64, rev)?
    } else {
        Vec::new()
    };
    raw_entries_reply(r, &got);
    Ok(())
}

pub fn xrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range(ctx, argv, r, false)
}

pub fn xrevrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range(ctx, argv, r, true)
}

pub fn xdel(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    // Every ID is checked before anything is deleted.
    let ids = argv[2..].iter().map(|a| parse_id(a, 0)).collect::<CmdResult<Vec<_>>>()?;
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        r.int(0);
        return Ok(());
    };
    let n = s.delete(&ids)?;
    s.commit()?;
    if n > 0 {
        ctx.ks().notify(class::STREAM, "xdel", ctx.db, key);
    }
    r.int(n as i64);
    Ok(())
}

pub fn xsetid(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    let id = parse_id(&argv[2], 0)?;
    let (mut added, mut maxdel) = (None, None);
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if is(&argv[i], "entriesadded") && more > 0 {
            let n = string2ll(&argv[i + 1]).ok_or(NOT_INT)?;
            if n < 0 {
                return Err(CmdError::new("ERR entries_added must be positive"));
            }
            added = Some(n as u64);
        } else if is(&argv[i], "maxdeletedid") && more > 0 {
            let m = parse_id(&argv[i + 1], 0)?;
            if id < m {
                return Err(CmdError::new(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            maxdel = Some(m);
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        return Err(CmdError::new("ERR no such key"));
    };
    if !s.is_empty() {
        let top = s.range(Id::MIN, Id::MAX, 1, true)?;
        if top.first().is_some_and(|(t, _)| id < *t) {
            return Err(CmdError::new(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if added.is_some_and(|a| s.len() > a) {
            return Err(CmdError::new(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.set_last(id, added, maxdel);
    s.commit()?;
    ctx.ks().notify(class::STREAM, "xsetid", ctx.db, key);
    r.ok();
    Ok(())
}
