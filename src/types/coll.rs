//! Collections (hashes, sets) on the versioned meta + sub key encoding: a
//! typed view of a key, a writer that stages member changes and keeps the
//! metadata exact, member iteration, and whole-value copies for RENAME,
//! COPY, MOVE and DUMP. No RESP here.

use crate::config::Encodings;
use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::keys;
use crate::storage::meta::{Coll, KeyType, Meta};
use crate::storage::{Batch, Snap};
use crate::types::hash;
use crate::types::keyspace::{Keyspace, Prior};

pub use crate::types::writer::Writer;

/// A live collection: its expiry and collection metadata.
#[derive(Debug, Clone)]
pub struct View {
    pub expire_ms: u64,
    pub c: Coll,
}

/// The live collection at `key` if it has type `ty`; WRONGTYPE for another
/// type, None when missing.
pub fn view(ks: &Keyspace, db: u8, key: &[u8], ty: KeyType, now: u64) -> CmdResult<Option<View>> {
    Ok(view_any(ks, db, key, &[ty], now)?.map(|(_, v)| v))
}

/// The live collection at `key` if it has one of the types `tys`, with its
/// type; WRONGTYPE for another type, None when missing.
pub fn view_any(ks: &Keyspace, db: u8, key: &[u8], tys: &[KeyType], now: u64) -> CmdResult<Option<(KeyType, View)>> {
    ks.read(db, key, now, |m| match m {
        None => Ok(None),
        Some(m) if tys.contains(&m.ty) => m.coll().map(|c| Some((m.ty, View { expire_ms: m.expire_ms, c }))).ok_or(CORRUPT),
        Some(_) => Err(WRONGTYPE),
    })?
}

/// A member's stored value, decoded: (expire ms, value). For hashes the
/// expiry may be due; callers decide.
pub fn member(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
    member_with(ks, db, key, c, sub, <[u8]>::to_vec)
}

/// [`member`], the value kept as `keep` makes it.
pub fn member_with<V>(
    ks: &Keyspace,
    db: u8,
    key: &[u8],
    c: &Coll,
    sub: &[u8],
    keep: impl FnOnce(&[u8]) -> V,
) -> CmdResult<Option<(u64, V)>> {
    let k = keys::sub_key_buf(db, key, c.version, sub);
    let hfe = c.hfe.is_some();
    ks.store.get_with(&k, |v| match v {
        None => Ok(None),
        Some(raw) => hash::decode_value(hfe, raw).map(|(t, v)| Some((t, keep(v)))).ok_or(CORRUPT),
    })?
}

/// A member if live (hash fields: not expired).
pub fn live_member(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, sub: &[u8], now: u64) -> CmdResult<Option<(u64, Vec<u8>)>> {
    Ok(member(ks, db, key, c, sub)?.filter(|(t, _)| !hash::expired(*t, now)))
}

/// One live member from iteration: (sub, expire ms, value).
pub type Entry = (Vec<u8>, u64, Vec<u8>);

/// A snapshot for reads of `key`'s members (version `version`) in
/// slices: what the write tier holds of them is written first, nothing
/// else (`ShardStore::snapshot_of`).
pub fn snapshot(ks: &Keyspace, db: u8, key: &[u8], version: u64) -> Snap {
    let (lo, hi) = keys::sub_range(db, key, version);
    ks.store.snapshot_of(&lo, &hi)
}

/// Writes up to `max` of what the write tier holds of `key`'s members
/// (version `version`) to RocksDB; true when it holds none after
/// (`ShardStore::write_out_part`). Called a turn at a time before
/// [`snapshot`] of a big collection, which then has little left to write.
/// With it, whether RocksDB's member memtables wait for flushes: the
/// next part should wait (`ShardStore::flush_behind`).
pub fn write_out_part(ks: &Keyspace, db: u8, key: &[u8], version: u64, max: usize) -> CmdResult<(bool, bool)> {
    let (lo, hi) = keys::sub_range(db, key, version);
    if ks.store.flush_behind() {
        return Ok((false, true));
    }
    Ok((ks.store.write_out_part(&lo, &hi, max)?, false))
}

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

/// Collections up to this size are sampled uniformly from a full read; larger
/// ones by random seeks (see [`random_members`]).
const SAMPLE_ALL_UP_TO: u64 = 1024;

