//! Consumer group commands on one key (`types::xgroup` has the records):
//! XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, with Redis 7's replies and
//! error texts. XREADGROUP is in `cmd::xread`.

use bytes::Bytes;

use super::args::{is, Args};
use super::keys::help_reply;
use super::streams::{entries_reply, id_reply, parse_bound, parse_id, refs_word};
use super::{commands, subcommands, CommandSpec, Ctx, SubSpec};
use crate::error::{CmdError, CmdResult, NOT_INT, SYNTAX};
use crate::resp::parse::string2ll;
use crate::resp::Reply;
use crate::types::notify::class;
use crate::types::stream::{Id, Refs, Stream};
use crate::types::xgroup::{Consumer, Group, Nack};

/// The consumer group commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "xgroup"     -2 []                     2 2 1  Shard(xgroup)     stream "5.0.0" "A container for consumer groups commands." subs XGROUP_SUBS;
    "xack"       -4 [write fast]           1 1 1  Shard(xack)       stream "5.0.0" "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.";
    "xpending"   -3 [readonly]             1 1 1  Shard(xpending)   stream "5.0.0" "Returns the information and entries from a stream consumer group's pending entries list.";
    "xclaim"     -6 [write fast]           1 1 1  Shard(xclaim)     stream "5.0.0" "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.";
    "xautoclaim" -6 [write fast]           1 1 1  Shard(xautoclaim) stream "6.2.0" "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.";
    "xdelex"     -5 [write fast]           1 1 1  Shard(xdelex)     stream "8.2.0" "Deletes one or multiple entries from the stream.";
    "xackdel"    -6 [write fast]           1 1 1  Shard(xackdel)    stream "8.2.0" "Acknowledges and conditionally deletes one or multiple entries for a stream consumer group.";
};

/// XGROUP's subcommands.
#[rustfmt::skip]
const XGROUP_SUBS: &[SubSpec] = subcommands! {
    "create"         -5 [write denyoom] "Creates a consumer group.";
    "createconsumer" 5  [write denyoom] "Creates a consumer in a consumer group.";
    "delconsumer"    5  [write]         "Deletes a consumer from a consumer group.";
    "destroy"        4  [write]         "Destroys a consumer group.";
    "setid"          -5 [write]         "Sets the last-delivered ID of a consumer group.";
    "help"           2  [loading stale] "Returns helpful text about the different subcommands.";
};

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// NOGROUP as XGROUP's subcommands say it.
fn no_group(key: &[u8], g: &[u8]) -> CmdError {
    CmdError::new(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(g),
        String::from_utf8_lossy(key)
    ))
}

/// NOGROUP as XPENDING, XCLAIM, XAUTOCLAIM and XACK... say it.
pub(super) fn no_key_or_group(key: &[u8], g: &[u8]) -> CmdError {
    CmdError::new(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(g)
    ))
}

/// ENTRIESREAD's value: -1 (unknown) or more.
fn entries_read_arg(a: &[u8]) -> CmdResult<Option<u64>> {
    let n = string2ll(a).ok_or(NOT_INT)?;
    if n < -1 {
        return Err(CmdError::new("ERR value for ENTRIESREAD must be positive or -1"));
    }
    Ok((n >= 0).then_some(n as u64))
}

/// Finds consumer `c` of `g`, making it (with Redis's event) when missing;
/// `seen` refreshes its seen time.
pub(super) fn consumer_or_new(ctx: &Ctx, s: &mut Stream, g: &[u8], grp: &mut Group, c: &[u8]) -> CmdResult<Consumer> {
    let (con, created) = s.consumer_or_new(g, grp, c, ctx.now_ms)?;
    if created {
        ctx.ks().notify(class::STREAM, "xgroup-createconsumer", ctx.db, s.key);
    }
    Ok(con)
}

pub fn xgroup(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // A group's changes spoil no WATCH, as in Redis.
    ctx.ks().store.quietly(|| xgroup_quiet(ctx, argv, r))
}

