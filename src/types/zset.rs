//! Sorted sets on the versioned collection encoding (docs/encoding.md,
//! "Sorted sets"). Every record of a sorted set lives under its version,
//! so DEL, overwrite, RENAME, COPY, MOVE and the compaction filter treat it
//! as any collection:
//!
//! ```text
//! 'm' member                 -> score (8, f64 bits BE)     one per member: ZSCORE, ZADD's check
//! 's' sortkey(8) member      -> ""                         one per member, in (score, member) order
//! 'r' sortkey(8) member      -> count (8)                  a count block's head (`types::zblock`), big sets only
//! ```
//! `sortkey` orders like the score (sign bit flipped for positives, all
//! bits for negatives; -0 is stored as 0, as Redis compares them equal), so
//! the `s` records sort as Redis's skiplist does: by score, then member
//! bytes. `size` in the meta counts members (each has both records).

use crate::error::{CmdResult, CORRUPT};
use crate::storage::keys;
use crate::storage::meta::Coll;
use crate::types::keyspace::Keyspace;

/// A member and its score.
pub type Scored = (Vec<u8>, f64);

/// One live sorted set: where its records are.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub ks: &'a Keyspace,
    pub db: u8,
    pub key: &'a [u8],
    pub c: &'a Coll,
}

/// First byte of a member record.
pub const MEMBER: u8 = b'm';
/// First byte of a score record.
pub const SCORE: u8 = b's';
/// First byte of a count block's head record (`types::zblock`).
pub const RANK: u8 = b'r';

/// A score as its order-preserving 8 bytes (-0 as 0; NaN never stored).
pub fn sort_key(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    ordered.to_be_bytes()
}

/// The score back from its sort key.
pub fn from_sort_key(k: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(k);
    let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
    f64::from_bits(bits)
}

/// A member's sub key, on the stack for members of up to 55 bytes (a
/// ZADD built four of them in `Vec`s; issue 52, item 3).
pub type SubBuf = smallvec::SmallVec<[u8; 64]>;

/// The sub key of member `m`'s member record.
pub fn member_sub(m: &[u8]) -> SubBuf {
    let mut s = SubBuf::new();
    s.push(MEMBER);
    s.extend_from_slice(m);
    s
}

/// The sub key of member `m`'s score record at `score`.
pub fn score_sub(score: f64, m: &[u8]) -> SubBuf {
    let mut s = SubBuf::new();
    s.push(SCORE);
    s.extend_from_slice(&sort_key(score));
    s.extend_from_slice(m);
    s
}

/// Splits a score record's sub key into (score, member).
pub fn split_score_sub(sub: &[u8]) -> Option<(f64, &[u8])> {
    if sub.len() < 9 || sub[0] != SCORE {
        return None;
    }
    let k: [u8; 8] = sub[1..9].try_into().ok()?;
    Some((from_sort_key(k), &sub[9..]))
}

pub(super) fn decode_score(v: &[u8]) -> CmdResult<f64> {
    let b: [u8; 8] = v.try_into().map_err(|_| CORRUPT)?;
    Ok(f64::from_bits(u64::from_be_bytes(b)))
}

/// Member `m`'s score in the sorted set `c` at `key`.
pub fn score(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, m: &[u8]) -> CmdResult<Option<f64>> {
    let k = keys::sub_key(db, key, c.version, &member_sub(m));
    ks.store.get_with(&k, |v| v.map(decode_score).transpose())?
}

/// Whether `records` (sub key, value) are a whole sorted set of `size`
/// members: a member record and the matching score record for each, no
/// NaN, nothing else (RESTORE's check of a payload).
pub fn records_fit(size: u64, records: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let mut scores = std::collections::HashMap::new();
    let mut sorted = std::collections::HashSet::new();
    for (sub, v) in records {
        match sub.first() {
            Some(&MEMBER) => match <[u8; 8]>::try_from(&v[..]) {
                Ok(b) if !f64::from_bits(u64::from_be_bytes(b)).is_nan() => {
                    scores.insert(&sub[1..], f64::from_bits(u64::from_be_bytes(b)));
                }
                _ => return false,
            },
            Some(&SCORE) if v.is_empty() && sub.len() >= 9 => {
                sorted.insert(&sub[..]);
            }
            // Count block heads: `zblock::heads_fit` checks them.
            Some(&RANK) => {}
            _ => return false,
        }
    }
    scores.len() as u64 == size && sorted.len() == scores.len() && scores.iter().all(|(m, s)| sorted.contains(&score_sub(*s, m)[..]))
}

/// Visits the members in (score, member) order from score record `from`
/// (a sub key, inclusive) on, or backwards from `from` (exclusive) when
/// `rev`, until `f` returns false.
pub fn walk(
    ks: &Keyspace,
    db: u8,
    key: &[u8],
    c: &Coll,
    from: Option<&[u8]>,
    rev: bool,
    mut f: impl FnMut(f64, &[u8]) -> bool,
) -> CmdResult<()> {
    let lo = keys::sub_key(db, key, c.version, &[SCORE]);
    let hi = keys::sub_key(db, key, c.version, &[SCORE + 1]);
    let at = from.map(|s| keys::sub_key(db, key, c.version, s));
    let prefix = lo.len() - 1;
    let mut bad = false;
    let mut visit = |k: &[u8], _: &[u8]| match split_score_sub(&k[prefix..]) {
        Some((s, m)) => f(s, m),
        None => {
            bad = true;
            false
        }
    };
    if rev {
        ks.store.scan_back(&lo, at.as_deref().unwrap_or(&hi), &mut visit)?;
    } else {
        ks.store.scan(at.as_deref().unwrap_or(&lo), &hi, &mut visit)?;
    }
    if bad {
        return Err(CORRUPT);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_order_as_scores() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for w in scores.windows(2) {
            assert!(sort_key(w[0]) < sort_key(w[1]), "{} < {}", w[0], w[1]);
        }
        for s in scores {
            assert_eq!(from_sort_key(sort_key(s)), s);
        }
        assert_eq!(sort_key(-0.0), sort_key(0.0));
        let sub = score_sub(-2.5, b"m");
        assert_eq!(split_score_sub(&sub), Some((-2.5, &b"m"[..])));
        assert_eq!(split_score_sub(b"s123"), None);
        assert!(score_sub(1.0, b"b") > score_sub(1.0, b"a"));
        assert!(score_sub(1.0, b"") < score_sub(1.0, b"\x00"));
    }

    #[test]
    fn restore_checks_the_records() {
        let rec = |m: &[u8], s: f64| {
            vec![
                (member_sub(m).to_vec(), s.to_bits().to_be_bytes().to_vec()),
                (score_sub(s, m).to_vec(), vec![]),
            ]
        };
        let mut good = rec(b"a", 1.5);
        good.extend(rec(b"b", -2.0));
        assert!(records_fit(2, &good));
        assert!(!records_fit(3, &good), "size");
        assert!(!records_fit(2, &good[..3]), "a member without its score record");
        let mut moved = good.clone();
        moved[1].0 = score_sub(9.0, b"a").to_vec();
        assert!(!records_fit(2, &moved), "a score record at another score");
        let mut nan = good.clone();
        nan[0].1 = f64::NAN.to_bits().to_be_bytes().to_vec();
        assert!(!records_fit(2, &nan));
        let mut short = good.clone();
        short[0].1 = vec![1, 2];
        assert!(!records_fit(2, &short));
        let mut other = good;
        other.push((b"x".to_vec(), vec![]));
        assert!(!records_fit(2, &other));
    }
}
