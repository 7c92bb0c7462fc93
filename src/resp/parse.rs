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

/// Finds `\r\n` from `from`; returns the index of `\r`.
#[inline]
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr::memchr(b'\r', &buf[at..]) {
        let pos = at + i;
        if pos + 1 >= buf.len() {
            return None;
        }
        if buf[pos + 1] == b'\n' {
            return Some(pos);
        }
        at = pos + 1;
    }
    None
}

/// Parses a decimal length as Redis's `string2ll` would accept it.
#[inline]
fn parse_len(digits: &[u8]) -> Option<i64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let (neg, rest) = match digits[0] {
        b'-' => (true, &digits[1..]),
        _ => (false, digits),
    };
    if rest.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in rest {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as i64)?;
    }
    Some(if neg { -v } else { v })
}

/// Parses one request starting at `buf[0]`.
///
/// Returns `Ok(None)` when more bytes are
/// needed; `Ok(Some(frame))` with an empty `args` for requests Redis skips
/// silently (`*0`, `*-1`, empty inline lines).
pub fn parse_request(buf: &[u8], limits: Limits) -> Result<Option<Frame>, ProtocolError> {
    if buf.is_empty() {
        return Ok(None);
    }
    if buf[0] == b'*' {
        parse_multibulk(buf, limits)
    } else {
        parse_inline(buf)
    }
}

fn parse_multibulk(buf: &[u8], limits: Limits) -> Result<Option<Frame>, ProtocolError> {
    let max_count = if limits.unauthenticated {
        UNAUTH_MULTIBULK_LEN
    } else {
        MAX_MULTIBULK_LEN
    };
    let max_bulk = if limits.unauthenticated {
        limits.max_bulk.min(UNAUTH_BULK_LEN)
    } else {
        limits.max_bulk
    };
    let Some(eol) = find_crlf(buf, 1) else {
        if buf.len() > INLINE_MAX {
            return Err(ProtocolError("too big mbulk count string".into()));
        }
        return Ok(None);
    };
    let count = match parse_len(&buf[1..eol]) {
        Some(n) if n <= max_count => n,
        _ => return Err(ProtocolError("invalid multibulk length".into())),
    };
    let mut pos = eol + 2;
    if count <= 0 {
        return Ok(Some(Frame {
            consumed: pos,
            ..Frame::default()
        }));
    }
    // Cap the pre-allocation: a client may announce a million arguments and send none.
    let mut args = Vec::with_capacity((count as usize).min(64));
    for _ in 0..count {
        if pos >= buf.len() {
            return Ok(None);
        }
        if buf[pos] != b'$' {
            return Err(ProtocolError(format!("expected '$', got '{}'", buf[pos] as char)));
        }
        let Some(eol) = find_crlf(buf, pos + 1) else {
            if buf.len() - pos > INLINE_MAX {
                return Err(ProtocolError("too big bulk count string".into()));
            }
            return Ok(None);
        };
        let len = match parse_len(&buf[pos + 1..eol]) {
            Some(n) if (0..=max_bulk).contains(&n) => n as usize,
            _ => return Err(ProtocolError("invalid bulk length".into())),
        };
        let start = eol + 2;
        let end = start + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        // Redis does not check the trailing CRLF of a bulk; it skips two bytes.
        args.push(start..end);
        pos = end + 2;
    }
    Ok(Some(Frame {
        consumed: pos,
        args,
        owned: None,
    }))
}

fn parse_inline(buf: &[u8]) -> Result<Option<Frame>, ProtocolError> {
    let Some(nl) = memchr::memchr(b'\n', buf) else {
        if buf.len() > INLINE_MAX {
            return Err(ProtocolError("too big inline request".into()));
        }
        return Ok(None);
    };
    let consumed = nl + 1;
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' { nl - 1 } else { nl };
    let line = &buf[..line_end];
    // Fast path: no quotes, so arguments are plain ranges of the buffer.
    if memchr::memchr2(b'"', b'\'', line).is_none() {
        let mut args = Vec::new();
        let mut i = 0;
        while i < line.len() {
            while i < line.len() && is_space(line[i]) {
                i += 1;
            }
            let start = i;
            while i < line.len() && !is_space(line[i]) {
                i += 1;
            }
            if i > start {
                args.push(start..i);
            }
        }
        return Ok(Some(Frame {
            consumed,
            args,
            owned: None,
        }));
    }
    match split_args(line) {
        Some(owned) => Ok(Some(Frame {
            consumed,
            args: Vec::new(),
            owned: Some(owned),
        })),
        None => Err(ProtocolError("unbalanced quotes in request".into())),
    }
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
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
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
            Some(ProtocolError("invalid multibulk length".into()))
        );
        assert_eq!(
            parse_request(b"*1\r\n$16385\r\n", u).err(),
            Some(ProtocolError("invalid bulk length".into()))
        );
        assert!(parse_request(b"*1\r\n$16384\r\n", u).unwrap().is_none());
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
}
