//! DUMP and RESTORE payloads. Every type is dumped as Redis dumps it (an
//! RDB value, the RDB version and Redis's CRC-64: `types::rdb`,
//! `types::rdbvalue`, `types::rdbstream`), so keys move between
//! redis-server and Basalt both ways. RESTORE also takes the payloads of
//! Basalt before that (its meta record and members, a version of Basalt's
//! and a CRC-64 in the trailer), which older Basalt wrote for every type.

use crc::{Crc, CRC_64_ECMA_182};

use crate::error::{CmdResult, CORRUPT};
use crate::storage::meta::{self, Coll, KeyType, Meta};
use crate::types::bigstr;
use crate::types::coll::Owned;
use crate::types::rdb::{self, Reader};
use crate::types::rdbvalue;

/// RESTORE's refusals, as Redis words them: the trailer (version or
/// checksum), and a body that does not decode.
pub const BAD_TRAILER: &str = "ERR DUMP payload version or checksum are wrong";
pub const BAD_FORMAT: &str = "ERR Bad data format";

/// RDB_TYPE_STRING.
const RDB_STRING: u8 = 0;

/// Basalt's earlier DUMP payload: `meta format byte, type, body` then a
/// 2-byte payload version (little endian, as RDB) and a CRC-64 of
/// everything before it. For a collection the body is `bodylen(4) body
/// count(8) (len(4) member len(4) value)*`.
const DUMP_VERSION: u16 = 0xBA01;

/// The checksum of Basalt's earlier payloads: CRC-64/ECMA-182 (not
/// Redis's: `rdb::crc64`).
fn crc64(data: &[u8]) -> u64 {
    const ECMA: Crc<u64> = Crc::<u64>::new(&CRC_64_ECMA_182);
    ECMA.checksum(data)
}

/// Serialises a value (expiry dropped; a hash's fields expired at `now`
/// left out) into Redis's DUMP payload; CORRUPT when its stored records
/// do not decode.
pub fn payload(v: &Owned, now: u64) -> CmdResult<Vec<u8>> {
    if let Some(value) = string_value(v) {
        let mut out = Vec::with_capacity(value.len() + 20);
        out.push(RDB_STRING);
        rdb::write_len(&mut out, value.len() as u64);
        out.extend_from_slice(&value);
        rdb::seal(&mut out);
        return Ok(out);
    }
    rdbvalue::of_owned(v, now).map(|value| rdbvalue::dump(&value)).ok_or(CORRUPT)
}

/// A string's whole value (a big one's chunks put together, zeros where
/// a chunk was never written); None for other types.
fn string_value(v: &Owned) -> Option<Vec<u8>> {
    let m = Meta::decode(&v.raw)?;
    match m.ty {
        KeyType::String => Some(m.body.to_vec()),
        KeyType::BigString => {
            let c = m.coll()?;
            let chunk = bigstr::chunk_of(&c) as usize;
            let mut out = vec![0u8; usize::try_from(c.size).ok()?];
            for (k, part) in &v.members {
                let i = u32::from_be_bytes(k[..].try_into().ok()?) as usize;
                let at = i.checked_mul(chunk)?;
                out.get_mut(at..at + part.len())?.copy_from_slice(part);
            }
            Some(out)
        }
        _ => None,
    }
}

/// The value of a Redis string payload's body: an RDB string and nothing
/// after it. Long values become a big string's chunks, as SET makes them.
fn redis_string(body: &[u8], expire_ms: u64) -> Option<Owned> {
    let mut r = Reader { buf: body, at: 0 };
    if r.byte()? != RDB_STRING {
        return None;
    }
    let value = r.string()?;
    if r.at != body.len() {
        return None;
    }
    if value.len() <= bigstr::INLINE_MAX {
        return Some(Owned {
            raw: meta::encode_string(expire_ms, &value),
            members: Vec::new(),
        });
    }
    let c = Coll {
        version: 0,
        size: value.len() as u64,
        hfe: None,
        list_head: None,
        zblocks: false,
        chunk_shift: 0,
        stream: None,
    };
    let members = value
        .chunks(bigstr::CHUNK)
        .enumerate()
        .map(|(i, part)| ((i as u32).to_be_bytes().to_vec(), part.to_vec()))
        .collect();
    Some(Owned {
        raw: c.encode(KeyType::BigString, expire_ms),
        members,
    })
}

/// Reads `n` bytes at `*at`, advancing it.
fn take_bytes<'a>(p: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = p.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(s)
}

