//! Argument parsing as Redis does it: strict integers (`string2ll`), floats
//! (`strtold` minus NaN), case-insensitive option words.

use crate::error::{CmdError, CmdResult, NOT_FLOAT, NOT_INT};

/// Parses a whole argument as an i64, exactly as Redis's `string2ll`: no
/// spaces, no `+`, no leading zeros, at most 20 bytes.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    crate::resp::parse::string2ll(s)
}

/// A SCAN cursor, as Redis 7.2+'s `string2ull` reads it: a `string2ll`
/// number that is not negative, or else whatever C's `strtoull` takes whole
/// (leading spaces, `+`, leading zeros; a `-` there wraps, as in C).
/// Anything else is `ERR invalid cursor`.
pub fn scan_cursor(s: &[u8]) -> CmdResult<u64> {
    let invalid = || CmdError::new("ERR invalid cursor");
    if let Some(v) = parse_i64(s) {
        return u64::try_from(v).map_err(|_| invalid());
    }
    let start = s.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'));
    let t = &s[start.unwrap_or(s.len())..];
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// An integer argument or `ERR value is not an integer or out of range`.
pub fn int(s: &[u8]) -> CmdResult<i64> {
    parse_i64(s).ok_or(NOT_INT)
}

/// Parses a float as Redis's `string2ld`/`strtold`: no leading space, the
/// whole string consumed, NaN refused; `inf`/`-inf` accepted.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5120 || s[0].is_ascii_whitespace() {
        return None;
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

/// A float argument or `ERR value is not a valid float`.
pub fn float(s: &[u8]) -> CmdResult<f64> {
    parse_f64(s).ok_or(NOT_FLOAT)
}

/// Case-insensitive comparison of an argument with an option word.
#[inline]
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A database index argument for SELECT/MOVE/COPY DB.
pub fn db_index(s: &[u8], databases: usize) -> CmdResult<u8> {
    let v = int(s)?;
    if v < 0 || v as usize >= databases {
        return Err(crate::error::DB_INDEX);
    }
    Ok(v as u8)
}

/// Lossy text of an argument for error messages.
/// Client bytes as text. Bytes that are not UTF-8 survive as escapes that
/// an error reply writes back raw (`resp::reply::raw_text`), so an error
/// that quotes an argument quotes exactly what the client sent.
pub fn text(s: &[u8]) -> String {
    crate::resp::reply::raw_text(s)
}

pub fn err(s: impl Into<String>) -> CmdError {
    CmdError::new(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursors_like_redis_7_2() {
        let ok: &[(&[u8], u64)] = &[
            (b"0", 0),
            (b"17", 17),
            (b"01", 1),
            (b"+1", 1),
            (b" 1", 1),
            (b"18446744073709551615", u64::MAX),
            (b"-01", u64::MAX),
        ];
        for (s, want) in ok {
            assert_eq!(scan_cursor(s), Ok(*want), "{s:?}");
        }
        for s in [&b"-1"[..], b"18446744073709551616", b"", b"1 ", b"x", b"-", b" "] {
            assert_eq!(scan_cursor(s), Err(CmdError::new("ERR invalid cursor")), "{s:?}");
        }
    }

    #[test]
    fn integers_like_string2ll() {
        for (s, want) in [
            ("0", Some(0)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("01", None),
            ("-0", None),
            ("+1", None),
            (" 1", None),
            ("1 ", None),
            ("", None),
            ("1.0", None),
        ] {
            assert_eq!(parse_i64(s.as_bytes()), want, "{s}");
        }
    }

    #[test]
    fn floats_like_strtold() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"5e3"), Some(5000.0));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1x"), None);
        assert_eq!(parse_f64(b""), None);
    }
}
