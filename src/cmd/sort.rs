//! SORT and SORT_RO over lists, sets and sorted sets, as Redis's
//! `sortCommandGeneric`: BY (a pattern with `*`, `->field` for a hash
//! field, or a constant for no sorting), LIMIT, GET (`#`, patterns, hash
//! fields), ASC/DESC, ALPHA, STORE. The source is read on its owner; the
//! keys BY and GET name are read on theirs (one message per shard); STORE
//! writes the list on the destination's owner in one batch.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use bytes::Bytes;

use super::args::{is, parse_i64};
use super::{commands, CommandSpec, Conn};
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult, NOT_INT, SYNTAX, WRONGTYPE};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::bigstr;
use crate::types::coll;
use crate::types::keyspace::Keyspace;
use crate::types::list::{End, List};
use crate::types::notify::class;
use crate::types::zset;
use crate::types::KeyType;

/// The sort commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "sort"    -2 [write denyoom movablekeys] 1 1 1 Conn(sort)    generic "1.0.0" "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.";
    "sort_ro" -2 [readonly movablekeys]      1 1 1 Conn(sort_ro) generic "7.0.0" "Returns the sorted elements of a list, a set, or a sorted set.";
};

/// What SORT was asked.
struct Request {
    desc: bool,
    alpha: bool,
    start: i64,
    count: i64,
    store: Option<Bytes>,
    by: Option<Bytes>,
    dontsort: bool,
    gets: Vec<Bytes>,
}

/// Bytes up to the first NUL: what C's string functions see.
fn c_str(b: &[u8]) -> &[u8] {
    memchr::memchr(0, b).map_or(b, |i| &b[..i])
}

