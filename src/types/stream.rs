//! Streams on the versioned collection encoding (docs/encoding.md,
//! "Streams"). The meta record (type 5, mode 4) holds the stream's own
//! fields ([`StreamMeta`]); its records live under its version:
//!
//! ```text
//! 'e' ms(8) seq(8)   -> node(8) count(4) (len(4) bytes){2 count}   an entry
//! 'n' node(8)        -> valid(8) total(8) bytes(8) last_ms(8) last_seq(8)   a closed node
//! ```
//! Every other record of a stream (consumer groups, `types::xgroup`) sorts
//! after `'e'`: an XADD writes at the entries' tail and the meta record, so
//! a flush of XADDs overlaps only the files that hold the tail.
//!
//! Trimming is lazy: it moves the meta's `floor` (entries below it are
//! garbage, dropped by the compaction filter) and writes no entry record,
//! so a capped stream's flushes hold its tail only and never span it.
//! XDEL deletes its entries' records.
//!
//! Nodes emulate Redis's listpack nodes, so `~` trims what redis-server's
//! trims and XINFO counts them: a node takes entries until it holds
//! `stream-node-max-entries` (deleted ones count) or its estimated listpack
//! bytes reach `stream-node-max-bytes`. The tail node's counts are in the
//! meta record; a node gets its `'n'` record when the next one opens.

use crate::config::Encodings;
use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::keys;
use crate::storage::meta::{Coll, KeyType, RawId, StreamMeta};
use crate::storage::Batch;
use crate::types::keyspace::{Keyspace, Prior};

/// First byte of an entry record.
pub const ENTRY: u8 = b'e';
/// First byte of a closed node's record.
pub const NODE: u8 = b'n';

/// A stream ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Id {
    pub ms: u64,
    pub seq: u64,
}

impl Id {
    pub const MIN: Id = Id { ms: 0, seq: 0 };
    pub const MAX: Id = Id {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> Id {
        Id { ms, seq }
    }

    pub fn raw(self) -> RawId {
        (self.ms, self.seq)
    }

    pub fn from_raw(r: RawId) -> Id {
        Id { ms: r.0, seq: r.1 }
    }

    /// The next ID, None past the last.
    pub fn incr(self) -> Option<Id> {
        match (self.ms, self.seq) {
            (_, s) if s < u64::MAX => Some(Id::new(self.ms, s + 1)),
            (m, _) if m < u64::MAX => Some(Id::new(m + 1, 0)),
            _ => None,
        }
    }

    /// The previous ID, None before 0-0.
    pub fn decr(self) -> Option<Id> {
        match (self.ms, self.seq) {
            (_, s) if s > 0 => Some(Id::new(self.ms, s - 1)),
            (m, _) if m > 0 => Some(Id::new(m - 1, u64::MAX)),
            _ => None,
        }
    }

    pub fn bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<Id> {
        if b.len() != 16 {
            return None;
        }
        let ms = u64::from_be_bytes(b[..8].try_into().ok()?);
        let seq = u64::from_be_bytes(b[8..].try_into().ok()?);
        Some(Id { ms, seq })
    }

    /// `ms-seq` written into `buf` without allocating; the bytes written.
    pub fn format(self, buf: &mut [u8; 41]) -> &[u8] {
        fn digits(n: u64, out: &mut [u8]) -> usize {
            let mut tmp = [0u8; 20];
            let d = crate::resp::reply::u64_digits(n, &mut tmp);
            out[..d.len()].copy_from_slice(d);
            d.len()
        }
        let a = digits(self.ms, &mut buf[..]);
        buf[a] = b'-';
        let b = digits(self.seq, &mut buf[a + 1..]);
        &buf[..a + 1 + b]
    }
}

/// An entry as stored: its ID and its encoded field-value pairs, read
/// without splitting them (`fields` walks them in place).
pub struct RawEntry {
    pub id: Id,
    raw: Vec<u8>,
}

impl RawEntry {
    /// The field-value pairs, flat, as slices of the stored value.
    pub fn fields(&self) -> impl Iterator<Item = &[u8]> {
        let v = &self.raw;
        let n = v.get(8..12).and_then(|s| <[u8; 4]>::try_from(s).ok()).map_or(0, u32::from_be_bytes) as usize;
        let mut at = 12;
        (0..2 * n).map_while(move |_| {
            let len = u32::from_be_bytes(v.get(at..at + 4)?.try_into().ok()?) as usize;
            let f = v.get(at + 4..at + 4 + len)?;
            at += 4 + len;
            Some(f)
        })
    }

