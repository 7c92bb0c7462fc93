//! List commands. The one-key ones run on the key's shard (`types::list`
//! has the encoding); LMOVE, RPOPLPUSH and LMPOP, which may name lists on
//! several shards, and the blocking forms run in `coord::list` and
//! `coord::blocking`.

use bytes::Bytes;

use super::args::{is, parse_i64, Args};
use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::coord::blocking;
use crate::coord::list as across;
use crate::coord::serve::key_ready;
use crate::error::{CmdError, CmdResult, NO_SUCH_KEY, SYNTAX};
use crate::resp::Reply;
use crate::types::list::{position, span, End, List};

/// The list commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "lpush"      -3 [write denyoom fast]           1 1 1  Shard(lpush)      list "1.0.0" "Prepends one or more elements to a list. Creates the key if it doesn't exist.";
    "rpush"      -3 [write denyoom fast]           1 1 1  Shard(rpush)      list "1.0.0" "Appends one or more elements to a list. Creates the key if it doesn't exist.";
    "lpushx"     -3 [write denyoom fast]           1 1 1  Shard(lpushx)     list "2.2.0" "Prepends one or more elements to a list only when the list exists.";
    "rpushx"     -3 [write denyoom fast]           1 1 1  Shard(rpushx)     list "2.2.0" "Appends an element to a list only when the list exists.";
    "lpop"       -2 [write fast]                   1 1 1  Shard(lpop)       list "1.0.0" "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.";
    "rpop"       -2 [write fast]                   1 1 1  Shard(rpop)       list "1.0.0" "Returns and removes the last elements of the list. Deletes the list if the last element was popped.";
    "llen"       2  [readonly fast]                1 1 1  Shard(llen)       list "1.0.0" "Returns the length of a list.";
    "lindex"     3  [readonly]                     1 1 1  Shard(lindex)     list "1.0.0" "Returns an element from a list by its index.";
    "lset"       4  [write denyoom]                1 1 1  Shard(lset)       list "1.0.0" "Sets the value of an element in a list by its index.";
    "lrange"     4  [readonly]                     1 1 1  Shard(lrange)     list "1.0.0" "Returns a range of elements from a list.";
    "ltrim"      4  [write]                        1 1 1  Shard(ltrim)      list "1.0.0" "Removes elements from both ends a list. Deletes the list if all elements were trimmed.";
    "lrem"       4  [write]                        1 1 1  Shard(lrem)       list "1.0.0" "Removes elements from a list. Deletes the list if the last element was removed.";
    "linsert"    5  [write denyoom]                1 1 1  Shard(linsert)    list "2.2.0" "Inserts an element before or after another element in a list.";
    "lpos"       -3 [readonly]                     1 1 1  Shard(lpos)       list "6.0.6" "Returns the index of matching elements in a list.";
    "lmove"      5  [write denyoom]                1 2 1  Conn(lmove)       list "6.2.0" "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.";
    "rpoplpush"  3  [write denyoom]                1 2 1  Conn(rpoplpush)   list "1.2.0" "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.";
    "lmpop"      -4 [write movablekeys]            0 0 0  Conn(lmpop)       list "7.0.0" "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.";
    "blpop"      -3 [write noscript blocking]      1 -2 1 Conn(blpop)       list "2.0.0" "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.";
    "brpop"      -3 [write noscript blocking]      1 -2 1 Conn(brpop)       list "2.0.0" "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.";
    "blmove"     6  [write denyoom noscript blocking] 1 2 1  Conn(blmove)      list "6.2.0" "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.";
    "brpoplpush" 4  [write denyoom noscript blocking] 1 2 1  Conn(brpoplpush)  list "2.2.0" "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.";
    "blmpop"     -5 [write blocking movablekeys]   0 0 0  Conn(blmpop)      list "7.0.0" "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.";
};

/// `getPositiveLongFromObjectOrReply`'s refusal of a negative count.
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

/// `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`'s refusal of i64::MIN.
const NOT_IN_LONG_RANGE: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

fn open<'k>(ctx: &'k Ctx, key: &'k [u8], create: bool) -> CmdResult<Option<List<'k>>> {
    List::open(ctx.ks(), ctx.db, key, ctx.now_ms, create)
}

/// A pushed key wakes the clients blocked on it once this command is done.
fn pushed(ctx: &Ctx, key: &[u8]) {
    key_ready(ctx.shard, ctx.db, key);
}

