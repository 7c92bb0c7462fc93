//! Unit tests of the request parser (`parse.rs`).

use super::*;

/// The one-pass header agrees with the general path wherever it answers.
#[test]
fn quick_header_agrees_with_the_general_path() {
    let general = |b: &[u8]| find_header_end(b, 0).and_then(|e| string2ll(&b[..e]).map(|n| (n, e)));
    let cases: &[&[u8]] = &[
        b"0\r\n",
        b"3\r\n",
        b"100\r\n",
        b"999999999999999999\r\n",
        b"9999999999999999999\r\n",
        b"9223372036854775807\r\n",
        b"03\r\n",
        b"-1\r\n",
        b"12",
        b"12\r",
        b"1x\r\n",
        b"\r\n",
        b"",
        b"1\x002\r\n",
        b" 1\r\n",
    ];
    for &c in cases {
        if let Some(q) = quick_header(c, 0) {
            assert_eq!(Some(q), general(c), "{:?}", String::from_utf8_lossy(c));
        }
    }
    assert_eq!(quick_header(b"999999999999999999\r\n", 0), Some((999_999_999_999_999_999, 18)));
    assert_eq!(quick_header(b"9999999999999999999\r\n", 0), None, "19 digits: the general path");
    assert_eq!(quick_header(b"03\r\n", 0), None);
    assert_eq!(quick_header(b"12\r", 0), None, "no byte after the CR yet");
}

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