/// Random members for HRANDFIELD, SRANDMEMBER and SPOP with Redis's count
/// rules ([`Rng::sample`]). Up to [`SAMPLE_ALL_UP_TO`] members the pick is
/// uniform over a full read. Beyond that a full read per call would stall
/// the core, so each pick seeks to a random point between the first and
/// last member and takes the member there: every member can come up, but
/// not with exactly equal probability. A
/// positive count takes that many consecutive members from one random
/// point (distinct, wrapping around).
pub fn random_members(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, now: u64, count: i64, rng: &mut Rng) -> CmdResult<Vec<Entry>> {
    if c.size <= SAMPLE_ALL_UP_TO {
        let all = all_members(ks, db, key, c, now)?;
        let picks = rng.sample(all.len(), count);
        return Ok(picks.into_iter().map(|i| all[i].clone()).collect());
    }
    let (lo, hi) = keys::sub_range(db, key, c.version);
    // The first and last member bound the seek points. They are looked up
    // once per incarnation and forgotten when a member is added (see
    // `Writer::commit`): members popped since only make the bounds a little
    // wide, and a seek past the last member wraps to the first.
    let id = (db, key.to_vec(), c.version);
    let cached = ks.sample_bounds.borrow().get(&id).cloned();
    let (first, last) = match cached {
        Some(b) => b,
        None => {
            let mut first = None;
            ks.store.scan(&lo, &hi, |k, _| {
                first = Some(k[lo.len()..].to_vec());
                false
            })?;
            let last = ks.store.last_key(&lo, &hi)?.map(|k| k[lo.len()..].to_vec());
            let (Some(first), Some(last)) = (first, last) else {
                return Ok(Vec::new());
            };
            let mut map = ks.sample_bounds.borrow_mut();
            if map.len() >= 1024 {
                map.clear();
            }
            map.insert(id, (first.clone(), last.clone()));
            (first, last)
        }
    };
    // A random point between first and last: after their common prefix, the
    // first byte lies between theirs and every later byte within the range
    // of bytes their tails use (digits stay digits), so picks spread over
    // the members instead of piling onto a few (which would also pile up
    // delete tombstones where SPOP seeks next).
    let common = first.iter().zip(&last).take_while(|(a, b)| a == b).count();
    let (tf, tl) = (&first[common..], &last[common..]);
    let (bmin, bmax) = tf.iter().chain(tl).fold((u8::MAX, 0u8), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    let len = tf.len().max(tl.len());
    let seek_point = |rng: &mut Rng| -> Vec<u8> {
        let mut p = first[..common].to_vec();
        if len == 0 {
            return p;
        }
        let (a, b) = (tf.first().copied().unwrap_or(bmin), tl.first().copied().unwrap_or(bmax));
        p.push(a + (rng.next_u64() % (b.saturating_sub(a) as u64 + 1)) as u8);
        for _ in 1..len {
            p.push(bmin + (rng.next_u64() % (bmax.saturating_sub(bmin) as u64 + 1)) as u8);
        }
        p
    };
    // Members from `start` on, wrapping to the first, at most `n`.
    let take_from = |start: &[u8], n: usize| -> CmdResult<Vec<Entry>> {
        let mut out = Vec::with_capacity(n);
        let from = keys::sub_key(db, key, c.version, start);
        for (a, b) in [(&from, &hi), (&lo, &from)] {
            if out.len() < n {
                ks.store.scan(a, b, |k, v| {
                    // Expired hash fields are stepped over (a seek that lands
                    // among them picks the next live one).
                    match hash::decode_value(c.hfe.is_some(), v) {
                        Some((ttl, _)) if hash::expired(ttl, now) => {}
                        d => out.push((k[lo.len()..].to_vec(), 0, d.map_or(&[][..], |(_, v)| v).to_vec())),
                    }
                    out.len() < n
                })?;
            }
        }
        Ok(out)
    };
    if count < 0 {
        let mut out = Vec::with_capacity(count.unsigned_abs() as usize);
        for _ in 0..count.unsigned_abs() {
            let p = seek_point(rng);
            out.extend(take_from(&p, 1)?);
        }
        return Ok(out);
    }
    let n = (count as u64).min(c.size) as usize;
    let p = seek_point(rng);
    take_from(&p, n)
}

/// HLEN: the exact number of live fields of hash `v`, repairing its
/// metadata with one scan when the fast paths cannot prove the count.
pub fn hash_len(ks: &Keyspace, db: u8, key: &[u8], v: &View, now: u64) -> CmdResult<u64> {
    match hash::fast_len(&v.c, now) {
        hash::FastLen::Known(n) => Ok(n),
        hash::FastLen::Gone | hash::FastLen::Scan => {
            let fixed = hash::repair(ks, db, key, &v.c.encode(KeyType::Hash, v.expire_ms), now)?;
            Ok(fixed.as_deref().and_then(Meta::decode).and_then(|m| m.coll()).map_or(0, |c| c.size))
        }
    }
}

/// A whole collection taken out of a shard (RENAME/COPY/MOVE across dbs or
/// shards, DUMP): its meta value and physical members (raw stored values).
#[derive(Debug, Clone, PartialEq, Eq)]
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
    c.version = ks.next_version(crate::clock::now_us());
    for (sub, val) in &v.members {
        ks.store.put(b, &keys::sub_key(db, key, c.version, sub), val);
    }
    // A hash that arrives with field TTLs (RENAME, COPY, MOVE, RESTORE) gets
    // its active-expiration entry, or its fields would expire only when read.
    if let Some(h) = c.hfe.as_ref().filter(|_| m.ty == KeyType::Hash) {
        hash::stage_repair_at(ks, b, db, key, &c, h.lower);
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
pub fn finish_store(ks: &Keyspace, db: u8, key: &[u8], ty: KeyType, version: u64, size: u64, now: u64) -> CmdResult<bool> {
    let mut b = ks.store.batch();
    let replaced = stage_replace(ks, &mut b, db, key, now)?;
    if size > 0 {
        let c = Coll {
            version,
            size,
            hfe: None,
            list_head: None,
            zblocks: ty == KeyType::ZSet,
            chunk_shift: 0,
            stream: None,
        };
        ks.stage_put(&mut b, db, key, &c.encode(ty, 0), None);
    }
    ks.store.write(b)?;
    Ok(replaced)
}

/// OBJECT ENCODING of a live key: `int`, `embstr` or `raw` for a string
/// (as Redis's `createStringObject` and `tryObjectEncoding` choose), a
/// collection's name from [`encoding_name`]; None when the key is missing.
pub fn encoding_of(ks: &Keyspace, db: u8, key: &[u8], now: u64, enc: Encodings) -> CmdResult<Option<&'static str>> {
    let found = ks.read(db, key, now, |m| {
        m.map(|m| {
            let string = match m.ty {
                KeyType::String => Some(string_encoding(m.body)),
                KeyType::BigString => Some("raw"),
                _ => None,
            };
            (m.ty, m.coll(), string)
        })
    })?;
    match found {
        None => Ok(None),
        Some((_, _, Some(e))) => Ok(Some(e)),
        Some((ty, Some(c), None)) => encoding_name(ks, (db, key), ty, &c, now, enc).map(Some),
        Some((_, None, None)) => Err(CORRUPT),
    }
}

/// The encoding name Redis would report for a string value.
fn string_encoding(v: &[u8]) -> &'static str {
    if v.len() <= 20 && crate::resp::parse::string2ll(v).is_some() {
        "int"
    } else if v.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// MOVE: `key` of `db` to `dst` with its members and expiry, when `key` is
/// live and `dst` has no live key of that name; false otherwise.
pub fn move_to_db(ks: &Keyspace, db: u8, key: &[u8], dst: u8, now: u64) -> CmdResult<bool> {
    let Some(v) = take(ks, db, key, now)? else {
        return Ok(false);
    };
    if ks.read(dst, key, now, |m| m.is_some())? {
        return Ok(false);
    }
    let mut b = ks.store.batch();
    stage_place(ks, &mut b, dst, key, &v, None)?;
    let src = Meta::decode(&v.raw).ok_or(CORRUPT)?;
    ks.stage_delete(&mut b, db, key, &src);
    ks.store.write(b)?;
    Ok(true)
}

/// The encoding name OBJECT ENCODING reports, as Redis would for this
/// size and these members under the thresholds `enc` (CONFIG's
/// `hash-max-listpack-*`, `set-max-intset-entries`, `set-max-listpack-*`).
/// Redis never converts back to the small encoding; Basalt tells from
/// what the collection holds now.
fn encoding_name(ks: &Keyspace, (db, key): (u8, &[u8]), ty: KeyType, c: &Coll, now: u64, enc: Encodings) -> CmdResult<&'static str> {
    match ty {
        KeyType::Hash => {
            if c.size > enc.hash_entries {
                return Ok("hashtable");
            }
            let (mut long, mut ttl) = (false, false);
            scan_members(ks, None, (db, key), c, None, now, |s, t, v| {
                long |= s.len() as u64 > enc.hash_value || v.len() as u64 > enc.hash_value;
                ttl |= t != 0;
                true
            })?;
            Ok(match (long, ttl) {
                (true, _) => "hashtable",
                (false, true) => "listpackex",
                (false, false) => "listpack",
            })
        }
        KeyType::List => match crate::types::list::List::open(ks, db, key, now, false)? {
            Some(l) => l.encoding(enc),
            None => Err(CORRUPT),
        },
        KeyType::Set => {
            let (mut ints, mut long) = (true, false);
            scan_members(ks, None, (db, key), c, None, now, |s, _, _| {
                ints &= crate::resp::parse::string2ll(s).is_some();
                long |= s.len() as u64 > enc.set_value;
                ints || !long
            })?;
            Ok(if ints && c.size <= enc.set_intset_entries {
                "intset"
            } else if !long && c.size <= enc.set_entries {
                "listpack"
            } else {
                "hashtable"
            })
        }
        KeyType::ZSet => {
            if c.size > enc.zset_entries {
                return Ok("skiplist");
            }
            let mut long = false;
            crate::types::zset::walk(ks, db, key, c, None, false, |_, m| {
                long |= m.len() as u64 > enc.zset_value;
                !long
            })?;
            Ok(if long { "skiplist" } else { "listpack" })
        }
        KeyType::Stream => Ok("stream"),
        _ => Ok("hashtable"),
    }
}