fn push(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, end: End, only_existing: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, elements) = (args.key()?, args.rest());
    let Some(mut l) = open(ctx, key, !only_existing)? else {
        r.int(0);
        return Ok(());
    };
    for e in elements {
        l.push(end, e)?;
    }
    let len = l.len();
    l.commit_with(&[end.push_event()])?;
    pushed(ctx, key);
    r.int(len as i64);
    Ok(())
}

pub fn lpush(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    push(ctx, argv, r, End::Left, false)
}

pub fn rpush(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    push(ctx, argv, r, End::Right, false)
}

pub fn lpushx(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    push(ctx, argv, r, End::Left, true)
}

pub fn rpushx(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    push(ctx, argv, r, End::Right, true)
}

fn pop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, end: End) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    if args.left() > 1 {
        return Err(CmdError::new(format!(
            "ERR wrong number of arguments for '{}' command",
            if end == End::Left { "lpop" } else { "rpop" }
        )));
    }
    let count = match args.peek() {
        None => None,
        // getPositiveLongFromObjectOrReply: one error for a negative
        // number and for a non-number.
        Some(_) => Some(non_negative(args.bytes()?, NOT_POSITIVE)?),
    };
    let Some(mut l) = open(ctx, key, false)? else {
        match count {
            Some(_) => r.null_array(),
            None => r.null(),
        }
        return Ok(());
    };
    let popped = match count {
        None => match l.pop(end)? {
            Some(v) => {
                r.bulk(&v);
                true
            }
            None => {
                r.null();
                false
            }
        },
        Some(n) => {
            let got = l.pop_many(end, n)?;
            r.bulk_array(&got);
            !got.is_empty()
        }
    };
    let events = [end.pop_event()];
    l.commit_with(if popped { &events } else { &[] })?;
    Ok(())
}

pub fn lpop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    pop(ctx, argv, r, End::Left)
}

pub fn rpop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    pop(ctx, argv, r, End::Right)
}

pub fn llen(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = Args::new(argv).key()?;
    r.int(open(ctx, key, false)?.map_or(0, |l| l.len() as i64));
    Ok(())
}

pub fn lindex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    // Redis looks the key up before it reads the index.
    let Some(l) = open(ctx, key, false)? else {
        r.null();
        return Ok(());
    };
    match position(args.int()?, l.len()) {
        Some(i) => match l.get(i)? {
            Some(v) => r.bulk(&v),
            None => r.null(),
        },
        None => r.null(),
    }
    Ok(())
}

pub fn lset(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let Some(mut l) = open(ctx, key, false)? else {
        return Err(NO_SUCH_KEY);
    };
    let (index, v) = (args.int()?, args.bytes()?);
    let ok = match position(index, l.len()) {
        Some(i) => l.set(i, v)?,
        None => false,
    };
    if !ok {
        return Err(CmdError::new("ERR index out of range"));
    }
    l.commit_with(&["lset"])?;
    r.ok();
    Ok(())
}

pub fn lrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, start, stop) = (args.key()?, args.int()?, args.int()?);
    let got = match open(ctx, key, false)? {
        Some(l) => match span(start, stop, l.len()) {
            Some((from, to)) => l.range(from, to)?,
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    r.bulk_array(&got);
    Ok(())
}

pub fn ltrim(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, start, stop) = (args.key()?, args.int()?, args.int()?);
    if let Some(mut l) = open(ctx, key, false)? {
        let keep = span(start, stop, l.len());
        if keep != Some((0, l.len().saturating_sub(1))) {
            l.trim(keep)?;
        }
        // As Redis: `ltrim` even when nothing was cut.
        l.commit_with(&["ltrim"])?;
    }
    r.ok();
    Ok(())
}

pub fn lrem(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, count, element) = (args.key()?, args.int()?, args.bytes()?);
    if count == i64::MIN {
        return Err(CmdError::new(NOT_IN_LONG_RANGE));
    }
    let Some(mut l) = open(ctx, key, false)? else {
        r.int(0);
        return Ok(());
    };
    let want = count.unsigned_abs();
    let mut gone = Vec::new();
    let mut visit = |i: u64, v: &[u8]| {
        if v == element {
            gone.push(i);
        }
        want == 0 || (gone.len() as u64) < want
    };
    if count < 0 {
        l.walk_back(&mut visit)?;
        gone.reverse();
    } else {
        l.walk(0, u64::MAX, &mut visit)?;
    }
    l.remove(&gone)?;
    l.commit_with(if gone.is_empty() { &[] } else { &["lrem"] })?;
    r.int(gone.len() as i64);
    Ok(())
}

