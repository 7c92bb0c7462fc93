//! MEMORY USAGE: what a key costs, from the records Basalt stores for it
//! (docs/encoding.md): its meta record, its TTL index entry, and its
//! members or chunks, each counted as key bytes plus value bytes plus a
//! fixed per-record overhead. Big collections are sampled as Redis samples
//! them: the first `samples` members are read and their average stands for
//! every member. The figure grows with the value and its members, as
//! Redis's does; it is bytes on disk before compression, not RAM (a cold
//! key costs no RAM at all).

use super::coll;
use super::keyspace::Keyspace;
use crate::error::{CmdResult, CORRUPT};
use crate::storage::meta::KeyType;

/// What RocksDB keeps beside each record's bytes, on average (the sequence
/// number and type, block index and restart points): a fixed estimate.
const RECORD_OVERHEAD: u64 = 16;
/// Bytes of a meta key before the user key: db, tag, slot.
const META_KEY_PREFIX: u64 = 4;
/// Bytes of a member key before the member: db, tag, slot, key length,
/// version (then the user key).
const SUB_KEY_PREFIX: u64 = 16;
/// A TTL index entry before the user key: 0xFF, tag, time, db.
const TTL_KEY_PREFIX: u64 = 11;
/// Redis's default number of sampled members (`OBJ_COMPUTE_SIZE_DEF_SAMPLES`).
pub const DEFAULT_SAMPLES: u64 = 5;

/// The bytes `key` costs, members sampled up to `samples` (0: all); None
/// when the key does not exist.
pub fn usage(ks: &Keyspace, db: u8, key: &[u8], now: u64, samples: u64) -> CmdResult<Option<u64>> {
    let Some((ty, meta_len, expires, coll)) = ks.read(db, key, now, |m| {
        m.map(|m| (m.ty, 10 + m.body.len() as u64, m.expire_ms != 0, m.coll()))
    })?
    else {
        return Ok(None);
    };
    let klen = key.len() as u64;
    let mut total = META_KEY_PREFIX + klen + meta_len + RECORD_OVERHEAD;
    if expires {
        total += TTL_KEY_PREFIX + klen + RECORD_OVERHEAD;
    }
    if ty == KeyType::String {
        return Ok(Some(total));
    }
    let c = coll.ok_or(CORRUPT)?;
    let member_key = SUB_KEY_PREFIX + klen + RECORD_OVERHEAD;
    if ty == KeyType::BigString {
        let chunks = c.size.div_ceil(super::bigstr::chunk_of(&c));
        return Ok(Some(total + c.size + chunks * (member_key + 4)));
    }
    if c.size == 0 {
        return Ok(Some(total));
    }
    let want = if samples == 0 { u64::MAX } else { samples };
    let (mut seen, mut bytes) = (0u64, 0u64);
    let prefix = if c.hfe.is_some() { 8 } else { 0 };
    coll::scan_members(ks, None, (db, key), &c, None, now, |sub, _, value| {
        seen += 1;
        bytes += member_key + sub.len() as u64 + prefix + value.len() as u64;
        seen < want
    })?;
    if seen == 0 {
        return Ok(Some(total));
    }
    // The sampled records' average stands for all of them (a packed
    // list's records hold several elements each: `types::lchunk`).
    let records = match c.list_head {
        Some(head) if ty == KeyType::List && c.chunk_shift > 0 => ((head + c.size - 1) >> c.chunk_shift) - (head >> c.chunk_shift) + 1,
        _ => c.size,
    };
    let members = if seen >= records { bytes } else { bytes / seen * records };
    Ok(Some(total + members))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_grows_with_the_value_and_its_members() {
        let dir = tempfile::tempdir().unwrap();
        let ks = crate::types::keyspace::for_test(dir.path());
        assert_eq!(usage(&ks, 0, b"missing", 1, 5).unwrap(), None);
        ks.put_string(0, b"s", 0, b"short", None).unwrap();
        ks.put_string(0, b"l", 0, &[b'x'; 1000], None).unwrap();
        let (short, long) = (
            usage(&ks, 0, b"s", 1, 5).unwrap().unwrap(),
            usage(&ks, 0, b"l", 1, 5).unwrap().unwrap(),
        );
        assert!(long >= short + 995, "{short} {long}");
        // A packed list: its records' sample stands for its records, not
        // its elements (each record holds several).
        let mut l = crate::types::list::List::open(&ks, 0, b"list", 1, true).unwrap().unwrap();
        for _ in 0..1000 {
            l.push(crate::types::list::End::Right, &[b'v'; 100]).unwrap();
        }
        l.commit().unwrap();
        let (all, sampled) = (
            usage(&ks, 0, b"list", 1, 0).unwrap().unwrap(),
            usage(&ks, 0, b"list", 1, 5).unwrap().unwrap(),
        );
        assert!((100_000..130_000).contains(&all), "{all}");
        assert!(sampled * 10 > all * 9 && sampled * 10 < all * 11, "{sampled} against {all}");
    }
}
