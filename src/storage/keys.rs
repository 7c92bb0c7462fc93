//! Key encoding: how a Redis key becomes a RocksDB key (see docs/encoding.md).
//!
//! ```text
//! meta key   db(1) 'M' slot(2,BE) user_key                                  -> meta value
//! sub key    db(1) 'S' slot(2,BE) keylen(4,BE) user_key version(8,BE) sub   -> sub value
//! ttl index  0xFF 'T' expire_ms(8,BE) db(1) user_key                        -> ""
//! ```
//! Big-endian integers make byte order numeric order, so a db's meta records
//! are one contiguous range, sorted by slot: FLUSHDB is one range delete and
//! SCAN walks slots in order. The db byte is at most 254, so the TTL index
//! (0xFF) sorts after every db.
//!
//! The `db` byte on disk is a *physical* database: SWAPDB swaps which
//! physical database a `SELECT` index names (the process-wide map below,
//! persisted by `storage::dbmap`). Every function here takes and returns
//! `SELECT` indexes and translates at the byte; code that reads raw
//! records (compaction filter, watches, caches) stays physical throughout.
//!
//! This module does no I/O and names no RocksDB type. Slots are `crate::slot`.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::slot::{key_slot, slot_of};

/// The identity map, the state of a data dir SWAPDB never touched.
const fn identity() -> [AtomicU8; 256] {
    let mut a = [const { AtomicU8::new(0) }; 256];
    let mut i = 0;
    while i < 256 {
        a[i] = AtomicU8::new(i as u8);
        i += 1;
    }
    a
}

/// `SELECT` index -> physical db byte.
static PHYSICAL: [AtomicU8; 256] = identity();
/// Physical db byte -> `SELECT` index.
static LOGICAL: [AtomicU8; 256] = identity();

/// The physical db byte `SELECT` index `db` is stored under.
#[inline]
pub fn physical(db: u8) -> u8 {
    PHYSICAL[db as usize].load(Ordering::Relaxed)
}

/// The `SELECT` index stored under physical db byte `p`.
#[inline]
pub fn logical(p: u8) -> u8 {
    LOGICAL[p as usize].load(Ordering::Relaxed)
}

/// The map as bytes: entry `i` is `physical(i)` (what `storage::dbmap`
/// persists).
pub fn db_map() -> Vec<u8> {
    PHYSICAL.iter().map(|p| p.load(Ordering::Relaxed)).collect()
}

/// Installs a map read back with [`db_map`]; refused (false) unless it is
/// a permutation of 0..=255.
pub fn set_db_map(map: &[u8]) -> bool {
    let mut seen = [false; 256];
    if map.len() != 256 || map.iter().any(|&p| std::mem::replace(&mut seen[p as usize], true)) {
        return false;
    }
    for (i, &p) in map.iter().enumerate() {
        PHYSICAL[i].store(p, Ordering::Relaxed);
        LOGICAL[p as usize].store(i as u8, Ordering::Relaxed);
    }
    true
}

/// Swaps the physical dbs of `SELECT` indexes `a` and `b`. Only while no
/// command runs anywhere (SWAPDB holds the transaction gate).
pub fn swap_dbs(a: u8, b: u8) {
    let (pa, pb) = (physical(a), physical(b));
    PHYSICAL[a as usize].store(pb, Ordering::Relaxed);
    PHYSICAL[b as usize].store(pa, Ordering::Relaxed);
    LOGICAL[pb as usize].store(a, Ordering::Relaxed);
    LOGICAL[pa as usize].store(b, Ordering::Relaxed);
}

/// Tag of meta records.
pub const TAG_META: u8 = b'M';
/// Tag of collection member records (hashes, sets, lists...).
pub const TAG_SUB: u8 = b'S';
/// First bytes of the TTL index.
pub const TTL_PREFIX: [u8; 2] = [0xFF, b'T'];
/// First bytes of the hash field expiration index: `0xFF 'F' at(8) db key`
/// names a hash to repair at `at` (its lowest field TTL).
pub const FIELD_TTL_PREFIX: [u8; 2] = [0xFF, b'F'];

