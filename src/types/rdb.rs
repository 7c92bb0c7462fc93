//! The pieces of Redis's RDB format that DUMP payloads share: the length
//! encoding, strings (plain, small integers, LZF-compressed), and the
//! trailer (the 2-byte RDB version and the CRC-64 of Redis, Jones's, both
//! little-endian). FUNCTION DUMP (`script::fdump`) and the DUMP of strings
//! (`types::dump`) use them, so both move between Basalt and redis-server.

use crc::{Crc, CRC_64_REDIS};

/// The RDB version Basalt writes: Redis 7.0's, which every 7.x and 8.x
/// reads.
pub const RDB_VERSION: u16 = 10;
/// The newest RDB version this reads (Redis 7.4-8.x: 12).
pub const RDB_VERSION_MAX: u16 = 12;

const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// CRC-64 as Redis computes it (CRC-64/REDIS, Jones's polynomial).
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

/// Appends the trailer: [`RDB_VERSION`] and the CRC-64 of all before it.
pub fn seal(out: &mut Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The body of a payload whose trailer holds an RDB version this reads and
/// the right CRC-64; None otherwise.
pub fn open(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(10)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().ok()?);
    (version <= RDB_VERSION_MAX && crc64(&payload[..payload.len() - 8]) == crc).then_some(body)
}

/// RDB's length encoding.
pub fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub at: usize,
}

impl Reader<'_> {
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    pub fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.buf.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    /// A length, or (Err) the special encoding of a string (11xxxxxx).
    pub fn len(&mut self) -> Option<Result<u64, u8>> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Ok((b & 0x3f) as u64),
            1 => Ok((((b & 0x3f) as u64) << 8) | self.byte()? as u64),
            2 if b == 0x80 => Ok(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64),
            2 if b == 0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            2 => return None,
            _ => Err(b & 0x3f),
        })
    }

    /// A count, checked against what is left to read (every item takes a
    /// byte at least), so a hostile count allocates nothing.
    pub fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.len()?.ok()?).ok()?;
        (n <= self.buf.len() - self.at).then_some(n)
    }

    /// An RDB string: plain, an integer, or LZF-compressed.
    pub fn string(&mut self) -> Option<Vec<u8>> {
        match self.len()? {
            Ok(n) => Some(self.take(usize::try_from(n).ok()?)?.to_vec()),
            Err(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => Some(i16::from_le_bytes(self.take(2)?.try_into().ok()?).to_string().into_bytes()),
            Err(2) => Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?).to_string().into_bytes()),
            Err(3) => {
                let clen = usize::try_from(self.len()?.ok()?).ok()?;
                let len = usize::try_from(self.len()?.ok()?).ok()?;
                lzf_decompress(self.take(clen)?, len)
            }
            Err(_) => None,
        }
    }
}

/// LZF's decompression: a control byte below 32 copies the next
/// `ctrl + 1` bytes; else its top 3 bits are a length (7: one more byte
/// adds to it) and its low 5 bits with the next byte a distance back into
/// the output, from where `length + 2` bytes are copied (they may
/// overlap). None when the input does not make exactly `len` bytes.
pub fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    // The length is the payload's word: a hostile one must not make a
    // huge allocation (LZF expands at most ~132 times: 264 bytes from 2).
    let mut out = Vec::with_capacity(len.min(input.len().saturating_mul(132)));
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let run = input.get(i..i + ctrl + 1)?;
            out.extend_from_slice(run);
            i += ctrl + 1;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
        if out.len() > len {
            return None;
        }
    }
    (out.len() == len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzf_back_references() {
        // "abcabcabc": a literal run of 3, then 6 bytes from 3 back.
        let input = [2, b'a', b'b', b'c', (4 << 5) as u8, 2];
        assert_eq!(lzf_decompress(&input, 9).unwrap(), b"abcabcabc");
        assert_eq!(lzf_decompress(&input, 8), None);
        assert_eq!(lzf_decompress(&[(1 << 5) as u8, 5], 3), None);
        // A length no input can make is refused, not allocated.
        assert_eq!(lzf_decompress(&[0, b'a'], 1 << 50), None);
    }

    #[test]
    fn crc_and_trailer() {
        // CRC-64/REDIS's check value.
        assert_eq!(crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
        let mut p = b"body".to_vec();
        seal(&mut p);
        assert_eq!(open(&p), Some(&b"body"[..]));
        let mut bad = p.clone();
        bad[1] ^= 1;
        assert_eq!(open(&bad), None);
        assert_eq!(open(b"short"), None);
    }
}
