//! String value logic with no protocol and no storage: ranges, overwrite at
//! an offset, the float text INCRBYFLOAT stores, longest common subsequence.

/// The bytes GETRANGE returns for `start..=end` (negative counts from the end).
pub fn range_of(v: &[u8], start: i64, end: i64) -> &[u8] {
    match range_bounds(v.len() as u64, start, end) {
        Some((a, b)) => &v[a as usize..b as usize],
        None => &[],
    }
}

/// [`range_of`] as offsets `[from, to)` into a value of length `len`; None
/// when the range is empty.
pub fn range_bounds(len: u64, start: i64, end: i64) -> Option<(u64, u64)> {
    let len = len.min(i64::MAX as u64) as i64;
    if len == 0 {
        return None;
    }
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if end < 0 {
        end = 0;
    }
    if end >= len {
        end = len - 1;
    }
    if start > end {
        return None;
    }
    Some((start as u64, end as u64 + 1))
}

/// Overwrites `v` at `offset` with `data`, zero-padding any gap.
pub fn set_range(v: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if v.len() < end {
        v.resize(end, 0);
    }
    v[offset..end].copy_from_slice(data);
}

extern "C" {
    fn basalt_incrbyfloat(
        cur: *const u8,
        cur_len: usize,
        inc: *const u8,
        inc_len: usize,
        out: *mut u8,
        out_cap: usize,
        out_len: *mut usize,
    ) -> i32;
    fn basalt_timeout_ms(s: *const u8, len: usize, ms: *mut i64) -> i32;
    fn basalt_sort_number(s: *const u8, out: *mut f64) -> i32;
}

/// A number as SORT reads one with C's `strtod` (leading white space, hex
/// and `inf` accepted; anything after the number, NaN or an overflow
/// refused). `s` holds no NUL.
pub fn sort_number(s: &[u8]) -> Option<f64> {
    let s = nul_terminated(s);
    let mut v = 0.0;
    // SAFETY: `s` is NUL-terminated; `v` is a valid place for the one
    // value the helper writes.
    let rc = unsafe { basalt_sort_number(s.as_ptr(), &mut v) };
    (rc == 0).then_some(v)
}

/// Why a blocking command's timeout was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum TimeoutError {
    NotFloat,
    OutOfRange,
    Negative,
}

/// Seconds as Redis reads a blocking command's timeout (`strtold`, hex and
/// exponents included, times 1000 in `long double`, rounded up): the
/// milliseconds.
pub fn timeout_ms(secs: &[u8]) -> Result<u64, TimeoutError> {
    let s = nul_terminated(secs);
    let mut ms = 0i64;
    // SAFETY: `s` is NUL-terminated with its length given; `ms` is a valid
    // place for the one value the helper writes.
    let rc = unsafe { basalt_timeout_ms(s.as_ptr(), secs.len(), &mut ms) };
    match rc {
        0 => Ok(ms.max(0) as u64),
        1 => Err(TimeoutError::NotFloat),
        2 => Err(TimeoutError::OutOfRange),
        _ => Err(TimeoutError::Negative),
    }
}

/// Why INCRBYFLOAT refused.
#[derive(Debug, PartialEq, Eq)]
pub enum FloatIncrError {
    /// The stored value is not a float.
    NotFloat,
    /// The increment is not a float.
    BadIncrement,
    /// The result is NaN or infinite (or too long to print).
    NanOrInf,
}

fn nul_terminated(s: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 1);
    v.extend_from_slice(s);
    v.push(0);
    v
}

/// INCRBYFLOAT's new text: `current + increment` in C `long double`,
/// printed as Redis prints it (`%.17Lf`, trailing zeros trimmed).
pub fn incr_by_float(current: Option<&[u8]>, increment: &[u8]) -> Result<Vec<u8>, FloatIncrError> {
    let cur = current.map(nul_terminated);
    let inc = nul_terminated(increment);
    let mut out = vec![0u8; 6000];
    let mut len = 0usize;
    // SAFETY: both inputs are NUL-terminated with their lengths given; `out`
    // has `out.len()` writable bytes and the helper writes at most that many.
    let rc = unsafe {
        basalt_incrbyfloat(
            cur.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            current.map_or(0, |c| c.len()),
            inc.as_ptr(),
            increment.len(),
            out.as_mut_ptr(),
            out.len(),
            &mut len,
        )
    };
    match rc {
        0 => {
            out.truncate(len);
            Ok(out)
        }
        1 => Err(FloatIncrError::NotFloat),
        2 => Err(FloatIncrError::BadIncrement),
        _ => Err(FloatIncrError::NanOrInf),
    }
}

/// The result of LCS: the common subsequence and its matching ranges.
pub struct Lcs {
    pub seq: Vec<u8>,
    /// (a_start, a_end, b_start, b_end), last match first, as Redis lists them.
    pub matches: Vec<(usize, usize, usize, usize)>,
}