/// A small xorshift generator for the random commands (HRANDFIELD,
/// SRANDMEMBER, SPOP): seeded from the clock, no crypto needed.
pub struct Rng(u64);

impl Rng {
    pub fn seeded() -> Rng {
        Rng(crate::clock::now_us() ^ 0x9E37_79B9_7F4A_7C15 | 1)
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
    use std::collections::BTreeMap;

    use crate::storage::gc;
    use crate::types::keyspace::for_test as keyspace;

    #[test]
    fn encodings_like_redis() {
        assert_eq!(string_encoding(b"12345"), "int");
        assert_eq!(string_encoding(b"hello"), "embstr");
        assert_eq!(string_encoding(&[b'a'; 45]), "raw");
    }

    /// A mode-0 (legacy layout) hash written by hand: bare values, no HFE meta.
    fn legacy_hash(ks: &Keyspace, key: &[u8], fields: &[(&[u8], &[u8])]) {
        let c = Coll {
            version: ks.next_version(1),
            size: fields.len() as u64,
            hfe: None,
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        };
        let mut b = ks.store.batch();
        for (f, v) in fields {
            ks.store.put(&mut b, &keys::sub_key(0, key, c.version, f), v);
        }
        ks.stage_put(&mut b, 0, key, &c.encode(KeyType::Hash, 0), None);
        ks.store.write(b).unwrap();
    }

    fn members_on_disk(ks: &Keyspace, key: &[u8], version: u64) -> usize {
        let (lo, hi) = keys::sub_range(0, key, version);
        let mut n = 0;
        ks.store
            .scan(&lo, &hi, |_, _| {
                n += 1;
                true
            })
            .unwrap();
        n
    }

    #[test]
    fn deleting_or_overwriting_a_collection_drops_its_members() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        for (key, overwrite) in [(&b"del"[..], false), (&b"set"[..], true)] {
            let mut w = Writer::open(&ks, 0, key, KeyType::Hash, 5, true).unwrap().unwrap();
            for f in [b"a", b"b", b"c"] {
                w.put(f, 0, b"v").unwrap();
            }
            w.commit().unwrap();
            let v = view(&ks, 0, key, KeyType::Hash, 5).unwrap().unwrap();
            assert_eq!(members_on_disk(&ks, key, v.c.version), 3);
            if overwrite {
                // SET over the hash.
                ks.put_over(0, key, &crate::storage::meta::encode_string(0, b"x"), Some(0), Some(v.c.clone()))
                    .unwrap();
                assert_eq!(ks.type_of(0, key, 5).unwrap(), Some(KeyType::String));
            } else {
                assert!(ks.delete(0, key, 5).unwrap());
            }
            assert_eq!(members_on_disk(&ks, key, v.c.version), 0, "{}", String::from_utf8_lossy(key));
        }
        assert_eq!(ks.count(0), 1);
    }