pub fn linsert(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let after = match args.word(&["before", "after"]) {
        Some(w) => w == 1,
        None => return Err(SYNTAX),
    };
    let (pivot, element) = (args.bytes()?, args.bytes()?);
    let Some(mut l) = open(ctx, key, false)? else {
        r.int(0);
        return Ok(());
    };
    let mut found = None;
    l.walk(0, u64::MAX, |i, v| {
        if v == pivot {
            found = Some(i);
        }
        found.is_none()
    })?;
    let Some(at) = found else {
        r.int(-1);
        return Ok(());
    };
    l.insert(at + after as u64, element)?;
    let len = l.len();
    l.commit_with(&["linsert"])?;
    pushed(ctx, key);
    r.int(len as i64);
    Ok(())
}

pub fn lpos(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, element) = (args.key()?, args.bytes()?);
    let (mut rank, mut count, mut maxlen) = (1i64, None::<u64>, 0u64);
    while !args.is_empty() {
        if args.option("rank", 1) {
            rank = args.int()?;
            if rank == i64::MIN {
                return Err(CmdError::new(NOT_IN_LONG_RANGE));
            }
            if rank == 0 {
                return Err(CmdError::new(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if args.option("count", 1) {
            count = Some(non_negative(args.bytes()?, "ERR COUNT can't be negative")?);
        } else if args.option("maxlen", 1) {
            maxlen = non_negative(args.bytes()?, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(SYNTAX);
        }
    }
    let Some(l) = open(ctx, key, false)? else {
        match count {
            Some(_) => r.array(0),
            None => r.null(),
        }
        return Ok(());
    };
    let skip = rank.unsigned_abs() - 1;
    let (mut seen, mut matches, mut found) = (0u64, 0u64, Vec::new());
    let mut visit = |i: u64, v: &[u8]| {
        if maxlen != 0 && seen >= maxlen {
            return false;
        }
        seen += 1;
        if v == element {
            matches += 1;
            if matches > skip {
                found.push(i);
                return count.is_some_and(|c| c == 0 || (found.len() as u64) < c);
            }
        }
        true
    };
    if rank < 0 {
        l.walk_back(&mut visit)?;
    } else {
        l.walk(0, u64::MAX, &mut visit)?;
    }
    match count {
        Some(_) => {
            r.array(found.len());
            for i in found {
                r.int(i as i64);
            }
        }
        None => match found.first() {
            Some(&i) => r.int(i as i64),
            None => r.null(),
        },
    }
    Ok(())
}

/// `getPositiveLongFromObjectOrReply` with a message: LPOS's COUNT and
/// MAXLEN give it both for a negative number and for a non-number.
fn non_negative(a: &[u8], msg: &'static str) -> CmdResult<u64> {
    parse_i64(a).filter(|n| *n >= 0).map(|n| n as u64).ok_or_else(|| CmdError::new(msg))
}

/// `LEFT` or `RIGHT`, else a syntax error.
fn end_of(a: &[u8]) -> CmdResult<End> {
    if is(a, "left") {
        Ok(End::Left)
    } else if is(a, "right") {
        Ok(End::Right)
    } else {
        Err(SYNTAX)
    }
}

pub async fn lmove(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?.clone(), args.arg()?.clone());
    let (from, to) = (end_of(args.bytes()?)?, end_of(args.bytes()?)?);
    reply_moved(r, across::lmove(c.shard, c.db(), src, dst, from, to).await?);
    Ok(())
}

pub async fn rpoplpush(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?.clone(), args.arg()?.clone());
    reply_moved(r, across::lmove(c.shard, c.db(), src, dst, End::Right, End::Left).await?);
    Ok(())
}

fn reply_moved(r: &mut Reply, moved: Option<Vec<u8>>) {
    match moved {
        Some(v) => r.bulk(&v),
        None => r.null(),
    }
}

/// LMPOP's and BLMPOP's `numkeys key... LEFT|RIGHT [COUNT n]`, and
/// ZMPOP's and BZMPOP's with MIN|MAX (`side` reads that word).
pub(super) fn mpop_args<T>(argv: &[Bytes], numkeys_at: usize, side: fn(&[u8]) -> CmdResult<T>) -> CmdResult<(Vec<Bytes>, T, u64)> {
    let mut args = Args::at(argv, numkeys_at);
    let numkeys = parse_i64(args.bytes()?)
        .filter(|n| *n > 0)
        .ok_or_else(|| CmdError::new("ERR numkeys should be greater than 0"))?;
    if numkeys as u64 >= args.left() as u64 {
        return Err(SYNTAX);
    }
    let keys = args.rest();
    let (keys, rest) = keys.split_at(numkeys as usize);
    let mut args = Args::at(rest, 0);
    let end = side(args.bytes()?)?;
    let mut count = None;
    while !args.is_empty() {
        if count.is_none() && args.option("count", 1) {
            let n = parse_i64(args.bytes()?)
                .filter(|n| *n > 0)
                .ok_or_else(|| CmdError::new("ERR count should be greater than 0"))?;
            count = Some(n as u64);
        } else {
            return Err(SYNTAX);
        }
    }
    Ok((keys.to_vec(), end, count.unwrap_or(1)))
}

pub async fn lmpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (keys, end, count) = mpop_args(argv, 1, end_of)?;
    match across::mpop(c.shard, c.db(), &keys, end, count).await? {
        Some((key, got)) => reply_key_elements(r, &key, &got),
        None => r.null_array(),
    }
    Ok(())
}

fn reply_key_elements(r: &mut Reply, key: &[u8], got: &[Vec<u8>]) {
    r.array(2);
    r.bulk(key);
    r.bulk_array(got);
}

/// The timeout of a blocking command, in seconds as Redis reads it; inside
/// EXEC, after checking it, none: the command does not block.
pub(super) fn timeout_of(c: &Conn<'_>, a: &[u8]) -> CmdResult<Option<std::time::Duration>> {
    let t = blocking::parse_timeout(a)?;
    Ok(if c.client.in_exec { blocking::NO_BLOCK } else { t })
}

async fn bpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, end: End) -> CmdResult {
    let all = Args::new(argv).rest();
    let (keys, timeout) = all.split_at(all.len().saturating_sub(1));
    let timeout = timeout_of(&c, timeout.first().ok_or(SYNTAX)?)?;
    match blocking::pop(c.shard, &c.client.info, c.db(), keys.to_vec(), end, None, timeout).await? {
        Some((key, got)) => {
            r.array(2);
            r.bulk(&key);
            r.bulk(got.first().map_or(&[][..], |v| &v[..]));
        }
        None => r.null_array(),
    }
    Ok(())
}

