//! Strings in either form: inline in the meta record (up to [`INLINE_MAX`]
//! bytes) or, longer, in chunks (docs/encoding.md, "Big strings").
//!
//! A big string's meta record has type `BigString` and a collection body
//! (`version len`); its bytes live in sub records `... version index(4)`,
//! each covering [`CHUNK`] bytes of the value. A chunk may be missing or
//! shorter than its span: the bytes it does not hold read as zeros (what
//! SETRANGE past the end leaves in Redis). So STRLEN reads only the meta
//! record, GETRANGE reads the chunks it overlaps, and APPEND and SETRANGE
//! rewrite the chunks they touch plus the meta record, whatever the length.
//! Strings never shrink in place (only SET-like writes replace them, under a
//! new version), so a chunk never holds bytes past the length.
//!
//! RENAME, COPY, MOVE, DUMP/RESTORE, expiry and deletion treat a big string
//! as a collection whose members are its chunks: the generic code moves,
//! re-versions and drops them.

use crate::error::{CmdError, CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::keys;
use crate::storage::meta::{self, Coll, KeyType, Meta};
use crate::storage::{Batch, PeerStore};
use crate::types::keyspace::{Keyspace, Prior};

/// Bytes per chunk record (the default; a string the bit commands made
/// big has [`BIT_CHUNK`]-byte chunks, named in its meta record).
pub const CHUNK: usize = 64 * 1024;
/// Chunk size of strings the bit commands grow past [`BIT_INLINE_MAX`]:
/// SETBIT rewrites a whole chunk, so bitmaps keep them small.
pub const BIT_CHUNK: usize = 4 * 1024;
/// Longest string a bit command keeps inline (SETBIT rewrites an inline
/// value whole).
pub const BIT_INLINE_MAX: usize = 4 * 1024;
/// Longest value stored inline in the meta record.
pub const INLINE_MAX: usize = 128 * 1024;

/// A live string, as its meta record tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Str<'a> {
    Inline(&'a [u8]),
    Big { version: u64, len: u64, chunk: u64 },
}

impl Str<'_> {
    pub fn len(&self) -> u64 {
        match self {
            Str::Inline(v) => v.len() as u64,
            Str::Big { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The string a meta record holds; None for other types. A big string's
/// unreadable body is corruption.
pub fn of<'a>(m: &Meta<'a>) -> CmdResult<Option<Str<'a>>> {
    match m.ty {
        KeyType::String => Ok(Some(Str::Inline(m.body))),
        KeyType::BigString => {
            let c = Coll::decode(m.body).ok_or(CORRUPT)?;
            Ok(Some(Str::Big {
                version: c.version,
                len: c.size,
                chunk: chunk_of(&c),
            }))
        }
        _ => Ok(None),
    }
}

/// The chunk size of big string `c`.
pub fn chunk_of(c: &Coll) -> u64 {
    match c.chunk_shift {
        0 => CHUNK as u64,
        s => 1 << s,
    }
}

fn chunk_key(db: u8, key: &[u8], version: u64, index: u64) -> Vec<u8> {
    keys::sub_key(db, key, version, &(index as u32).to_be_bytes())
}

/// Bytes `[from, to)` of string `s` (clamped to its length), reading only
/// the chunks they overlap ([`visit_range`]).
pub fn read_range(ks: &Keyspace, db: u8, key: &[u8], s: Str<'_>, from: u64, to: u64) -> CmdResult<Vec<u8>> {
    let mut out = Vec::with_capacity(to.min(s.len()).saturating_sub(from) as usize);
    visit_range(ks, db, key, s, from, to, |_, v| {
        out.extend_from_slice(v);
        true
    })?;
    Ok(out)
}

/// Zeros for the bytes of missing chunks (no chunk is larger).
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// Ranges of up to this many chunks are read with a point read per chunk.
const POINT_READS: u64 = 1;
/// Longer ranges of a string in the bit commands' small chunks are read
/// with MultiGets of this many chunks; of other strings, with one scan. A
/// point read finds a chunk's newest version at once where a scan steps
/// over every older version the SETBITs that rewrote it left in the
/// memtable and the upper levels. BITCOUNT of 1 MiB -P16, scan / MultiGet:
/// 5.9k / 3.8k a second with no SETBIT history, 1.4k / 3.3k after 8 s of
/// SETBITs (redis-server 6.1k; 256 single point reads were 3.2-4.2k there;
/// tuning.md, "Bitmaps"). Strings SET wrote (64 KiB chunks) are rewritten
/// whole, not in place, and keep the scan.
const MULTI_GET: u64 = 64;

/// Visits the bytes `[from, to)` of string `s` (clamped to its length) in
/// order, a chunk's slice at a time with its offset, until `f` returns
/// false: no copy of the range is made (BITCOUNT, BITPOS). Missing chunks
/// and the bytes a short chunk lacks come as zeros.
pub fn visit_range(ks: &Keyspace, db: u8, key: &[u8], s: Str<'_>, from: u64, to: u64, mut f: impl FnMut(u64, &[u8]) -> bool) -> CmdResult {
    let (version, len, chunk) = match s {
        Str::Big { version, len, chunk } => (version, len, chunk),
        Str::Inline(v) => {
            let to = to.min(v.len() as u64);
            if from < to {
                f(from, &v[from as usize..to as usize]);
            }
            return Ok(());
        }
    };
    let to = to.min(len);
    if from >= to {
        return Ok(());
    }
    // Zeros for `[a, b)`, a chunk at a most at a time.
    let gap = |a: u64, b: u64, f: &mut dyn FnMut(u64, &[u8]) -> bool| {
        let mut at = a;
        while at < b {
            let n = (b - at).min(chunk);
            if !f(at, &ZEROS[..n as usize]) {
                return false;
            }
            at += n;
        }
        true
    };
    let (first, last) = (from / chunk, (to - 1) / chunk);
    if last > first && chunk == BIT_CHUNK as u64 {
        // Several small chunks: MultiGets of up to [`MULTI_GET`] chunks.
        let mut at = from;
        let mut index = first;
        while index <= last {
            let upto = (index + MULTI_GET - 1).min(last);
            let names: Vec<Vec<u8>> = (index..=upto).map(|i| chunk_key(db, key, version, i)).collect();
            let mut going = true;
            ks.store.get_many_with(&names, |i, v| {
                if !going {
                    return;
                }
                let start = (index + i as u64) * chunk;
                let end = (start + chunk).min(to);
                let v = v.unwrap_or(&[]);
                let (a, b) = (start.max(from), (start + v.len() as u64).min(end));
                if a < b {
                    going = f(a, &v[(a - start) as usize..(b - start) as usize]);
                    at = b;
                }
                if going && at < end {
                    going = gap(at, end, &mut f);
                }
                at = end;
            })?;
            if !going {
                return Ok(());
            }
            index = upto + 1;
        }
        return Ok(());
    }
    if last - first < POINT_READS {
        let mut at = from;
        for index in first..=last {
            let start = index * chunk;
            let end = (start + chunk).min(to);
            let mut going = true;
            ks.store.get_with(&chunk_key(db, key, version, index), |v| {
                let v = v.unwrap_or(&[]);
                let (a, b) = (start.max(from), (start + v.len() as u64).min(end));
                if a < b {
                    going = f(a, &v[(a - start) as usize..(b - start) as usize]);
                    at = b;
                }
            })?;
            if !going || (at < end && !gap(at, end, &mut f)) {
                return Ok(());
            }
            at = end;
        }
        return Ok(());
    }
    let lo = chunk_key(db, key, version, first);
    let hi = keys::sub_range(db, key, version).1;
    let prefix = keys::sub_prefix(db, key, version).len();
    let (mut at, mut going, mut bad) = (from, true, false);
    ks.store.scan(&lo, &hi, |k, v| {
        let Some(index) = k.get(prefix..).and_then(|s| <[u8; 4]>::try_from(s).ok()).map(u32::from_be_bytes) else {
            bad = true;
            return false;
        };
        let index = index as u64;
        if index > last {
            return false;
        }
        let start = index * chunk;
        if start > at && !gap(at, start.min(to), &mut f) {
            going = false;
            return false;
        }
        let (a, b) = (start.max(from), (start + v.len() as u64).min(to));
        if a < b {
            if !f(a, &v[(a - start) as usize..(b - start) as usize]) {
                going = false;
                return false;
            }
            at = b;
        }
        let end = (start + chunk).min(to);
        if at < end {
            // A short chunk: the rest of its span is zeros.
            if !gap(at, end, &mut f) {
                going = false;
                return false;
            }
            at = end;
        }
        true
    })?;
    if bad {
        return Err(CORRUPT);
    }
    if going && at < to {
        gap(at, to, &mut f);
    }
    Ok(())
}

/// A whole string value, either form.
pub fn read_all(ks: &Keyspace, db: u8, key: &[u8], s: Str<'_>) -> CmdResult<Vec<u8>> {
    match s {
        Str::Inline(v) => Ok(v.to_vec()),
        Str::Big { len, .. } => read_range(ks, db, key, s, 0, len),
    }
}

/// A live string key's value and expiry, or None; WRONGTYPE for other
/// types. A big string is read whole.
pub fn read(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<Option<(Vec<u8>, u64)>> {
    let Some(stored) = ks.get(db, key, now)? else {
        return Ok(None);
    };
    let m = stored.meta();
    let s = of(&m)?.ok_or(WRONGTYPE)?;
    Ok(Some((read_all(ks, db, key, s)?, m.expire_ms)))
}

/// [`read`] for a value that must be a number: a big string cannot be one,
/// so it is refused with `not_number` without reading it.
pub fn read_number(ks: &Keyspace, db: u8, key: &[u8], now: u64, not_number: CmdError) -> CmdResult<Option<(Vec<u8>, u64)>> {
    read_number_with(ks, db, key, now, not_number, <[u8]>::to_vec)
}

/// [`read_number`] with `f` seeing the value where it is read (INCR parses
/// it there: no copy).
pub fn read_number_with<R>(
    ks: &Keyspace,
    db: u8,
    key: &[u8],
    now: u64,
    not_number: CmdError,
    f: impl FnOnce(&[u8]) -> R,
) -> CmdResult<Option<(R, u64)>> {
    ks.read(db, key, now, |m| match m {
        None => Ok(None),
        Some(Meta {
            ty: KeyType::String,
            expire_ms,
            body,
        }) => Ok(Some((f(body), expire_ms))),
        Some(Meta {
            ty: KeyType::BigString, ..
        }) => Err(not_number),
        Some(_) => Err(WRONGTYPE),
    })?
}

/// GET: `f` sees a live string's value (None: no such key); WRONGTYPE for
/// other types. An inline value is borrowed from the read (no copy).
pub fn with_value<R>(ks: &Keyspace, db: u8, key: &[u8], now: u64, f: impl FnOnce(Option<&[u8]>) -> R) -> CmdResult<R> {
    ks.read(db, key, now, |m| match m {
        None => Ok(f(None)),
        Some(Meta {
            ty: KeyType::String, body, ..
        }) => Ok(f(Some(body))),
        Some(m) => match of(&m)? {
            Some(s) => Ok(f(Some(&read_all(ks, db, key, s)?))),
            None => Err(WRONGTYPE),
        },
    })?
}

/// GET read straight from the owner's column family by another shard
/// (RocksDB is thread-safe; the owner applied every write acknowledged
/// before): `f` sees the value, None for a missing key. It writes nothing,
/// so an expired key reads as missing and is left for its owner to delete.
/// None when only the owner can answer: a big string, another type (a
/// hash whose fields all expired reads as missing there, not WRONGTYPE), or
/// a record the owner's write tier may hold.
pub fn peek<R>(store: &PeerStore, db: u8, key: &[u8], now: u64, f: impl FnOnce(Option<&[u8]>) -> R) -> Option<CmdResult<R>> {
    let found = store.get_with(&keys::meta_key_buf(db, key), |v| match v.map(Meta::decode) {
        None => Some(Ok(f(None))),
        Some(None) => Some(Err(CORRUPT)),
        Some(Some(m)) if m.is_expired(now) => Some(Ok(f(None))),
        Some(Some(Meta {
            ty: KeyType::String, body, ..
        })) => Some(Ok(f(Some(body)))),
        Some(Some(_)) => None,
    });
    match found {
        Err(e) => Some(Err(e.into())),
        Ok(found) => found.flatten(),
    }
}

/// Stages `payload` as the string at `key` with expiry `expire_ms`: inline
/// when short, else in chunks under a fresh version. Whatever was at `key`
/// must be staged for deletion by the caller (`old`: its collection or big
/// string incarnation, whose records go in the same batch).
pub fn stage_put(ks: &Keyspace, b: &mut Batch, db: u8, key: &[u8], expire_ms: u64, payload: &[u8], prior: Prior) {
    if payload.len() <= INLINE_MAX {
        ks.stage_put(b, db, key, &meta::encode_buf(KeyType::String, expire_ms, payload), prior);
        return;
    }
    let version = ks.next_version(crate::clock::now_us());
    for (i, part) in payload.chunks(CHUNK).enumerate() {
        ks.store.put(b, &chunk_key(db, key, version, i as u64), part);
    }
    stage_big_meta(ks, b, db, key, (version, payload.len() as u64, CHUNK as u64), expire_ms, prior);
}

fn stage_big_meta(ks: &Keyspace, b: &mut Batch, db: u8, key: &[u8], (version, len, chunk): (u64, u64, u64), expire_ms: u64, prior: Prior) {
    let c = Coll {
        version,
        size: len,
        hfe: None,
        list_head: None,
        zblocks: false,
        chunk_shift: if chunk == CHUNK as u64 { 0 } else { chunk.trailing_zeros() as u8 },
        stream: None,
    };
    ks.stage_put(b, db, key, &c.encode(KeyType::BigString, expire_ms), prior);
}

/// Writes `payload` as the string at `key` (expiry `expire_ms`), replacing
/// a string that was there (`old`: its incarnation if it was big).
pub fn put(ks: &Keyspace, db: u8, key: &[u8], expire_ms: u64, payload: &[u8], prior: Prior, old: Option<Coll>) -> CmdResult {
    let mut b = ks.store.batch();
    ks.stage_drop_members(&mut b, db, key, old);
    stage_put(ks, &mut b, db, key, expire_ms, payload, prior);
    ks.store.write(b)?;
    Ok(())
}

/// SETRANGE and APPEND: writes `data` at `offset` into the live string `s`
/// (None: no key, `expire_ms` 0) and returns the new length. An inline
/// string that stays short is rewritten whole; one that grows past
/// [`INLINE_MAX`] is converted once; a big string has only the chunks
/// `data` touches rewritten, plus its meta record.
pub fn write_at(ks: &Keyspace, db: u8, key: &[u8], s: Option<Str<'_>>, expire_ms: u64, offset: u64, data: &[u8]) -> CmdResult<u64> {
    write_runs(ks, db, key, s, expire_ms, &[(offset, data.to_vec())], false)
}

/// [`write_at`] for several runs of bytes `(offset, data)` at once, in one
/// batch (SETBIT, BITFIELD: `bits`): each chunk they touch is read and
/// rewritten once. Runs are in offset order and do not overlap; none is
/// empty. For a bit command an inline string longer than
/// [`BIT_INLINE_MAX`] (or growing past it) becomes chunks of
/// [`BIT_CHUNK`] bytes, so each later SETBIT rewrites 4 KiB, not the value.
pub fn write_runs(
    ks: &Keyspace,
    db: u8,
    key: &[u8],
    s: Option<Str<'_>>,
    expire_ms: u64,
    runs: &[(u64, Vec<u8>)],
    bits: bool,
) -> CmdResult<u64> {
    let prior = s.map(|_| expire_ms);
    let end = runs.iter().map(|(o, d)| o + d.len() as u64).max().unwrap_or(0);
    let mut b = ks.store.batch();
    // `inline`: the bytes of an inline string being converted (they are
    // not in chunk records yet).
    let (version, len, chunk, inline) = match s {
        Some(Str::Big { version, len, chunk }) => (version, len, chunk, None),
        other => {
            let cur = match other {
                Some(Str::Inline(v)) => v,
                _ => &[][..],
            };
            let (limit, chunk) = if bits { (BIT_INLINE_MAX, BIT_CHUNK) } else { (INLINE_MAX, CHUNK) };
            if end.max(cur.len() as u64) <= limit as u64 {
                let mut v = cur.to_vec();
                for (offset, data) in runs {
                    crate::types::string::set_range(&mut v, *offset as usize, data);
                }
                put(ks, db, key, expire_ms, &v, prior, None)?;
                return Ok(v.len() as u64);
            }
            let version = ks.next_version(crate::clock::now_us());
            (version, cur.len() as u64, chunk as u64, Some(cur))
        }
    };
    let new_len = len.max(end);
    // Every chunk a run touches, once.
    let mut touched: Vec<u64> = runs
        .iter()
        .filter(|(_, d)| !d.is_empty())
        .flat_map(|(o, d)| o / chunk..=(o + d.len() as u64 - 1) / chunk)
        .collect();
    touched.dedup();
    if let Some(cur) = inline {
        // The converted string's chunks that no run touches.
        for (i, part) in cur.chunks(chunk as usize).enumerate() {
            if touched.binary_search(&(i as u64)).is_err() {
                ks.store.put(&mut b, &chunk_key(db, key, version, i as u64), part);
            }
        }
    }
    let big = Str::Big { version, len, chunk };
    for index in touched {
        let start = index * chunk;
        // The chunk as it will be: its old bytes (zeros where it had none),
        // as far as the new length reaches into it, then the runs laid over.
        let span = (new_len - start).min(chunk);
        let mut bytes = match inline {
            Some(cur) => cur
                .get(start as usize..cur.len().min((start + span) as usize))
                .unwrap_or(&[])
                .to_vec(),
            None => read_range(ks, db, key, big, start, start + span)?,
        };
        bytes.resize(span as usize, 0);
        for (offset, data) in runs {
            let (a, z) = ((*offset).max(start), (offset + data.len() as u64).min(start + span));
            if a < z {
                bytes[(a - start) as usize..(z - start) as usize].copy_from_slice(&data[(a - offset) as usize..(z - offset) as usize]);
            }
        }
        ks.store.put(&mut b, &chunk_key(db, key, version, index), &bytes);
    }
    stage_big_meta(ks, &mut b, db, key, (version, new_len, chunk), expire_ms, prior);
    ks.store.write(b)?;
    Ok(new_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::keyspace::for_test as keyspace;

    fn current(ks: &Keyspace, key: &[u8]) -> Option<(Vec<u8>, u64)> {
        let stored = ks.get(0, key, 1).unwrap()?;
        let m = stored.meta();
        let s = of(&m).unwrap().unwrap();
        Some((read_all(ks, 0, key, s).unwrap(), s.len()))
    }

    fn write(ks: &Keyspace, key: &[u8], offset: u64, data: &[u8]) -> u64 {
        write_as(ks, key, offset, data, false)
    }

    /// A write as SETRANGE does it, or as a bit command (`bits`).
    fn write_as(ks: &Keyspace, key: &[u8], offset: u64, data: &[u8], bits: bool) -> u64 {
        let stored = ks.get(0, key, 1).unwrap();
        let m = stored.as_ref().map(|s| s.meta());
        let s = m.as_ref().map(|m| of(m).unwrap().unwrap());
        write_runs(ks, 0, key, s, 0, &[(offset, data.to_vec())], bits).unwrap()
    }

    /// Random SETRANGE/APPEND sequences (and bit commands' writes, which
    /// make 4 KiB chunks) agree with a plain vector, across the
    /// inline/chunked boundary and chunk edges.
    #[test]
    fn writes_and_reads_agree_with_a_plain_vector() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        for round in 0..10u8 {
            let key = [b'k', round];
            let mut model: Vec<u8> = Vec::new();
            for step in 0..40 {
                let offset = match next(4) {
                    0 => model.len() as u64,
                    1 => next(model.len() as u64 + 1),
                    2 => (next(6) + 1) * CHUNK as u64 - next(3),
                    _ => next(4 * INLINE_MAX as u64),
                };
                let len = [1, 7, CHUNK as u64, CHUNK as u64 + 3, 40_000][next(5) as usize];
                let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ step ^ round).collect();
                // Rounds 6..: the string starts as a bit command made it.
                let n = write_as(&ks, &key, offset, &data, round >= 6 && step < 3);
                crate::types::string::set_range(&mut model, offset as usize, &data);
                assert_eq!(n, model.len() as u64);
                let (all, l) = current(&ks, &key).unwrap();
                assert_eq!(l, model.len() as u64);
                assert!(all == model, "round {round} step {step}");
                let m = ks.get(0, &key, 1).unwrap().unwrap();
                if let big @ Str::Big { len, .. } = of(&m.meta()).unwrap().unwrap() {
                    let a = next(len);
                    let b = a + next(3 * CHUNK as u64);
                    let part = read_range(&ks, 0, &key, big, a, b).unwrap();
                    // The same range visited in slices, in order, whole.
                    let mut seen = Vec::new();
                    visit_range(&ks, 0, &key, big, a, b, |at, v| {
                        assert_eq!(at, a + seen.len() as u64);
                        seen.extend_from_slice(v);
                        true
                    })
                    .unwrap();
                    assert!(seen == part, "round {round} step {step}: visit_range [{a}, {b})");
                    assert_eq!(part, model[a as usize..(b.min(len)) as usize]);
                }
            }
        }
    }

    #[test]
    fn a_far_setrange_writes_one_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        let far = 536_870_911u64;
        assert_eq!(write(&ks, b"far", far, b"x"), far + 1);
        let m = ks.get(0, b"far", 1).unwrap().unwrap();
        let Some(big @ Str::Big { version, len, chunk }) = of(&m.meta()).unwrap() else {
            panic!("not big")
        };
        assert_eq!((len, chunk), (far + 1, CHUNK as u64));
        let (lo, hi) = keys::sub_range(0, b"far", version);
        assert_eq!(ks.store.count(&lo, &hi).unwrap(), 1);
        assert_eq!(read_range(&ks, 0, b"far", big, far - 2, far + 5).unwrap(), b"\0\0x");
        // Visiting it all: zeros for the missing chunks, a chunk at most at a time.
        let (mut n, mut ones, mut most) = (0u64, 0u64, 0usize);
        visit_range(&ks, 0, b"far", big, 0, len, |at, v| {
            assert_eq!(at, n);
            n += v.len() as u64;
            ones += v.iter().filter(|&&b| b != 0).count() as u64;
            most = most.max(v.len());
            true
        })
        .unwrap();
        assert_eq!((n, ones, most), (len, 1, CHUNK));
    }

    #[test]
    fn bit_writes_make_small_chunks_and_keep_them() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        // Short: inline.
        assert_eq!(write_as(&ks, b"b", 100, b"\x01", true), 101);
        assert!(matches!(
            of(&ks.get(0, b"b", 1).unwrap().unwrap().meta()).unwrap(),
            Some(Str::Inline(_))
        ));
        // Past 4 KiB: 4 KiB chunks, the inline bytes carried over.
        assert_eq!(write_as(&ks, b"b", 10_000, b"\x02", true), 10_001);
        let m = ks.get(0, b"b", 1).unwrap().unwrap();
        let Some(big @ Str::Big { version, chunk, .. }) = of(&m.meta()).unwrap() else {
            panic!("not big")
        };
        assert_eq!(chunk, BIT_CHUNK as u64);
        let (lo, hi) = keys::sub_range(0, b"b", version);
        assert_eq!(ks.store.count(&lo, &hi).unwrap(), 2, "chunks 0 and 2");
        assert_eq!(read_range(&ks, 0, b"b", big, 99, 102).unwrap(), b"\0\x01\0");
        // A SETRANGE later keeps the chunk size.
        assert_eq!(write(&ks, b"b", 5000, b"xyz"), 10_001);
        let m = ks.get(0, b"b", 1).unwrap().unwrap();
        let Some(big @ Str::Big { chunk, .. }) = of(&m.meta()).unwrap() else {
            panic!("not big")
        };
        assert_eq!(chunk, BIT_CHUNK as u64);
        assert_eq!(read_range(&ks, 0, b"b", big, 4999, 5003).unwrap(), b"\0xyz");
        // An inline string SET long (5 KiB) becomes chunks at its first bit write.
        put(&ks, 0, b"s", 0, &[7u8; 5000], None, None).unwrap();
        assert_eq!(write_as(&ks, b"s", 0, b"\x08", true), 5000);
        let m = ks.get(0, b"s", 1).unwrap().unwrap();
        let s = of(&m.meta()).unwrap().unwrap();
        assert!(matches!(s, Str::Big { chunk: 4096, .. }));
        let all = read_all(&ks, 0, b"s", s).unwrap();
        assert_eq!((all[0], all[1], all[4999], all.len()), (8, 7, 7, 5000));
    }
}
