//! Incremental RESP request parser: multibulk (`*N\r\n$L\r\n...`) and inline.
//!
// Hot path: runs on every byte a client sends. No allocation per argument
// (arguments are ranges into the read buffer, turned into `Bytes` slices of
// one frozen chunk per batch), no logging, no copying of payloads.
//
//! The parser first finds where a whole request ends (a cheap check pass
//! over lengths) and records argument ranges; the caller then freezes the
//! consumed prefix of the buffer once and slices every argument out of it.
//! An incomplete request leaves the buffer untouched and returns `Ok(None)`.
//! Errors carry Redis's exact protocol error texts.

use std::ops::Range;

/// Redis's cap on the element count of one multibulk request (INT_MAX).
const MAX_MULTIBULK_LEN: i64 = i32::MAX as i64;
/// What Redis allows a client that still has to authenticate.
const UNAUTH_MULTIBULK_LEN: i64 = 10;
const UNAUTH_BULK_LEN: i64 = 16384;

/// Limits the parser enforces, from the config and the client's state.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk: i64,
    /// The client must still authenticate: Redis caps requests hard then.
    pub unauthenticated: bool,
}
/// Redis's PROTO_INLINE_MAX_SIZE: a line with no newline in this many bytes is an error.
const INLINE_MAX: usize = 64 * 1024;

/// A protocol error: reply `-ERR Protocol error: <text>` and close the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// One parsed request: the byte length it consumed and its argument ranges.
#[derive(Debug, Default)]
pub struct Frame {
    pub consumed: usize,
    pub args: Vec<Range<usize>>,
    /// Inline arguments that needed unquoting: owned bytes instead of ranges.
    pub owned: Option<Vec<Vec<u8>>>,
}

/// Bytes [`find_header_end`] scans itself before it hands the rest to memchr.
const SHORT_HEADER: usize = 24;

/// Finds the end of a header line (`*N` or `$L`) that starts at `from`, as
/// Redis does: the first `\r`, with at least one byte after it (the line
/// ends two bytes later, whatever the second byte is). Redis searches with
/// `strchr`, so a NUL before the `\r` hides it: the request stays
/// incomplete until it passes the inline limit.
#[inline]
fn find_header_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = &buf[from..];
    // A header is a count or a length, a few bytes: a byte loop over the
    // first ones costs less than memchr's set-up for each.
    let near = &rest[..rest.len().min(SHORT_HEADER)];
    let i = match near.iter().position(|&b| b == b'\r' || b == 0) {
        Some(i) => i,
        None if rest.len() > SHORT_HEADER => SHORT_HEADER + memchr::memchr2(b'\r', 0, &rest[SHORT_HEADER..])?,
        None => return None,
    };
    let pos = from + i;
    (buf[pos] == b'\r' && pos + 1 < buf.len()).then_some(pos)
}

/// A header's number and its `\r`, when it has the common shape: `0`, or
/// 1 to 18 digits without a leading zero (no overflow possible), then
/// `\r` and a byte after it. One pass instead of [`find_header_end`] then
/// [`string2ll`] (~40 fewer instructions a header: a GET has three, an
/// HSET five). None: the general path decides, with its errors.
#[inline]
fn quick_header(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let first = *buf.get(from)?;
    let mut v = match first {
        b'1'..=b'9' => (first - b'0') as i64,
        b'0' => return (buf.get(from + 1) == Some(&b'\r') && from + 2 < buf.len()).then_some((0, from + 1)),
        _ => return None,
    };
    for (n, &b) in buf.get(from + 1..)?.iter().take(18).enumerate() {
        match b {
            b'0'..=b'9' if n < 17 => v = v * 10 + (b - b'0') as i64,
            b'\r' => {
                let i = from + 1 + n;
                return (i + 1 < buf.len()).then_some((v, i));
            }
            _ => return None,
        }
    }
    None
}

/// Parses a float as Redis's `string2d` (`getDoubleFromObject`, what
/// ZADD, ZINCRBY, GEOADD and WEIGHTS read): as [`strtod_whole`], and a
/// number past the range of a double is refused, as strtod's ERANGE is
/// there: one that overflows to ±inf (`1e400`) or underflows to zero
/// (`1e-400`). A spelled infinity is taken.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    let v = strtod_whole(s)?;
    if v.is_infinite() && !s.iter().any(|b| b.eq_ignore_ascii_case(&b'i')) {
        return None;
    }
    if v == 0.0 {
        let mantissa = s.split(|b| matches!(b, b'e' | b'E')).next().unwrap_or_default();
        if mantissa.iter().any(|b| matches!(b, b'1'..=b'9')) {
            return None;
        }
    }
    Some(v)
}