fn take_u32(p: &[u8], at: &mut usize) -> Option<usize> {
    Some(u32::from_be_bytes(take_bytes(p, at, 4)?.try_into().ok()?) as usize)
}

/// Checks a DUMP payload and rebuilds the value it carries (a hash's
/// fields expired at `now` left out), or Redis's refusal.
pub fn parse(p: &[u8], expire_ms: u64, now: u64) -> Result<Owned, &'static str> {
    if p.len() < 11 {
        return Err(BAD_TRAILER);
    }
    let trailer = &p[p.len() - 10..];
    let version = u16::from_le_bytes([trailer[0], trailer[1]]);
    if version <= rdb::RDB_VERSION_MAX {
        let body = rdb::open(p).ok_or(BAD_TRAILER)?;
        let v = match body.first() {
            Some(&RDB_STRING) => redis_string(body, expire_ms),
            _ => rdbvalue::read(body).and_then(|v| rdbvalue::to_owned(v, expire_ms, now)),
        };
        return v.ok_or(BAD_FORMAT);
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&trailer[2..]);
    if version != DUMP_VERSION || crc64(&p[..p.len() - 8]) != u64::from_le_bytes(crc) || p.len() < 12 {
        return Err(BAD_TRAILER);
    }
    basalt_payload(&p[..p.len() - 10], expire_ms).ok_or(BAD_FORMAT)
}