/// `full`: the user may read any key (else BY with a pattern and GET are
/// refused, as Redis refuses them: they read keys ACLs cannot see).
fn parse(argv: &[Bytes], readonly: bool, full: bool) -> CmdResult<Request> {
    let mut q = Request {
        desc: false,
        alpha: false,
        start: 0,
        count: -1,
        store: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < argv.len() {
        let (a, left) = (&argv[j], argv.len() - j - 1);
        if is(a, "asc") {
            q.desc = false;
        } else if is(a, "desc") {
            q.desc = true;
        } else if is(a, "alpha") {
            q.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            q.start = parse_i64(&argv[j + 1]).ok_or(NOT_INT)?;
            q.count = parse_i64(&argv[j + 2]).ok_or(NOT_INT)?;
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            q.store = Some(argv[j + 1].clone());
            j += 1;
        } else if is(a, "by") && left >= 1 {
            q.by = Some(argv[j + 1].clone());
            // As Redis: a pattern without `*` means no sorting, and a later
            // BY with one does not take that back.
            if memchr::memchr(b'*', c_str(&argv[j + 1])).is_none() {
                q.dontsort = true;
            } else if !full {
                return Err(CmdError::new("ERR BY option of SORT denied due to insufficient ACL permissions."));
            }
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if !full {
                return Err(CmdError::new("ERR GET option of SORT denied due to insufficient ACL permissions."));
            }
            q.gets.push(argv[j + 1].clone());
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    Ok(q)
}

/// The source's elements in its own order (a list's, a sorted set's by
/// score, a set's as stored), and whether it is a set; None when missing.
fn elements(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<Option<(Vec<Vec<u8>>, bool)>> {
    let ty = ks.read(db, key, now, |m| m.map(|m| m.ty))?;
    match ty {
        None => Ok(None),
        Some(KeyType::List) => {
            let Some(l) = List::open(ks, db, key, now, false)? else {
                return Ok(None);
            };
            let len = l.len();
            Ok(Some((if len == 0 { Vec::new() } else { l.range(0, len - 1)? }, false)))
        }
        Some(KeyType::Set) => {
            let Some(v) = coll::view(ks, db, key, KeyType::Set, now)? else {
                return Ok(None);
            };
            let members = coll::all_members(ks, db, key, &v.c, now)?;
            Ok(Some((members.into_iter().map(|(m, _, _)| m).collect(), true)))
        }
        Some(KeyType::ZSet) => {
            let Some(v) = coll::view(ks, db, key, KeyType::ZSet, now)? else {
                return Ok(None);
            };
            let mut out = Vec::with_capacity(v.c.size.min(1 << 16) as usize);
            zset::walk(ks, db, key, &v.c, None, false, |_, m| {
                out.push(m.to_vec());
                true
            })?;
            Ok(Some((out, false)))
        }
        Some(_) => Err(WRONGTYPE),
    }
}

/// The key (and hash field) `pattern` names for element `e`, as Redis's
/// `lookupKeyByPattern`: the first `*` replaced by the element, `->field`
/// after it naming a hash field. None for `#` (the element itself) or a
/// pattern without `*` (names nothing).
fn substitute(pattern: &[u8], e: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let star = memchr::memchr(b'*', c_str(pattern))?;
    let after = &pattern[star + 1..];
    let arrow = memchr::memmem::find(c_str(after), b"->").filter(|&f| f + 2 < after.len());
    let (post, field) = match arrow {
        Some(f) => (&after[..f], Some(after[f + 2..].to_vec())),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + e.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(e);
    key.extend_from_slice(post);
    Some((key, field))
}

/// A string's value, or a hash field's; None when missing or of another
/// type.
fn value_of(ks: &Keyspace, db: u8, key: &[u8], field: Option<&[u8]>, now: u64) -> CmdResult<Option<Vec<u8>>> {
    let ty = ks.read(db, key, now, |m| m.map(|m| m.ty))?;
    match (ty, field) {
        (Some(KeyType::String | KeyType::BigString), None) => Ok(bigstr::read(ks, db, key, now)?.map(|(v, _)| v)),
        (Some(KeyType::Hash), Some(f)) => match coll::view(ks, db, key, KeyType::Hash, now)? {
            Some(v) => Ok(coll::live_member(ks, db, key, &v.c, f, now)?.map(|(_, val)| val)),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// One lookup: the element's place, the key, the hash field if any.
type Ask = (usize, Vec<u8>, Option<Vec<u8>>);

/// `pattern` looked up for every element of `elems`, each key read on its
/// owner (one message per shard): the values, None where nothing is.
async fn lookup_all(c: &Conn<'_>, pattern: &[u8], elems: &[Vec<u8>]) -> CmdResult<Vec<Option<Vec<u8>>>> {
    if pattern == b"#" {
        return Ok(elems.iter().map(|e| Some(e.clone())).collect());
    }
    let (shard, db, n) = (c.shard, c.db(), c.shard.count());
    let mut out = vec![None; elems.len()];
    let mut by_shard: BTreeMap<usize, Vec<Ask>> = BTreeMap::new();
    for (i, e) in elems.iter().enumerate() {
        if let Some((key, field)) = substitute(pattern, e) {
            by_shard.entry(owner(&key, n)).or_default().push((i, key, field));
        }
    }
    for (target, asks) in by_shard {
        let got = shard
            .invoke_on(target, move |st: &ShardState| -> CmdResult<Vec<(usize, Option<Vec<u8>>)>> {
                let now = now_ms();
                asks.iter()
                    .map(|(i, k, f)| Ok((*i, value_of(&st.ks, db, k, f.as_deref(), now)?)))
                    .collect()
            })
            .await?;
        for (i, v) in got {
            out[i] = v;
        }
    }
    Ok(out)
}

/// A number as Redis's SORT reads one (`types::string::sort_number`: C's
/// `strtod` up to a NUL, nothing after it, no NaN, no overflow).
fn sort_number(v: &[u8]) -> Option<f64> {
    crate::types::string::sort_number(c_str(v))
}

/// The comparison Redis's `sortCompare` makes.
fn compare(q: &Request, store: bool, a: &(Vec<u8>, f64, Option<Vec<u8>>), b: &(Vec<u8>, f64, Option<Vec<u8>>)) -> Ordering {
    let collate = |x: &[u8], y: &[u8]| if store { x.cmp(y) } else { c_str(x).cmp(c_str(y)) };
    if !q.alpha {
        a.1.partial_cmp(&b.1).unwrap_or(Ordering::Equal).then_with(|| a.0.cmp(&b.0))
    } else if q.by.is_some() {
        match (&a.2, &b.2) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => collate(x, y),
        }
    } else {
        collate(&a.0, &b.0)
    }
}

async fn sort_generic(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, readonly: bool) -> CmdResult {
    let full = super::lookup(&argv[0]).is_none_or(|(idx, _)| super::acl::full_key_access(&c.client.user, idx, argv));
    let mut q = parse(argv, readonly, full)?;
    let (shard, db, src) = (c.shard, c.db(), argv[1].clone());
    let found = shard
        .invoke_on(owner(&src, shard.count()), move |st: &ShardState| {
            elements(&st.ks, db, &src, now_ms())
        })
        .await?;
    let (mut elems, is_set) = found.unwrap_or_default();
    // A set is not kept in Redis's order: with STORE, Redis sorts it
    // (ALPHA) rather than keep an order that differs between servers.
    if q.dontsort && is_set && q.store.is_some() {
        (q.dontsort, q.alpha, q.by) = (false, true, None);
    }
    let len = elems.len() as i64;
    let start = q.start.clamp(0, len);
    let count = q.count.clamp(-1, len);
    let end = if count < 0 { len } else { (start + count).min(len) };
    let (start, end) = (start as usize, end as usize);
    let mut bad_number = false;
    if q.dontsort {
        if q.desc && !is_set {
            elems.reverse();
        }
    } else {
        let keys = match &q.by {
            Some(p) => lookup_all(&c, p, &elems).await?,
            None => Vec::new(),
        };
        let store = q.store.is_some();
        let mut vector: Vec<(Vec<u8>, f64, Option<Vec<u8>>)> = Vec::with_capacity(elems.len());
        for (i, e) in elems.into_iter().enumerate() {
            let by = if q.by.is_some() { keys[i].clone() } else { None };
            let mut score = 0.0;
            if !q.alpha {
                let source = if q.by.is_some() { by.as_deref() } else { Some(&e[..]) };
                if let Some(v) = source {
                    match sort_number(v) {
                        Some(x) => score = x,
                        None => bad_number = true,
                    }
                }
            }
            vector.push((e, score, by));
        }
        vector.sort_by(|a, b| {
            let o = compare(&q, store, a, b);
            if q.desc {
                o.reverse()
            } else {
                o
            }
        });
        elems = vector.into_iter().map(|(e, _, _)| e).collect();
    }
    if bad_number {
        return Err(CmdError::new("ERR One or more scores can't be converted into double"));
    }
    let picked = &elems[start..end];
    let mut columns = Vec::with_capacity(q.gets.len());
    for g in &q.gets {
        columns.push(lookup_all(&c, g, picked).await?);
    }
    let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(picked.len() * q.gets.len().max(1));
    for (i, e) in picked.iter().enumerate() {
        if columns.is_empty() {
            out.push(Some(e.clone()));
        }
        for col in &columns {
            out.push(col[i].clone());
        }
    }
    let Some(dst) = q.store else {
        r.array(out.len());
        for v in &out {
            match v {
                Some(v) => r.bulk(v),
                None => r.null(),
            }
        }
        return Ok(());
    };
    let n = out.len();
    let values: Vec<Vec<u8>> = out.into_iter().map(Option::unwrap_or_default).collect();
    shard
        .invoke_on(owner(&dst, shard.count()), move |st: &ShardState| store_list(st, db, &dst, &values))
        .await?;
    r.int(n as i64);
    Ok(())
}

/// SORT's STORE: the list `values` at `dst` in one batch, replacing any
/// key there (no TTL); an empty result deletes `dst`.
fn store_list(st: &ShardState, db: u8, dst: &[u8], values: &[Vec<u8>]) -> CmdResult {
    let (ks, now) = (&st.ks, now_ms());
    let mut b = ks.store.batch();
    let existed = coll::stage_replace(ks, &mut b, db, dst, now)?;
    if values.is_empty() {
        ks.store.write(b)?;
        if existed {
            ks.notify(class::GENERIC, "del", db, dst);
        }
        return Ok(());
    }
    let mut l = List::fresh(ks, db, dst).with_batch(b);
    for v in values {
        l.push(End::Right, v)?;
    }
    l.commit()?;
    ks.notify(class::LIST, "sortstore", db, dst);
    // A client blocked on the new list is served.
    crate::coord::serve::key_ready(st, db, dst);
    Ok(())
}

pub async fn sort(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    sort_generic(c, argv, r, false).await
}

pub async fn sort_ro(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    sort_generic(c, argv, r, true).await
}
