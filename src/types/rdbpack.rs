//! Redis's packed encodings inside RDB values, written from Redis's
//! format descriptions: listpacks (Redis 7's small lists, hashes, sets,
//! sorted sets, stream nodes), and, to read older payloads, ziplists,
//! intsets and zipmaps. A reader never trusts a length: every read is
//! bounds-checked and a malformed blob is None, never a panic.

use crate::resp::parse::string2ll;

/// A listpack of `items`: `total_bytes(4 LE) count(2 LE)`, each entry its
/// encoding, data and back-length, then 0xFF. An item that is a canonical
/// integer is stored as one, in the smallest form, as Redis does.
pub fn listpack(items: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0u8; 6];
    for it in items {
        let start = out.len();
        match string2ll(it) {
            Some(v) => write_lp_int(&mut out, v),
            None => write_lp_str(&mut out, it),
        }
        let len = out.len() - start;
        write_backlen(&mut out, len);
    }
    out.push(0xFF);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    let count = if items.len() < 65535 { items.len() as u16 } else { 65535 };
    out[4..6].copy_from_slice(&count.to_le_bytes());
    out
}

fn write_lp_int(out: &mut Vec<u8>, v: i64) {
    if (0..=127).contains(&v) {
        out.push(v as u8);
    } else if (-4096..=4095).contains(&v) {
        let u = (v as u64) & 0x1fff;
        out.push(0xC0 | (u >> 8) as u8);
        out.push(u as u8);
    } else if (-32768..=32767).contains(&v) {
        out.push(0xF1);
        out.extend_from_slice(&(v as i16).to_le_bytes());
    } else if (-8_388_608..=8_388_607).contains(&v) {
        out.push(0xF2);
        out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        out.push(0xF3);
        out.extend_from_slice(&(v as i32).to_le_bytes());
    } else {
        out.push(0xF4);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn write_lp_str(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    if n < 64 {
        out.push(0x80 | n as u8);
    } else if n < 4096 {
        out.push(0xE0 | (n >> 8) as u8);
        out.push(n as u8);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
}

/// The bytes of the back-length of an entry of `len` bytes.
pub fn backlen_size(len: u64) -> u64 {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// The bytes `v` takes as a listpack entry (encoding, data, back length),
/// as Redis's `lpEncodeGetType` and `lpEncodeBacklen` size it (a list's
/// OBJECT ENCODING is told from them).
pub fn entry_bytes(v: &[u8]) -> u64 {
    let body = match crate::resp::parse::string2ll(v) {
        Some(n) if v.len() <= 20 => match n {
            0..=127 => 1,
            -4096..=4095 => 2,
            -32768..=32767 => 3,
            -8388608..=8388607 => 4,
            -2147483648..=2147483647 => 5,
            _ => 9,
        },
        _ => {
            let l = v.len() as u64;
            l + match l {
                0..64 => 1,
                64..4096 => 2,
                _ => 5,
            }
        }
    };
    body + backlen_size(body)
}

/// The back-length: the entry's length in 7-bit groups, most significant
/// first, every byte but the first with its top bit set (read from the
/// right, the set bit says "more to the left").
fn write_backlen(out: &mut Vec<u8>, len: usize) {
    let l = len as u64;
    let groups = backlen_size(l);
    for g in (0..groups).rev() {
        let b = ((l >> (7 * g)) & 127) as u8;
        out.push(if g == groups - 1 { b } else { b | 128 });
    }
}

/// The items of a listpack; None when it is malformed (sizes, encodings,
/// back-lengths, the terminator, the count).
pub fn read_listpack(buf: &[u8]) -> Option<Vec<Vec<u8>>> {
    if buf.len() < 7 || u32::from_le_bytes(buf[..4].try_into().ok()?) as usize != buf.len() || buf[buf.len() - 1] != 0xFF {
        return None;
    }
    let count = u16::from_le_bytes([buf[4], buf[5]]);
    let mut out = Vec::new();
    let mut at = 6;
    let end = buf.len() - 1;
    while at < end {
        let start = at;
        let b = buf[at];
        let item: Vec<u8> = if b & 0x80 == 0 {
            at += 1;
            (b as i64).to_string().into_bytes()
        } else if b & 0xC0 == 0x80 {
            let n = (b & 0x3f) as usize;
            let s = buf.get(at + 1..at + 1 + n)?;
            at += 1 + n;
            s.to_vec()
        } else if b & 0xE0 == 0xC0 {
            let u = (((b & 0x1f) as u16) << 8) | *buf.get(at + 1)? as u16;
            at += 2;
            // 13 bits, two's complement.
            let v = ((u << 3) as i16 >> 3) as i64;
            v.to_string().into_bytes()
        } else if b & 0xF0 == 0xE0 {
            let n = (((b & 0x0f) as usize) << 8) | *buf.get(at + 1)? as usize;
            let s = buf.get(at + 2..at + 2 + n)?;
            at += 2 + n;
            s.to_vec()
        } else {
            let le = |n: usize| -> Option<i64> {
                let d = buf.get(at + 1..at + 1 + n)?;
                let mut x = [0u8; 8];
                x[..n].copy_from_slice(d);
                // Sign-extend from n bytes.
                let shift = 64 - 8 * n as u32;
                Some(((i64::from_le_bytes(x)) << shift) >> shift)
            };
            let (v, n) = match b {
                0xF0 => {
                    let n = u32::from_le_bytes(buf.get(at + 1..at + 5)?.try_into().ok()?) as usize;
                    let s = buf.get(at + 5..at.checked_add(5)?.checked_add(n)?)?;
                    at += 5 + n;
                    let len = at - start;
                    at = skip_backlen(buf, at, len)?;
                    out.push(s.to_vec());
                    continue;
                }
                0xF1 => (le(2)?, 2),
                0xF2 => (le(3)?, 3),
                0xF3 => (le(4)?, 4),
                0xF4 => (le(8)?, 8),
                _ => return None,
            };
            at += 1 + n;
            v.to_string().into_bytes()
        };
        let len = at - start;
        at = skip_backlen(buf, at, len)?;
        out.push(item);
    }
    if at != end || (count != 65535 && count as usize != out.len()) {
        return None;
    }
    Some(out)
}

/// Checks the back-length after an entry of `len` bytes; where the next
/// entry starts.
fn skip_backlen(buf: &[u8], at: usize, len: usize) -> Option<usize> {
    let mut want = Vec::with_capacity(5);
    write_backlen(&mut want, len);
    (buf.get(at..at + want.len())? == want.as_slice()).then_some(at + want.len())
}

/// The items of a ziplist (Redis before 7.0): `zlbytes(4) zltail(4)
/// zllen(2)`, entries `prevlen encoding data`, 0xFF.
pub fn read_ziplist(buf: &[u8]) -> Option<Vec<Vec<u8>>> {
    if buf.len() < 11 || u32::from_le_bytes(buf[..4].try_into().ok()?) as usize != buf.len() || buf[buf.len() - 1] != 0xFF {
        return None;
    }
    let count = u16::from_le_bytes([buf[8], buf[9]]);
    let mut out = Vec::new();
    let mut at = 10;
    let end = buf.len() - 1;
    let mut prev_len = 0usize;
    while at < end {
        let start = at;
        // prevlen: one byte below 254, else 0xFE and 4 bytes.
        let prev = if buf[at] < 254 {
            at += 1;
            buf[start] as usize
        } else if buf[at] == 0xFE {
            at += 5;
            u32::from_le_bytes(buf.get(start + 1..start + 5)?.try_into().ok()?) as usize
        } else {
            return None;
        };
        if prev != prev_len {
            return None;
        }
        let b = *buf.get(at)?;
        let item = match b >> 6 {
            0 => {
                let n = (b & 0x3f) as usize;
                let s = buf.get(at + 1..at + 1 + n)?;
                at += 1 + n;
                s.to_vec()
            }
            1 => {
                let n = (((b & 0x3f) as usize) << 8) | *buf.get(at + 1)? as usize;
                let s = buf.get(at + 2..at + 2 + n)?;
                at += 2 + n;
                s.to_vec()
            }
            2 if b == 0x80 => {
                let n = u32::from_be_bytes(buf.get(at + 1..at + 5)?.try_into().ok()?) as usize;
                let s = buf.get(at + 5..at.checked_add(5)?.checked_add(n)?)?;
                at += 5 + n;
                s.to_vec()
            }
            2 => return None,
            _ => {
                let int = |n: usize| -> Option<i64> {
                    let d = buf.get(at + 1..at + 1 + n)?;
                    let mut x = [0u8; 8];
                    x[..n].copy_from_slice(d);
                    let shift = 64 - 8 * n as u32;
                    Some((i64::from_le_bytes(x) << shift) >> shift)
                };
                let (v, n) = match b {
                    0xC0 => (int(2)?, 2),
                    0xD0 => (int(4)?, 4),
                    0xE0 => (int(8)?, 8),
                    0xF0 => (int(3)?, 3),
                    0xFE => (int(1)?, 1),
                    0xF1..=0xFD => ((b & 0x0f) as i64 - 1, 0),
                    _ => return None,
                };
                at += 1 + n;
                v.to_string().into_bytes()
            }
        };
        prev_len = at - start;
        out.push(item);
    }
    if at != end || (count != 65535 && count as usize != out.len()) {
        return None;
    }
    Some(out)
}

/// The integers of an intset: `encoding(4 LE: 2, 4 or 8) length(4 LE)`,
/// then the values, little-endian, strictly ascending.
pub fn read_intset(buf: &[u8]) -> Option<Vec<i64>> {
    let width = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let n = u32::from_le_bytes(buf.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || buf.len() != 8usize.checked_add(n.checked_mul(width)?)? {
        return None;
    }
    let mut out: Vec<i64> = Vec::with_capacity(n);
    for c in buf[8..].chunks(width) {
        let v = match width {
            2 => i16::from_le_bytes(c.try_into().ok()?) as i64,
            4 => i32::from_le_bytes(c.try_into().ok()?) as i64,
            _ => i64::from_le_bytes(c.try_into().ok()?),
        };
        if out.last().is_some_and(|&p| p >= v) {
            return None;
        }
        out.push(v);
    }
    Some(out)
}

/// An intset of `values` (sorted, distinct), in the narrowest width.
pub fn intset(values: &[i64]) -> Vec<u8> {
    let width: usize = if values.iter().all(|v| (i16::MIN as i64..=i16::MAX as i64).contains(v)) {
        2
    } else if values.iter().all(|v| (i32::MIN as i64..=i32::MAX as i64).contains(v)) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + values.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The field-value pairs of a zipmap (RDB type 9, Redis before 2.6):
/// `count(1)`, then `len key len free value [free bytes]`, 0xFF; a length
/// is one byte below 254, else 254 and 4 bytes.
pub fn read_zipmap(buf: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut at = 1;
    let mut out = Vec::new();
    let len = |at: &mut usize| -> Option<usize> {
        let b = *buf.get(*at)?;
        if b < 254 {
            *at += 1;
            Some(b as usize)
        } else if b == 254 {
            let n = u32::from_le_bytes(buf.get(*at + 1..*at + 5)?.try_into().ok()?) as usize;
            *at += 5;
            Some(n)
        } else {
            None
        }
    };
    loop {
        if *buf.get(at)? == 0xFF {
            at += 1;
            break;
        }
        let kl = len(&mut at)?;
        let k = buf.get(at..at.checked_add(kl)?)?.to_vec();
        at += kl;
        let vl = len(&mut at)?;
        let free = *buf.get(at)? as usize;
        at += 1;
        let v = buf.get(at..at.checked_add(vl)?)?.to_vec();
        at += vl + free;
        out.push((k, v));
    }
    (at == buf.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_entry_sizes() {
        assert_eq!(entry_bytes(b"5"), 2);
        assert_eq!(entry_bytes(b"hello"), 7);
        assert_eq!(entry_bytes(&[b'a'; 100]), 103);
        assert_eq!(entry_bytes(b"-4096"), 3);
        assert_eq!(entry_bytes(&[b'a'; 200]), 204);
    }

    #[test]
    fn listpack_round_trip_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let items: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"4096",
            b"-32768",
            b"32767",
            b"40000",
            b"-8388608",
            b"8388607",
            b"8388608",
            b"2147483647",
            b"-2147483648",
            b"2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"9223372036854775808",
            b"007",
            b"-0",
            b"+1",
            b" 1",
            b"",
            b"hello",
            &mid,
            &long,
        ];
        let lp = listpack(&items);
        let back = read_listpack(&lp).unwrap();
        assert_eq!(back, items.iter().map(|i| i.to_vec()).collect::<Vec<_>>());
        // Any cut or flipped byte is refused or reads differently, never panics.
        for i in 0..lp.len() {
            let mut bad = lp.clone();
            bad[i] ^= 0x41;
            let _ = read_listpack(&bad);
            let _ = read_listpack(&lp[..i]);
        }
        assert!(read_listpack(&lp[..lp.len() - 1]).is_none());
    }

    #[test]
    fn redis_listpacks_and_ziplists_read() {
        // A listpack redis-server 7.0 wrote for RPUSH l a 1 1000 -1 hello.
        let lp = [
            0x19, 0, 0, 0, 5, 0, 0x81, b'a', 2, 1, 1, 0xc3, 0xe8, 2, 0xdf, 0xff, 2, 0x85, b'h', b'e', b'l', b'l', b'o', 6, 0xff,
        ];
        assert_eq!(
            read_listpack(&lp).unwrap(),
            vec![b"a".to_vec(), b"1".to_vec(), b"1000".to_vec(), b"-1".to_vec(), b"hello".to_vec()]
        );
        assert_eq!(listpack(&[b"a", b"1", b"1000", b"-1", b"hello"]), lp);
        // A ziplist of "a", 5 (immediate), 300 (int16), "hello".
        let mut zl = vec![0u8; 10];
        for (prev, e) in [
            (0u8, vec![0x01, b'a']),
            (3, vec![0xf6]),
            (2, vec![0xc0, 0x2c, 0x01]),
            (4, vec![0x05, b'h', b'e', b'l', b'l', b'o']),
        ] {
            zl.push(prev);
            zl.extend_from_slice(&e);
        }
        zl.push(0xff);
        let n = zl.len() as u32;
        zl[..4].copy_from_slice(&n.to_le_bytes());
        zl[8..10].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(
            read_ziplist(&zl).unwrap(),
            vec![b"a".to_vec(), b"5".to_vec(), b"300".to_vec(), b"hello".to_vec()]
        );
        zl[10] = 9;
        assert!(read_ziplist(&zl).is_none(), "a wrong prevlen");
    }

    #[test]
    fn intsets_and_zipmaps() {
        for vals in [vec![-3i64, 1, 2], vec![1, 70000], vec![i64::MIN, 0, i64::MAX]] {
            assert_eq!(read_intset(&intset(&vals)).unwrap(), vals);
        }
        let mut bad = intset(&[1, 2]);
        bad[8] = 9;
        assert!(read_intset(&bad).is_none(), "not ascending");
        assert!(read_intset(&[2, 0, 0, 0, 9, 0, 0, 0]).is_none());
        let zm = [2u8, 1, b'a', 1, 0, b'b', 2, b'c', b'd', 3, 2, b'e', b'f', b'g', 0, 0, 0xff];
        assert_eq!(
            read_zipmap(&zm).unwrap(),
            vec![(b"a".to_vec(), b"b".to_vec()), (b"cd".to_vec(), b"efg".to_vec())]
        );
    }

    #[test]
    fn canonical_integers() {
        // What a listpack stores as an integer: Redis's `string2ll`.
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-12"), Some(-12));
        for bad in [&b"-0"[..], b"01", b"+1", b"1 ", b"", b"-", b"99999999999999999999"] {
            assert_eq!(string2ll(bad), None, "{bad:?}");
        }
    }
}