/// The body of one of Basalt's own payloads.
fn basalt_payload(body: &[u8], expire_ms: u64) -> Option<Owned> {
    let mut raw = Vec::with_capacity(body.len() + 8);
    raw.extend_from_slice(&body[..2]);
    raw.extend_from_slice(&expire_ms.to_be_bytes());
    let mut members = Vec::new();
    if body[1] == KeyType::String as u8 {
        raw.extend_from_slice(&body[2..]);
    } else {
        let mut at = 2;
        let n = take_u32(body, &mut at)?;
        raw.extend_from_slice(take_bytes(body, &mut at, n)?);
        let count = u64::from_be_bytes(take_bytes(body, &mut at, 8)?.try_into().ok()?);
        for _ in 0..count {
            let ml = take_u32(body, &mut at)?;
            let m = take_bytes(body, &mut at, ml)?.to_vec();
            let vl = take_u32(body, &mut at)?;
            members.push((m, take_bytes(body, &mut at, vl)?.to_vec()));
        }
        if at != body.len() {
            return None;
        }
    }
    // Only layouts this build can read are accepted.
    let m = Meta::decode(&raw)?;
    match m.ty {
        KeyType::String => {}
        KeyType::BigString => {
            // Chunks named by a 4-byte index, none longer than a chunk or
            // past the length.
            let c = m.coll()?;
            let (len, chunk) = (c.size, bigstr::chunk_of(&c));
            let ok = |(k, v): &(Vec<u8>, Vec<u8>)| {
                <[u8; 4]>::try_from(&k[..]).is_ok_and(|i| {
                    let start = u32::from_be_bytes(i) as u64 * chunk;
                    v.len() as u64 <= chunk && start + v.len() as u64 <= len
                })
            };
            // Default chunks hold strings past the inline limit; the bit
            // commands' small chunks, strings past theirs.
            let least = if c.chunk_shift == 0 {
                bigstr::INLINE_MAX
            } else {
                bigstr::BIT_INLINE_MAX
            };
            if len <= least as u64 || !members.iter().all(ok) {
                return None;
            }
        }
        KeyType::List => {
            if !crate::types::lchunk::members_fit(&m.coll()?, &members) {
                return None;
            }
        }
        KeyType::Hash | KeyType::Set => {
            let c = m.coll()?;
            if (c.size != members.len() as u64 && c.hfe.is_none()) || c.list_head.is_some() || (c.hfe.is_some() && m.ty == KeyType::Set) {
                return None;
            }
        }
        KeyType::ZSet => {
            let c = m.coll()?;
            if c.hfe.is_some()
                || c.list_head.is_some()
                || !crate::types::zset::records_fit(c.size, &members)
                || !crate::types::zblock::heads_fit(c.zblocks, &members)
            {
                return None;
            }
        }
        KeyType::Stream => {
            if !crate::types::stream::members_fit(&m.coll()?, &members) {
                return None;
            }
        }
    }
    Some(Owned { raw, members })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::meta;

    #[test]
    fn dump_payload_round_trip_and_corruption() {
        let raw = meta::encode_string(12345, b"hello");
        let p = payload(&Owned { raw, members: vec![] }, 0).unwrap();
        let back = parse(&p, 0, 0).unwrap();
        assert_eq!(back.raw, meta::encode_string(0, b"hello"));
        let set = meta::Coll {
            version: 5,
            size: 2,
            hfe: None,
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        };
        let v = Owned {
            raw: set.encode(KeyType::Set, 0),
            members: vec![(b"a".to_vec(), vec![]), (b"b".to_vec(), vec![])],
        };
        // A set goes out in Redis's format and comes back the same set.
        let p = payload(&v, 0).unwrap();
        let back = parse(&p, 0, 0).unwrap();
        assert_eq!(rdbvalue::of_owned(&back, 0), rdbvalue::of_owned(&v, 0));
        for i in 0..p.len() {
            let mut bad = p.clone();
            bad[i] ^= 0x01;
            assert!(parse(&bad, 0, 0).is_err(), "flip at {i} accepted");
        }
        assert_eq!(parse(b"short", 0, 0), Err(BAD_TRAILER));
        // A right trailer over a body that does not decode.
        let mut junk = vec![2u8, 5, 1, b'a'];
        rdb::seal(&mut junk);
        assert_eq!(parse(&junk, 0, 0), Err(BAD_FORMAT));
    }

    #[test]
    fn redis_string_payloads_load() {
        // DUMP of redis-server 7.0.15: "hello", 123 (an 8-bit integer) and
        // 40 'a's (LZF-compressed).
        let cases: [(&[u8], &[u8]); 3] = [
            (b"\x00\x05hello\n\x00cr\xdfve4 \n", b"hello"),
            (b"\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9", b"123"),
            (b"\x00\xc3\t(\x01aa\xe0\x1b\x00\x01aa\n\x00\xcf\t/\xaa\xae%\x83\x1d", &[b'a'; 40]),
        ];
        for (p, want) in cases {
            let v = parse(p, 0, 0).unwrap();
            assert_eq!(v.raw, meta::encode_string(0, want));
            // And what Basalt dumps, redis-server loads: the same bytes for
            // a plain string.
            if want == b"hello" {
                assert_eq!(payload(&v, 0).unwrap(), p);
            }
        }
        // Past the inline limit: a big string's chunks, and back.
        let long: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut p = vec![RDB_STRING];
        rdb::write_len(&mut p, long.len() as u64);
        p.extend_from_slice(&long);
        rdb::seal(&mut p);
        let v = parse(&p, 0, 0).unwrap();
        assert_eq!(v.members.len(), 5);
        assert_eq!(payload(&v, 0).unwrap(), p);
    }

    /// A payload in Basalt's earlier format, as older Basalt wrote it.
    fn basalt_format(v: &Owned) -> Vec<u8> {
        let raw = &v.raw;
        let mut out = vec![raw[0], raw[1]];
        let body = &raw[10..];
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&(v.members.len() as u64).to_be_bytes());
        for (m, val) in &v.members {
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
            out.extend_from_slice(&(val.len() as u32).to_be_bytes());
            out.extend_from_slice(val);
        }
        out.extend_from_slice(&DUMP_VERSION.to_le_bytes());
        let crc = crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn earlier_basalt_payloads_still_load() {
        // The checksum older Basalt computed bit by bit: CRC-64/ECMA-182's
        // check value.
        assert_eq!(crc64(b"123456789"), 0x6C40_DF5F_0B49_7347);
        let set = meta::Coll {
            version: 9,
            size: 2,
            hfe: None,
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        };
        let v = Owned {
            raw: set.encode(KeyType::Set, 0),
            members: vec![(b"a".to_vec(), vec![]), (b"b".to_vec(), vec![])],
        };
        let p = basalt_format(&v);
        let back = parse(&p, 777, 0).unwrap();
        assert_eq!(back.members, v.members);
        assert_eq!(Meta::decode(&back.raw).unwrap().expire_ms, 777);
        // Its checksum and its records are checked.
        let mut bad = p.clone();
        bad[12] ^= 1;
        assert_eq!(parse(&bad, 0, 0), Err(BAD_TRAILER));
        let lying = Owned {
            raw: meta::Coll { size: 3, ..set }.encode(KeyType::Set, 0),
            members: v.members.clone(),
        };
        assert_eq!(parse(&basalt_format(&lying), 0, 0), Err(BAD_FORMAT));
    }
}