    /// How many items [`RawEntry::fields`] yields.
    pub fn len(&self) -> usize {
        2 * self
            .raw
            .get(8..12)
            .and_then(|s| <[u8; 4]>::try_from(s).ok())
            .map_or(0, u32::from_be_bytes) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A node's counts: live entries, entries appended (deleted ones too),
/// estimated listpack bytes, the last entry's ID.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeRec {
    pub(super) valid: u64,
    pub(super) total: u64,
    pub(super) bytes: u64,
    pub(super) last: Id,
}

impl NodeRec {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        for n in [self.valid, self.total, self.bytes] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v.extend_from_slice(&self.last.bytes());
        v
    }

    pub(super) fn decode(v: &[u8]) -> Option<NodeRec> {
        let n = |i: usize| v.get(i..i + 8).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
        Some(NodeRec {
            valid: n(0)?,
            total: n(8)?,
            bytes: n(16)?,
            last: Id::from_bytes(v.get(24..)?)?,
        })
    }
}

/// An entry: its ID and its field-value pairs, flat.
pub type Entry = (Id, Vec<Vec<u8>>);

/// The sub key of node `n`'s record.
pub(super) fn node_sub(n: u64) -> [u8; 9] {
    let mut s = [0u8; 9];
    s[0] = NODE;
    s[1..].copy_from_slice(&n.to_be_bytes());
    s
}

/// The sub key of entry `id`.
pub fn entry_sub(id: Id) -> [u8; 17] {
    let mut s = [0u8; 17];
    s[0] = ENTRY;
    s[1..].copy_from_slice(&id.bytes());
    s
}

/// An entry's stored value.
pub(super) fn encode_entry(node: u64, fields: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + fields.iter().map(|f| 4 + f.len()).sum::<usize>());
    v.extend_from_slice(&node.to_be_bytes());
    v.extend_from_slice(&((fields.len() / 2) as u32).to_be_bytes());
    for f in fields {
        v.extend_from_slice(&(f.len() as u32).to_be_bytes());
        v.extend_from_slice(f);
    }
    v
}

/// Whether a stored entry value is well formed (its count of pairs and
/// their lengths cover it exactly), checked without copying: a reply built
/// from it ([`RawEntry::fields`]) then writes as many items as it announces.
fn entry_fits(v: &[u8]) -> bool {
    let Some(n) = v.get(8..12).and_then(|s| <[u8; 4]>::try_from(s).ok()).map(u32::from_be_bytes) else {
        return false;
    };
    let mut at = 12usize;
    for _ in 0..2 * n as u64 {
        let Some(len) = v.get(at..at + 4).and_then(|s| <[u8; 4]>::try_from(s).ok()).map(u32::from_be_bytes) else {
            return false;
        };
        at += 4 + len as usize;
        if at > v.len() {
            return false;
        }
    }
    at == v.len()
}

/// (node, fields) of a stored entry value; None if malformed.
pub fn decode_entry(v: &[u8]) -> Option<(u64, Vec<Vec<u8>>)> {
    let node = u64::from_be_bytes(v.get(..8)?.try_into().ok()?);
    let n = u32::from_be_bytes(v.get(8..12)?.try_into().ok()?) as usize;
    let mut at = 12;
    let mut out = Vec::with_capacity((2 * n).min(1 << 16));
    for _ in 0..2 * n {
        let len = u32::from_be_bytes(v.get(at..at + 4)?.try_into().ok()?) as usize;
        out.push(v.get(at + 4..at + 4 + len)?.to_vec());
        at += 4 + len;
    }
    (at == v.len()).then_some((node, out))
}

