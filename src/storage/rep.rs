//! A shard's write batch built in Rust ([`Rep`]): the bytes RocksDB's
//! `WriteBatch` keeps (its "rep": an 8-byte sequence, a 4-byte count, then
//! each record as a tag, its column family's id, and length-prefixed key
//! and value), without a call through RocksDB's C API per record.
//!
//! Every command's write went through `rocksdb_writebatch_put_cf` once per
//! record, and the write tier then read the records back out of the
//! batch's bytes (`wtier::log`): 3.4% of a SET -P16 profile and 5.6% of an
//! LPUSH's (tuning.md, session 37). A `Rep` appends to a vector; a write
//! that reaches RocksDB (past the tier, the tier's write-back) becomes a
//! `WriteBatch` at once with [`Rep::to_batch`] (one copy).

use rocksdb::{ColumnFamily, WriteBatch};

/// The header: sequence number (8 bytes) and record count (4, LE).
pub(super) const HEADER: usize = 12;

/// RocksDB's record tags (db/dbformat.h): the default family's delete,
/// put and range delete; another family's.
pub(super) const DELETE: u8 = 0x0;
pub(super) const PUT: u8 = 0x1;
pub(super) const RANGE: u8 = 0xF;
pub(super) const CF_DELETE: u8 = 0x4;
pub(super) const CF_PUT: u8 = 0x5;
pub(super) const CF_RANGE: u8 = 0xE;

/// A write batch's representation, as [`WriteBatch::data`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rep {
    buf: Vec<u8>,
}

impl Default for Rep {
    fn default() -> Rep {
        Rep { buf: vec![0; HEADER] }
    }
}

fn put_varint(buf: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

fn sliced(buf: &mut Vec<u8>, s: &[u8]) {
    put_varint(buf, s.len() as u32);
    buf.extend_from_slice(s);
}

impl Rep {
    fn record(&mut self, cf: u32, tags: (u8, u8)) {
        let count = self.len() as u32 + 1;
        self.buf[8..HEADER].copy_from_slice(&count.to_le_bytes());
        if cf == 0 {
            self.buf.push(tags.0);
        } else {
            self.buf.push(tags.1);
            put_varint(&mut self.buf, cf);
        }
    }

    /// Puts `key` = `value` in the family with id `cf`.
    #[inline]
    pub fn put_cf(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.buf.reserve(12 + key.len() + value.len());
        self.record(cf, (PUT, CF_PUT));
        sliced(&mut self.buf, key);
        sliced(&mut self.buf, value);
    }

    /// Deletes `key` from the family with id `cf`.
    #[inline]
    pub fn delete_cf(&mut self, cf: u32, key: &[u8]) {
        self.record(cf, (DELETE, CF_DELETE));
        sliced(&mut self.buf, key);
    }

    /// Deletes `[from, to)` from the family with id `cf`.
    pub fn delete_range_cf(&mut self, cf: u32, from: &[u8], to: &[u8]) {
        self.record(cf, (RANGE, CF_RANGE));
        sliced(&mut self.buf, from);
        sliced(&mut self.buf, to);
    }

    /// Puts `key` = `value` in the default family.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.put_cf(0, key, value);
    }

    /// Deletes `key` from the default family.
    pub fn delete(&mut self, key: &[u8]) {
        self.delete_cf(0, key);
    }

    /// Its bytes, header first.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buf
    }

    /// Records it holds.
    #[inline]
    pub fn len(&self) -> usize {
        count(&self.buf)
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn size_in_bytes(&self) -> usize {
        self.buf.len()
    }

    /// The bytes it has room for.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.buf.resize(HEADER, 0);
    }

    /// The same records as a RocksDB batch, to write.
    pub fn to_batch(&self) -> WriteBatch {
        WriteBatch::from_data(&self.buf)
    }
}

/// The record count in a batch representation's header (0 if it is cut
/// short).
pub(super) fn count(data: &[u8]) -> usize {
    data.get(8..HEADER)
        .and_then(|c| c.try_into().ok())
        .map_or(0, |c: [u8; 4]| u32::from_le_bytes(c) as usize)
}

/// The id RocksDB gave family `cf` (what a [`Rep`] names it by): read from
/// a record RocksDB's own batch writes for it, since the C API's getter is
/// not in the Rust binding.
pub(super) fn cf_id(cf: &ColumnFamily) -> u32 {
    let mut wb = WriteBatch::default();
    wb.put_cf(cf, b"", b"");
    let d = wb.data();
    if d.get(HEADER) != Some(&CF_PUT) {
        return 0;
    }
    varint(d, &mut (HEADER + 1)).unwrap_or(0)
}

/// Reads the varint at `*i` of a batch representation, moving `i` past
/// it (None if it is cut short or too long).
pub(super) fn varint(b: &[u8], i: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

// Which family id a record key goes under, for a `Rep`.
impl super::ShardStore {
    /// [`ShardStore::cf_of`](super::ShardStore)'s id.
    #[inline]
    pub(super) fn id_of(&self, key: &[u8]) -> u32 {
        if super::keys::is_sub(key) {
            self.ids.1
        } else {
            self.ids.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte for byte what RocksDB's own batch holds for the same records,
    /// in the default family and another (ids over 127 take two bytes),
    /// with keys and values over 127 bytes.
    #[test]
    fn a_rep_holds_what_rocksdbs_batch_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let names: Vec<String> = (0..130).map(|i| format!("cf{i}")).collect();
        let db = rocksdb::DB::open_cf(&opts, tmp.path(), &names).unwrap();
        let long = vec![7u8; 300];
        for name in ["cf0", "cf129"] {
            let cf = db.cf_handle(name).unwrap();
            let id = cf_id(cf);
            // Ids over 127 take two bytes.
            assert!(id > 0 && (name == "cf0" || id > 127), "{name}: {id}");
            let mut wb = WriteBatch::default();
            let mut rep = Rep::default();
            assert_eq!(rep.data(), wb.data());
            for (k, v) in [(&b"k"[..], &b"v"[..]), (&long[..], &b""[..]), (b"", &long[..])] {
                wb.put_cf(cf, k, v);
                rep.put_cf(id, k, v);
            }
            wb.delete_cf(cf, b"gone");
            rep.delete_cf(id, b"gone");
            wb.delete_range_cf(cf, b"x", b"y");
            rep.delete_range_cf(id, b"x", b"y");
            wb.put(b"intent", b"body");
            rep.put(b"intent", b"body");
            wb.delete(b"intent");
            rep.delete(b"intent");
            assert_eq!(rep.data(), wb.data());
            assert_eq!((rep.len(), rep.is_empty()), (wb.len(), false));
            // RocksDB takes it and applies it as its own.
            db.write(rep.to_batch()).unwrap();
            assert_eq!(db.get_cf(cf, b"k").unwrap().as_deref(), Some(&b"v"[..]));
            assert_eq!(db.get_cf(cf, b"").unwrap().as_deref(), Some(&long[..]));
            assert_eq!(db.get_cf(cf, &long[..]).unwrap().as_deref(), Some(&b""[..]));
            assert_eq!(db.get_cf(cf, b"gone").unwrap(), None);
            rep.clear();
            assert_eq!(rep, Rep::default());
            assert!(rep.is_empty());
        }
        assert_eq!(count(b"short"), 0);
    }
}
