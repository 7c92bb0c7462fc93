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
use crate::storage::meta::{Coll, KeyType, Meta, RawId, StreamMeta};
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

    /// `ms-seq`, as replies write it.
    pub fn text(self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }
}

/// An entry: its ID and its field-value pairs, flat.
pub type Entry = (Id, Vec<Vec<u8>>);

/// The sub key of entry `id`.
pub fn entry_sub(id: Id) -> [u8; 17] {
    let mut s = [0u8; 17];
    s[0] = ENTRY;
    s[1..].copy_from_slice(&id.bytes());
    s
}

fn node_sub(n: u64) -> [u8; 9] {
    let mut s = [0u8; 9];
    s[0] = NODE;
    s[1..].copy_from_slice(&n.to_be_bytes());
    s
}

/// An entry's stored value.
fn encode_entry(node: u64, fields: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + fields.iter().map(|f| 4 + f.len()).sum::<usize>());
    v.extend_from_slice(&node.to_be_bytes());
    v.extend_from_slice(&((fields.len() / 2) as u32).to_be_bytes());
    for f in fields {
        v.extend_from_slice(&(f.len() as u32).to_be_bytes());
        v.extend_from_slice(f);
    }
    v
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

/// The bytes a listpack element of `s` takes (encoding and back-length),
/// as Redis's listpack would store it (integers in their short forms).
fn lp_element_bytes(s: &[u8]) -> u64 {
    let enc = match crate::resp::parse::string2ll(s) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..4096).contains(&v) => 2,
        Some(v) if (-32768..32768).contains(&v) => 3,
        Some(v) if (-8388608..8388608).contains(&v) => 4,
        Some(v) if (i32::MIN as i64..=i32::MAX as i64).contains(&v) => 5,
        Some(_) => 9,
        None if s.len() < 64 => 1 + s.len() as u64,
        None if s.len() < 4096 => 2 + s.len() as u64,
        None => 5 + s.len() as u64,
    };
    let back = match enc {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    };
    enc + back
}

/// The estimated bytes of a new node's listpack holding `fields` as its
/// master entry and first entry (Redis's `lpNew` plus the master fields).
fn node_start_bytes(fields: &[&[u8]]) -> u64 {
    // Header and end byte; count, deleted, master field count, the master
    // fields, the master terminator.
    let mut b = 7 + 2 + 2 + 2 + 2;
    for f in fields.iter().step_by(2) {
        b += lp_element_bytes(f);
    }
    b + entry_bytes(fields)
}

/// The estimated listpack bytes of an entry with the master's fields:
/// flags, ID deltas, the values, its element count.
fn entry_bytes(fields: &[&[u8]]) -> u64 {
    let mut b = 2 + 2 + 2 + 2;
    for v in fields.iter().skip(1).step_by(2) {
        b += lp_element_bytes(v);
    }
    b
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
}

#[derive(Debug, Clone, Copy)]
pub enum TrimBy {
    MaxLen(u64),
    MinId(Id),
}

/// The XADD ID errors (`Err` of [`Stream::add`]).
pub const ID_TOO_SMALL: &str = "ERR The ID specified in XADD is equal or smaller than the target stream top item";

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
    dirty: bool,
    /// The entry this command added (staged: reads do not see it).
    added_now: Option<Id>,
    /// Entries and node records this command deleted (staged).
    gone: std::collections::HashSet<Id>,
    dropped: std::collections::HashSet<u64>,
}

/// A node's counts: live entries, entries appended (deleted ones too),
/// estimated listpack bytes, the last entry's ID.
#[derive(Debug, Clone, Copy)]
struct NodeRec {
    valid: u64,
    total: u64,
    bytes: u64,
    last: Id,
}

