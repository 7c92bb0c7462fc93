//! Bitmaps are strings: bit 0 is the most significant bit of byte 0, as in
//! Redis. The logic of SETBIT/GETBIT/BITCOUNT/BITPOS/BITFIELD/BITOP over
//! byte slices; `cmd::bits` reads and writes only the bytes (a big
//! string's chunks) a command reaches.

/// BITFIELD's overflow policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A BITFIELD type: `i1`..`i64` or `u1`..`u63`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub signed: bool,
    pub bits: u32,
}

impl Field {
    /// `i8`, `u16`, ... (lowercase, a plain decimal width, as Redis).
    pub fn parse(s: &[u8]) -> Option<Field> {
        let (signed, digits) = match s.split_first()? {
            (b'i', rest) => (true, rest),
            (b'u', rest) => (false, rest),
            _ => return None,
        };
        if digits.is_empty() || digits.len() > 2 || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let bits: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(Field { signed, bits })
    }

    /// The field's value from its raw bits (sign-extended when signed).
    pub fn value(self, raw: u64) -> i64 {
        if self.signed && self.bits < 64 && raw >> (self.bits - 1) & 1 == 1 {
            (raw | (u64::MAX << self.bits)) as i64
        } else {
            raw as i64
        }
    }

    /// `value + incr` for this type under `ow`: Some(new value) to store,
    /// or None when it overflows and `ow` is FAIL. A SET is `incr` 0 with
    /// `value` the argument; an unsigned SET reads it as a u64, so
    /// `SET u8 0 -1` overflows upwards.
    ///
    /// The overflow test is Redis's, with its 64-bit wrapping: the room
    /// left above the value (`max - value`) wraps negative for a signed
    /// value far below the type's minimum, so `SET i52 0 <i64::MIN>`
    /// counts as an overflow upwards and saturates to the maximum, as in
    /// redis-server.
    pub fn add(self, value: i64, incr: i64, ow: Overflow) -> Option<i64> {
        let (up, down) = if self.signed {
            let max = if self.bits == 64 { i64::MAX } else { (1i64 << (self.bits - 1)) - 1 };
            let min = -max - 1;
            let room_up = (max as u64).wrapping_sub(value as u64) as i64;
            let room_down = min.wrapping_sub(value);
            let narrow = self.bits != 64;
            let up = value > max || (narrow && incr > room_up) || (value >= 0 && incr > 0 && incr > room_up);
            let down = !up && (value < min || (narrow && incr < room_down) || (value < 0 && incr < 0 && incr < room_down));
            (up.then_some(max), down.then_some(min))
        } else {
            let v = value as u64;
            let max = (1u64 << self.bits) - 1;
            let room_up = max.wrapping_sub(v) as i64;
            let room_down = v.wrapping_neg() as i64;
            let up = v > max || (incr > 0 && incr > room_up);
            let down = !up && incr < 0 && incr < room_down;
            (up.then_some(max as i64), down.then_some(0))
        };
        let sum = (value as u64).wrapping_add(incr as u64);
        match (up.or(down), ow) {
            (None, _) => Some(sum as i64),
            (Some(_), Overflow::Fail) => None,
            (Some(limit), Overflow::Sat) => Some(limit),
            (Some(_), Overflow::Wrap) => {
                let low = if self.bits == 64 { sum } else { sum & !(u64::MAX << self.bits) };
                Some(self.value(low))
            }
        }
    }
}

/// Bit `offset` of `v` (0 past its end).
pub fn get_bit(v: &[u8], offset: u64) -> u8 {
    match v.get((offset >> 3) as usize) {
        Some(b) => (b >> (7 - (offset & 7))) & 1,
        None => 0,
    }
}

/// `b` with bit `offset % 8` (from the top) set to `on`.
pub fn with_bit(b: u8, offset: u64, on: bool) -> u8 {
    let mask = 1u8 << (7 - (offset & 7));
    if on {
        b | mask
    } else {
        b & !mask
    }
}

/// The `bits` bits of `v` (zero-extended past its end) from bit `offset`,
/// most significant first, as an unsigned number. `v` starts at byte
/// `base` of the string.
pub fn get_field(v: &[u8], base: u64, offset: u64, bits: u32) -> u64 {
    let mut out = 0u64;
    for i in 0..bits as u64 {
        let at = offset + i - base * 8;
        out = (out << 1) | get_bit(v, at) as u64;
    }
    out
}

