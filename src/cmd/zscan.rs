//! ZSCAN and ZRANDMEMBER: the sorted-set members in member order (the
//! member records), with their scores.

use bytes::Bytes;

use super::args::{is, parse_i64, scan_cursor, Args, ScanKind, ScanOpts};
use super::Ctx;
use super::{commands, CommandSpec};
use crate::error::{CmdError, CmdResult, CORRUPT, NOT_INT, SYNTAX};
use crate::resp::{format_double, Reply};
use crate::storage::keys;
use crate::types::coll::{self, Rng, View};
use crate::types::zset;
use crate::types::KeyType;

/// The commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "zscan"       -3 [readonly] 1 1 1 Shard(zscan)       sorted_set "2.8.0" "Iterates over members and scores of a sorted set.";
    "zrandmember" -2 [readonly] 1 1 1 Shard(zrandmember) sorted_set "6.2.0" "Returns one or more random members from a sorted set.";
};

/// Visits member records (member, score) in member order after `after`
/// until `f` returns false.
fn members(ctx: &Ctx, key: &[u8], v: &View, after: Option<&[u8]>, mut f: impl FnMut(&[u8], f64) -> bool) -> CmdResult {
    let (db, ver) = (ctx.db, v.c.version);
    let lo = keys::sub_key(db, key, ver, &[zset::MEMBER]);
    let hi = keys::sub_key(db, key, ver, &[zset::MEMBER + 1]);
    let from = match after {
        Some(m) => {
            let mut k = keys::sub_key(db, key, ver, &zset::member_sub(m));
            k.push(0);
            k
        }
        None => lo.clone(),
    };
    let mut bad = false;
    ctx.ks().store.scan(&from, &hi, |k, val| match <[u8; 8]>::try_from(val) {
        Ok(b) => f(&k[lo.len()..], f64::from_bits(u64::from_be_bytes(b))),
        Err(_) => {
            bad = true;
            false
        }
    })?;
    if bad {
        return Err(CORRUPT);
    }
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]. A set Redis would keep
/// as a listpack comes back whole with cursor 0, in score order as Redis's
/// listpack; a bigger one by member order, resumed as HSCAN is (see
/// `hashes::scan_collection`).
pub fn zscan(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let cursor = scan_cursor(args.arg()?)?;
    let a = ScanOpts::parse(&mut args, ScanKind::Members)?;
    let Some(v) = coll::view(ctx.ks(), ctx.db, key, KeyType::ZSet, ctx.now_ms)? else {
        r.array(2);
        r.bulk(b"0");
        r.array(0);
        return Ok(());
    };
    let mut found: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut next = 0u64;
    if v.c.size <= ctx.shard.global.config.encodings().zset_entries {
        zset::walk(ctx.ks(), ctx.db, key, &v.c, None, false, |s, m| {
            found.push((m.to_vec(), s));
            true
        })?;
    } else {
        let cursors = &ctx.shard.scan_cursors;
        let resume = cursors.borrow().get(&(ctx.db, key.to_vec(), v.c.version, cursor)).cloned();
        let mut skip = if resume.is_some() { 0 } else { cursor };
        let mut visited = 0u64;
        members(ctx, key, &v, resume.as_deref(), |m, s| {
            if skip > 0 {
                skip -= 1;
                return true;
            }
            visited += 1;
            found.push((m.to_vec(), s));
            found.len() < a.count
        })?;
        if found.len() >= a.count {
            next = cursor + visited;
            let mut map = cursors.borrow_mut();
            if map.len() >= 4096 {
                map.clear();
            }
            if let Some((last, _)) = found.last() {
                map.insert((ctx.db, key.to_vec(), v.c.version, next), last.clone());
            }
        }
    }
    let keep: Vec<&(Vec<u8>, f64)> = found
        .iter()
        .filter(|(m, _)| a.pattern.as_ref().is_none_or(|p| crate::glob::matches(p, m, false)))
        .collect();
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    // Scores as bulk strings, in RESP3 too, as Redis's scan replies.
    r.array(keep.len() * 2);
    for (m, s) in keep {
        r.bulk(m);
        r.bulk(format_double(*s).as_bytes());
    }
    Ok(())
}

/// Up to this many members ZRANDMEMBER reads whole; a bigger set is
/// sampled by seeks into its member records.
const SAMPLE_ALL_UP_TO: u64 = 1024;

