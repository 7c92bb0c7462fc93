//! FUNCTION DUMP and FUNCTION RESTORE payloads in Redis's format, so that
//! libraries move between Basalt and redis-server both ways: for each
//! library the RDB function opcode (245) and its code as an RDB string,
//! then the 2-byte RDB version and the CRC-64 (Jones, as Redis's) of all
//! that, both little-endian. Redis compresses long strings with LZF; a
//! payload from it is read with the decompressor here; Basalt writes its
//! strings plain, which every Redis reads.

use crate::types::rdb::{self, Reader};

/// RDB_OPCODE_FUNCTION2.
const FUNCTION: u8 = 245;
/// RDB_OPCODE_FUNCTION_PRE_GA (Redis 7.0 release candidates).
const FUNCTION_PRE_GA: u8 = 246;

/// The payload of libraries `codes`.
pub fn dump<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION);
        rdb::write_len(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    rdb::seal(&mut out);
    out
}

/// The libraries' codes in `payload`, or Redis's error.
pub fn restore(payload: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let bad = || "ERR DUMP payload version or checksum are wrong".to_string();
    let body = rdb::open(payload).ok_or_else(bad)?;
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
        let crc = rdb::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore(&p).unwrap(), vec![code.to_vec()]);
    }
}
