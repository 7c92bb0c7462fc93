//! FUNCTION DUMP and FUNCTION RESTORE payloads in Redis's format, so that
//! libraries move between Basalt and redis-server both ways: for each
//! library the RDB function opcode (245) and its code as an RDB string,
//! then the 2-byte RDB version and the CRC-64 (Jones, as Redis's) of all
//! that, both little-endian. Redis compresses long strings with LZF; a
//! payload from it is read with the decompressor here; Basalt writes its
//! strings plain, which every Redis reads.

use crc::{Crc, CRC_64_REDIS};

/// RDB_OPCODE_FUNCTION2.
const FUNCTION: u8 = 245;
/// RDB_OPCODE_FUNCTION_PRE_GA (Redis 7.0 release candidates).
const FUNCTION_PRE_GA: u8 = 246;
/// The RDB version Basalt writes: Redis 7.0's, which every 7.x reads.
const RDB_VERSION: u16 = 10;
/// The newest RDB version this reads (Redis 7.2-7.4).
const RDB_VERSION_MAX: u16 = 12;

const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// The payload of libraries `codes`.
pub fn dump<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION);
        write_len(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The libraries' codes in `payload`, or Redis's error.
pub fn restore(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let bad = || "ERR DUMP payload version or checksum are wrong".to_string();
    if payload.len() < 10 {
        return Err(bad());
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().map_err(|_| bad())?);
    if version > RDB_VERSION_MAX || CRC64.checksum(&payload[..payload.len() - 8]) != crc {
        return Err(bad());
    }
    let mut r = Reader { buf: body, at: 0 };
    let mut out = Vec::new();
    while r.at < body.len() {
        match r.byte() {
            Some(FUNCTION) => out.push(
                r.string()
                    .ok_or_else(|| "ERR given payload is not a valid function payload".to_string())?,
            ),
            Some(FUNCTION_PRE_GA) => return Err("ERR Pre-GA function format not supported".into()),
            _ => return Err("ERR given type is not a function".into()),
        }
    }
    Ok(out)
}

/// RDB's length encoding.
fn write_len(out: &mut Vec<u8>, n: u64) {
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

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.buf.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    /// A length, or (Err) the special encoding of a string (11xxxxxx).
    fn len(&mut self) -> Option<Result<u64, u8>> {
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

    /// An RDB string: plain, an integer, or LZF-compressed.
    fn string(&mut self) -> Option<Vec<u8>> {
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
    let mut out = Vec::with_capacity(len);
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
    fn dump_restores() {
        let codes: Vec<&[u8]> = vec![b"#!lua name=a\nx", &[b'y'; 300]];
        let p = dump(codes.iter().copied());
        assert_eq!(restore(&p).unwrap(), codes.iter().map(|c| c.to_vec()).collect::<Vec<_>>());
        let mut broken = p.clone();
        broken[3] ^= 1;
        assert_eq!(restore(&broken).unwrap_err(), "ERR DUMP payload version or checksum are wrong");
    }

    #[test]
    fn reads_redis_payloads() {
        // FUNCTION DUMP of redis-server 7.0.15 for one library.
        let code = b"#!lua name=bad4\nredis.register_function('g4', function() return KEYS end)";
        let mut p = vec![FUNCTION, 0x40, code.len() as u8];
        p.extend_from_slice(code);
        p.extend_from_slice(&10u16.to_le_bytes());
        let crc = CRC64.checksum(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&p).unwrap(), vec![code.to_vec()]);
        // CRC-64/REDIS's check value.
        assert_eq!(CRC64.checksum(b"123456789"), 0xe9c6d914c4b8d9ca);
    }

    #[test]
    fn lzf_back_references() {
        // "abcabcabc": a literal run of 3, then 6 bytes from 3 back.
        let input = [2, b'a', b'b', b'c', (4 << 5) as u8, 2];
        assert_eq!(lzf_decompress(&input, 9).unwrap(), b"abcabcabc");
        assert_eq!(lzf_decompress(&input, 8), None);
        assert_eq!(lzf_decompress(&[(1 << 5) as u8, 5], 3), None);
    }
}