/// Writes the low `bits` bits of `value` at bit `offset` of `v` (which
/// starts at byte `base` of the string and covers the field).
pub fn set_field(v: &mut [u8], base: u64, offset: u64, bits: u32, value: u64) {
    for i in 0..bits as u64 {
        let at = offset + i - base * 8;
        let on = (value >> (bits as u64 - 1 - i)) & 1 == 1;
        if let Some(b) = v.get_mut((at >> 3) as usize) {
            *b = with_bit(*b, at, on);
        }
    }
}

/// A range of BITCOUNT/BITPOS resolved to bits: `[first, last]` of the
/// string, or None when empty. `start`/`end` count bytes, or bits when
/// `bit`; negative ones count from the end; `len` is the string's bytes.
/// (BITCOUNT alone also answers 0 at once for two negative bounds in the
/// wrong order; BITPOS clamps them like any others.)
pub fn bit_range(len: u64, start: i64, end: i64, bit: bool) -> Option<(u64, u64)> {
    let total = if bit { len as i128 * 8 } else { len as i128 };
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += total;
    }
    if e < 0 {
        e += total;
    }
    s = s.max(0);
    e = e.max(0);
    if e >= total {
        e = total - 1;
    }
    if s > e {
        return None;
    }
    Some(if bit {
        (s as u64, e as u64)
    } else {
        (s as u64 * 8, e as u64 * 8 + 7)
    })
}

/// Set bits of `v` (which starts at byte `base` of the string) within the
/// string's bits `[first, last]`.
pub fn count_bits(v: &[u8], base: u64, first: u64, last: u64) -> u64 {
    let lo = first.saturating_sub(base * 8);
    let hi = (last + 1).saturating_sub(base * 8).min(v.len() as u64 * 8);
    if lo >= hi {
        return 0;
    }
    let (fb, lb) = (lo >> 3, (hi - 1) >> 3);
    let mut n = popcount(&v[fb as usize..=lb as usize]);
    // The bits of the edge bytes outside the range.
    let head = v[fb as usize] & !(0xffu8 >> (lo & 7));
    let tail_keep = (hi - 1) & 7; // bits kept in the last byte: 0..=tail_keep
    let tail = v[lb as usize] & (0x7fu8 >> tail_keep);
    n -= head.count_ones() as u64;
    n -= tail.count_ones() as u64;
    n
}

/// Set bits in `v`, with the CPU's population count when it has one:
/// without it, `count_ones` is a dozen shifts and masks a word, 73% of a
/// BITCOUNT of 1 MiB (perf record, tuning.md "Bitmaps").
fn popcount(v: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: both features were detected on this CPU just above.
            return unsafe { popcount_avx2(v) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the feature was detected on this CPU just above.
            return unsafe { popcount_popcnt(v) };
        }
    }
    popcount_words(v)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn popcount_avx2(v: &[u8]) -> u64 {
    popcount_words(v)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn popcount_popcnt(v: &[u8]) -> u64 {
    popcount_words(v)
}

/// Set bits in `v`, eight bytes at a time; inlined into the callers above
/// so it compiles with their CPU features.
#[inline(always)]
fn popcount_words(v: &[u8]) -> u64 {
    // A plain loop: an iterator's `sum` compiled as a call of its own,
    // outside the CPU features of the function it was written in.
    let mut n = 0u64;
    let mut i = 0;
    while i + 8 <= v.len() {
        let w = u64::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5], v[i + 6], v[i + 7]]);
        n += w.count_ones() as u64;
        i += 8;
    }
    while i < v.len() {
        n += v[i].count_ones() as u64;
        i += 1;
    }
    n
}

/// The first bit equal to `bit` in the string's bits `[first, last]`, looking
/// in `v` (which starts at byte `base`); None when `v` has none there.
pub fn find_bit(v: &[u8], base: u64, first: u64, last: u64, bit: bool) -> Option<u64> {
    let lo = first.saturating_sub(base * 8);
    let hi = (last + 1).saturating_sub(base * 8).min(v.len() as u64 * 8);
    let mut at = lo;
    while at < hi {
        let byte = v[(at >> 3) as usize];
        let want_any = if bit { byte != 0 } else { byte != 0xff };
        if at & 7 == 0 && hi - at >= 8 && !want_any {
            at += 8;
            continue;
        }
        if (get_bit(v, at) == 1) == bit {
            return Some(at + base * 8);
        }
        at += 1;
    }
    None
}

