//! The reply writer: RESP2 and RESP3 encodings into one output buffer.
//!
// Hot path: every reply goes through here. Integers are formatted with
// `itoa`-style stack buffers, never `format!`; nothing allocates except the
// output buffer growing.
//
//! A `Reply` knows the connection's protocol version and picks the encoding
//! (RESP2 `$-1` vs RESP3 `_` for nulls, `%` maps vs flat arrays, ...), so
//! command handlers say what they mean and not how it is spelled.

/// An output buffer plus the protocol version it speaks.
#[derive(Debug, Default, Clone)]
pub struct Reply {
    pub buf: Vec<u8>,
    pub resp3: bool,
}

/// The decimal digits of `n`, written at the end of `tmp`.
#[inline]
pub fn u64_digits(mut n: u64, tmp: &mut [u8; 20]) -> &[u8] {
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &tmp[i..]
}

/// The decimal digits of `v` with its sign, written at the end of `tmp`
/// (`i64::MIN` has 19 digits and a sign).
#[inline]
pub fn i64_digits(v: i64, tmp: &mut [u8; 21]) -> &[u8] {
    let mut d = [0u8; 20];
    let digits = u64_digits(v.unsigned_abs(), &mut d);
    let start = tmp.len() - digits.len();
    tmp[start..].copy_from_slice(digits);
    if v < 0 {
        tmp[start - 1] = b'-';
        return &tmp[start - 1..];
    }
    &tmp[start..]
}

fn write_i64(buf: &mut Vec<u8>, v: i64) {
    let mut tmp = [0u8; 20];
    if v < 0 {
        buf.push(b'-');
    }
    buf.extend_from_slice(u64_digits(v.unsigned_abs(), &mut tmp));
}

/// Formats a double the way Redis 7.2+ replies with one (`d2string`): an
/// integral value within ±2^62 as an integer; else the shortest digits
/// that read back as the same double (`fpconv_dtoa`), as a plain integer
/// while the exponent is below the digit count + 7, as a decimal while it
/// is above -7 (or the exponent below 4), else `d.ddde±x` (no exponent
/// padding); `inf`, `-inf`, `nan`, and `-0` for negative zero.
pub fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_infinite() {
        return format!("{sign}inf");
    }
    if v == 0.0 {
        return format!("{sign}0");
    }
    const HALF_LLONG: f64 = (i64::MAX / 2) as f64;
    if (-HALF_LLONG..=HALF_LLONG).contains(&v) && v.fract() == 0.0 {
        return (v as i64).to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde-x".
    let e = format!("{:e}", v.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let lead: i64 = exp.parse().unwrap_or(0);
    let n = digits.len() as i64;
    // value = digits x 10^k
    let k = lead - (n - 1);
    let abs_exp = lead.abs();
    let body = if k >= 0 && abs_exp < n + 7 {
        format!("{digits}{}", "0".repeat(k as usize))
    } else if k < 0 && (k > -7 || abs_exp < 4) {
        let point = n + k;
        if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        }
    } else {
        let rest = if n > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        format!("{}{rest}e{}{abs_exp}", &digits[..1], if lead < 0 { '-' } else { '+' })
    };
    format!("{sign}{body}")
}

impl Reply {
    pub fn new(resp3: bool) -> Self {
        Reply {
            buf: Vec::with_capacity(256),
            resp3,
        }
    }