pub async fn blpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bpop(c, argv, r, End::Left).await
}

pub async fn brpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bpop(c, argv, r, End::Right).await
}

pub async fn blmpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (keys, end, count) = mpop_args(argv, 2, end_of)?;
    let timeout = timeout_of(&c, Args::new(argv).bytes()?)?;
    match blocking::pop(c.shard, &c.client.info, c.db(), keys, end, Some(count), timeout).await? {
        Some((key, got)) => reply_key_elements(r, &key, &got),
        None => r.null_array(),
    }
    Ok(())
}

pub async fn blmove(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?.clone(), args.arg()?.clone());
    let (from, to) = (end_of(args.bytes()?)?, end_of(args.bytes()?)?);
    let timeout = timeout_of(&c, args.bytes()?)?;
    let moved = blocking::lmove(c.shard, &c.client.info, c.db(), (src, dst), (from, to), timeout).await?;
    reply_blocked_move(r, moved, c.client.in_exec);
    Ok(())
}

pub async fn brpoplpush(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.arg()?.clone(), args.arg()?.clone());
    let timeout = timeout_of(&c, args.bytes()?)?;
    let moved = blocking::lmove(c.shard, &c.client.info, c.db(), (src, dst), (End::Right, End::Left), timeout).await?;
    reply_blocked_move(r, moved, c.client.in_exec);
    Ok(())
}

/// A blocking move that times out replies a null array (`*-1` in RESP2),
/// as every timed-out blocked list client does in Redis
/// (`replyToBlockedClientTimedOut`), though LMOVE's miss is a null bulk.
/// Inside EXEC it never blocked, and answers LMOVE's null bulk.
fn reply_blocked_move(r: &mut Reply, moved: Option<Vec<u8>>, in_exec: bool) {
    match moved {
        Some(v) => r.bulk(&v),
        None if in_exec => r.null(),
        None => r.null_array(),
    }
}