    /// Compaction drops members of old incarnations, orphans past the grace
    /// period and expired hash fields, and keeps everything else; an expired
    /// field dropped this way is a TTL ghost the next repair counts away.
    #[test]
    fn compaction_collects_garbage_and_leaves_ghosts() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        let now = crate::clock::now_ms();
        // A hash with one persistent and two expired TTL fields.
        let mut w = Writer::open(&ks, 0, b"h", KeyType::Hash, now - 1000, true).unwrap().unwrap();
        w.put(b"keep", 0, b"1").unwrap();
        w.put(b"old1", now - 500, b"2").unwrap();
        w.put(b"old2", now - 400, b"3").unwrap();
        w.commit().unwrap();
        let h = view(&ks, 0, b"h", KeyType::Hash, now).unwrap().unwrap();
        // Members of an older incarnation of "h", an orphan of a long-gone
        // key, and a fresh member with no meta yet (a store in flight).
        let ancient = ((now - gc::GRACE_MS - 5000) * 1000) << 11;
        let fresh = (now * 1000) << 11;
        let mut b = ks.store.batch();
        ks.store.put(&mut b, &keys::sub_key(0, b"h", h.c.version - 1, b"stale"), b"");
        ks.store.put(&mut b, &keys::sub_key(0, b"gone", ancient, b"orphan"), b"");
        ks.store.put(&mut b, &keys::sub_key(0, b"next", fresh, b"in-flight"), b"");
        ks.store.write(b).unwrap();
        ks.store.compact_all();
        assert_eq!(members_on_disk(&ks, b"h", h.c.version), 1, "expired fields dropped");
        assert_eq!(members_on_disk(&ks, b"h", h.c.version - 1), 0, "old incarnation dropped");
        assert_eq!(members_on_disk(&ks, b"gone", ancient), 0, "orphan dropped");
        assert_eq!(members_on_disk(&ks, b"next", fresh), 1, "fresh member kept");
        // The metadata still counts the two ghosts; HLEN's repair fixes it.
        let v = view(&ks, 0, b"h", KeyType::Hash, now).unwrap().unwrap();
        assert_eq!((v.c.size, v.c.hfe.as_ref().map(|h| h.persist)), (3, Some(1)));
        assert_eq!(hash_len(&ks, 0, b"h", &v, now).unwrap(), 1);
        let v = view(&ks, 0, b"h", KeyType::Hash, now).unwrap().unwrap();
        assert_eq!(v.c.size, 1);
        assert_eq!(all_members(&ks, 0, b"h", &v.c, now).unwrap().len(), 1);
    }

    /// The model: field -> (value, expire ms); a field is live while its
    /// expiry is 0 or after now.
    type Model = BTreeMap<Vec<u8>, (Vec<u8>, u64)>;

    fn live_model(m: &Model, now: u64) -> BTreeMap<Vec<u8>, (Vec<u8>, u64)> {
        m.iter()
            .filter(|(_, (_, t))| !hash::expired(*t, now))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn check(ks: &Keyspace, key: &[u8], m: &Model, now: u64, step: usize) {
        let want = live_model(m, now);
        let v = view(ks, 0, key, KeyType::Hash, now).unwrap();
        assert_eq!(v.is_some(), !want.is_empty(), "step {step}: key existence at {now}");
        let Some(v) = v else { return };
        for i in 0..6u8 {
            let f = vec![b'f', b'0' + i];
            let got = live_member(ks, 0, key, &v.c, &f, now).unwrap().map(|(t, val)| (val, t));
            assert_eq!(got.as_ref(), want.get(&f), "step {step}: field {i} at {now}");
        }
        let all: Vec<_> = all_members(ks, 0, key, &v.c, now)
            .unwrap()
            .into_iter()
            .map(|(f, t, val)| (f, (val, t)))
            .collect();
        assert_eq!(all, want.clone().into_iter().collect::<Vec<_>>(), "step {step}: HGETALL");
        let v = view(ks, 0, key, KeyType::Hash, now).unwrap().unwrap();
        assert_eq!(
            hash_len(ks, 0, key, &v, now).unwrap(),
            want.len() as u64,
            "step {step}: HLEN at {now}"
        );
        if let Some(h) = view(ks, 0, key, KeyType::Hash, now)
            .unwrap()
            .and_then(|v| v.c.hfe.clone().map(|h| (v.c, h)))
        {
            let (c, h) = h;
            assert!(h.persist <= c.size, "step {step}: persist <= size");
            if c.size == h.persist {
                assert_eq!((h.lower, h.upper), (0, 0), "step {step}: no candidates, no bounds");
            }
            for (_, t) in want.values().filter(|(_, t)| *t != 0) {
                assert!(h.lower <= *t && *t <= h.upper, "step {step}: ttl {t} outside {h:?}");
            }
        }
    }

    /// Field expiration against a model, with a clock the test moves: random
    /// HSET, HEXPIRE (past and future), HPERSIST, HDEL, HINCRBY-style writes
    /// that keep the TTL, compaction ghosts, time jumps and active field
    /// expiration passes. After every step
    /// every field, HGETALL, HLEN, key existence and the metadata invariants
    /// must agree with the model.
    #[test]
    fn field_expiration_matches_a_model_with_a_movable_clock() {
        let mut active_visits = 0;
        for seed in 1..=12u64 {
            let dir = tempfile::tempdir().unwrap();
            let ks = keyspace(dir.path());
            let key = b"h".as_slice();
            let mut rng = Rng(seed * 0x2545_F491_4F6C_DD1D);
            let mut now = 1_000u64;
            let mut m = Model::new();
            if seed % 2 == 0 {
                legacy_hash(&ks, key, &[(b"f0", b"a"), (b"f1", b"b")]);
                m.insert(b"f0".to_vec(), (b"a".to_vec(), 0));
                m.insert(b"f1".to_vec(), (b"b".to_vec(), 0));
            }
            for step in 0..300 {
                let f = vec![b'f', b'0' + rng.below(6) as u8];
                let op = rng.below(8);
                let create = op == 0;
                if let Some(mut w) = Writer::open(&ks, 0, key, KeyType::Hash, now, create).unwrap() {
                    match op {
                        0 => {
                            let val = format!("v{step}").into_bytes();
                            w.put(&f, 0, &val).unwrap();
                            m.insert(f.clone(), (val, 0));
                        }
                        1 | 2 => {
                            let at = (now + rng.below(20) as u64).saturating_sub(3);
                            w.ensure_hfe().unwrap();
                            if let Some((_, val)) = w.live(&f).unwrap() {
                                if at <= now {
                                    w.delete(&f).unwrap();
                                    m.remove(&f);
                                } else {
                                    w.put(&f, at, &val).unwrap();
                                    m.insert(f.clone(), (val, at));
                                }
                            }
                        }
                        3 => {
                            if let Some((t, val)) = w.live(&f).unwrap() {
                                if t != 0 {
                                    w.put(&f, 0, &val).unwrap();
                                    m.insert(f.clone(), (val, 0));
                                }
                            }
                        }
                        4 => {
                            w.delete(&f).unwrap();
                            m.remove(&f);
                        }
                        5 => {
                            if let Some((t, _)) = w.live(&f).unwrap() {
                                let val = format!("i{step}").into_bytes();
                                w.put(&f, t, &val).unwrap();
                                m.insert(f.clone(), (val, t));
                            }
                        }
                        _ => {}
                    }
                    w.commit().unwrap();
                }
                if op == 6 {
                    // A compaction ghost: an expired TTL field's record goes,
                    // the metadata stays.
                    if let Some((c, _)) = view(&ks, 0, key, KeyType::Hash, now).unwrap().map(|v| (v.c, ())) {
                        if let Some((t, _)) = member(&ks, 0, key, &c, &f).unwrap() {
                            if hash::expired(t, now) {
                                let mut b = ks.store.batch();
                                ks.store.delete(&mut b, &keys::sub_key(0, key, c.version, &f));
                                ks.store.write(b).unwrap();
                            }
                        }
                    }
                }
                if op == 7 {
                    now += rng.below(15) as u64;
                    // Active field expiration runs whenever it likes.
                    if rng.below(2) == 0 {
                        active_visits += ks.expire_fields_due(now, 100).unwrap();
                    }
                }
                check(&ks, key, &m, now, step);
                m.retain(|_, (_, t)| !hash::expired(*t, now));
            }
        }
        assert!(active_visits > 0, "active field expiration never ran");
    }

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
