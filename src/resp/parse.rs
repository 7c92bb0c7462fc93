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
    let Some(eol) = find_header_end(buf, 1) else {
        if buf.len() > INLINE_MAX {
            return Err(ProtocolError("too big mbulk count string".into()));
        }
        return Ok(None);
    };
    let count = match string2ll(&buf[1..eol]) {
        Some(n) if n <= MAX_MULTIBULK_LEN => n,
        _ => return Err(ProtocolError("invalid multibulk length".into())),
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
        let len = match string2ll(&buf[pos + 1..eol]) {
            Some(n) if (0..=limits.max_bulk).contains(&n) => n,
            _ => return Err(ProtocolError("invalid bulk length".into())),
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
mod tests {
    /// The byte loop finds what a memchr over the whole rest found: the
    /// first `\r` or NUL, near the start or past the loop's bytes.
    #[test]
    fn header_end_is_the_first_cr_or_nul_at_any_distance() {
        let slow = |buf: &[u8], from: usize| {
            let i = memchr::memchr2(b'\r', 0, &buf[from..])?;
            let pos = from + i;
            (buf[pos] == b'\r' && pos + 1 < buf.len()).then_some(pos)
        };
        for len in 0..70usize {
            for at in 0..len {
                for mark in [b'\r', 0u8] {
                    let mut buf = vec![b'7'; len];
                    buf[at] = mark;
                    if at + 3 < len {
                        buf[at + 2] = b'\r';
                    }
                    for from in [0, 1, 3].into_iter().filter(|f| *f <= len) {
                        assert_eq!(
                            super::find_header_end(&buf, from),
                            slow(&buf, from),
                            "len {len} at {at} from {from}"
                        );
                    }
                }
            }
        }
    }

    /// The fast path of `strtod_whole` (digits, signs, points, exponents)
    /// answers as the general one: Rust's parse of the same text.
    #[test]
    fn parse_f64_plain_numbers_as_before() {
        for t in [
            "0",
            "1",
            "-1",
            "+1",
            "1.5",
            ".5",
            "5.",
            "-0",
            "1e3",
            "1E3",
            "1e-3",
            "-1.5e+10",
            "e5",
            "1e",
            "+",
            "-",
            ".",
            "1..2",
            "--1",
            "1e400",
            "-1e400",
            "00012",
            "1.7976931348623157e308",
            "4.9e-324",
        ] {
            let want = t.parse::<f64>().ok();
            assert_eq!(strtod_whole(t.as_bytes()).map(f64::to_bits), want.map(f64::to_bits), "{t}");
        }
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b""), None);
    }

    /// `string2d` refuses what strtod flags ERANGE with ±HUGE_VAL or zero;
    /// a range bound (`strtod_whole`) takes them.
    #[test]
    fn parse_f64_refuses_numbers_past_a_doubles_range() {
        for t in [
            "1e400",
            "-1e400",
            "1e-400",
            "-1e-400",
            "0.0001e-400",
            "179769313486231580793728971405303415079934132710037826936173778980444968292764750743144422152738945394575910212432135e300",
        ] {
            assert_eq!(parse_f64(t.as_bytes()), None, "{t}");
        }
        assert_eq!(strtod_whole(b"1e400"), Some(f64::INFINITY));
        assert_eq!(strtod_whole(b"-1e-400").map(f64::to_bits), Some((-0.0f64).to_bits()));
        for (t, v) in [
            ("0", 0.0),
            ("0e500", 0.0),
            ("-0.000", -0.0),
            ("4.9e-324", 4.9e-324),
            ("1e308", 1e308),
            ("+inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(parse_f64(t.as_bytes()).map(f64::to_bits), Some(v.to_bits()), "{t}");
        }
    }

    use super::*;

    const L: Limits = Limits {
        max_bulk: 512 << 20,
        unauthenticated: false,
    };

    fn lim(max_bulk: i64) -> Limits {
        Limits {
            max_bulk,
            unauthenticated: false,
        }
    }

    fn args_of(buf: &[u8]) -> Vec<Vec<u8>> {
        let f = parse_request(buf, L).unwrap().unwrap();
        match f.owned {
            Some(o) => o,
            None => f.args.iter().map(|r| buf[r.clone()].to_vec()).collect(),
        }
    }

    /// A connection's one vector of ranges: each request appends its own,
    /// an incomplete or refused one leaves what was there.
    #[test]
    fn into_a_shared_vector() {
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\na\r\nPING x\r\n*2\r\n$3\r\nGET\r\n$5\r\nab";
        let mut args: Vec<Range<usize>> = Vec::new();
        args.push(0..0);
        let p = parse_request_into(buf, L, &mut args).unwrap().unwrap();
        assert_eq!((p.consumed, args.len()), (20, 3));
        assert_eq!((&buf[args[1].clone()], &buf[args[2].clone()]), (&b"GET"[..], &b"a"[..]));
        let q = parse_request_into(&buf[20..], L, &mut args).unwrap().unwrap();
        assert_eq!((q.consumed, args.len()), (8, 5));
        assert_eq!(&buf[20..][args[4].clone()], b"x");
        assert!(parse_request_into(&buf[28..], L, &mut args).unwrap().is_none());
        assert_eq!(args.len(), 5);
        assert!(parse_request_into(b"*2\r\n$3\r\nGET\r\n:1\r\n", L, &mut args).is_err());
        assert_eq!(args.len(), 5);
    }

    /// Every request, fed whole and then cut at every byte boundary: a prefix
    /// must ask for more, the whole must parse to the same arguments.
    #[test]
    fn every_split_point() {
        let cases: &[(&[u8], &[&[u8]])] = &[
            (b"*1\r\n$4\r\nPING\r\n", &[b"PING"]),
            (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", &[b"SET", b"k", b""]),
            (b"*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", &[b"GET", b"a\r\nb"]),
            (b"PING\r\n", &[b"PING"]),
            (b"set  k   v\n", &[b"set", b"k", b"v"]),
            (b"set k \"a b\\n\"\r\n", &[b"set", b"k", b"a b\n"]),
            (b"echo 'it''s'\r\n", &[]),
        ];
        for (input, want) in cases {
            if want.is_empty() {
                continue;
            }
            assert_eq!(args_of(input), want.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
            for cut in 0..input.len() {
                assert!(
                    parse_request(&input[..cut], L).unwrap().is_none(),
                    "prefix {cut} of {:?} parsed",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    #[test]
    fn pipelined_frames_consume_exactly_one() {
        let buf = b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
        let f = parse_request(buf, lim(1 << 20)).unwrap().unwrap();
        assert_eq!(f.consumed, 14);
    }

    #[test]
    fn protocol_errors_have_redis_texts() {
        let cases: &[(&[u8], &str)] = &[
            (b"*abc\r\n", "invalid multibulk length"),
            (b"*2147483648\r\n", "invalid multibulk length"),
            (b"*1\r\n+PING\r\n", "expected '$', got '+'"),
            (b"*1\r\n$-5\r\n", "invalid bulk length"),
            (b"*1\r\n$x\r\n", "invalid bulk length"),
            (b"set k \"abc\r\n", "unbalanced quotes in request"),
            // string2ll: no -0, no leading zeros, no plus sign.
            (b"*1\r\n$-0\r\nPING\r\n", "invalid bulk length"),
            (b"*1\r\n$04\r\nPING\r\n", "invalid bulk length"),
            (b"*01\r\n$4\r\nPING\r\n", "invalid multibulk length"),
            (b"*-0\r\n", "invalid multibulk length"),
            (b"*+1\r\n", "invalid multibulk length"),
            // A header line ends two bytes after its first CR.
            (b"*1\r\r\n$4\r\nPING\r\n", "expected '$', got '\n'"),
        ];
        for (input, text) in cases {
            assert_eq!(parse_request(input, L).err(), Some(ProtocolError(text.to_string())));
        }
        assert_eq!(
            parse_request(b"*1\r\n$11\r\n", lim(10)).err(),
            Some(ProtocolError("invalid bulk length".into()))
        );
        let big = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(
            parse_request(&big, lim(1)).err(),
            Some(ProtocolError("too big inline request".into()))
        );
    }

    #[test]
    fn unauthenticated_clients_get_small_limits() {
        let u = Limits {
            max_bulk: 512 << 20,
            unauthenticated: true,
        };
        assert!(parse_request(b"*10\r\n", u).unwrap().is_none());
        assert_eq!(
            parse_request(b"*11\r\n", u).err(),
            Some(ProtocolError("unauthenticated multibulk length".into()))
        );
        assert_eq!(
            parse_request(b"*1\r\n$16385\r\n", u).err(),
            Some(ProtocolError("unauthenticated bulk length".into()))
        );
        assert_eq!(
            parse_request(b"*01\r\n", u).err(),
            Some(ProtocolError("invalid multibulk length".into()))
        );
        assert!(parse_request(b"*1\r\n$16384\r\n", u).unwrap().is_none());
    }

    /// Redis's quirks, kept: the byte after a header's CR need not be LF; a
    /// NUL before the end of a line leaves the request incomplete; VT and FF
    /// separate inline arguments only where one starts.
    #[test]
    fn redis_line_quirks() {
        assert_eq!(args_of(b"*1\rX$4\r\nPING\r\n"), vec![b"PING".to_vec()]);
        assert_eq!(args_of(b"*1\r\n$4\rXPING\r\n"), vec![b"PING".to_vec()]);
        assert!(parse_request(b"*1\x00\r\n$4\r\nPING\r\n", L).unwrap().is_none());
        assert!(parse_request(b"PING\x00\r\nPING\r\n", L).unwrap().is_none());
        let mut long = b"PING\x00".to_vec();
        long.resize(INLINE_MAX + 2, b'\n');
        assert_eq!(parse_request(&long, L).err(), Some(ProtocolError("too big inline request".into())));
        assert_eq!(
            args_of(b"SET a\x0bb 1\r\n"),
            vec![b"SET".to_vec(), b"a\x0bb".to_vec(), b"1".to_vec()]
        );
        assert_eq!(args_of(b"ECHO \x0c\x0ba\x0c\r\n"), vec![b"ECHO".to_vec(), b"a\x0c".to_vec()]);
        assert_eq!(args_of(b"ECHO 'a\x0bb'\r\n"), vec![b"ECHO".to_vec(), b"a\x0bb".to_vec()]);
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775808"), None);
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-"), None);
    }

    #[test]
    fn skipped_requests() {
        for input in [&b"*0\r\n"[..], b"*-1\r\n", b"\r\n", b"   \n"] {
            let f = parse_request(input, lim(1 << 20)).unwrap().unwrap();
            assert!(f.args.is_empty() && f.owned.is_none());
            assert_eq!(f.consumed, input.len());
        }
    }

    #[test]
    fn split_args_like_redis() {
        assert_eq!(
            split_args(b"a \"\\x41\\x4a\" 'b\\'c'").unwrap(),
            vec![b"a".to_vec(), b"AJ".to_vec(), b"b'c".to_vec()]
        );
        assert!(split_args(b"\"a\"b").is_none());
        assert!(split_args(b"'abc").is_none());
        assert_eq!(split_args(b"").unwrap(), Vec::<Vec<u8>>::new());
    }

    /// The parser's fuzz target, run in CI for a bounded number of cases:
    /// random requests (mutated valid ones and raw bytes) never panic, a
    /// parsed frame stays inside its input and does not change when more
    /// bytes follow, every strict prefix of a parsed frame asks for more,
    /// and an error stays the same error when more bytes follow.
    #[test]
    fn fuzz_parser_invariants() {
        let seeds: &[&[u8]] = &[
            b"*1\r\n$4\r\nPING\r\n",
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
            b"*2\r\n$4\r\nECHO\r\n$5\r\na\r\nbc\r\n",
            b"PING\r\n",
            b"set k \"a\\x41 b\" 'c'\r\n",
            b"*0\r\n",
            b"*-1\r\n",
            b"\r\n",
        ];
        let alphabet = b"*$-+0123456789\r\n \t\"'\\x\x00\x0b\x0cPINGab";
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n.max(1) as u64) as usize
        };
        let limits = [
            L,
            lim(16),
            Limits {
                max_bulk: 512 << 20,
                unauthenticated: true,
            },
        ];
        let mut seen = [0usize; 3];
        for case in 0..60_000 {
            let mut buf: Vec<u8> = if case % 5 == 0 {
                (0..next(40)).map(|_| next(256) as u8).collect()
            } else {
                seeds[next(seeds.len())].to_vec()
            };
            for _ in 0..next(4) {
                let at = next(buf.len() + 1);
                match next(4) {
                    0 if at < buf.len() => buf[at] = alphabet[next(alphabet.len())],
                    1 => buf.insert(at, alphabet[next(alphabet.len())]),
                    2 if at < buf.len() => {
                        buf.remove(at);
                    }
                    _ => buf.truncate(at),
                }
            }
            let lim = limits[next(limits.len())];
            let tail: &[u8] = [&b"*1\r\n$4\r\nPING\r\n"[..], b"\r\n", b"x"][next(3)];
            let mut longer = buf.clone();
            longer.extend_from_slice(tail);
            let shown = String::from_utf8_lossy(&buf).into_owned();
            match parse_request(&buf, lim) {
                Ok(Some(f)) => {
                    seen[0] += 1;
                    assert!(f.consumed > 0 && f.consumed <= buf.len(), "{shown:?}");
                    assert!(f.args.iter().all(|r| r.end <= f.consumed), "{shown:?}");
                    let g = parse_request(&longer, lim).unwrap_or_else(|e| panic!("{shown:?} then {e:?}"));
                    let g = g.unwrap_or_else(|| panic!("{shown:?} parsed, longer did not"));
                    assert_eq!((g.consumed, &g.args, &g.owned), (f.consumed, &f.args, &f.owned), "{shown:?}");
                    for cut in 0..f.consumed {
                        assert!(
                            matches!(parse_request(&buf[..cut], lim), Ok(None)),
                            "{shown:?}: prefix {cut} did not ask for more"
                        );
                    }
                }
                Ok(None) => seen[1] += 1,
                Err(e) => {
                    seen[2] += 1;
                    assert_eq!(parse_request(&longer, lim).err(), Some(e), "{shown:?}");
                }
            }
        }
        // Each outcome was reached often: the cases are not all alike.
        assert!(seen.iter().all(|n| *n > 5_000), "frames, incomplete, errors: {seen:?}");
    }
}