fn xgroup_quiet(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = &argv[1][..];
    if is(sub, "help") {
        help_reply(r, XGROUP_HELP);
        return Ok(());
    }
    let (key, g) = (&argv[2][..], &argv[3][..]);
    let create = is(sub, "create");
    let (mut mkstream, mut entries_read) = (false, None);
    if create || is(sub, "setid") {
        let mut i = 5;
        while i < argv.len() {
            if create && is(&argv[i], "mkstream") {
                mkstream = true;
                i += 1;
            } else if is(&argv[i], "entriesread") && i + 1 < argv.len() {
                entries_read = Some(entries_read_arg(&argv[i + 1])?);
                i += 2;
            } else {
                return Err(CmdError::new(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
                    String::from_utf8_lossy(sub)
                )));
            }
        }
    }
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, create && mkstream)? else {
        return Err(CmdError::new(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ));
    };
    let ks = ctx.ks();
    if create || is(sub, "setid") {
        let id = match &argv[4][..] {
            b"$" => s.last_id(),
            a => parse_id(a, 0)?,
        };
        // Without ENTRIESREAD the counter is unknown (redis-server does
        // not estimate it here; XINFO's lag does).
        // Redis 8 caps a given counter at the entries ever added.
        let read = entries_read.flatten().map(|n| n.min(s.s.added));
        if create {
            if s.group(g)?.is_some() {
                return Err(CmdError::new("BUSYGROUP Consumer Group name already exists"));
            }
            s.create_group(g, id, read);
            s.commit()?;
            ks.notify(class::STREAM, "xgroup-create", ctx.db, key);
        } else {
            let mut grp = s.group(g)?.ok_or_else(|| no_group(key, g))?;
            grp.last = id;
            grp.entries_read = read;
            s.put_group(g, &grp);
            s.commit()?;
            ks.notify(class::STREAM, "xgroup-setid", ctx.db, key);
        }
        r.ok();
        return Ok(());
    }
    let mut grp = match s.group(g)? {
        Some(grp) => grp,
        None if is(sub, "destroy") => {
            r.int(0);
            return Ok(());
        }
        None => return Err(no_group(key, g)),
    };
    if is(sub, "destroy") {
        s.destroy_group(g);
        s.commit()?;
        ks.notify(class::STREAM, "xgroup-destroy", ctx.db, key);
        r.int(1);
    } else if is(sub, "createconsumer") {
        let c = &argv[4][..];
        if s.consumer(g, c)?.is_some() {
            r.int(0);
            return Ok(());
        }
        consumer_or_new(ctx, &mut s, g, &mut grp, c)?;
        s.put_group(g, &grp);
        s.commit()?;
        r.int(1);
    } else {
        // delconsumer
        let c = &argv[4][..];
        if s.consumer(g, c)?.is_none() {
            r.int(0);
            return Ok(());
        }
        let n = s.delete_consumer(g, &mut grp, c)?;
        s.put_group(g, &grp);
        s.commit()?;
        ks.notify(class::STREAM, "xgroup-delconsumer", ctx.db, key);
        r.int(n as i64);
    }
    Ok(())
}

pub fn xack(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // A group's changes spoil no WATCH, as in Redis.
    ctx.ks().store.quietly(|| xack_quiet(ctx, argv, r))
}

fn xack_quiet(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (key, g) = (&argv[1][..], &argv[2][..]);
    let ids = argv[3..].iter().map(|a| parse_id(a, 0)).collect::<CmdResult<Vec<_>>>()?;
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        r.int(0);
        return Ok(());
    };
    let Some(mut grp) = s.group(g)? else {
        r.int(0);
        return Ok(());
    };
    let mut acked = 0;
    let mut seen = ahash::AHashSet::new();
    let mut owners: Vec<(Vec<u8>, u64)> = Vec::new();
    for id in ids {
        if !seen.insert(id) {
            continue;
        }
        let Some(n) = s.nack(g, id)? else { continue };
        s.drop_nack(g, id, &n);
        match owners.iter_mut().find(|(c, _)| *c == n.consumer) {
            Some((_, k)) => *k += 1,
            None => owners.push((n.consumer.clone(), 1)),
        }
        acked += 1;
    }
    if acked > 0 {
        for (c, k) in owners {
            if let Some(mut con) = s.consumer(g, &c)? {
                con.pending = con.pending.saturating_sub(k);
                s.put_consumer(g, &c, &con);
            }
        }
        grp.pending = grp.pending.saturating_sub(acked);
        s.put_group(g, &grp);
        s.commit()?;
    }
    r.int(acked as i64);
    Ok(())
}