/// The meta key of `key` in database `db`.
pub fn meta_key(db: u8, key: &[u8]) -> Vec<u8> {
    let slot = key_slot(key);
    let mut k = Vec::with_capacity(4 + key.len());
    k.push(physical(db));
    k.push(TAG_META);
    k.extend_from_slice(&slot.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// A meta key held inline up to this many bytes (a user key of up to 60).
pub type MetaKeyBuf = smallvec::SmallVec<[u8; 64]>;

/// [`meta_key`] on the stack for keys of up to 60 bytes: the hot path's
/// lookups (a GET's, a SET's) allocate nothing for their key.
/// Built whole in an array and handed over at once: pushed byte by byte,
/// the SmallVec's length checks and the copy of the finished buffer out
/// (16-byte loads of bytes just stored one by one) were 4% of SET -P16.
#[inline(always)]
pub fn meta_key_buf(db: u8, key: &[u8]) -> MetaKeyBuf {
    let n = 4 + key.len();
    if n > 64 {
        return MetaKeyBuf::from_vec(meta_key(db, key));
    }
    let slot = key_slot(key);
    let mut buf = [0u8; 64];
    buf[0] = physical(db);
    buf[1] = TAG_META;
    buf[2..4].copy_from_slice(&slot.to_be_bytes());
    buf[4..n].copy_from_slice(key);
    MetaKeyBuf::from_buf_and_len(buf, n)
}

/// The first meta key of `slot` in `db` (inclusive bound).
pub fn meta_slot_start(db: u8, slot: u16) -> Vec<u8> {
    let mut k = vec![physical(db), TAG_META];
    k.extend_from_slice(&slot.to_be_bytes());
    k
}

/// Bounds of every meta record of `db`: `[db 'M', db 'N')`.
pub fn meta_db_range(db: u8) -> (Vec<u8>, Vec<u8>) {
    let p = physical(db);
    (vec![p, TAG_META], vec![p, TAG_META + 1])
}

/// Bounds of every record of `db`, meta and sub alike: `[db, db+1)`.
pub fn db_range(db: u8) -> (Vec<u8>, Vec<u8>) {
    let p = physical(db);
    (vec![p], vec![p + 1])
}

/// Splits a meta key into (db, slot, user key).
pub fn split_meta_key(k: &[u8]) -> Option<(u8, u16, &[u8])> {
    if k.len() < 4 || k[1] != TAG_META {
        return None;
    }
    Some((logical(k[0]), u16::from_be_bytes([k[2], k[3]]), &k[4..]))
}

/// The TTL index entry for `key` in `db` expiring at `expire_ms`.
pub fn ttl_key(expire_ms: u64, db: u8, key: &[u8]) -> Vec<u8> {
    index_key(TTL_PREFIX, expire_ms, db, key)
}

/// The field expiration index entry: hash `key` of `db` has a field due at `at`.
pub fn field_ttl_key(at: u64, db: u8, key: &[u8]) -> Vec<u8> {
    index_key(FIELD_TTL_PREFIX, at, db, key)
}

fn index_key(prefix: [u8; 2], expire_ms: u64, db: u8, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(11 + key.len());
    k.extend_from_slice(&prefix);
    k.extend_from_slice(&expire_ms.to_be_bytes());
    k.push(physical(db));
    k.extend_from_slice(key);
    k
}

/// The prefix every sub record of `key`'s incarnation `version` starts with:
/// `db 'S' slot(2) keylen(4) user_key version(8)`.
pub fn sub_prefix(db: u8, key: &[u8], version: u64) -> Vec<u8> {
    sub_key_buf(db, key, version, &[]).into_vec()
}

/// A member record's key held inline up to this many bytes.
pub type SubKeyBuf = smallvec::SmallVec<[u8; 96]>;

/// [`sub_key`] on the stack when key and member together are up to 80
/// bytes: a collection write's reads and writes of its members allocate
/// nothing for their keys (issue 52, item 3). Built whole in an array, as
/// [`meta_key_buf`] is (pushed piece by piece it was 7% of HSET -P16).
#[inline(always)]
pub fn sub_key_buf(db: u8, key: &[u8], version: u64, sub: &[u8]) -> SubKeyBuf {
    let n = 16 + key.len() + sub.len();
    if n > 96 {
        return SubKeyBuf::from_vec(sub_key(db, key, version, sub));
    }
    let slot = key_slot(key);
    let mut buf = [0u8; 96];
    buf[0] = physical(db);
    buf[1] = TAG_SUB;
    buf[2..4].copy_from_slice(&slot.to_be_bytes());
    buf[4..8].copy_from_slice(&(key.len() as u32).to_be_bytes());
    let at = 8 + key.len();
    buf[8..at].copy_from_slice(key);
    buf[at..at + 8].copy_from_slice(&version.to_be_bytes());
    buf[at + 8..n].copy_from_slice(sub);
    SubKeyBuf::from_buf_and_len(buf, n)
}

/// The sub record of member/field `sub` of `key`'s incarnation `version`.
/// (Also [`sub_key_buf`]'s key past its inline size.)
pub fn sub_key(db: u8, key: &[u8], version: u64, sub: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + key.len() + sub.len());
    k.extend_from_slice(&[physical(db), TAG_SUB]);
    k.extend_from_slice(&key_slot(key).to_be_bytes());
    k.extend_from_slice(&(key.len() as u32).to_be_bytes());
    k.extend_from_slice(key);
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(sub);
    k
}

/// Bounds `[lo, hi)` of every sub record of one incarnation: the next
/// version's prefix is the exclusive end.
pub fn sub_range(db: u8, key: &[u8], version: u64) -> (Vec<u8>, Vec<u8>) {
    (sub_prefix(db, key, version), sub_prefix(db, key, version.wrapping_add(1)))
}

/// Whether `k` is a member record (tag `S`): those live in the shard's
/// member column family, every other record in its meta column family.
#[inline]
pub fn is_sub(k: &[u8]) -> bool {
    k.len() >= 2 && k[1] == TAG_SUB && k[0] != 0xFF
}

/// The length of `k`'s collection prefix (`db 'S' slot keylen key
/// version`), if `k` is a member record's key or a prefix that long.
pub fn coll_prefix_len(k: &[u8]) -> Option<usize> {
    if k.len() < 8 || k[0] == 0xFF || k[1] != TAG_SUB {
        return None;
    }
    let keylen = u32::from_be_bytes(k[4..8].try_into().ok()?) as usize;
    let n = 8 + keylen + 8;
    (k.len() >= n).then_some(n)
}

/// Which column families a range `[from, to)` reaches: (meta, members).
/// A range inside one db's member block reaches the members only; one
/// that cannot hold a member record (meta, the indexes) the meta ones only;
/// FLUSHDB's whole-db range both.
pub fn range_families(from: &[u8], to: &[u8]) -> (bool, bool) {
    let sub_block = |k: &[u8]| k.len() >= 2 && k[0] != 0xFF && k[1] == TAG_SUB;
    if sub_block(from) && (sub_block(to) || (to.len() == 2 && to[0] == from[0] && to[1] == TAG_SUB + 1)) && from[0] == to[0] {
        return (false, true);
    }
    // The member blocks are [d 'S', d 'T') for every db d below 0xFF; only
    // the dbs from `from`'s first byte to `to`'s can meet the range.
    let (first, last) = (from.first().copied().unwrap_or(0), to.first().copied().unwrap_or(0xFF));
    let reaches_sub = (first..=last).any(|d| d != 0xFF && from < &[d, TAG_SUB + 1][..] && to > &[d, TAG_SUB][..]);
    (true, reaches_sub)
}

/// Splits a TTL or field expiration index key into (ms, db, user key).
pub fn split_ttl_key(k: &[u8]) -> Option<(u64, u8, &[u8])> {
    if k.len() < 11 || (k[..2] != TTL_PREFIX && k[..2] != FIELD_TTL_PREFIX) {
        return None;
    }
    let mut ms = [0u8; 8];
    ms.copy_from_slice(&k[2..10]);
    Some((u64::from_be_bytes(ms), logical(k[10]), &k[11..]))
}

/// The meta key (physical, as stored) an index entry names, with the
/// entry's time and whether it is a field expiration entry; None for other
/// records. For the compaction filter, which sees raw records.
pub fn index_entry_owner(k: &[u8]) -> Option<(u64, bool, Vec<u8>)> {
    if k.len() < 11 || (k[..2] != TTL_PREFIX && k[..2] != FIELD_TTL_PREFIX) {
        return None;
    }
    let at = u64::from_be_bytes(k[2..10].try_into().ok()?);
    let key = &k[11..];
    let mut mk = Vec::with_capacity(4 + key.len());
    mk.push(k[10]);
    mk.push(TAG_META);
    mk.extend_from_slice(&slot_of(key).to_be_bytes());
    mk.extend_from_slice(key);
    Some((at, k[..2] == FIELD_TTL_PREFIX, mk))
}

/// The slot a stored record belongs to, for moving it between shards.
/// `None` for records of no slot (unknown tags).
pub fn slot_of_record(k: &[u8]) -> Option<u16> {
    if k.len() >= 2 && (k[..2] == TTL_PREFIX || k[..2] == FIELD_TTL_PREFIX) {
        return split_ttl_key(k).map(|(_, _, key)| slot_of(key));
    }
    if k.len() >= 4 && (k[1] == TAG_META || k[1] == TAG_SUB || k[1] == b'Z') {
        return Some(u16::from_be_bytes([k[2], k[3]]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_key_on_the_stack_is_laid_out_at_every_length() {
        for (kn, sn) in [(0, 0), (1, 1), (10, 70), (40, 40), (40, 41), (80, 0), (81, 0), (100, 300)] {
            let key: Vec<u8> = (0..kn).map(|i| i as u8).collect();
            let sub: Vec<u8> = (0..sn).map(|i| (i * 7) as u8).collect();
            let k = sub_key_buf(2, &key, 0x0102_0304_0506_0708, &sub);
            let mut want = vec![physical(2), TAG_SUB];
            want.extend_from_slice(&key_slot(&key).to_be_bytes());
            want.extend_from_slice(&(kn as u32).to_be_bytes());
            want.extend_from_slice(&key);
            want.extend_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
            want.extend_from_slice(&sub);
            assert_eq!(&k[..], &want[..], "{kn} + {sn} bytes");
            assert_eq!(k.spilled(), kn + sn > 80, "{kn} + {sn} bytes");
            assert_eq!(sub_key(2, &key, 0x0102_0304_0506_0708, &sub), want);
        }
    }

    #[test]
    fn a_meta_key_on_the_stack_is_the_meta_key_at_every_length() {
        for n in [0, 1, 16, 59, 60, 61, 64, 200] {
            let key: Vec<u8> = (0..n).map(|i| i as u8).collect();
            for db in [0, 7] {
                let k = meta_key_buf(db, &key);
                assert_eq!(&k[..], &meta_key(db, &key)[..], "{n} bytes");
                assert_eq!(k.spilled(), n > 60, "{n} bytes");
            }
        }
    }

    #[test]
    fn ranges_name_the_families_they_reach() {
        let (lo, hi) = sub_range(3, b"k", 1);
        assert_eq!(range_families(&lo, &hi), (false, true));
        assert_eq!(range_families(&[3, TAG_SUB], &[3, TAG_SUB + 1]), (false, true));
        let (lo, hi) = meta_db_range(3);
        assert_eq!(range_families(&lo, &hi), (true, false));
        let (lo, hi) = db_range(3);
        assert_eq!(range_families(&lo, &hi), (true, true));
        assert_eq!(range_families(&TTL_PREFIX, &ttl_key(9, 0, b"")), (true, false));
        assert_eq!(range_families(&FIELD_TTL_PREFIX, &field_ttl_key(9, 0, b"")), (true, false));
        assert_eq!(range_families(b"", b"\xff"), (true, true));
        assert_eq!(range_families(&[2, TAG_META], &[4]), (true, true), "db 2's members, all of db 3");
        assert!(is_sub(&sub_key(0, b"k", 1, b"m")));
        assert!(!is_sub(&meta_key(0, b"k")) && !is_sub(&ttl_key(1, 0, b"k")));
    }

    #[test]
    fn meta_keys_sort_by_db_then_slot() {
        let a = meta_key(0, b"foo");
        let b = meta_key(0, b"bar");
        assert!(b < a, "slot 5061 sorts before slot 12182");
        assert!(meta_key(0, b"zzz") < meta_key(1, b"aaa"));
        assert_eq!(split_meta_key(&a), Some((0, 12182, &b"foo"[..])));
        let (lo, hi) = meta_db_range(0);
        assert!(lo <= a && a < hi);
    }

    #[test]
    fn sub_keys_group_by_incarnation() {
        let (lo, hi) = sub_range(0, b"h", 7);
        let a = sub_key(0, b"h", 7, b"");
        let z = sub_key(0, b"h", 7, b"\xff\xff\xff");
        assert!(lo <= a && a < z && z < hi);
        assert!(sub_key(0, b"h", 6, b"\xff") < lo);
        assert!(hi <= sub_key(0, b"h", 8, b""));
        // A longer key with the same start never falls inside the range.
        assert!(!(lo <= sub_key(0, b"hh", 7, b"") && sub_key(0, b"hh", 7, b"") < hi));
        assert_eq!(slot_of_record(&a), Some(slot_of(b"h")));
        assert_eq!(a.len(), lo.len());
    }

    #[test]
    fn ttl_keys_sort_by_time_and_round_trip() {
        let early = ttl_key(1000, 3, b"k");
        let late = ttl_key(1001, 0, b"a");
        assert!(early < late);
        assert_eq!(split_ttl_key(&early), Some((1000, 3, &b"k"[..])));
        assert_eq!(slot_of_record(&early), Some(slot_of(b"k")));
        assert!(meta_key(254, b"\xff\xff") < early);
        let f = field_ttl_key(1000, 3, b"k");
        assert_eq!(split_ttl_key(&f), Some((1000, 3, &b"k"[..])));
        assert_eq!(slot_of_record(&f), Some(slot_of(b"k")));
        assert!(meta_key(254, b"\xff\xff") < f && f < early);
    }
}