/// How an XADD picks its ID.
#[derive(Debug, Clone, Copy)]
pub enum NewId {
    /// `*`.
    Auto,
    /// `ms-*`.
    Ms(u64),
    /// `ms-seq` or `ms`.
    Exact(Id),
}

/// A trim: by length or by minimum ID, exact or `~` with a limit on the
/// entries removed (0: none).
#[derive(Debug, Clone, Copy)]
pub struct Trim {
    pub by: TrimBy,
    pub approx: bool,
    pub limit: u64,
    /// What happens to the groups' references to trimmed entries.
    pub refs: Refs,
}

/// Redis 8.2's KEEPREF, DELREF, ACKED: what deleting or trimming an entry
/// does about consumer groups that still refer to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Refs {
    /// The entry goes; pending entries naming it stay (XDEL's way).
    #[default]
    Keep,
    /// The entry goes, and so do the pending entries naming it.
    Delete,
    /// The entry goes only when no group needs it: none has it pending,
    /// and every group was handed it already.
    Acked,
}

#[derive(Debug, Clone, Copy)]
pub enum TrimBy {
    MaxLen(u64),
    MinId(Id),
}

/// The XADD ID errors (`Err` of [`Stream::add`]).
pub const ID_TOO_SMALL: &str = "ERR The ID specified in XADD is equal or smaller than the target stream top item";

/// The hasher of a command's staged sets ([`Stream::open`]).
const STAGED_HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243F_6A88_85A3_08D3,
    0x1319_8A2E_0370_7344,
    0xA409_3822_299F_31D0,
    0x082E_FA98_EC4E_6C89,
);