/// Parses a float as strtod does with the whole string consumed: no
/// leading space, NaN refused, `inf`/`-inf` (and `infinity`) accepted, a
/// number past a double's range taken as ±inf or 0 (a sorted-set range's
/// bound, `zslParseRange`, checks no ERANGE).
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 || s[0].is_ascii_whitespace() {
        return None;
    }
    if s.iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
    {
        // The common case: no spelling of infinity or NaN to look for, so
        // no lowercase copy (an allocation and five compares a ZADD).
        return std::str::from_utf8(s).ok()?.parse::<f64>().ok().filter(|v| !v.is_nan());
    }
    let text = std::str::from_utf8(s).ok()?;
    let lower = text.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => {
            // Rust accepts "infinity"/"nan" spellings handled above, and
            // rejects hex floats that strtold takes: rare enough to leave.
            if lower.contains("nan") || lower.contains("inf") {
                return None;
            }
            text.parse::<f64>().ok()?
        }
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

/// Parses a decimal length as Redis's `string2ll` accepts it: `0`, or an
/// optional `-` then a digit 1-9 and more digits, fitting an i64. No `+`,
/// no leading zeros, no `-0`.
#[inline]
pub fn string2ll(digits: &[u8]) -> Option<i64> {
    if digits == b"0" {
        return Some(0);
    }
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let (neg, rest) = match digits[0] {
        b'-' => (true, &digits[1..]),
        _ => (false, digits),
    };
    if !matches!(rest.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in rest {
        if !d.is_ascii_digit() {
            return None;
        }
        // Accumulate negatively so i64::MIN parses, as string2ll does.
        v = v.checked_mul(10)?.checked_sub((d - b'0') as i64)?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// Parses one request starting at `buf[0]`.
///
/// Returns `Ok(None)` when more bytes are
/// needed; `Ok(Some(frame))` with an empty `args` for requests Redis skips
/// silently (`*0`, `*-1`, empty inline lines).
pub fn parse_request(buf: &[u8], limits: Limits) -> Result<Option<Frame>, ProtocolError> {
    let mut args = Vec::new();
    Ok(parse_request_into(buf, limits, &mut args)?.map(|p| Frame {
        consumed: p.consumed,
        args,
        owned: p.owned,
    }))
}

/// What [`parse_request_into`] found: the bytes the request took, and its
/// arguments when they had to be unquoted (an inline request with quotes).
#[derive(Debug, Default)]
pub struct Parsed {
    pub consumed: usize,
    pub owned: Option<Vec<Vec<u8>>>,
}

/// [`parse_request`] into a caller's vector: the request's argument ranges
/// are appended to `args` (a connection keeps one for all its batches, so
/// a request costs no allocation of its own). On `Ok(None)` or an error
/// `args` is left as it was.
pub fn parse_request_into(buf: &[u8], limits: Limits, args: &mut Vec<Range<usize>>) -> Result<Option<Parsed>, ProtocolError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let before = args.len();
    let res = if buf[0] == b'*' {
        parse_multibulk(buf, limits, args)
    } else {
        parse_inline(buf, args)
    };
    if !matches!(res, Ok(Some(_))) {
        args.truncate(before);
    }
    res
}

fn parse_multibulk(buf: &[u8], limits: Limits, args: &mut Vec<Range<usize>>) -> Result<Option<Parsed>, ProtocolError> {
    let (count, eol) = match quick_header(buf, 1) {
        Some((n, eol)) if n <= MAX_MULTIBULK_LEN => (n, eol),
        _ => {
            let Some(eol) = find_header_end(buf, 1) else {
                if buf.len() > INLINE_MAX {
                    return Err(ProtocolError("too big mbulk count string".into()));
                }
                return Ok(None);
            };
            match string2ll(&buf[1..eol]) {
                Some(n) if n <= MAX_MULTIBULK_LEN => (n, eol),
                _ => return Err(ProtocolError("invalid multibulk length".into())),
            }
        }
    };
    if limits.unauthenticated && count > UNAUTH_MULTIBULK_LEN {
        return Err(ProtocolError("unauthenticated multibulk length".into()));
    }
    let mut pos = eol + 2;
    if count <= 0 {
        return Ok(Some(Parsed {
            consumed: pos,
            owned: None,
        }));
    }
    // Cap the reservation: a client may announce a million arguments and send none.
    args.reserve((count as usize).min(64));
    for _ in 0..count {
        if pos >= buf.len() {
            return Ok(None);
        }
        let quick = (buf[pos] == b'$').then(|| quick_header(buf, pos + 1)).flatten();
        let (len, eol) = match quick {
            Some((n, eol)) if n <= limits.max_bulk => (n, eol),
            _ => {
                let Some(eol) = find_header_end(buf, pos + 1) else {
                    if buf.len() - pos > INLINE_MAX {
                        return Err(ProtocolError("too big bulk count string".into()));
                    }
                    return Ok(None);
                };
                if buf[pos] != b'$' {
                    let got = super::reply::raw_text(&buf[pos..pos + 1]);
                    return Err(ProtocolError(format!("expected '$', got '{got}'")));
                }
                match string2ll(&buf[pos + 1..eol]) {
                    Some(n) if (0..=limits.max_bulk).contains(&n) => (n, eol),
                    _ => return Err(ProtocolError("invalid bulk length".into())),
                }
            }
        };
        if limits.unauthenticated && len > UNAUTH_BULK_LEN {
            return Err(ProtocolError("unauthenticated bulk length".into()));
        }
        let len = len as usize;
        let start = eol + 2;
        let end = start + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        // Redis does not check the trailing CRLF of a bulk; it skips two bytes.
        args.push(start..end);
        pos = end + 2;
    }
    Ok(Some(Parsed {
        consumed: pos,
        owned: None,
    }))
}

fn parse_inline(buf: &[u8], args: &mut Vec<Range<usize>>) -> Result<Option<Parsed>, ProtocolError> {
    // Redis finds the newline with `strchr`: a NUL before it hides it, and
    // the request waits for more bytes until it passes the inline limit.
    let nl = match memchr::memchr2(b'\n', 0, buf) {
        Some(i) if buf[i] == b'\n' => i,
        _ => {
            if buf.len() > INLINE_MAX {
                return Err(ProtocolError("too big inline request".into()));
            }
            return Ok(None);
        }
    };
    let consumed = nl + 1;
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
    let line = &buf[..line_end];
    // Fast path: no quotes, so arguments are plain ranges of the buffer.
    // As `sdssplitargs`: any C space separates arguments, but only space,
    // tab, CR and LF end one (VT and FF inside an argument stay in it).
    if memchr::memchr2(b'"', b'\'', line).is_none() {
        let mut i = 0;
        loop {
            while i < line.len() && is_space(line[i]) {
                i += 1;
            }
            if i >= line.len() {
                break;
            }
            let start = i;
            while i < line.len() && !ends_arg(line[i]) {
                i += 1;
            }
            args.push(start..i);
        }
        return Ok(Some(Parsed { consumed, owned: None }));
    }
    match split_args(line) {
        Some(owned) => Ok(Some(Parsed {
            consumed,
            owned: Some(owned),
        })),
        None => Err(ProtocolError("unbalanced quotes in request".into())),
    }
}

/// What ends an unquoted inline argument in `sdssplitargs`.
#[inline]
fn ends_arg(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0)
}

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|v| v as u8)
}

/// Redis's `sdssplitargs`: splits a line honouring "double" (with escapes) and
/// 'single' quotes. `None` on unbalanced quotes or a closing quote not
/// followed by a space.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        let mut inq = false;
        let mut insq = false;
        loop {
            if inq {
                if i >= line.len() {
                    return None;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < line.len()
                    && line[i + 1] == b'x'
                    && hex_val(line[i + 2]).is_some()
                    && hex_val(line[i + 3]).is_some()
                {
                    let hi = hex_val(line[i + 2]).unwrap_or(0);
                    let lo = hex_val(line[i + 3]).unwrap_or(0);
                    cur.push(hi * 16 + lo);
                    i += 3;
                } else if c == b'\\' && i + 1 < line.len() {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    inq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if i >= line.len() {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_space(line[i + 1]) {
                        return None;
                    }
                    insq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                if i >= line.len() {
                    break;
                }
                match line[i] {
                    c if ends_arg(c) => {
                        i += 1;
                        break;
                    }
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        let _ = (inq, insq);
        out.push(cur);
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