    #[inline]
    fn header(&mut self, tag: u8, n: i64) {
        self.buf.push(tag);
        write_i64(&mut self.buf, n);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK`.
    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// A simple string. Must not contain CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// An error line; `msg` is the whole text including its code (`ERR ...`).
    /// CR and LF are replaced by spaces, as Redis does. Client bytes that
    /// [`raw_text`] escaped go out as the raw bytes they stand for.
    pub fn error(&mut self, msg: &str) {
        self.buf.push(b'-');
        let mut rest = msg;
        while let Some(i) = rest.find(|c: char| (RAW_BASE..=RAW_LAST).contains(&(c as u32))) {
            push_error_bytes(&mut self.buf, &rest.as_bytes()[..i]);
            let c = rest[i..].chars().next().map_or(0, |c| c as u32);
            push_error_bytes(&mut self.buf, &[(c - RAW_BASE) as u8]);
            rest = &rest[i + 4..];
        }
        push_error_bytes(&mut self.buf, rest.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, v: i64) {
        self.header(b':', v);
    }

    #[inline]
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string built from parts, without joining them first.
    pub fn bulk_parts(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.header(b'$', len as i64);
        for p in parts {
            self.buf.extend_from_slice(p);
        }
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn bulk_i64(&mut self, v: i64) {
        let mut tmp = Vec::with_capacity(20);
        write_i64(&mut tmp, v);
        self.bulk(&tmp);
    }

    /// A null bulk string (`$-1` / `_`).
    #[inline]
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// A null array (`*-1` / `_`).
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map of `n` pairs: `%n` in RESP3, an array of `2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// An out-of-band message of `n` elements (pub/sub, MONITOR): `>n` in
    /// RESP3, an array in RESP2.
    pub fn push(&mut self, n: usize) {
        self.header(if self.resp3 { b'>' } else { b'*' }, n as i64);
    }

    /// A set of `n` elements: `~n` in RESP3, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        self.header(if self.resp3 { b'~' } else { b'*' }, n as i64);
    }

    /// A double: `,` in RESP3, a bulk string in RESP2.
    pub fn double(&mut self, v: f64) {
        self.double_text(&format_double(v));
    }