/// BITOP's operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
    /// X and not (any of the others).
    Diff,
    /// Not X and (any of the others).
    Diff1,
    /// X and (any of the others).
    AndOr,
    /// Bits set in exactly one source.
    One,
}

impl BitOp {
    pub fn parse(s: &[u8]) -> Option<BitOp> {
        Some(match s.to_ascii_lowercase().as_slice() {
            b"and" => BitOp::And,
            b"or" => BitOp::Or,
            b"xor" => BitOp::Xor,
            b"not" => BitOp::Not,
            b"diff" => BitOp::Diff,
            b"diff1" => BitOp::Diff1,
            b"andor" => BitOp::AndOr,
            b"one" => BitOp::One,
            _ => return None,
        })
    }

    /// The result of the operator over `srcs` (missing keys are empty),
    /// as long as the longest; shorter sources read as zeros.
    pub fn apply(self, srcs: &[Vec<u8>]) -> Vec<u8> {
        let len = srcs.iter().map(Vec::len).max().unwrap_or(0);
        let at = |s: &Vec<u8>, i: usize| s.get(i).copied().unwrap_or(0);
        let mut out = vec![0u8; len];
        for (i, o) in out.iter_mut().enumerate() {
            *o = match self {
                BitOp::And => srcs.iter().fold(0xff, |a, s| a & at(s, i)),
                BitOp::Or => srcs.iter().fold(0, |a, s| a | at(s, i)),
                BitOp::Xor => srcs.iter().fold(0, |a, s| a ^ at(s, i)),
                BitOp::Not => !at(&srcs[0], i),
                BitOp::Diff | BitOp::Diff1 | BitOp::AndOr => {
                    let others = srcs[1..].iter().fold(0, |a, s| a | at(s, i));
                    let x = at(&srcs[0], i);
                    match self {
                        BitOp::Diff => x & !others,
                        BitOp::Diff1 => !x & others,
                        _ => x & others,
                    }
                }
                BitOp::One => {
                    // Bits seen once, minus bits seen again.
                    let (mut once, mut more) = (0u8, 0u8);
                    for s in srcs {
                        let b = at(s, i);
                        more |= once & b;
                        once ^= b & !more;
                        once &= !more;
                    }
                    once
                }
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_count_from_the_top_of_each_byte() {
        let v = [0b1000_0001u8, 0xff];
        assert_eq!(get_bit(&v, 0), 1);
        assert_eq!(get_bit(&v, 1), 0);
        assert_eq!(get_bit(&v, 7), 1);
        assert_eq!(get_bit(&v, 100), 0);
        assert_eq!(with_bit(0, 0, true), 0x80);
        assert_eq!(with_bit(0xff, 7, false), 0xfe);
    }

    #[test]
    fn types_parse_as_redis_accepts_them() {
        assert_eq!(Field::parse(b"i64"), Some(Field { signed: true, bits: 64 }));
        assert_eq!(Field::parse(b"u63"), Some(Field { signed: false, bits: 63 }));
        assert_eq!(Field::parse(b"u1"), Some(Field { signed: false, bits: 1 }));
        for bad in [&b"u64"[..], b"U8", b"i65", b"i0", b"i08", b"u", b"x8", b"i-1", b"i+8", b"", b"i 8"] {
            assert_eq!(Field::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn overflow_follows_the_policy() {
        let u8t = Field { signed: false, bits: 8 };
        assert_eq!(u8t.add(250, 10, Overflow::Wrap), Some(4));
        assert_eq!(u8t.add(250, 10, Overflow::Sat), Some(255));
        assert_eq!(u8t.add(250, 10, Overflow::Fail), None);
        assert_eq!(u8t.add(5, -10, Overflow::Sat), Some(0));
        assert_eq!(u8t.add(5, -10, Overflow::Wrap), Some(251));
        // An unsigned SET of -1 is 2^64-1: too big, wrapped to 255.
        assert_eq!(u8t.add(-1, 0, Overflow::Wrap), Some(255));
        assert_eq!(u8t.add(-1, 0, Overflow::Sat), Some(255));
        let i8t = Field { signed: true, bits: 8 };
        assert_eq!(i8t.add(100, 100, Overflow::Wrap), Some(-56));
        assert_eq!(i8t.add(100, 100, Overflow::Sat), Some(127));
        assert_eq!(i8t.add(-100, -100, Overflow::Sat), Some(-128));
        assert_eq!(i8t.add(-100, -100, Overflow::Wrap), Some(56));
        assert_eq!(i8t.add(-129, 0, Overflow::Fail), None);
        let i64t = Field { signed: true, bits: 64 };
        assert_eq!(i64t.add(i64::MAX, 1, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(i64t.add(i64::MAX, 1, Overflow::Sat), Some(i64::MAX));
        assert_eq!(i64t.add(i64::MIN, -1, Overflow::Sat), Some(i64::MIN));
        let u1 = Field { signed: false, bits: 1 };
        assert_eq!(u1.add(1, 1, Overflow::Wrap), Some(0));
        let i1 = Field { signed: true, bits: 1 };
        assert_eq!(i1.value(1), -1);
        assert_eq!(i1.add(0, 1, Overflow::Sat), Some(0));
    }

    #[test]
    fn fields_read_and_write_across_bytes() {
        let mut v = vec![0u8; 4];
        set_field(&mut v, 0, 5, 12, 0xabc);
        assert_eq!(get_field(&v, 0, 5, 12), 0xabc);
        assert_eq!(get_field(&v[1..], 1, 8, 8), (0xabc >> 1) & 0xff);
        assert_eq!(Field { signed: true, bits: 12 }.value(0xabc), 0xabc - 4096);
        assert_eq!(get_field(&v, 0, 30, 8), 0, "past the end reads zeros");
    }

    #[test]
    fn counts_and_searches_follow_the_range() {
        let v = [0xffu8, 0xf0, 0x00, 0x0f];
        let all = bit_range(4, 0, -1, false).unwrap();
        assert_eq!(all, (0, 31));
        assert_eq!(count_bits(&v, 0, all.0, all.1), 16);
        let (a, b) = bit_range(4, 5, 13, true).unwrap();
        assert_eq!(count_bits(&v, 0, a, b), 3 + 4);
        assert_eq!(count_bits(&v[2..], 2, a, b), 0);
        assert_eq!(bit_range(4, -1, -2, false), None);
        assert_eq!(bit_range(4, -32, -33, false), Some((0, 7)), "both clamped to the first byte");
        assert_eq!(bit_range(4, 3, 1, false), None);
        assert_eq!(bit_range(0, 0, -1, false), None);
        assert_eq!(bit_range(4, -100, 100, false), Some((0, 31)));
        assert_eq!(find_bit(&v, 0, 0, 31, false), Some(12));
        assert_eq!(find_bit(&v, 0, 16, 31, true), Some(28));
        assert_eq!(find_bit(&v, 0, 16, 27, true), None);
        assert_eq!(find_bit(&v[2..], 2, 16, 31, true), Some(28));
    }

    #[test]
    fn popcount_agrees_with_a_byte_count() {
        let v: Vec<u8> = (0..1003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
        let want: u64 = v.iter().map(|b| b.count_ones() as u64).sum();
        assert_eq!(popcount(&v), want);
        assert_eq!(popcount_words(&v), want);
        assert_eq!(popcount(&v[3..10]), v[3..10].iter().map(|b| b.count_ones() as u64).sum::<u64>());
    }

    #[test]
    fn operators_pad_short_sources_with_zeros() {
        let a = vec![0b1100_1100u8, 0xff];
        let b = vec![0b1010_1010u8];
        let c = vec![0b1001_0000u8];
        assert_eq!(BitOp::And.apply(&[a.clone(), b.clone()]), vec![0b1000_1000, 0]);
        assert_eq!(BitOp::Or.apply(&[a.clone(), b.clone()]), vec![0b1110_1110, 0xff]);
        assert_eq!(BitOp::Xor.apply(&[a.clone(), b.clone()]), vec![0b0110_0110, 0xff]);
        assert_eq!(BitOp::Not.apply(std::slice::from_ref(&b)), vec![0b0101_0101]);
        assert_eq!(BitOp::Diff.apply(&[a.clone(), b.clone(), c.clone()]), vec![0b0100_0100, 0xff]);
        assert_eq!(BitOp::Diff1.apply(&[a.clone(), b.clone(), c.clone()]), vec![0b0011_0010, 0]);
        assert_eq!(BitOp::AndOr.apply(&[a.clone(), b.clone(), c.clone()]), vec![0b1000_1000, 0]);
        assert_eq!(BitOp::One.apply(&[a, b, c]), vec![0b0111_0110, 0xff]);
    }
}