impl NodeRec {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        for n in [self.valid, self.total, self.bytes] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v.extend_from_slice(&self.last.bytes());
        v
    }

    fn decode(v: &[u8]) -> Option<NodeRec> {
        let n = |i: usize| v.get(i..i + 8).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
        Some(NodeRec {
            valid: n(0)?,
            total: n(8)?,
            bytes: n(16)?,
            last: Id::from_bytes(v.get(24..)?)?,
        })
    }
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
                c.stream = Some(StreamMeta::default());
                (0, None, c)
            }
            None => return Ok(None),
        };
        let s = c.stream.ok_or(CORRUPT)?;
        Ok(Some(Stream {
            ks,
            db,
            key,
            expire_ms,
            prior,
            orig: c,
            c,
            s,
            b: ks.store.batch(),
            dirty: false,
            added_now: None,
            gone: Default::default(),
            dropped: Default::default(),
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
        let s = &mut self.s;
        let max_bytes = match enc.stream_node_bytes {
            0 => 1 << 30,
            n => n.min(1 << 30),
        };
        let total: u64 = fields.iter().map(|f| f.len() as u64).sum();
        let open_new =
            s.nodes == 0 || s.tail_bytes + total >= max_bytes || (enc.stream_node_entries != 0 && s.tail_total >= enc.stream_node_entries);
        if open_new {
            if s.nodes > 0 {
                // The tail node closes: its counts go to its record.
                let r = NodeRec {
                    valid: s.tail_valid,
                    total: s.tail_total,
                    bytes: s.tail_bytes,
                    last: Id::from_raw(s.tail_last),
                };
                let n = s.tail_node;
                self.put_node(n, &r);
            }
            let s = &mut self.s;
            if s.nodes > 0 {
                s.tail_node += 1;
            }
            s.nodes += 1;
            s.tail_total = 0;
            s.tail_valid = 0;
            s.tail_bytes = node_start_bytes(fields);
        } else {
            self.s.tail_bytes += entry_bytes(fields);
        }
        let s = &mut self.s;
        s.tail_total += 1;
        s.tail_valid += 1;
        s.tail_last = id.raw();
        s.last = id.raw();
        s.added += 1;
        if self.c.size == 0 {
            s.first = id.raw();
        }
        let node = s.tail_node;
        self.c.size += 1;
        self.added_now = Some(id);
        let k = self.record(&entry_sub(id));
        self.ks.store.put(&mut self.b, &k, &encode_entry(node, fields));
        self.dirty = true;
    }

    fn put_node(&mut self, n: u64, r: &NodeRec) {
        let k = self.record(&node_sub(n));
        self.ks.store.put(&mut self.b, &k, &r.encode());
        self.dropped.remove(&n);
        self.dirty = true;
    }

    fn read_node(&self, n: u64) -> CmdResult<NodeRec> {
        let k = self.record(&node_sub(n));
        let v = self.ks.store.get_with(&k, |v| v.map(NodeRec::decode))?;
        v.flatten().ok_or(CORRUPT)
    }

    /// Node `n` (closed) goes.
    fn drop_node(&mut self, n: u64) {
        let k = self.record(&node_sub(n));
        self.ks.store.delete(&mut self.b, &k);
        self.dropped.insert(n);
        self.s.nodes = self.s.nodes.saturating_sub(1);
        self.dirty = true;
    }

    /// The tail node went: the last closed node (if any) becomes the tail
    /// and takes the next entries while it has room, as in Redis.
    fn tail_gone(&mut self) -> CmdResult {
        self.s.nodes = self.s.nodes.saturating_sub(1);
        self.s.tail_total = 0;
        self.s.tail_valid = 0;
        self.s.tail_bytes = 0;
        self.dirty = true;
        if self.s.nodes == 0 {
            return Ok(());
        }
        let mut prev = None;
        let (lo, hi) = (self.record(&[NODE]), self.record(&node_sub(self.s.tail_node)));
        let prefix = lo.len();
        self.ks.store.scan_back(&lo, &hi, |k, v| {
            let n = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
            match n {
                Some(n) if self.dropped.contains(&n) => true,
                Some(n) => {
                    prev = NodeRec::decode(v).map(|r| (n, r));
                    false
                }
                None => false,
            }
        })?;
        let (n, r) = prev.ok_or(CORRUPT)?;
        let k = self.record(&node_sub(n));
        self.ks.store.delete(&mut self.b, &k);
        self.dropped.insert(n);
        let s = &mut self.s;
        s.tail_node = n;
        s.tail_total = r.total;
        s.tail_valid = r.valid;
        s.tail_bytes = r.bytes;
        s.tail_last = r.last.raw();
        Ok(())
    }

    /// Closed nodes from the head, (node, valid, last ID), in order, until
    /// `f` returns false.
    fn walk_nodes(&self, mut f: impl FnMut(u64, u64, Id) -> bool) -> CmdResult<()> {
        let (lo, hi) = (self.record(&[NODE]), self.record(&[NODE + 1]));
        let prefix = lo.len();
        let mut bad = false;
        self.ks.store.scan(&lo, &hi, |k, v| {
            let n = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
            match (n, NodeRec::decode(v)) {
                (Some(n), _) if self.dropped.contains(&n) => true,
                (Some(n), Some(r)) => f(n, r.valid, r.last),
                _ => {
                    bad = true;
                    false
                }
            }
        })?;
        if bad {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// The nodes from the head, the tail node last, as (node, valid, last ID).
    fn nodes_from_head(&self, max: usize) -> CmdResult<Vec<(u64, u64, Id)>> {
        let mut out = Vec::new();
        if self.s.nodes > 1 {
            self.walk_nodes(|n, v, l| {
                out.push((n, v, l));
                out.len() < max
            })?;
        }
        if out.len() < max && self.s.nodes > 0 {
            out.push((self.s.tail_node, self.s.tail_valid, Id::from_raw(self.s.tail_last)));
        }
        Ok(out)
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

    /// Visits live entries in `from..=to` until `f` returns false.
    pub fn walk(&self, from: Id, to: Id, rev: bool, mut f: impl FnMut(Id, Vec<Vec<u8>>) -> bool) -> CmdResult<()> {
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
        let mut visit = |k: &[u8], v: &[u8]| match (k.get(prefix..).and_then(Id::from_bytes), decode_entry(v)) {
            (Some(id), Some((_, fields))) => f(id, fields),
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

    /// Lowers node `n`'s live count by `k` (the tail's in the meta); a
    /// node left empty goes, as Redis frees an emptied listpack.
    fn node_lost(&mut self, n: u64, k: u64) -> CmdResult {
        self.dirty = true;
        if n == self.s.tail_node && self.s.nodes > 0 {
            self.s.tail_valid = self.s.tail_valid.saturating_sub(k);
            if self.s.tail_valid == 0 {
                self.tail_gone()?;
            }
            return Ok(());
        }
        let mut r = self.read_node(n)?;
        if r.valid <= k {
            self.drop_node(n);
        } else {
            r.valid -= k;
            self.put_node(n, &r);
        }
        Ok(())
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
    fn refirst(&mut self) -> CmdResult {
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

    /// Trims as XTRIM / XADD's MAXLEN and MINID do; how many entries went.
    pub fn trim(&mut self, t: Trim) -> CmdResult<u64> {
        let mut removed = 0u64;
        let nodes = self.nodes_from_head(usize::MAX)?;
        let mut floor = Id::from_raw(self.s.floor);
        for (n, valid, last) in nodes {
            if self.c.size == 0 {
                break;
            }
            let whole = match t.by {
                TrimBy::MaxLen(max) => self.c.size - valid >= max,
                TrimBy::MinId(min) => last < min,
            };
            if t.limit != 0 && removed + valid > t.limit {
                break;
            }
            if whole {
                removed += valid;
                self.c.size -= valid;
                floor = last.incr().unwrap_or(Id::MAX);
                if n == self.s.tail_node {
                    // The last node: the stream is empty now.
                    self.s.nodes = 0;
                    self.s.tail_total = 0;
                    self.s.tail_valid = 0;
                    self.s.tail_bytes = 0;
                } else {
                    self.drop_node(n);
                }
                self.dirty = true;
                continue;
            }
            if t.approx {
                break;
            }
            // Exact: entries of this node one by one from its head.
            let mut cut = Vec::new();
            let mut size = self.c.size;
            self.walk(floor, last, false, |id, _| {
                let go = match t.by {
                    TrimBy::MaxLen(max) => size > max,
                    TrimBy::MinId(min) => id < min,
                };
                if go {
                    cut.push(id);
                    size -= 1;
                }
                go
            })?;
            if let Some(&top) = cut.last() {
                removed += cut.len() as u64;
                self.c.size -= cut.len() as u64;
                floor = top.incr().unwrap_or(Id::MAX);
                self.node_lost(n, cut.len() as u64)?;
            }
            break;
        }
        if removed > 0 {
            self.s.floor = floor.raw();
            self.s.first = self.s.floor;
            self.dirty = true;
            self.refirst()?;
        }
        Ok(removed)
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
        self.c.stream = Some(self.s);
        if !self.existed() || self.c != self.orig {
            let raw = self.c.encode(KeyType::Stream, self.expire_ms);
            self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        }
        Ok(self.b)
    }

    /// The meta value this stream would have (for a delete by the caller).
    pub fn orig_meta(&self) -> Option<Vec<u8>> {
        self.prior.map(|e| self.orig.encode(KeyType::Stream, e))
    }

    /// Listpack nodes (`radix-tree-keys`).
    pub fn nodes(&self) -> u64 {
        self.s.nodes
    }
}

/// Whether the members of a stream's DUMP fit its meta: every entry record
/// above the floor decodes, and they count `size`.
pub fn members_fit(c: &Coll, members: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let Some(s) = c.stream else {
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

/// Whether meta `m` is a stream.
pub fn is_stream(m: &Meta<'_>) -> bool {
    m.ty == KeyType::Stream
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
        assert_eq!(
            decode_entry(&v),
            Some((3, vec![b"f".to_vec(), b"v".to_vec(), vec![], b"x".to_vec()]))
        );
        assert_eq!(decode_entry(&v[..v.len() - 1]), None);
        assert_eq!(decode_entry(b"short"), None);
    }

    #[test]
    fn listpack_estimates() {
        assert_eq!(lp_element_bytes(b"5"), 2);
        assert_eq!(lp_element_bytes(b"1000"), 3);
        assert_eq!(lp_element_bytes(b"abc"), 5);
        assert_eq!(lp_element_bytes(&[b'x'; 100]), 103);
    }
}