/// One stream, opened for reading and staging changes that
/// [`Stream::commit`] writes in one batch with the new meta record.
pub struct Stream<'k> {
    pub ks: &'k Keyspace,
    pub db: u8,
    pub key: &'k [u8],
    pub expire_ms: u64,
    prior: Prior,
    orig: Coll,
    pub c: Coll,
    pub s: StreamMeta,
    pub b: Batch,
    pub(super) dirty: bool,
    /// The entry this command added (staged: reads do not see it).
    added_now: Option<Id>,
    /// Entries and node records this command deleted (staged).
    gone: ahash::AHashSet<Id>,
    /// Node records this command staged (None: deleted); node walks merge
    /// them with what storage holds.
    pub(super) staged_nodes: std::collections::BTreeMap<u64, Option<NodeRec>>,
    /// Group records this command staged (None: deleted), so that a later
    /// read in the same command sees them (`types::xgroup`).
    pub(super) staged: ahash::AHashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'k> Stream<'k> {
    /// Opens the stream at `key`: WRONGTYPE for another type; a missing key
    /// gives a new empty stream when `create`, else None.
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], now: u64, create: bool) -> CmdResult<Option<Stream<'k>>> {
        let found = ks.read(db, key, now, |m| match m {
            None => Ok(None),
            Some(m) if m.ty == KeyType::Stream => m.coll().map(|c| Some((m.expire_ms, c))).ok_or(CORRUPT),
            Some(_) => Err(WRONGTYPE),
        })??;
        let (expire_ms, prior, c) = match found {
            Some((e, c)) => (e, Some(e), c),
            None if create => {
                let mut c = Coll::new(ks.next_version(crate::clock::now_us()), false);
                c.stream = Some(Box::default());
                (0, None, c)
            }
            None => return Ok(None),
        };
        let s = c.stream.as_deref().copied().ok_or(CORRUPT)?;
        Ok(Some(Stream {
            ks,
            db,
            key,
            expire_ms,
            prior,
            orig: c.clone(),
            c,
            s,
            b: ks.store.batch(),
            dirty: false,
            added_now: None,
            // Fixed seeds: a random state per XADD read the seed source
            // twice (0.5% of XADD -P16); these sets hold what one command
            // staged.
            gone: ahash::AHashSet::with_hasher(STAGED_HASHER),
            staged_nodes: Default::default(),
            staged: ahash::AHashMap::with_hasher(STAGED_HASHER),
        }))
    }

    /// True when the key existed before this command.
    pub fn existed(&self) -> bool {
        self.prior.is_some()
    }

    pub fn len(&self) -> u64 {
        self.c.size
    }

    pub fn is_empty(&self) -> bool {
        self.c.size == 0
    }

    pub fn last_id(&self) -> Id {
        Id::from_raw(self.s.last)
    }

    pub fn first_id(&self) -> Id {
        Id::from_raw(self.s.first)
    }

    pub fn max_deleted(&self) -> Id {
        Id::from_raw(self.s.max_deleted)
    }

    /// Marks the stream changed (the meta record is written at commit).
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    /// The record key of sub key `sub` of this stream.
    pub fn record(&self, sub: &[u8]) -> Vec<u8> {
        keys::sub_key(self.db, self.key, self.c.version, sub)
    }

    /// The ID an XADD would give, or its error text.
    pub fn next_id(&self, want: NewId, now_ms: u64) -> Result<Id, &'static str> {
        let last = self.last_id();
        let id = match want {
            NewId::Auto if now_ms > last.ms => Id::new(now_ms, 0),
            NewId::Auto => last.incr().ok_or(ID_TOO_SMALL)?,
            NewId::Ms(ms) if ms == last.ms => {
                if last.seq == u64::MAX {
                    return Err(ID_TOO_SMALL);
                }
                Id::new(ms, last.seq + 1)
            }
            NewId::Ms(ms) => Id::new(ms, 0),
            NewId::Exact(id) => id,
        };
        if id <= last {
            return Err(ID_TOO_SMALL);
        }
        Ok(id)
    }

    /// Appends an entry at `id` (greater than the last ID: see
    /// [`Stream::next_id`]); `fields` alternate field and value.
    pub fn add(&mut self, id: Id, fields: &[&[u8]], enc: Encodings) {
        let node = self.place_in_node(fields, enc);
        let s = &mut self.s;
        s.tail_last = id.raw();
        s.last = id.raw();
        s.added += 1;
        if self.c.size == 0 {
            s.first = id.raw();
        }
        self.c.size += 1;
        self.added_now = Some(id);
        // Past every ID the stream ever had: no record holds it.
        let k = self.record(&entry_sub(id));
        self.ks.store.put_new(&mut self.b, &k, &encode_entry(node, fields));
        self.dirty = true;
    }

    /// Entries with IDs in `from..=to`, ascending (or descending when
    /// `rev`), at most `count` (0: all).
    pub fn range(&self, from: Id, to: Id, count: u64, rev: bool) -> CmdResult<Vec<Entry>> {
        let mut out = Vec::new();
        self.walk(from, to, rev, |id, v| {
            out.push((id, v));
            count == 0 || (out.len() as u64) < count
        })?;
        Ok(out)
    }

    /// [`Stream::range`] with each entry's value kept whole (one copy, no
    /// split): for replies.
    pub fn range_raw(&self, from: Id, to: Id, count: u64, rev: bool) -> CmdResult<Vec<RawEntry>> {
        let mut out = Vec::with_capacity(count.clamp(1, 1024) as usize);
        self.walk_raw(from, to, rev, |id, v| {
            out.push(RawEntry { id, raw: v.to_vec() });
            count == 0 || (out.len() as u64) < count
        })?;
        Ok(out)
    }

    /// Visits live entries in `from..=to` until `f` returns false.
    pub fn walk(&self, from: Id, to: Id, rev: bool, mut f: impl FnMut(Id, Vec<Vec<u8>>) -> bool) -> CmdResult<()> {
        let mut bad = false;
        self.walk_raw(from, to, rev, |id, v| match decode_entry(v) {
            Some((_, fields)) => f(id, fields),
            None => {
                bad = true;
                false
            }
        })?;
        if bad {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// Visits live entries in `from..=to` (backwards when `rev`) with their
    /// stored values until `f` returns false.
    pub fn walk_raw(&self, from: Id, to: Id, rev: bool, mut f: impl FnMut(Id, &[u8]) -> bool) -> CmdResult<()> {
        let from = from.max(Id::from_raw(self.s.floor));
        if self.c.size == 0 || from > to {
            return Ok(());
        }
        let lo = self.record(&entry_sub(from));
        let hi = match to.incr() {
            Some(t) => self.record(&entry_sub(t)),
            None => self.record(&[ENTRY + 1]),
        };
        let prefix = lo.len() - 16;
        let mut bad = false;
        let mut visit = |k: &[u8], v: &[u8]| match k.get(prefix..).and_then(Id::from_bytes) {
            Some(id) if entry_fits(v) => f(id, v),
            _ => {
                bad = true;
                false
            }
        };
        if rev {
            self.ks.store.scan_back(&lo, &hi, &mut visit)?;
        } else {
            self.ks.store.scan(&lo, &hi, &mut visit)?;
        }
        if bad {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// Entry `id` if live: (node, fields).
    pub fn get(&self, id: Id) -> CmdResult<Option<(u64, Vec<Vec<u8>>)>> {
        if id < Id::from_raw(self.s.floor) || self.c.size == 0 {
            return Ok(None);
        }
        let k = self.record(&entry_sub(id));
        let v = self.ks.store.get_with(&k, |v| v.map(<[u8]>::to_vec))?;
        match v {
            None => Ok(None),
            Some(v) => decode_entry(&v).map(Some).ok_or(CORRUPT),
        }
    }

    /// The first live entry at or after `from` (None: none).
    fn first_from(&self, from: Id) -> CmdResult<Option<Id>> {
        let mut found = None;
        self.walk(from, Id::MAX, false, |id, _| {
            found = Some(id);
            false
        })?;
        Ok(found)
    }

    /// XDEL: deletes the live entries among `ids`; how many were.
    pub fn delete(&mut self, ids: &[Id]) -> CmdResult<u64> {
        let mut gone = 0;
        for &id in ids {
            if self.gone.contains(&id) {
                continue;
            }
            let Some((node, _)) = self.get(id)? else {
                continue;
            };
            let k = self.record(&entry_sub(id));
            self.ks.store.delete(&mut self.b, &k);
            self.gone.insert(id);
            self.c.size -= 1;
            self.node_lost(node, 1)?;
            if id > self.max_deleted() {
                self.s.max_deleted = id.raw();
            }
            gone += 1;
            self.dirty = true;
        }
        if gone > 0 {
            self.refirst()?;
        }
        Ok(gone)
    }

    /// Recomputes `first` after entries went (0-0 when empty).
    pub(super) fn refirst(&mut self) -> CmdResult {
        if self.c.size == 0 {
            self.s.first = (0, 0);
            // Everything up to the last ID is garbage now.
            self.s.floor = self.last_id().incr().unwrap_or(Id::MAX).raw();
            return Ok(());
        }
        // Staged changes are not seen by reads: step over the deletes, and
        // the entry this command added may be the first.
        let mut at = Id::from_raw(self.s.first).max(Id::from_raw(self.s.floor));
        loop {
            let found = self.first_from(at)?;
            let first = match (found, self.added_now.filter(|&a| a >= at)) {
                (Some(f), Some(a)) => f.min(a),
                (f, a) => f.or(a).ok_or(CORRUPT)?,
            };
            if self.gone.contains(&first) {
                at = first.incr().ok_or(CORRUPT)?;
                continue;
            }
            self.s.first = first.raw();
            return Ok(());
        }
    }

    /// XSETID: a new last ID (checked by the caller), and optionally
    /// `entries-added` and `max-deleted-entry-id`.
    pub fn set_last(&mut self, id: Id, added: Option<u64>, max_deleted: Option<Id>) {
        let floor = Id::from_raw(self.s.floor);
        if self.c.size == 0 && id < floor.decr().unwrap_or(Id::MIN) {
            // Garbage of trimmed entries above the new last ID would come
            // back with the next XADD: delete it now.
            let (a, b) = (
                self.record(&entry_sub(id.incr().unwrap_or(Id::MAX))),
                self.record(&entry_sub(floor)),
            );
            self.ks.store.delete_range(&mut self.b, &a, &b);
            self.s.floor = id.incr().unwrap_or(Id::MAX).raw();
        }
        self.s.last = id.raw();
        if let Some(a) = added {
            self.s.added = a;
        }
        if let Some(m) = max_deleted {
            self.s.max_deleted = m.raw();
        }
        self.dirty = true;
    }

    /// Writes the staged changes and the meta record in one batch; true
    /// when the key exists afterwards. A stream stays when emptied, as in
    /// Redis.
    pub fn commit(self) -> CmdResult<bool> {
        let ks = self.ks;
        let b = self.finish()?;
        ks.store.write(b)?;
        Ok(true)
    }

    /// [`Stream::commit`] without the write: the batch.
    pub fn finish(mut self) -> CmdResult<Batch> {
        if !self.dirty {
            return Ok(self.b);
        }
        self.c.stream = Some(Box::new(self.s));
        if !self.existed() || self.c != self.orig {
            let raw = self.c.encode_buf(KeyType::Stream, self.expire_ms);
            self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        }
        Ok(self.b)
    }

    /// Listpack nodes (`radix-tree-keys`).
    pub fn nodes(&self) -> u64 {
        self.s.nodes
    }
}

/// Whether the members of a stream's DUMP fit its meta: every entry record
/// above the floor decodes, and they count `size`.
pub fn members_fit(c: &Coll, members: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let Some(s) = c.stream.as_deref() else {
        return false;
    };
    let floor = Id::from_raw(s.floor);
    let mut live = 0u64;
    for (k, v) in members {
        match k.first() {
            Some(&ENTRY) => match Id::from_bytes(&k[1..]) {
                Some(id) if id >= floor => {
                    if decode_entry(v).is_none() {
                        return false;
                    }
                    live += 1;
                }
                Some(_) => {}
                None => return false,
            },
            Some(_) => {}
            None => return false,
        }
    }
    live == c.size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_and_step() {
        assert!(Id::new(1, 5) < Id::new(2, 0));
        assert_eq!(Id::new(1, u64::MAX).incr(), Some(Id::new(2, 0)));
        assert_eq!(Id::MAX.incr(), None);
        assert_eq!(Id::new(2, 0).decr(), Some(Id::new(1, u64::MAX)));
        assert_eq!(Id::MIN.decr(), None);
        assert_eq!(Id::from_bytes(&Id::new(7, 9).bytes()), Some(Id::new(7, 9)));
        assert!(entry_sub(Id::new(1, 2)) < entry_sub(Id::new(1, 3)));
    }

    #[test]
    fn entries_round_trip() {
        let v = encode_entry(3, &[b"f", b"v", b"", b"x"]);
        assert!(entry_fits(&v));
        assert!(!entry_fits(&v[..v.len() - 1]), "a cut value");
        let mut lying = v.clone();
        lying[11] = 9;
        assert!(!entry_fits(&lying), "more pairs than stored");
        assert_eq!(
            decode_entry(&v),
            Some((3, vec![b"f".to_vec(), b"v".to_vec(), vec![], b"x".to_vec()]))
        );
        assert_eq!(decode_entry(&v[..v.len() - 1]), None);
        assert_eq!(decode_entry(b"short"), None);
    }
}