pub fn xpending(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (key, g) = (&argv[1][..], &argv[2][..]);
    if argv.len() != 3 && !(6..=9).contains(&argv.len()) {
        return Err(SYNTAX);
    }
    let summary = argv.len() == 3;
    let (mut minidle, mut from, mut to, mut count, mut consumer) = (0i64, Id::MIN, Id::MAX, 0u64, None);
    if !summary {
        let mut at = 3;
        if is(&argv[3], "idle") {
            minidle = string2ll(&argv[4]).ok_or(NOT_INT)?;
            if argv.len() < 8 {
                return Err(SYNTAX);
            }
            at += 2;
        }
        count = string2ll(&argv[at + 2]).ok_or(NOT_INT)?.max(0) as u64;
        from = parse_bound(&argv[at], 0, true)?;
        to = parse_bound(&argv[at + 1], u64::MAX, false)?;
        consumer = argv.get(at + 3).map(|c| &c[..]);
    }
    let s = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?;
    let grp = match &s {
        Some(s) => s.group(g)?,
        None => None,
    };
    let (Some(s), Some(grp)) = (s, grp) else {
        return Err(no_key_or_group(key, g));
    };
    if summary {
        if grp.pending == 0 {
            r.array(4);
            r.int(0);
            r.null();
            r.null();
            r.null_array();
            return Ok(());
        }
        let (mut first, mut last) = (None, None);
        s.group_pel(g, Id::MIN, Id::MAX, false, |id, _| {
            first = Some(id);
            false
        })?;
        s.group_pel(g, Id::MIN, Id::MAX, true, |id, _| {
            last = Some(id);
            false
        })?;
        let owners: Vec<(Vec<u8>, Consumer)> = s.consumers(g)?.into_iter().filter(|(_, c)| c.pending > 0).collect();
        r.array(4);
        r.int(grp.pending as i64);
        id_reply(r, first.unwrap_or_default());
        id_reply(r, last.unwrap_or_default());
        r.array(owners.len());
        for (name, c) in owners {
            r.array(2);
            r.bulk(&name);
            r.bulk(c.pending.to_string().as_bytes());
        }
        return Ok(());
    }
    let now = ctx.now_ms;
    let mut rows: Vec<(Id, Nack)> = Vec::new();
    let mut keep = |id: Id, n: Nack| {
        if count == 0 {
            return false;
        }
        let idle = now.saturating_sub(n.delivery_ms) as i64;
        if minidle == 0 || idle >= minidle {
            rows.push((id, n));
        }
        (rows.len() as u64) < count
    };
    match consumer {
        Some(c) => {
            if s.consumer(g, c)?.is_some() {
                let mut ids = Vec::new();
                s.consumer_pel(g, c, from, to, 0, |id| {
                    ids.push(id);
                    true
                })?;
                for id in ids {
                    let Some(n) = s.nack(g, id)? else { continue };
                    if !keep(id, n) {
                        break;
                    }
                }
            }
        }
        None => s.group_pel(g, from, to, false, keep)?,
    }
    r.array(rows.len());
    for (id, n) in rows {
        r.array(4);
        id_reply(r, id);
        r.bulk(&n.consumer);
        r.int(now.saturating_sub(n.delivery_ms) as i64);
        r.int(n.deliveries as i64);
    }
    Ok(())
}

/// The claiming consumer, looked up (or made) at the first claim and
/// seen now, as XCLAIM and XAUTOCLAIM do.
fn claimer<'c>(
    ctx: &Ctx,
    s: &mut Stream,
    g: &[u8],
    grp: &mut Group,
    c: &[u8],
    con: &'c mut Option<Consumer>,
) -> CmdResult<&'c mut Consumer> {
    if con.is_none() {
        let mut found = consumer_or_new(ctx, s, g, grp, c)?;
        found.seen_ms = ctx.now_ms;
        *con = Some(found);
    }
    con.as_mut().ok_or(crate::error::CORRUPT)
}

