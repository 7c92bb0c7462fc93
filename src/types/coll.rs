//! Collections (hashes, sets) on the versioned meta + sub key encoding: a
//! typed view of a key, a writer that stages member changes and keeps the
//! metadata exact, member iteration, and whole-value copies for RENAME,
//! COPY, MOVE and DUMP. No RESP here.

use std::collections::HashMap;

use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::keys;
use crate::storage::meta::{Coll, Hfe, KeyType, Meta};
use crate::storage::{Batch, Snap};
use crate::types::hash::{self, Phys};
use crate::types::keyspace::{Keyspace, Prior};

/// A live collection: its expiry and collection metadata.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub expire_ms: u64,
    pub c: Coll,
}

/// The live collection at `key` if it has type `ty`; WRONGTYPE for another
/// type, None when missing.
pub fn view(ks: &Keyspace, db: u8, key: &[u8], ty: KeyType, now: u64) -> CmdResult<Option<View>> {
    ks.read(db, key, now, |m| match m {
        None => Ok(None),
        Some(m) if m.ty == ty => m.coll().map(|c| Some(View { expire_ms: m.expire_ms, c })).ok_or(CORRUPT),
        Some(_) => Err(WRONGTYPE),
    })?
}

/// A member's stored value, decoded: (expire ms, value). For hashes the
/// expiry may be due; callers decide.
pub fn member(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
    let k = keys::sub_key(db, key, c.version, sub);
    let hfe = c.hfe.is_some();
    ks.store.get_with(&k, |v| match v {
        None => Ok(None),
        Some(raw) => hash::decode_value(hfe, raw).map(|(t, v)| Some((t, v.to_vec()))).ok_or(CORRUPT),
    })?
}

/// A member if live (hash fields: not expired).
pub fn live_member(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, sub: &[u8], now: u64) -> CmdResult<Option<(u64, Vec<u8>)>> {
    Ok(member(ks, db, key, c, sub)?.filter(|(t, _)| !hash::expired(*t, now)))
}

/// One live member from iteration: (sub, expire ms, value).
pub type Entry = (Vec<u8>, u64, Vec<u8>);

/// Visits live members in key order, as of `snap` when given, starting just
/// after member `after`, until `f` returns false. Returns the physical
/// member count visited (live or not).
pub fn scan_members(
    ks: &Keyspace,
    snap: Option<&Snap>,
    (db, key): (u8, &[u8]),
    c: &Coll,
    after: Option<&[u8]>,
    now: u64,
    mut f: impl FnMut(&[u8], u64, &[u8]) -> bool,
) -> CmdResult<usize> {
    let (lo, hi) = keys::sub_range(db, key, c.version);
    let start = after.map(|a| keys::sub_key(db, key, c.version, a));
    let hfe = c.hfe.is_some();
    let (mut visited, mut bad) = (0, false);
    ks.store.scan_from(snap, &lo, start.as_deref(), &hi, |k, v| {
        visited += 1;
        let Some((ttl, val)) = hash::decode_value(hfe, v) else {
            bad = true;
            return false;
        };
        if hash::expired(ttl, now) {
            return true;
        }
        f(&k[lo.len()..], ttl, val)
    })?;
    if bad {
        return Err(CORRUPT);
    }
    Ok(visited)
}

/// Every live member (small collections and whole-value copies).
pub fn all_members(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, now: u64) -> CmdResult<Vec<Entry>> {
    let mut out = Vec::with_capacity(c.size.min(1 << 16) as usize);
    scan_members(ks, None, (db, key), c, None, now, |s, t, v| {
        out.push((s.to_vec(), t, v.to_vec()));
        true
    })?;
    Ok(out)
}