    /// A double already written as text: `,` in RESP3, a bulk string in
    /// RESP2 (GEOPOS's coordinates, in Redis's own digits).
    pub fn double_text(&mut self, s: &str) {
        if self.resp3 {
            self.buf.push(b',');
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// A verbatim string (`=` with `txt:` in RESP3), a bulk string in RESP2.
    pub fn verbatim(&mut self, text: &str) {
        self.verbatim_as(b"txt", text.as_bytes());
    }

    /// A verbatim string of `format` (its first 3 bytes) in RESP3, a bulk
    /// string in RESP2.
    pub fn verbatim_as(&mut self, format: &[u8], text: &[u8]) {
        if self.resp3 {
            self.header(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(&format[..format.len().min(3)]);
            self.buf.push(b':');
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// A big number (`(` in RESP3), a bulk string in RESP2. Must not
    /// contain CR or LF.
    pub fn big_number(&mut self, digits: &[u8]) {
        if self.resp3 {
            self.buf.push(b'(');
            self.buf.extend_from_slice(digits);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(digits);
        }
    }

    /// An array of bulk strings.
    pub fn bulk_array<T: AsRef<[u8]>>(&mut self, items: &[T]) {
        self.array(items.len());
        for i in items {
            self.bulk(i.as_ref());
        }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

/// First of the 256 code points (in Unicode's supplementary private use
/// area B, four UTF-8 bytes each) that stand for raw client bytes in text.
const RAW_BASE: u32 = 0x10_FF00;
const RAW_LAST: u32 = RAW_BASE + 0xFF;

/// Client bytes as text for an error message: valid UTF-8 stays as it is;
/// a byte of an invalid sequence, and every byte of a character that falls
/// in the escape range itself, becomes the escape char `RAW_BASE + byte`.
/// [`Reply::error`] writes each escape back as its byte, so errors echo
/// exactly what the client sent (`unknown command '\xff'`), as Redis's do,
/// where `from_utf8_lossy` would send U+FFFD.
pub fn raw_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let escape = |out: &mut String, bytes: &[u8]| {
        for &b in bytes {
            out.push(char::from_u32(RAW_BASE + b as u32).unwrap_or('?'));
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if (RAW_BASE..=RAW_LAST).contains(&(c as u32)) {
                let mut b = [0u8; 4];
                escape(&mut out, c.encode_utf8(&mut b).as_bytes());
            } else {
                out.push(c);
            }
        }
        escape(&mut out, chunk.invalid());
    }
    out
}

/// Error text bytes with CR and LF turned into spaces.
fn push_error_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.extend(bytes.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
}

#[cfg(test)]
mod tests {
    #[test]
    fn i64_digits_are_display_s() {
        for v in [0i64, 1, -1, 9, 10, -10, 12345, i64::MAX, i64::MIN, i64::MIN + 1] {
            let mut tmp = [0u8; 21];
            assert_eq!(i64_digits(v, &mut tmp), v.to_string().as_bytes());
        }
    }

    use super::*;

    fn out(resp3: bool, f: impl FnOnce(&mut Reply)) -> String {
        let mut r = Reply::new(resp3);
        f(&mut r);
        String::from_utf8(r.buf).unwrap()
    }

    type Case = (bool, Box<dyn Fn(&mut Reply)>, &'static str);

    #[test]
    fn encodings() {
        let cases: Vec<Case> = vec![
            (false, Box::new(|r| r.int(-42)), ":-42\r\n"),
            (false, Box::new(|r| r.int(i64::MIN)), ":-9223372036854775808\r\n"),
            (false, Box::new(|r| r.bulk(b"hi")), "$2\r\nhi\r\n"),
            (false, Box::new(|r| r.null()), "$-1\r\n"),
            (true, Box::new(|r| r.null()), "_\r\n"),
            (false, Box::new(|r| r.null_array()), "*-1\r\n"),
            (false, Box::new(|r| r.map(2)), "*4\r\n"),
            (true, Box::new(|r| r.map(2)), "%2\r\n"),
            (true, Box::new(|r| r.set(3)), "~3\r\n"),
            (false, Box::new(|r| r.double(1.5)), "$3\r\n1.5\r\n"),
            (true, Box::new(|r| r.double(3.0)), ",3\r\n"),
            (false, Box::new(|r| r.error("ERR a\r\nb")), "-ERR a  b\r\n"),
            (true, Box::new(|r| r.verbatim("x")), "=5\r\ntxt:x\r\n"),
        ];
        for (resp3, f, want) in cases {
            assert_eq!(out(resp3, |r| f(r)), want);
        }
    }

    #[test]
    fn doubles_like_redis() {
        assert_eq!(format_double(10.5), "10.5");
        assert_eq!(format_double(3.0), "3");
        assert_eq!(format_double(5.0e3), "5000");
        assert_eq!(format_double(f64::INFINITY), "inf");
        assert_eq!(format_double(1e20), "1e+20");
        assert_eq!(format_double(0.1 + 0.2), "0.30000000000000004");
        // Redis 7.2+'s d2string: integers, then fpconv_dtoa's layouts.
        let cases: &[(f64, &str)] = &[
            (1.1, "1.1"),
            (-2.25, "-2.25"),
            (1e8, "100000000"),
            (1e18, "1000000000000000000"),
            (5e18, "5e+18"),
            (1.5e19, "1.5e+19"),
            (1.2345678901234567e19, "12345678901234567000"),
            (1e20, "1e+20"),
            (1e-5, "0.00001"),
            (0.000123, "0.000123"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1234.5678, "1234.5678"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-0.0, "-0"),
            (0.0, "0"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for &(v, want) in cases {
            assert_eq!(format_double(v), want, "{v:e}");
        }
    }

    /// Client bytes quoted in an error come back byte for byte: invalid
    /// UTF-8, valid UTF-8, and characters of the escape range itself.
    #[test]
    fn errors_echo_raw_client_bytes() {
        let cases: &[&[u8]] = &[b"\xff\xfe", b"caf\xc3\xa9", b"\xf4\x8f\xbc\x80x", b"a\xc3", b"plain", b""];
        for &bytes in cases {
            let mut r = Reply::new(false);
            r.error(&format!("ERR unknown command '{}'", raw_text(bytes)));
            let mut want = b"-ERR unknown command '".to_vec();
            want.extend_from_slice(bytes);
            want.extend_from_slice(b"'\r\n");
            assert_eq!(r.buf, want, "{bytes:?}");
        }
    }
}