/// Moves pending entry `id` to consumer `to` (or just refreshes it there),
/// keeping the consumers' counts; the group's count does not change.
fn move_nack(s: &mut Stream, g: &[u8], id: Id, n: &mut Nack, to: &[u8], to_con: &mut Consumer) -> CmdResult {
    if n.consumer != to {
        if let Some(mut old) = s.consumer(g, &n.consumer)? {
            old.pending = old.pending.saturating_sub(1);
            s.put_consumer(g, &n.consumer.clone(), &old);
        }
        s.drop_nack(g, id, n);
        n.consumer = to.to_vec();
        to_con.pending += 1;
    }
    s.put_nack(g, id, n);
    Ok(())
}

pub fn xclaim(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // A group's changes spoil no WATCH, as in Redis.
    ctx.ks().store.quietly(|| xclaim_quiet(ctx, argv, r))
}

fn xclaim_quiet(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (key, g, c) = (&argv[1][..], &argv[2][..], &argv[3][..]);
    let s = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?;
    let grp = match &s {
        Some(s) => s.group(g)?,
        None => None,
    };
    let (Some(mut s), Some(mut grp)) = (s, grp) else {
        return Err(no_key_or_group(key, g));
    };
    let minidle = string2ll(&argv[4])
        .ok_or_else(|| CmdError::new("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0) as u64;
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match parse_id(&argv[j], 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = ctx.now_ms as i64;
    let (mut delivery, mut retry, mut force, mut justid, mut lastid) = (None, None, false, false, None);
    let mut args = Args::at(argv, j);
    while !args.is_empty() {
        let opt = args.bytes()?;
        let more = !args.is_empty();
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more {
            let v = string2ll(args.bytes()?).ok_or_else(|| CmdError::new("ERR Invalid IDLE option argument for XCLAIM"))?;
            delivery = Some(now - v);
        } else if is(opt, "time") && more {
            let v = string2ll(args.bytes()?).ok_or_else(|| CmdError::new("ERR Invalid TIME option argument for XCLAIM"))?;
            delivery = Some(v);
        } else if is(opt, "retrycount") && more {
            let v = string2ll(args.bytes()?).ok_or_else(|| CmdError::new("ERR Invalid RETRYCOUNT option argument for XCLAIM"))?;
            retry = Some(v.max(0) as u64);
        } else if is(opt, "lastid") && more {
            lastid = Some(parse_id(args.bytes()?, 0)?);
        } else {
            return Err(CmdError::new(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    let delivery = match delivery {
        Some(d) if d >= 0 && d <= now => d as u64,
        _ => ctx.now_ms,
    };
    if let Some(l) = lastid.filter(|&l| l > grp.last) {
        grp.last = l;
    }
    // The consumer is looked up (made if missing) at the first claim only.
    let mut con: Option<Consumer> = None;
    let mut claimed: Vec<(Id, Option<Vec<Vec<u8>>>)> = Vec::new();
    for id in ids {
        let mut n = match s.nack(g, id)? {
            Some(n) => n,
            None if force && s.get(id)?.is_some() => {
                grp.pending += 1;
                Nack {
                    delivery_ms: ctx.now_ms,
                    deliveries: 1,
                    consumer: Vec::new(),
                }
            }
            None => continue,
        };
        let fresh = n.consumer.is_empty();
        if !fresh && minidle > 0 && ctx.now_ms.saturating_sub(n.delivery_ms) < minidle {
            continue;
        }
        let entry = s.get(id)?.map(|(_, f)| f);
        if entry.is_none() {
            // The entry is gone: so is its pending entry (JUSTID or not).
            if !fresh {
                if let Some(mut old) = s.consumer(g, &n.consumer)? {
                    old.pending = old.pending.saturating_sub(1);
                    s.put_consumer(g, &n.consumer.clone(), &old);
                }
                s.drop_nack(g, id, &n);
            }
            grp.pending = grp.pending.saturating_sub(1);
            continue;
        }
        n.delivery_ms = delivery;
        match retry {
            Some(k) => n.deliveries = k,
            None if !justid => n.deliveries += 1,
            None => {}
        }
        let con = claimer(ctx, &mut s, g, &mut grp, c, &mut con)?;
        if fresh {
            n.consumer = c.to_vec();
            con.pending += 1;
            s.put_nack(g, id, &n);
        } else {
            move_nack(&mut s, g, id, &mut n, c, con)?;
        }
        con.active_ms = ctx.now_ms;
        claimed.push((id, entry.filter(|_| !justid)));
    }
    if let Some(con) = con {
        s.put_consumer(g, c, &con);
    }
    s.put_group(g, &grp);
    s.commit()?;
    r.array(claimed.len());
    for (id, entry) in claimed {
        match entry {
            None => id_reply(r, id),
            Some(fields) => {
                r.array(2);
                id_reply(r, id);
                r.bulk_array(&fields);
            }
        }
    }
    Ok(())
}

pub fn xautoclaim(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // A group's changes spoil no WATCH, as in Redis.
    ctx.ks().store.quietly(|| xautoclaim_quiet(ctx, argv, r))
}

fn xautoclaim_quiet(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (key, g, c) = (&argv[1][..], &argv[2][..], &argv[3][..]);
    let s = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?;
    let grp = match &s {
        Some(s) => s.group(g)?,
        None => None,
    };
    let minidle = string2ll(&argv[4])
        .ok_or_else(|| CmdError::new("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0) as u64;
    let start = parse_bound(&argv[5], 0, true)?;
    let (mut count, mut justid) = (100i64, false);
    let mut args = Args::at(argv, 6);
    while !args.is_empty() {
        let opt = args.bytes()?;
        if is(opt, "count") && !args.is_empty() {
            count = match string2ll(args.bytes()?) {
                Some(n) if (1..=i64::MAX / 10).contains(&n) => n,
                _ => return Err(CmdError::new("ERR COUNT must be > 0")),
            };
        } else if is(opt, "justid") {
            justid = true;
        } else {
            return Err(SYNTAX);
        }
    }
    let (Some(mut s), Some(mut grp)) = (s, grp) else {
        return Err(no_key_or_group(key, g));
    };
    let mut con: Option<Consumer> = None;
    // The candidates: up to count * 10 pending entries from `start`, and
    // the one after them (the cursor of the next call).
    let attempts = (count as u64).saturating_mul(10);
    let mut seen: Vec<(Id, Nack)> = Vec::new();
    let mut next = Id::MIN;
    s.group_pel(g, start, Id::MAX, false, |id, n| {
        if seen.len() as u64 >= attempts {
            next = id;
            return false;
        }
        seen.push((id, n));
        true
    })?;
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut left = count as u64;
    for (id, mut n) in seen.iter().cloned() {
        if left == 0 {
            next = id;
            break;
        }
        if minidle > 0 && ctx.now_ms.saturating_sub(n.delivery_ms) < minidle {
            continue;
        }
        let Some((_, fields)) = s.get(id)? else {
            if let Some(mut old) = s.consumer(g, &n.consumer)? {
                old.pending = old.pending.saturating_sub(1);
                s.put_consumer(g, &n.consumer.clone(), &old);
            }
            s.drop_nack(g, id, &n);
            grp.pending = grp.pending.saturating_sub(1);
            deleted.push(id);
            // A deleted entry counts against COUNT, as in Redis.
            left -= 1;
            continue;
        };
        n.delivery_ms = ctx.now_ms;
        if !justid {
            n.deliveries += 1;
        }
        let con = claimer(ctx, &mut s, g, &mut grp, c, &mut con)?;
        move_nack(&mut s, g, id, &mut n, c, con)?;
        con.active_ms = ctx.now_ms;
        claimed.push((id, fields));
        left -= 1;
    }
    if let Some(con) = con {
        s.put_consumer(g, c, &con);
    }
    s.put_group(g, &grp);
    s.commit()?;
    r.array(3);
    id_reply(r, next);
    if justid {
        r.array(claimed.len());
        for (id, _) in &claimed {
            id_reply(r, *id);
        }
    } else {
        entries_reply(r, &claimed);
    }
    r.array(deleted.len());
    for id in deleted {
        id_reply(r, id);
    }
    Ok(())
}

/// `[KEEPREF | DELREF | ACKED] IDS numids id...` from argument `from` on, in
/// any order, as Redis 8.2 parses them; every ID checked.
fn parse_ids_block(argv: &[Bytes], from: usize) -> CmdResult<(Refs, Vec<Id>)> {
    let (mut refs, mut ids) = (None, None);
    let mut i = from;
    while i < argv.len() {
        if let Some(r) = refs_word(&argv[i]).filter(|_| refs.is_none()) {
            refs = Some(r);
            i += 1;
        } else if is(&argv[i], "ids") && i + 1 < argv.len() && ids.is_none() {
            let n = string2ll(&argv[i + 1])
                .filter(|&n| n >= 1)
                .ok_or_else(|| CmdError::new("ERR Number of IDs must be a positive integer"))?;
            let start = i + 2;
            if n as u64 > (argv.len() - start) as u64 {
                return Err(CmdError::new("ERR The `numids` parameter must match the number of arguments"));
            }
            ids = Some(
                argv[start..start + n as usize]
                    .iter()
                    .map(|a| parse_id(a, 0))
                    .collect::<CmdResult<Vec<_>>>()?,
            );
            i = start + n as usize;
        } else {
            return Err(SYNTAX);
        }
    }
    let ids = ids.ok_or_else(|| CmdError::new("ERR IDS option is required"))?;
    Ok((refs.unwrap_or_default(), ids))
}

/// The codes of XDELEX and XACKDEL.
const NO_ID: i64 = -1;
const DELETED: i64 = 1;
const STILL_REFERENCED: i64 = 2;

fn codes(r: &mut Reply, codes: &[i64]) {
    r.array(codes.len());
    for c in codes {
        r.int(*c);
    }
}

/// Deletes entry `id` as `refs` says, once it is acknowledged where the
/// caller wanted: DELETED, STILL_REFERENCED, or NO_ID when it is not in
/// the stream.
fn delete_with(s: &mut Stream, id: Id, refs: Refs, groups: &mut [(Vec<u8>, Group)]) -> CmdResult<i64> {
    match refs {
        Refs::Acked if s.referenced(id, groups)? => return Ok(STILL_REFERENCED),
        Refs::Delete => {
            s.drop_refs(id, groups)?;
        }
        _ => {}
    }
    Ok(if s.delete(&[id])? > 0 { DELETED } else { NO_ID })
}

pub fn xdelex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    let (refs, ids) = parse_ids_block(argv, 2)?;
    let Some(mut s) = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        codes(r, &vec![NO_ID; ids.len()]);
        return Ok(());
    };
    let mut groups = if refs == Refs::Keep { Vec::new() } else { s.groups()? };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.push(delete_with(&mut s, id, refs, &mut groups)?);
    }
    s.commit()?;
    if out.contains(&DELETED) {
        ctx.ks().notify(class::STREAM, "xdel", ctx.db, key);
    }
    codes(r, &out);
    Ok(())
}

pub fn xackdel(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (key, g) = (&argv[1][..], &argv[2][..]);
    let (refs, ids) = parse_ids_block(argv, 3)?;
    let s = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?;
    let grp = match &s {
        Some(s) => s.group(g)?,
        None => None,
    };
    let (Some(mut s), Some(mut grp)) = (s, grp) else {
        codes(r, &vec![NO_ID; ids.len()]);
        return Ok(());
    };
    let mut others = if refs == Refs::Keep { Vec::new() } else { s.groups()? };
    let mut out = Vec::with_capacity(ids.len());
    let mut deleted = false;
    for id in ids {
        let Some(n) = s.nack(g, id)? else {
            out.push(NO_ID);
            continue;
        };
        s.forget_nack(g, &mut grp, id, &n)?;
        // The other groups see this one's acknowledgement.
        if let Some(o) = others.iter_mut().find(|(name, _)| name[..] == *g) {
            o.1 = grp.clone();
        }
        let code = delete_with(&mut s, id, refs, &mut others)?;
        deleted |= code == DELETED;
        out.push(if code == NO_ID { DELETED } else { code });
    }
    if let Some(o) = others.iter().find(|(name, _)| name[..] == *g) {
        grp = o.1.clone();
    }
    s.put_group(g, &grp);
    s.commit()?;
    if deleted {
        ctx.ks().notify(class::STREAM, "xdel", ctx.db, key);
    }
    codes(r, &out);
    Ok(())
}
