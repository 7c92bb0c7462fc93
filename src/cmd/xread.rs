//! XREAD and XREADGROUP over keys on any shards, and XINFO. The reads of
//! each owner run there in one step (`coord::fan_out`); XREADGROUP's
//! writes (the pending entries, the group's counters) land with them.

use bytes::Bytes;

use super::args::is;
use super::keys::help_reply;
use super::streams::{entries_reply, id_reply, parse_id};
use super::{commands, subcommands, CommandSpec, Conn, Ctx, SubSpec};
use crate::coord;
use crate::coord::blocking::{self, Wait, XWait};
use crate::coord::xread::{read_group_key, read_key_after, From, KeyRead, Read};
use crate::error::{CmdError, CmdResult, NOT_INT, SYNTAX};
use crate::resp::parse::string2ll;
use crate::resp::Reply;
use crate::types::stream::{Id, Stream};
use crate::types::xgroup::Group;

/// The stream read commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "xread"      -4 [readonly blocking movablekeys]  0 0 0  Conn(xread)      stream "5.0.0" "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.";
    "xreadgroup" -7 [write blocking movablekeys]     0 0 0  Conn(xreadgroup) stream "5.0.0" "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.";
    "xinfo"      -2 []                               2 2 1  Shard(xinfo)     stream "5.0.0" "A container for stream introspection commands." subs XINFO_SUBS;
};

/// XINFO's subcommands.
#[rustfmt::skip]
const XINFO_SUBS: &[SubSpec] = subcommands! {
    "consumers" 4  [readonly]      "Returns a list of the consumers in a consumer group.";
    "groups"    3  [readonly]      "Returns a list of the consumer groups of a stream.";
    "stream"    -3 [readonly]      "Returns information about a stream.";
    "help"      2  [loading stale] "Returns helpful text about the different subcommands.";
};

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

/// XREAD's and XREADGROUP's arguments.
struct ReadArgs {
    count: u64,
    block: Option<u64>,
    group: Option<(Bytes, Bytes)>,
    noack: bool,
    /// (argument position of the key, key, where it starts).
    keys: Vec<(usize, Bytes, From)>,
}