/// Stages member changes of one collection and writes them, with the
/// updated metadata, in one batch. Later reads through the writer see
/// earlier staged changes (a field repeated in one HSET).
pub struct Writer<'k> {
    ks: &'k Keyspace,
    db: u8,
    key: &'k [u8],
    ty: KeyType,
    now: u64,
    pub expire_ms: u64,
    prior: Prior,
    pub c: Coll,
    /// Physical state of members touched so far: (expire ms, value) or gone.
    touched: HashMap<Vec<u8>, Option<(u64, Vec<u8>)>>,
    b: Batch,
    dirty: bool,
}

impl<'k> Writer<'k> {
    /// Opens `key` as a collection of type `ty`. WRONGTYPE for another type.
    /// A missing key gives a new empty collection when `create`, else None.
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], ty: KeyType, now: u64, create: bool) -> CmdResult<Option<Writer<'k>>> {
        let found = view(ks, db, key, ty, now)?;
        let (expire_ms, prior, c) = match found {
            Some(v) => (v.expire_ms, Some(v.expire_ms), v.c),
            None if create => {
                let version = ks.next_version(crate::server::global::now_us());
                (0, None, Coll::new(version, ty == KeyType::Hash))
            }
            None => return Ok(None),
        };
        Ok(Some(Writer {
            ks,
            db,
            key,
            ty,
            now,
            expire_ms,
            prior,
            c,
            touched: HashMap::new(),
            b: ks.store.batch(),
            dirty: false,
        }))
    }

    /// True when the key existed before this command.
    pub fn existed(&self) -> bool {
        self.prior.is_some()
    }

    /// A member's physical (expire ms, value), expired or not.
    pub fn physical(&self, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
        if let Some(t) = self.touched.get(sub) {
            return Ok(t.clone());
        }
        if !self.existed() {
            return Ok(None);
        }
        member(self.ks, self.db, self.key, &self.c, sub)
    }

    /// A member's (expire ms, value) if live.
    pub fn live(&self, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
        Ok(self.physical(sub)?.filter(|(t, _)| !hash::expired(*t, self.now)))
    }

    fn state(p: &Option<(u64, Vec<u8>)>) -> Phys {
        match p {
            None => Phys::Missing,
            Some((t, _)) => Phys::of(*t),
        }
    }

    /// Stores a member with expiry `ttl` (0: none; hashes only).
    pub fn put(&mut self, sub: &[u8], ttl: u64, value: &[u8]) -> CmdResult<Phys> {
        let before = Self::state(&self.physical(sub)?);
        hash::transition(&mut self.c, before, Phys::of(ttl));
        let k = keys::sub_key(self.db, self.key, self.c.version, sub);
        self.ks
            .store
            .put(&mut self.b, &k, &hash::encode_value(self.c.hfe.is_some(), ttl, value));
        self.touched.insert(sub.to_vec(), Some((ttl, value.to_vec())));
        self.dirty = true;
        Ok(before)
    }

    /// Deletes a member; returns its physical state before.
    pub fn delete(&mut self, sub: &[u8]) -> CmdResult<Phys> {
        let before = Self::state(&self.physical(sub)?);
        if before != Phys::Missing {
            hash::transition(&mut self.c, before, Phys::Missing);
            let k = keys::sub_key(self.db, self.key, self.c.version, sub);
            self.ks.store.delete(&mut self.b, &k);
            self.touched.insert(sub.to_vec(), None);
            self.dirty = true;
        }
        Ok(before)
    }

    /// Converts a mode-0 hash to field-expiration mode: every value is
    /// rewritten with a zero expire prefix. Call before staging anything.
    pub fn ensure_hfe(&mut self) -> CmdResult {
        if self.c.hfe.is_some() {
            return Ok(());
        }
        let (lo, hi) = keys::sub_range(self.db, self.key, self.c.version);
        let mut n = 0u64;
        let (ks, b) = (self.ks, &mut self.b);
        ks.store.scan(&lo, &hi, |k, v| {
            ks.store.put(b, k, &hash::encode_value(true, 0, v));
            n += 1;
            true
        })?;
        self.c.size = n;
        self.c.hfe = Some(Hfe {
            persist: n,
            lower: 0,
            upper: 0,
        });
        self.dirty = true;
        Ok(())
    }

    /// Writes everything staged. A collection left with no member (or, for
    /// a hash, provably no live field) is deleted. Returns whether the key
    /// exists afterwards.
    pub fn commit(mut self) -> CmdResult<bool> {
        if !self.dirty {
            return Ok(self.existed());
        }
        let empty = self.c.size == 0 || hash::fast_len(&self.c, self.now) == hash::FastLen::Gone;
        if empty {
            if let Some(e) = self.prior {
                // The old incarnation's meta, for the delete's accounting and range.
                let old = Coll { size: 1, ..self.c }.encode(self.ty, e);
                let m = Meta::decode(&old).ok_or(CORRUPT)?;
                self.ks.stage_delete(&mut self.b, self.db, self.key, &m);
                self.ks.store.write(self.b)?;
            }
            return Ok(false);
        }
        let raw = self.c.encode(self.ty, self.expire_ms);
        self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        self.ks.store.write(self.b)?;
        Ok(true)
    }
}

