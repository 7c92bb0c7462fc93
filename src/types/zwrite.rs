//! Sorted-set writes through the collection writer (`types::zset` has the
//! encoding; kept apart so that the encoding, which `types::coll` reads,
//! does not depend on the writer, which depends on `coll`).

use crate::error::CmdResult;
use crate::types::writer::Writer;
use crate::types::zset::{decode_score, member_sub, score_sub};

/// Member `m`'s score, through the writer (sees what it staged).
pub fn score_in(w: &mut Writer<'_>, m: &[u8]) -> CmdResult<Option<f64>> {
    match w.physical(&member_sub(m))? {
        Some((_, v)) => decode_score(&v).map(Some),
        None => Ok(None),
    }
}

/// Sets member `m`'s score (adding it when missing). Returns its score before.
/// A score of -0 is stored as 0 (ZSCORE then says `0`, as redis-server does).
pub fn set_score(w: &mut Writer<'_>, m: &[u8], score: f64) -> CmdResult<Option<f64>> {
    let score = if score == 0.0 { 0.0 } else { score };
    let old = score_in(w, m)?;
    if let Some(o) = old {
        if o.to_bits() == score.to_bits() {
            return Ok(old);
        }
        w.delete_raw(&score_sub(o, m));
    }
    w.put(&member_sub(m), 0, &score.to_bits().to_be_bytes())?;
    w.put_raw(&score_sub(score, m), b"");
    Ok(old)
}

/// Removes member `m`. Returns whether it was there.
pub fn remove(w: &mut Writer<'_>, m: &[u8]) -> CmdResult<bool> {
    let Some(old) = score_in(w, m)? else { return Ok(false) };
    w.delete(&member_sub(m))?;
    w.delete_raw(&score_sub(old, m));
    Ok(true)
}
