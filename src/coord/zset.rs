//! Sorted-set operations over keys of any shards.
//!
//! - ZMPOP (and the first try of BZPOPMIN/BZPOPMAX/BZMPOP): the keys tried
//!   in order, each on its owner, as LMPOP.
//! - ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD: every source
//!   (a sorted set, or a set whose members score 1) is gathered from its
//!   owner in slices from one snapshot (`coord::coll::gather_any`),
//!   combined on the connection's shard as Redis's
//!   `zunionInterDiffGenericCommand` combines them, and a result to store
//!   is written on the destination's owner under a fresh version that one
//!   final meta write makes the key (`coord::coll::store`): after a crash
//!   the destination holds its old value or the whole new one.
//! - ZRANGESTORE: the range is selected on the source's owner in one step
//!   and stored the same way.

use std::collections::HashMap;

use bytes::Bytes;

use super::coll::{gather_any, store, Keep};
use super::S;
use crate::clock::now_ms;
use crate::error::{CmdResult, CORRUPT};
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::coll;
use crate::types::zrange::{select, Range};
use crate::types::{zset, zwrite, KeyType};

pub use crate::types::zset::Scored;

/// ZMPOP: pops up to `count` members from the low end (high with `max`) of
/// the first of `keys` that is a sorted set, each key tried on its owner in
/// turn; WRONGTYPE at the first key of another type, as Redis.
pub async fn mpop(shard: &S, db: u8, keys: &[Bytes], max: bool, count: u64) -> CmdResult<Option<(Bytes, Vec<Scored>)>> {
    for key in keys {
        let k = key.clone();
        let got = shard
            .invoke_on(owner(key, shard.count()), move |st: &ShardState| {
                zwrite::pop(&st.ks, db, &k, now_ms(), max, count)
            })
            .await?;
        if let Some(got) = got.filter(|g| !g.is_empty()) {
            return Ok(Some((key.clone(), got)));
        }
    }
    Ok(None)
}

/// The types a combining command reads: sorted sets, and sets (score 1).
const SOURCES: &[KeyType] = &[KeyType::ZSet, KeyType::Set];

/// The members of the set or sorted set at `key` with their scores (a set
/// member scores 1), read from one snapshot; empty when the key is missing.
async fn scored(shard: &S, db: u8, key: &Bytes) -> CmdResult<Vec<Scored>> {
    let Some(g) = gather_any(shard, db, key, SOURCES, Keep::Entries, true).await? else {
        return Ok(Vec::new());
    };
    if g.ty != Some(KeyType::ZSet) {
        return Ok(g.entries.into_iter().map(|(m, _, _)| (m, 1.0)).collect());
    }
    g.entries
        .into_iter()
        .map(|(sub, _, v)| {
            let b: [u8; 8] = v.try_into().map_err(|_| CORRUPT)?;
            // The sub key is `m` member.
            Ok((sub[1..].to_vec(), f64::from_bits(u64::from_be_bytes(b))))
        })
        .collect()
}

/// Checks that each of `keys` is missing, a set or a sorted set (Redis
/// looks every source up before it reads the options: a WRONGTYPE wins
/// over a syntax error after the keys).
pub async fn check_sources(shard: &S, db: u8, keys: &[Bytes]) -> CmdResult {
    for key in keys {
        let k = key.clone();
        shard
            .invoke_on(owner(key, shard.count()), move |st: &ShardState| {
                coll::view_any(&st.ks, db, &k, SOURCES, now_ms()).map(|_| ())
            })
            .await?;
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Redis's `zunionInterAggregate`: a sum of +inf and -inf is 0, and a NaN
/// never wins a MIN or MAX.
fn aggregate(target: &mut f64, v: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += v;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if v < *target {
                *target = v
            }
        }
        Aggregate::Max => {
            if v > *target {
                *target = v
            }
        }
    }
}

