//! Argument parsing as Redis does it: strict integers (`string2ll`), floats
//! (`strtold` minus NaN), case-insensitive option words, and [`Args`], the
//! cursor every handler reads its arguments with (mini-redis's `Parse`,
//! Kvrocks' `CommandParser`, Dragonfly's `CmdArgParser`).

use bytes::Bytes;

use crate::error::{CmdError, CmdResult, NOT_FLOAT, NOT_INT, SYNTAX};

/// A cursor over a command's arguments, after its name. The command table
/// has checked the arity, so a missing argument is an option without its
/// value: `ERR syntax error`, as Redis answers `SET k v EX`. [`finish`]
/// refuses leftovers the same way.
///
/// [`finish`]: Args::finish
#[derive(Clone, Copy)]
pub struct Args<'a> {
    argv: &'a [Bytes],
    pos: usize,
}

impl<'a> Args<'a> {
    /// The arguments after the command's name.
    #[inline]
    pub fn new(argv: &'a [Bytes]) -> Args<'a> {
        Args { argv, pos: 1 }
    }

    /// The arguments from `pos` (a container command's after its
    /// subcommand: `Args::at(argv, 2)`).
    #[inline]
    pub fn at(argv: &'a [Bytes], pos: usize) -> Args<'a> {
        Args { argv, pos }
    }

    /// How many arguments are left.
    #[inline]
    pub fn left(&self) -> usize {
        self.argv.len().saturating_sub(self.pos)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.left() == 0
    }

    /// The next argument, not consumed.
    #[inline]
    pub fn peek(&self) -> Option<&'a Bytes> {
        self.argv.get(self.pos)
    }

    /// The next argument as the `Bytes` it is (a slice of the request).
    #[inline]
    pub fn arg(&mut self) -> CmdResult<&'a Bytes> {
        let a = self.argv.get(self.pos).ok_or(SYNTAX)?;
        self.pos += 1;
        Ok(a)
    }

    /// The next argument's bytes: a key, a value, a member.
    #[inline]
    pub fn bytes(&mut self) -> CmdResult<&'a [u8]> {
        self.arg().map(|b| &b[..])
    }

    /// A key: the next argument's bytes.
    #[inline]
    pub fn key(&mut self) -> CmdResult<&'a [u8]> {
        self.bytes()
    }

    /// The next argument as a `string2ll` integer, or Redis's
    /// `ERR value is not an integer or out of range`.
    #[inline]
    pub fn int(&mut self) -> CmdResult<i64> {
        int(self.arg()?)
    }

    /// The next argument as a float, or `ERR value is not a valid float`.
    pub fn float(&mut self) -> CmdResult<f64> {
        float(self.arg()?)
    }

    /// Consumes the next argument if it is the option word `word` (any
    /// case).
    #[inline]
    pub fn flag(&mut self, word: &str) -> bool {
        match self.peek() {
            Some(a) if is(a, word) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// Consumes the next argument if it is the option word `word` and at
    /// least `values` arguments follow it. Redis reads a word whose value
    /// is missing as an unknown word (`SCAN 0 COUNT` is a syntax error, not
    /// a read past the end).
    #[inline]
    pub fn option(&mut self, word: &str, values: usize) -> bool {
        self.left() > values && self.flag(word)
    }

    /// Consumes the next argument if it is one of `words` (any case), and
    /// says which.
    #[inline]
    pub fn word(&mut self, words: &[&str]) -> Option<usize> {
        let w = one_of(self.peek()?, words)?;
        self.pos += 1;
        Some(w)
    }

    /// Every argument left, consumed.
    #[inline]
    pub fn rest(&mut self) -> &'a [Bytes] {
        let r = self.argv.get(self.pos..).unwrap_or(&[]);
        self.pos = self.argv.len();
        r
    }

    /// `ERR syntax error` if any argument is left.
    #[inline]
    pub fn finish(&self) -> CmdResult<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(SYNTAX)
        }
    }
}

/// The options of SCAN, HSCAN and SSCAN: `[MATCH pattern] [COUNT n]`, plus
/// `TYPE t` for SCAN and `NOVALUES` for HSCAN, in any order, each may
/// repeat (the last wins), as Redis's `scanGenericCommand` reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanOpts {
    pub pattern: Option<Bytes>,
    pub count: usize,
    /// SCAN's TYPE, lower case.
    pub ty: Option<String>,
    /// HSCAN's NOVALUES.
    pub novalues: bool,
}