/// ZRANDMEMBER key [count [WITHSCORES]], with HRANDFIELD's count rules.
pub fn zrandmember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let (count, withscores) = match args.left() {
        0 => (None, false),
        _ => {
            let c = parse_i64(args.bytes()?).ok_or(NOT_INT)?;
            let w = match args.left() {
                0 => false,
                1 if is(args.bytes()?, "withscores") => true,
                _ => return Err(SYNTAX),
            };
            if c == i64::MIN {
                return Err(CmdError::new(super::hashes::RANDOM_COUNT_RANGE));
            }
            if w && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&c) {
                return Err(CmdError::new("ERR value is out of range"));
            }
            (Some(c), w)
        }
    };
    let v = coll::view(ctx.ks(), ctx.db, key, KeyType::ZSet, ctx.now_ms)?;
    let picks = match &v {
        None => Vec::new(),
        Some(v) => pick(ctx, key, v, count.unwrap_or(1))?,
    };
    let Some(_) = count else {
        match picks.first() {
            Some((m, _)) => r.bulk(m),
            None => r.null(),
        }
        return Ok(());
    };
    if withscores && r.resp3 {
        r.array(picks.len());
        for (m, s) in &picks {
            r.array(2);
            r.bulk(m);
            r.double(*s);
        }
    } else {
        r.array(if withscores { picks.len() * 2 } else { picks.len() });
        for (m, s) in &picks {
            r.bulk(m);
            if withscores {
                r.double(*s);
            }
        }
    }
    Ok(())
}

/// `count` members as Redis picks them: distinct for a positive count
/// (all when it is at least the size), with repeats for a negative one.
fn pick(ctx: &Ctx, key: &[u8], v: &View, count: i64) -> CmdResult<Vec<(Vec<u8>, f64)>> {
    let mut rng = Rng::seeded();
    if v.c.size <= SAMPLE_ALL_UP_TO || (count > 0 && count as u64 >= v.c.size) {
        let mut all = Vec::with_capacity(v.c.size as usize);
        members(ctx, key, v, None, |m, s| {
            all.push((m.to_vec(), s));
            true
        })?;
        return Ok(rng.sample(all.len(), count).into_iter().map(|i| all[i].clone()).collect());
    }
    // A big set: each pick seeks to a random member name between the first
    // and the last, as `coll::random_members` does for the other types;
    // a positive count takes consecutive members from one point.
    let (mut first, mut last) = (None, None);
    members(ctx, key, v, None, |m, _| {
        first = Some(m.to_vec());
        false
    })?;
    let lo = keys::sub_key(ctx.db, key, v.c.version, &[zset::MEMBER]);
    let hi = keys::sub_key(ctx.db, key, v.c.version, &[zset::MEMBER + 1]);
    if let Some(k) = ctx.ks().store.last_key(&lo, &hi)? {
        last = Some(k[lo.len()..].to_vec());
    }
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Vec::new());
    };
    let point = |rng: &mut Rng| -> Vec<u8> {
        let common = first.iter().zip(&last).take_while(|(a, b)| a == b).count();
        let mut p = first[..common].to_vec();
        let (a, b) = (first.get(common).copied().unwrap_or(0), last.get(common).copied().unwrap_or(255));
        p.push(a + (rng.next_u64() % (b.saturating_sub(a) as u64 + 1)) as u8);
        for _ in 0..4 {
            p.push((rng.next_u64() & 0xFF) as u8);
        }
        p
    };
    // Members from just before `start` on, wrapping to the first, at most `n`.
    let take = |start: &[u8], n: usize| -> CmdResult<Vec<(Vec<u8>, f64)>> {
        let mut out = Vec::with_capacity(n);
        members(ctx, key, v, Some(start), |m, s| {
            out.push((m.to_vec(), s));
            out.len() < n
        })?;
        if out.len() < n {
            members(ctx, key, v, None, |m, s| {
                if m > start {
                    return false;
                }
                out.push((m.to_vec(), s));
                out.len() < n
            })?;
        }
        Ok(out)
    };
    if count < 0 {
        let mut out = Vec::new();
        for _ in 0..count.unsigned_abs() {
            let p = point(&mut rng);
            out.extend(take(&p, 1)?);
        }
        return Ok(out);
    }
    take(&point(&mut rng), count as usize)
}