/// A whole collection taken out of a shard (RENAME/COPY/MOVE across dbs or
/// shards, DUMP): its meta value and physical members (raw stored values).
#[derive(Debug, Clone)]
pub struct Owned {
    pub raw: Vec<u8>,
    pub members: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Copies a live key out (any type; strings carry no members).
pub fn take(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<Option<Owned>> {
    let Some(s) = ks.get(db, key, now)? else { return Ok(None) };
    let mut members = Vec::new();
    if let Some(c) = s.meta().coll() {
        let (lo, hi) = keys::sub_range(db, key, c.version);
        ks.store.scan(&lo, &hi, |k, v| {
            members.push((k[lo.len()..].to_vec(), v.to_vec()));
            true
        })?;
    }
    Ok(Some(Owned { raw: s.raw, members }))
}

/// Stages `v` as key `key` of `db` under a fresh version. `prior`: the
/// destination's state before (the caller deletes an old collection there).
pub fn stage_place(ks: &Keyspace, b: &mut Batch, db: u8, key: &[u8], v: &Owned, prior: Prior) -> CmdResult {
    let m = Meta::decode(&v.raw).ok_or(CORRUPT)?;
    let Some(mut c) = m.coll() else {
        ks.stage_put(b, db, key, &v.raw, prior);
        return Ok(());
    };
    c.version = ks.next_version(crate::server::global::now_us());
    for (sub, val) in &v.members {
        ks.store.put(b, &keys::sub_key(db, key, c.version, sub), val);
    }
    ks.stage_put(b, db, key, &c.encode(m.ty, m.expire_ms), prior);
    Ok(())
}

/// Stages the delete of whatever live key is at `key`; true if one was.
pub fn stage_replace(ks: &Keyspace, b: &mut Batch, db: u8, key: &[u8], now: u64) -> CmdResult<bool> {
    ks.read(db, key, now, |m| m.map(|m| ks.stage_delete(b, db, key, &m)).is_some())
}

/// Places `v` at `key`, replacing whatever live key is there.
pub fn place(ks: &Keyspace, db: u8, key: &[u8], v: &Owned, now: u64) -> CmdResult {
    let mut b = ks.store.batch();
    // stage_delete counts the old key out; the put counts the new one in.
    stage_replace(ks, &mut b, db, key, now)?;
    stage_place(ks, &mut b, db, key, v, None)?;
    ks.store.write(b)?;
    Ok(())
}

/// Writes plain members (a set being stored) under incarnation `version`
/// of `key`. Nothing reads them until [`finish_store`] writes the meta that
/// names that version, so a big result is written in slices, invisible
/// until the last step.
pub fn store_members(ks: &Keyspace, db: u8, key: &[u8], version: u64, members: &[Vec<u8>]) -> CmdResult {
    let mut b = ks.store.batch();
    for m in members {
        ks.store.put(&mut b, &keys::sub_key(db, key, version, m), b"");
    }
    ks.store.write(b)?;
    Ok(())
}

/// Makes a stored set visible: replaces whatever was at `key` with the
/// incarnation `version` holding `size` members (size 0: just deletes).
pub fn finish_store(ks: &Keyspace, db: u8, key: &[u8], ty: KeyType, version: u64, size: u64, now: u64) -> CmdResult {
    let mut b = ks.store.batch();
    stage_replace(ks, &mut b, db, key, now)?;
    if size > 0 {
        let c = Coll { version, size, hfe: None };
        ks.stage_put(&mut b, db, key, &c.encode(ty, 0), None);
    }
    ks.store.write(b)?;
    Ok(())
}

/// The encoding name OBJECT ENCODING reports, as Redis would for this size
/// (its default listpack/intset thresholds).
pub fn encoding_name(ks: &Keyspace, db: u8, key: &[u8], ty: KeyType, c: &Coll, now: u64) -> CmdResult<&'static str> {
    let small = |limit: u64| c.size <= limit;
    match ty {
        KeyType::Hash => {
            if !small(128) {
                return Ok("hashtable");
            }
            let (mut long, mut ttl) = (false, false);
            scan_members(ks, None, (db, key), c, None, now, |s, t, v| {
                long |= s.len() > 64 || v.len() > 64;
                ttl |= t != 0;
                true
            })?;
            Ok(match (long, ttl) {
                (true, _) => "hashtable",
                (false, true) => "listpackex",
                (false, false) => "listpack",
            })
        }
        KeyType::Set => {
            if !small(512) {
                return Ok("hashtable");
            }
            let (mut ints, mut long) = (true, false);
            scan_members(ks, None, (db, key), c, None, now, |s, _, _| {
                ints &= crate::cmd::args::parse_i64(s).is_some();
                long |= s.len() > 64;
                true
            })?;
            Ok(if ints {
                "intset"
            } else if !long && small(128) {
                "listpack"
            } else {
                "hashtable"
            })
        }
        _ => Ok("hashtable"),
    }
}

/// A small xorshift generator for the random commands (HRANDFIELD,
/// SRANDMEMBER, SPOP): seeded from the clock, no crypto needed.
pub struct Rng(u64);

impl Rng {
    pub fn seeded() -> Rng {
        Rng(crate::server::global::now_us() ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A uniform index below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Indexes into `len` members for a random-count command, as Redis picks
    /// them: 0 gives none; a negative count gives `-count` picks that may
    /// repeat; a count of at least `len` gives every member in order; a
    /// smaller one gives that many distinct members in random order.
    pub fn sample(&mut self, len: usize, count: i64) -> Vec<usize> {
        if count == 0 || len == 0 {
            return Vec::new();
        }
        if count < 0 {
            return (0..count.unsigned_abs()).map(|_| self.below(len)).collect();
        }
        let count = count as u64;
        if count >= len as u64 {
            return (0..len).collect();
        }
        let mut idx: Vec<usize> = (0..len).collect();
        for i in 0..count as usize {
            let j = i + self.below(len - i);
            idx.swap(i, j);
        }
        idx.truncate(count as usize);
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_samples_follow_redis_count_rules() {
        let mut r = Rng::seeded();
        assert!(r.sample(5, 0).is_empty());
        assert!(r.sample(0, -3).is_empty());
        assert_eq!(r.sample(3, 10), vec![0, 1, 2]);
        let rep = r.sample(2, -50);
        assert_eq!(rep.len(), 50);
        assert!(rep.iter().all(|&i| i < 2));
        let mut uniq = r.sample(100, 40);
        assert_eq!(uniq.len(), 40);
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), 40);
    }
}