/// Longest common subsequence by dynamic programming, with the match ranges
/// Redis reports for IDX (walking back from the end of both strings).
pub fn lcs(a: &[u8], b: &[u8]) -> Lcs {
    let (n, m) = (a.len(), b.len());
    let w = m + 1;
    let mut dp = vec![0u32; (n + 1) * w];
    for i in 1..=n {
        for j in 1..=m {
            dp[i * w + j] = if a[i - 1] == b[j - 1] {
                dp[(i - 1) * w + j - 1] + 1
            } else {
                dp[(i - 1) * w + j].max(dp[i * w + j - 1])
            };
        }
    }
    let len = dp[n * w + m] as usize;
    let mut seq = vec![0u8; len];
    let mut idx = len;
    let mut matches = Vec::new();
    let (mut i, mut j) = (n, m);
    let mut cur: Option<(usize, usize, usize, usize)> = None;
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            idx -= 1;
            seq[idx] = a[i - 1];
            let (ai, bj) = (i - 1, j - 1);
            cur = match cur {
                Some((as_, ae, bs, be)) if as_ == ai + 1 && bs == bj + 1 => Some((ai, ae, bj, be)),
                Some(done) => {
                    matches.push(done);
                    Some((ai, ai, bj, bj))
                }
                None => Some((ai, ai, bj, bj)),
            };
            i -= 1;
            j -= 1;
        } else if dp[(i - 1) * w + j] > dp[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    if let Some(done) = cur {
        matches.push(done);
    }
    Lcs { seq, matches }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getrange_indices() {
        let v = b"This is a string";
        assert_eq!(range_of(v, 0, 3), b"This");
        assert_eq!(range_of(v, -3, -1), b"ing");
        assert_eq!(range_of(v, 0, -1), v);
        assert_eq!(range_of(v, 10, 100), b"string");
        assert_eq!(range_of(v, 5, 3), b"");
        assert_eq!(range_of(v, -100, -50), b"T"); // Redis 7.2 clamps both to 0
        assert_eq!(range_of(b"", 0, -1), b"");
    }

    #[test]
    fn setrange_pads_with_zeros() {
        let mut v = b"Hello".to_vec();
        set_range(&mut v, 7, b"W");
        assert_eq!(v, b"Hello\0\0W");
    }

    #[test]
    fn timeouts_like_redis() {
        assert_eq!(timeout_ms(b"0"), Ok(0));
        assert_eq!(timeout_ms(b"0.0001"), Ok(1));
        assert_eq!(timeout_ms(b"-0.0001"), Ok(0));
        assert_eq!(timeout_ms(b"1.5"), Ok(1500));
        assert_eq!(timeout_ms(b"0x10"), Ok(16000));
        assert_eq!(timeout_ms(b"1e400"), Err(TimeoutError::OutOfRange));
        assert_eq!(timeout_ms(b"inf"), Err(TimeoutError::OutOfRange));
        assert_eq!(timeout_ms(b"-inf"), Err(TimeoutError::Negative));
        assert_eq!(timeout_ms(b"-1"), Err(TimeoutError::Negative));
        assert_eq!(timeout_ms(b"nan"), Err(TimeoutError::NotFloat));
        assert_eq!(timeout_ms(b" 1"), Err(TimeoutError::NotFloat));
        assert_eq!(timeout_ms(b""), Err(TimeoutError::NotFloat));
        assert_eq!(timeout_ms(b"1x"), Err(TimeoutError::NotFloat));
    }

    #[test]
    fn incr_float_like_redis_long_double() {
        let t = |cur: Option<&str>, inc: &str| incr_by_float(cur.map(str::as_bytes), inc.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(t(Some("10.5"), "0.1"), Ok("10.6".into()));
        assert_eq!(t(Some("0.1"), "0.2"), Ok("0.3".into()));
        assert_eq!(t(Some("5.6"), "5000"), Ok("5005.60000000000000009".into()));
        assert_eq!(t(None, "5.0e3"), Ok("5000".into()));
        assert_eq!(t(Some("1"), "-1"), Ok("0".into()));
        assert_eq!(t(Some("abc"), "1"), Err(FloatIncrError::NotFloat));
        assert_eq!(t(Some("1"), " 1"), Err(FloatIncrError::BadIncrement));
        assert_eq!(t(Some("1"), "nan"), Err(FloatIncrError::BadIncrement));
        assert_eq!(t(Some("1"), "inf"), Err(FloatIncrError::NanOrInf));
    }

    #[test]
    fn lcs_like_redis_docs() {
        let r = lcs(b"ohmytext", b"mynewtext");
        assert_eq!(r.seq, b"mytext");
        assert_eq!(r.matches, vec![(4, 7, 5, 8), (2, 3, 0, 1)]);
        assert!(lcs(b"", b"abc").seq.is_empty());
    }
}