/// Which of the options only some scans take [`ScanOpts::parse`] accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    /// SCAN: TYPE.
    Keys,
    /// HSCAN: NOVALUES.
    Hash,
    /// SSCAN (and ZSCAN): neither.
    Members,
}

impl ScanOpts {
    /// Reads the options after the cursor; a COUNT below 1 or an unknown
    /// word is `ERR syntax error`.
    pub fn parse(a: &mut Args, kind: ScanKind) -> CmdResult<ScanOpts> {
        let mut o = ScanOpts {
            pattern: None,
            count: 10,
            ty: None,
            novalues: false,
        };
        while !a.is_empty() {
            if a.option("match", 1) {
                o.pattern = Some(a.arg()?.clone());
            } else if a.option("count", 1) {
                let c = a.int()?;
                if c < 1 {
                    return Err(SYNTAX);
                }
                o.count = c as usize;
            } else if kind == ScanKind::Keys && a.option("type", 1) {
                o.ty = Some(text(a.arg()?).to_ascii_lowercase());
            } else if kind == ScanKind::Hash && a.flag("novalues") {
                o.novalues = true;
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(o)
    }
}

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

pub use crate::resp::parse::parse_f64;

/// A float argument or `ERR value is not a valid float`.
pub fn float(s: &[u8]) -> CmdResult<f64> {
    parse_f64(s).ok_or(NOT_FLOAT)
}

/// Case-insensitive comparison of an argument with an option word.
#[inline]
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Which of `words` (any case) `arg` is.
#[inline]
pub fn one_of(arg: &[u8], words: &[&str]) -> Option<usize> {
    words.iter().position(|w| is(arg, w))
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

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn the_cursor_reads_in_order_and_refuses_leftovers() {
        let v = argv(&["SET", "k", "v", "ex", "10", "NX"]);
        let mut a = Args::new(&v);
        assert_eq!(a.key(), Ok(&b"k"[..]));
        assert_eq!(a.bytes(), Ok(&b"v"[..]));
        assert!(!a.flag("px"));
        assert!(!a.option("EX", 3), "needs three values after it, two follow");
        assert!(a.option("EX", 1));
        assert_eq!(a.int(), Ok(10));
        assert_eq!(a.left(), 1);
        assert_eq!(a.finish(), Err(SYNTAX));
        assert_eq!(a.word(&["xx", "px"]), None);
        assert_eq!(a.word(&["xx", "nx"]), Some(1));
        assert_eq!(a.finish(), Ok(()));
        assert_eq!(a.arg(), Err(SYNTAX));
        assert_eq!(a.rest(), &[] as &[Bytes]);
    }

    #[test]
    fn the_cursor_gives_redis_errors_for_numbers() {
        let v = argv(&["INCRBY", "k", "1.5", "x", "-inf"]);
        let mut a = Args::at(&v, 2);
        assert_eq!(a.int(), Err(NOT_INT));
        assert_eq!(a.float(), Err(NOT_FLOAT));
        assert_eq!(a.float(), Ok(f64::NEG_INFINITY));
        assert!(a.is_empty());
    }

    #[test]
    fn scan_options_as_redis_reads_them() {
        let parse = |words: &[&str], kind| {
            let v = argv(words);
            ScanOpts::parse(&mut Args::at(&v, 0), kind)
        };
        let o = parse(&["match", "a*", "COUNT", "5", "type", "HASH"], ScanKind::Keys).unwrap();
        assert_eq!(o.pattern.as_deref(), Some(&b"a*"[..]));
        assert_eq!((o.count, o.ty.as_deref(), o.novalues), (5, Some("hash"), false));
        // The last of a repeated option wins; NOVALUES only for HSCAN.
        let o = parse(&["count", "5", "novalues", "count", "7"], ScanKind::Hash).unwrap();
        assert_eq!((o.count, o.novalues), (7, true));
        assert_eq!(parse(&["novalues"], ScanKind::Members), Err(SYNTAX));
        assert_eq!(parse(&["type", "string"], ScanKind::Hash), Err(SYNTAX));
        assert_eq!(parse(&["count", "0"], ScanKind::Keys), Err(SYNTAX));
        assert_eq!(parse(&["count", "x"], ScanKind::Keys), Err(NOT_INT));
        // A word whose value is missing is a syntax error, not a read past the end.
        assert_eq!(parse(&["match"], ScanKind::Keys), Err(SYNTAX));
        assert_eq!(parse(&[], ScanKind::Members).map(|o| o.count), Ok(10));
    }

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