fn parse_read(argv: &[Bytes], group_cmd: bool) -> CmdResult<ReadArgs> {
    let name = if group_cmd { "XREADGROUP" } else { "XREAD" };
    let (mut count, mut block, mut group, mut noack, mut streams) = (0u64, None, None, false, None);
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = &argv[i][..];
        if is(o, "block") && more > 0 {
            let ms = string2ll(&argv[i + 1]).ok_or_else(|| CmdError::new("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(CmdError::new("ERR timeout is negative"));
            }
            block = Some(ms as u64);
            i += 2;
        } else if is(o, "count") && more > 0 {
            count = string2ll(&argv[i + 1]).ok_or(NOT_INT)?.max(0) as u64;
            i += 2;
        } else if is(o, "streams") && more > 0 {
            streams = Some(i + 1);
            break;
        } else if is(o, "group") && more >= 2 {
            if !group_cmd {
                return Err(CmdError::new(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((argv[i + 1].clone(), argv[i + 2].clone()));
            i += 3;
        } else if is(o, "noack") {
            if !group_cmd {
                return Err(CmdError::new(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
            i += 1;
        } else {
            return Err(SYNTAX);
        }
    }
    let Some(at) = streams else {
        return Err(SYNTAX);
    };
    let n = argv.len() - at;
    if !n.is_multiple_of(2) {
        return Err(CmdError::new(format!(
            "ERR Unbalanced {name} list of streams: for each stream key an ID or '$' must be specified."
        )));
    }
    if group_cmd && group.is_none() {
        return Err(CmdError::new("ERR Missing GROUP option for XREADGROUP"));
    }
    let half = n / 2;
    let mut keys = Vec::with_capacity(half);
    for k in 0..half {
        let id = &argv[at + half + k][..];
        let from = match id {
            b"$" if group_cmd => {
                return Err(CmdError::new(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ))
            }
            b"$" => From::Last,
            b">" if !group_cmd => {
                return Err(CmdError::new(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ))
            }
            b">" => From::New,
            b"+" if !group_cmd => From::LastEntry,
            _ => From::After(parse_id(id, 0)?),
        };
        keys.push((at + k, argv[at + k].clone(), from));
    }
    Ok(ReadArgs {
        count,
        block,
        group,
        noack,
        keys,
    })
}

/// Writes the keys' reads as XREAD replies them: `[key, entries]` pairs
/// (a map in RESP3), or a null array when no key had anything.
fn reply_reads(r: &mut Reply, reads: &[(Bytes, Read)]) {
    if reads.is_empty() {
        r.null_array();
        return;
    }
    if r.resp3 {
        r.map(reads.len());
    } else {
        r.array(reads.len());
    }
    for (key, entries) in reads {
        if !r.resp3 {
            r.array(2);
        }
        r.bulk(key);
        r.array(entries.len());
        for (id, fields) in entries {
            r.array(2);
            id_reply(r, *id);
            match fields {
                Some(f) => r.bulk_array(f),
                None => r.null_array(),
            }
        }
    }
}

/// Reads every key once, on its owner: the keys with something to
/// reply, in command order, and each key's resolved "after" ID (`$` as the
/// stream's last ID now) for a wait.
async fn read_all(c: &Conn<'_>, a: &ReadArgs) -> CmdResult<(Vec<(Bytes, Read)>, Vec<(Bytes, Id)>)> {
    let db = c.db();
    let keys: Vec<(usize, Bytes)> = a.keys.iter().map(|(p, k, _)| (*p, k.clone())).collect();
    let plan: std::sync::Arc<Vec<(Bytes, From)>> = std::sync::Arc::new(a.keys.iter().map(|(_, k, f)| (k.clone(), *f)).collect());
    let (count, noack, group) = (a.count, a.noack, a.group.clone());
    let access = if group.is_some() {
        coord::Access::Write
    } else {
        coord::Access::Read
    };
    let parts = coord::fan_out(c.shard, db, &keys, access, move |st, ks| {
        // The i-th occurrence of a key here is its i-th in the command.
        let mut used = vec![false; plan.len()];
        let mut out = Vec::with_capacity(ks.len());
        for k in ks {
            let Some(at) = (0..plan.len()).find(|&i| !used[i] && plan[i].0 == *k) else {
                return Err(CmdError::new("ERR internal error: key not in the read"));
            };
            used[at] = true;
            let from = plan[at].1;
            out.push(match &group {
                Some((g, cn)) => (read_group_key(st, db, k, g, cn, from, count, noack)?, Id::MIN),
                None => read_key_after(st, db, k, from, count)?,
            });
        }
        Ok(out)
    })
    .await;
    let base = a.keys.first().map_or(0, |(p, _, _)| *p);
    let mut got: Vec<(KeyRead, Id)> = vec![(None, Id::MIN); a.keys.len()];
    for (pos, res) in parts {
        for (p, v) in pos.into_iter().zip(res?) {
            got[p - base] = v;
        }
    }
    let mut reads = Vec::new();
    let mut after = Vec::new();
    for ((_, k, _), (read, at)) in a.keys.iter().zip(got) {
        after.push((k.clone(), at));
        if let Some(v) = read {
            reads.push((k.clone(), v));
        }
    }
    Ok((reads, after))
}

/// Blocks for `a`'s keys when nothing was read and the command may block:
/// the first key served, as the reply's only key; None on timeout.
async fn wait_for(c: &mut Conn<'_>, a: &ReadArgs, after: Vec<(Bytes, Id)>) -> CmdResult<Option<(Bytes, Read)>> {
    let timeout = match a.block {
        // Inside EXEC or a script the read answers at once.
        Some(ms) if !c.client.in_exec && !c.client.in_script => (ms > 0).then(|| std::time::Duration::from_millis(ms)),
        _ => return Ok(None),
    };
    let wait = Wait::XRead(std::sync::Arc::new(XWait {
        after,
        count: a.count,
        group: a.group.clone().map(|(g, cn)| (g, cn, a.noack)),
    }));
    let keys: Vec<Bytes> = a.keys.iter().map(|(_, k, _)| k.clone()).collect();
    let got = blocking::block(c.shard, &c.client.info, c.db(), keys, wait, timeout).await?;
    Ok(got.map(|s| (s.key, s.entries)))
}

pub async fn xread(mut c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let a = parse_read(argv, false)?;
    let (mut reads, after) = read_all(&c, &a).await?;
    if reads.is_empty() {
        reads.extend(wait_for(&mut c, &a, after).await?);
    }
    reply_reads(r, &reads);
    Ok(())
}

pub async fn xreadgroup(mut c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let a = parse_read(argv, true)?;
    let (mut reads, after) = read_all(&c, &a).await?;
    // Only `>` reads wait: a history read always answers.
    if reads.is_empty() && a.keys.iter().all(|(_, _, f)| matches!(f, From::New)) {
        reads.extend(wait_for(&mut c, &a, after).await?);
    }
    reply_reads(r, &reads);
    Ok(())
}

pub fn xinfo(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let sub = &argv[1][..];
    if is(sub, "help") {
        help_reply(r, XINFO_HELP);
        return Ok(());
    }
    let key = &argv[2][..];
    let s = Stream::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)?.ok_or_else(|| CmdError::new("ERR no such key"))?;
    if is(sub, "groups") {
        let groups = s.groups()?;
        r.array(groups.len());
        for (name, g) in groups {
            r.map(6);
            r.bulk(b"name");
            r.bulk(&name);
            r.bulk(b"consumers");
            r.int(g.consumers as i64);
            r.bulk(b"pending");
            r.int(g.pending as i64);
            group_counters(r, &s, &g);
        }
        return Ok(());
    }
    if is(sub, "consumers") {
        let g = &argv[3][..];
        if s.group(g)?.is_none() {
            return Err(CmdError::new(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(key)
            )));
        }
        let list = s.consumers(g)?;
        r.array(list.len());
        for (name, con) in list {
            r.map(4);
            r.bulk(b"name");
            r.bulk(&name);
            r.bulk(b"pending");
            r.int(con.pending as i64);
            r.bulk(b"idle");
            r.int(ctx.now_ms.saturating_sub(con.seen_ms) as i64);
            r.bulk(b"inactive");
            if con.active_ms == 0 {
                r.int(-1);
            } else {
                r.int(ctx.now_ms.saturating_sub(con.active_ms) as i64);
            }
        }
        return Ok(());
    }
    // STREAM [FULL [COUNT n]]
    let wrong = || {
        CmdError::new(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
            String::from_utf8_lossy(sub)
        ))
    };
    let mut full = None;
    if argv.len() > 3 {
        if !is(&argv[3], "full") {
            return Err(wrong());
        }
        let mut count = 10;
        if argv.len() > 4 {
            if argv.len() != 6 || !is(&argv[4], "count") {
                return Err(wrong());
            }
            count = string2ll(&argv[5]).ok_or(NOT_INT)?.max(0) as u64;
        }
        full = Some(count);
    }
    if let Some(count) = full {
        return stream_full(&s, r, count);
    }
    let first = s.range(Id::MIN, Id::MAX, 1, false)?;
    let last = s.range(Id::MIN, Id::MAX, 1, true)?;
    r.map(10);
    stream_head(&s, r);
    r.bulk(b"groups");
    r.int(s.s.groups as i64);
    for (name, e) in [(&b"first-entry"[..], first.first()), (b"last-entry", last.first())] {
        r.bulk(name);
        match e {
            Some((id, fields)) => {
                r.array(2);
                id_reply(r, *id);
                r.bulk_array(fields);
            }
            None => r.null(),
        }
    }
    Ok(())
}

/// The head of XINFO STREAM, both forms.
fn stream_head(s: &Stream, r: &mut Reply) {
    r.bulk(b"length");
    r.int(s.len() as i64);
    r.bulk(b"radix-tree-keys");
    r.int(s.nodes() as i64);
    r.bulk(b"radix-tree-nodes");
    r.int(s.nodes() as i64 + 1);
    r.bulk(b"last-generated-id");
    id_reply(r, s.last_id());
    r.bulk(b"max-deleted-entry-id");
    id_reply(r, s.max_deleted());
    r.bulk(b"entries-added");
    r.int(s.s.added as i64);
    r.bulk(b"recorded-first-entry-id");
    id_reply(r, s.first_id());
}

/// XINFO STREAM FULL: the entries, and every group with its pending
/// entries and consumers, `count` of each list (0: all).
fn stream_full(s: &Stream, r: &mut Reply, count: u64) -> CmdResult {
    let entries = s.range(Id::MIN, Id::MAX, count, false)?;
    r.map(9);
    stream_head(s, r);
    r.bulk(b"entries");
    entries_reply(r, &entries);
    r.bulk(b"groups");
    let groups = s.groups()?;
    r.array(groups.len());
    for (name, g) in groups {
        r.map(7);
        r.bulk(b"name");
        r.bulk(&name);
        group_counters(r, s, &g);
        r.bulk(b"pel-count");
        r.int(g.pending as i64);
        let mut pel = Vec::new();
        s.group_pel(&name, Id::MIN, Id::MAX, false, |id, n| {
            pel.push((id, n));
            count == 0 || (pel.len() as u64) < count
        })?;
        r.bulk(b"pending");
        r.array(pel.len());
        for (id, n) in &pel {
            r.array(4);
            id_reply(r, *id);
            r.bulk(&n.consumer);
            r.int(n.delivery_ms as i64);
            r.int(n.deliveries as i64);
        }
        r.bulk(b"consumers");
        let consumers = s.consumers(&name)?;
        r.array(consumers.len());
        for (cname, con) in consumers {
            let mut ids = Vec::new();
            s.consumer_pel(&name, &cname, Id::MIN, Id::MAX, count, |id| {
                ids.push(id);
                true
            })?;
            r.map(5);
            r.bulk(b"name");
            r.bulk(&cname);
            r.bulk(b"seen-time");
            r.int(con.seen_ms as i64);
            r.bulk(b"active-time");
            r.int(if con.active_ms == 0 { -1 } else { con.active_ms as i64 });
            r.bulk(b"pel-count");
            r.int(con.pending as i64);
            r.bulk(b"pending");
            r.array(ids.len());
            for id in ids {
                let n = s.nack(&name, id)?;
                r.array(3);
                id_reply(r, id);
                r.int(n.as_ref().map_or(0, |n| n.delivery_ms as i64));
                r.int(n.as_ref().map_or(0, |n| n.deliveries as i64));
            }
        }
    }
    Ok(())
}

/// A group's `last-delivered-id`, `entries-read` and `lag` pairs (XINFO
/// GROUPS and STREAM FULL).
fn group_counters(r: &mut Reply, s: &Stream, g: &Group) {
    r.bulk(b"last-delivered-id");
    id_reply(r, g.last);
    r.bulk(b"entries-read");
    match g.entries_read {
        Some(n) => r.int(n as i64),
        None => r.null(),
    }
    r.bulk(b"lag");
    match s.lag(g) {
        Some(n) => r.int(n),
        None => r.null(),
    }
}
