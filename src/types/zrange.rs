//! Ranges of a sorted set: score bounds (`(`, `inf`) and lex bounds
//! (`[ ( + -`) as Redis parses them, and the walks that select, count or
//! visit the members of a range by rank, score or lex order. The commands
//! (`cmd::zsets`, `cmd::zedit`) and the cross-shard ones (`coord::zset`:
//! ZRANGESTORE, blocking pops) share them.

use crate::error::{CmdError, CmdResult};
use crate::resp::parse::strtod_whole;
use crate::types::zblock;
use crate::types::zset::{sort_key, At, Scored};

/// A score bound: the value and whether it is exclusive (`(`).
#[derive(Clone, Copy, Debug)]
pub struct ScoreBound {
    v: f64,
    open: bool,
}

/// A range bound as Redis reads it with `strtod`: leading white space
/// allowed, the rest all consumed, an empty string is 0, NaN refused.
fn strtod(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    strtod_whole(&s[start..])
}

fn score_bound(s: &[u8]) -> Option<ScoreBound> {
    let (open, text) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let v = strtod(text)?;
    Some(ScoreBound { v, open })
}

/// Redis's `zslParseRange`.
pub fn score_range(min: &[u8], max: &[u8]) -> CmdResult<(ScoreBound, ScoreBound)> {
    match (score_bound(min), score_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::new("ERR min or max is not a float")),
    }
}

impl ScoreBound {
    fn above_min(self, s: f64) -> bool {
        if self.open {
            s > self.v
        } else {
            s >= self.v
        }
    }

    fn below_max(self, s: f64) -> bool {
        if self.open {
            s < self.v
        } else {
            s <= self.v
        }
    }
}

/// A lex bound (`-`, `+`, `[x`, `(x`).
#[derive(Clone, Debug)]
pub enum LexBound {
    Min,
    Max,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

fn lex_bound(s: &[u8]) -> Option<LexBound> {
    match s.first()? {
        b'-' if s.len() == 1 => Some(LexBound::Min),
        b'+' if s.len() == 1 => Some(LexBound::Max),
        b'[' => Some(LexBound::Incl(s[1..].to_vec())),
        b'(' => Some(LexBound::Excl(s[1..].to_vec())),
        _ => None,
    }
}

pub fn lex_range(min: &[u8], max: &[u8]) -> CmdResult<(LexBound, LexBound)> {
    match (lex_bound(min), lex_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::new("ERR min or max not valid string range item")),
    }
}

impl LexBound {
    fn gte_min(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Incl(v) => m >= &v[..],
            LexBound::Excl(v) => m > &v[..],
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(v) => m <= &v[..],
            LexBound::Excl(v) => m < &v[..],
        }
    }
}

/// What a range command selects.
pub enum Range {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

/// Members of `range` in order (reversed with `rev`), after skipping
/// `offset` and at most `limit` (negative: all).
pub fn select(z: At<'_>, range: &Range, rev: bool, offset: i64, limit: i64) -> CmdResult<Vec<Scored>> {
    let mut out = Vec::new();
    each(z, range, rev, (offset, limit), |m, s| out.push((m.to_vec(), s)))?;
    Ok(out)
}

/// How many members `range` holds (ZCOUNT, ZLEXCOUNT), without copying
/// them: a score range is two ranks (the members below its top bound
/// minus those below its bottom one).
pub fn count(z: At<'_>, range: &Range) -> CmdResult<i64> {
    if let Range::Score(min, max) = range {
        let below = |v: f64, past: bool| {
            let k = u64::from_be_bytes(sort_key(v));
            zblock::rank_of(z, &(if past { k.saturating_add(1) } else { k }).to_be_bytes())
        };
        let lo = below(min.v, min.open)?;
        let hi = below(max.v, !max.open)?;
        return Ok(hi.saturating_sub(lo) as i64);
    }
    let mut n = 0;
    each(z, range, false, (0, -1), |_, _| n += 1)?;
    Ok(n)
}

/// Visits the members of `range` in order (reversed with `rev`), after
/// skipping `offset`, at most `limit` of them (negative: all).
fn each(z: At<'_>, range: &Range, rev: bool, (offset, limit): (i64, i64), mut f: impl FnMut(&[u8], f64)) -> CmdResult {
    if offset < 0 || limit == 0 {
        return Ok(());
    }
    let size = z.c.size as i64;
    let (mut skip, mut left) = (offset, if limit < 0 { i64::MAX } else { limit });
    // A member of the range: skipped while the offset lasts, else given to
    // `f`; whether more are wanted.
    let mut take = |m: &[u8], sc: f64| {
        if skip > 0 {
            skip -= 1;
        } else {
            f(m, sc);
            left -= 1;
        }
        left > 0
    };
    match range {
        Range::Rank(start, end) => {
            let (mut s, mut e) = (*start, *end);
            if s < 0 {
                s += size;
            }
            if e < 0 {
                e += size;
            }
            s = s.max(0);
            if s > e || s >= size {
                return Ok(());
            }
            e = e.min(size - 1);
            // From the member of the first rank: forward ranks s.., or
            // backwards from forward rank size-1-s (just past it: the
            // bound is exclusive).
            let first = if rev { size - 1 - s } else { s };
            let Some(mut from) = zblock::at_rank(z, first as u64)? else {
                return Ok(());
            };
            if rev {
                from.push(0);
            }
            let mut i = s;
            zblock::visit(z, Some(&from), rev, |sc, m| {
                i += 1;
                take(m, sc) && i <= e
            })?;
        }
        Range::Score(min, max) => {
            // Forward from the lowest score in range; backwards from the
            // highest.
            let from = if rev {
                // Backwards from just past the highest score in range.
                let top = u64::from_be_bytes(sort_key(max.v));
                (if max.open { top } else { top.saturating_add(1) }).to_be_bytes()
            } else {
                sort_key(min.v)
            };
            zblock::visit(z, Some(&from), rev, |sc, m| {
                let (inside, past) = if rev {
                    (max.below_max(sc) && min.above_min(sc), !min.above_min(sc))
                } else {
                    (min.above_min(sc) && max.below_max(sc), !max.below_max(sc))
                };
                !past && (!inside || take(m, sc))
            })?;
        }
        Range::Lex(min, max) => {
            let mut started = false;
            zblock::visit(z, None, rev, |sc, m| {
                // Redis finds the first member past the near bound, then
                // goes on while the far bound holds.
                let (enter, stay) = if rev {
                    (max.lte_max(m), min.gte_min(m))
                } else {
                    (min.gte_min(m), max.lte_max(m))
                };
                if !started {
                    if !enter {
                        return true;
                    }
                    started = true;
                }
                stay && take(m, sc)
            })?;
        }
    }
    Ok(())
}