/// A weighted score (`weight * score`, NaN as 0), as Redis starts a member.
fn weighted(weight: f64, score: f64) -> f64 {
    let s = weight * score;
    if s.is_nan() {
        0.0
    } else {
        s
    }
}

/// How ZUNION/ZINTER/ZDIFF (and STORE) combine their sources.
#[derive(Clone, Debug)]
pub struct Combine {
    pub op: Op,
    /// One per source (1 when not given).
    pub weights: Vec<f64>,
    pub aggregate: Aggregate,
}

/// Gathers every source, in command order.
async fn sources(shard: &S, db: u8, keys: &[Bytes], weights: &[f64]) -> CmdResult<Vec<(Vec<Scored>, f64)>> {
    let mut out = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        out.push((scored(shard, db, k).await?, weights.get(i).copied().unwrap_or(1.0)));
    }
    Ok(out)
}

/// The result of `how` over the sources at `keys`, in (score, member)
/// order, as Redis's `zunionInterDiffGenericCommand` computes it: union and
/// intersection visit the sources from the smallest (their sums depend on
/// the order where infinities meet), the intersection walks the smallest
/// and looks each member up in the others; the difference keeps the first
/// source's members found in no other, with their scores.
pub async fn combine(shard: &S, db: u8, keys: &[Bytes], how: &Combine) -> CmdResult<Vec<Scored>> {
    let mut srcs = sources(shard, db, keys, &how.weights).await?;
    let mut out: Vec<Scored> = match how.op {
        Op::Union => {
            srcs.sort_by_key(|(s, _)| s.len());
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for (src, w) in srcs {
                for (m, s) in src {
                    let v = weighted(w, s);
                    match acc.get_mut(&m) {
                        Some(t) => aggregate(t, v, how.aggregate),
                        None => {
                            acc.insert(m, v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        Op::Inter => {
            srcs.sort_by_key(|(s, _)| s.len());
            intersect(&srcs, how.aggregate, usize::MAX)
        }
        Op::Diff => {
            let mut it = srcs.into_iter();
            let first = it.next().map(|(s, _)| s).unwrap_or_default();
            let minus: std::collections::HashSet<Vec<u8>> = it.flat_map(|(s, _)| s.into_iter().map(|(m, _)| m)).collect();
            first.into_iter().filter(|(m, _)| !minus.contains(m)).collect()
        }
    };
    sort(&mut out);
    Ok(out)
}

/// The members of the first source (the smallest) found in every other,
/// with their aggregated scores; at most `limit` of them.
fn intersect(srcs: &[(Vec<Scored>, f64)], how: Aggregate, limit: usize) -> Vec<Scored> {
    let Some(((first, w0), rest)) = srcs.split_first() else {
        return Vec::new();
    };
    let maps: Vec<(HashMap<&[u8], f64>, f64)> = rest
        .iter()
        .map(|(s, w)| (s.iter().map(|(m, sc)| (&m[..], *sc)).collect(), *w))
        .collect();
    let mut out = Vec::new();
    'members: for (m, s) in first {
        if out.len() >= limit {
            break;
        }
        let mut score = weighted(*w0, *s);
        for (map, w) in &maps {
            match map.get(&m[..]) {
                Some(v) => aggregate(&mut score, v * w, how),
                None => continue 'members,
            }
        }
        out.push((m.clone(), score));
    }
    out
}

/// Sorts members as a sorted set orders them: by score, then member bytes.
fn sort(items: &mut [Scored]) {
    // Not total_cmp: it orders -0 before 0, which a sorted set holds equal.
    // No score is NaN.
    items.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
}

/// ZINTERCARD: how many members every source holds, counting no further
/// than `limit` (0: no limit).
pub async fn intercard(shard: &S, db: u8, keys: &[Bytes], limit: u64) -> CmdResult<u64> {
    let mut srcs = sources(shard, db, keys, &[]).await?;
    srcs.sort_by_key(|(s, _)| s.len());
    let limit = if limit == 0 { usize::MAX } else { limit as usize };
    Ok(intersect(&srcs, Aggregate::Sum, limit).len() as u64)
}

/// Stores `items` as the sorted set at `dst` (an empty result deletes it);
/// `event` names the command. Returns the size.
pub async fn store_scored(shard: &S, db: u8, dst: &Bytes, mut items: Vec<Scored>, event: &'static str) -> CmdResult<i64> {
    // In order: the count blocks are cut as the slices are written.
    sort(&mut items);
    store(shard, db, dst, KeyType::ZSet, items, zwrite::store_members, event).await
}

/// ZRANGESTORE: the members of `range` of the sorted set at `src` (after
/// skipping `offset`, at most `count`, negative: all; reversed with `rev`)
/// stored at `dst`. A missing source stores nothing, deleting `dst`.
pub async fn rangestore(
    shard: &S,
    db: u8,
    dst: &Bytes,
    src: &Bytes,
    range: Range,
    rev: bool,
    (offset, count): (i64, i64),
) -> CmdResult<i64> {
    let k = src.clone();
    let items = shard
        .invoke_on(owner(src, shard.count()), move |st: &ShardState| -> CmdResult<Vec<Scored>> {
            match coll::view(&st.ks, db, &k, KeyType::ZSet, now_ms())? {
                Some(v) => select(
                    zset::At {
                        ks: &st.ks,
                        db,
                        key: &k,
                        c: &v.c,
                    },
                    &range,
                    rev,
                    offset,
                    count,
                ),
                None => Ok(Vec::new()),
            }
        })
        .await?;
    store_scored(shard, db, dst, items, "zrangestore").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_as_redis() {
        let mut t = f64::INFINITY;
        aggregate(&mut t, f64::NEG_INFINITY, Aggregate::Sum);
        assert_eq!(t, 0.0, "inf + -inf is 0");
        let mut t = 1.0;
        aggregate(&mut t, f64::NAN, Aggregate::Min);
        assert_eq!(t, 1.0, "NaN never wins a MIN");
        aggregate(&mut t, f64::NAN, Aggregate::Max);
        assert_eq!(t, 1.0, "nor a MAX");
        aggregate(&mut t, 3.0, Aggregate::Max);
        assert_eq!(t, 3.0);
        assert_eq!(weighted(0.0, f64::INFINITY), 0.0, "0 * inf is 0");
    }

    #[test]
    fn intersects_from_the_first_source() {
        let a = vec![(b"x".to_vec(), 1.0), (b"y".to_vec(), 2.0)];
        let b = vec![(b"y".to_vec(), 10.0), (b"z".to_vec(), 5.0)];
        let got = intersect(&[(a.clone(), 2.0), (b.clone(), 1.0)], Aggregate::Sum, usize::MAX);
        assert_eq!(got, vec![(b"y".to_vec(), 14.0)]);
        let got = intersect(&[(a.clone(), 1.0), (b.clone(), 1.0)], Aggregate::Max, usize::MAX);
        assert_eq!(got, vec![(b"y".to_vec(), 10.0)]);
        let both = intersect(&[(a.clone(), 1.0), (a, 1.0)], Aggregate::Sum, 1);
        assert_eq!(both.len(), 1, "the limit stops the count");
    }

    #[test]
    fn sorts_by_score_then_member() {
        let mut v = vec![
            (b"b".to_vec(), 1.0),
            (b"a".to_vec(), 1.0),
            (b"c".to_vec(), -0.0),
            (b"d".to_vec(), 0.0),
            (b"e".to_vec(), f64::NEG_INFINITY),
        ];
        sort(&mut v);
        let names: Vec<&[u8]> = v.iter().map(|(m, _)| &m[..]).collect();
        assert_eq!(names, vec![&b"e"[..], b"c", b"d", b"a", b"b"]);
    }
}
