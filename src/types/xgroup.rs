//! A stream's consumer groups (docs/encoding.md, "Streams"): records under
//! the stream's version, all sorting after its entries (`'e'`), so the
//! acknowledgement traffic of a queue never lands among its entries:
//!
//! ```text
//! 'g' group                               -> last(16) entries_read(8, MAX: unknown) pending(8) consumers(8)
//! 'k' glen(4) group consumer              -> seen_ms(8) active_ms(8, 0: never) pending(8)
//! 'p' glen(4) group id(16)                -> delivery_ms(8) deliveries(8) consumer
//! 'q' glen(4) group clen(4) consumer id(16) -> ""   (the consumer's own PEL)
//! ```
//! A group's pending entries (`'p'`) are in ID order, and so are each
//! consumer's (`'q'`): XPENDING, XACK, the history form of XREADGROUP and
//! XAUTOCLAIM are seeks and scans, whatever the PEL's size.

use super::stream::{Id, Stream};
use crate::error::{CmdResult, CORRUPT};
use crate::storage::meta::StreamMeta;

pub const GROUP: u8 = b'g';
pub const CONSUMER: u8 = b'k';
pub const PEL: u8 = b'p';
pub const CPEL: u8 = b'q';

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// `last-delivered-id`.
    pub last: Id,
    /// `entries-read`; None when unknown (Redis's `SCG_INVALID_ENTRIES_READ`).
    pub entries_read: Option<u64>,
    pub pending: u64,
    pub consumers: u64,
}

/// A consumer: when it was last seen and last active (0: never), and its
/// pending entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumer {
    pub seen_ms: u64,
    pub active_ms: u64,
    pub pending: u64,
}

/// A pending entry: when it was last delivered, how often, and to whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    pub delivery_ms: u64,
    pub deliveries: u64,
    pub consumer: Vec<u8>,
}

fn be(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes)
}

impl Group {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        v.extend_from_slice(&self.last.bytes());
        for n in [self.entries_read.unwrap_or(u64::MAX), self.pending, self.consumers] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v
    }

    pub(super) fn decode(v: &[u8]) -> Option<Group> {
        if v.len() != 40 {
            return None;
        }
        Some(Group {
            last: Id::from_bytes(&v[..16])?,
            entries_read: be(v, 16).filter(|&n| n != u64::MAX),
            pending: be(v, 24)?,
            consumers: be(v, 32)?,
        })
    }
}

impl Consumer {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24);
        for n in [self.seen_ms, self.active_ms, self.pending] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v
    }

    pub(super) fn decode(v: &[u8]) -> Option<Consumer> {
        (v.len() == 24).then_some(())?;
        Some(Consumer {
            seen_ms: be(v, 0)?,
            active_ms: be(v, 8)?,
            pending: be(v, 16)?,
        })
    }
}

impl Nack {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + self.consumer.len());
        v.extend_from_slice(&self.delivery_ms.to_be_bytes());
        v.extend_from_slice(&self.deliveries.to_be_bytes());
        v.extend_from_slice(&self.consumer);
        v
    }

    pub(super) fn decode(v: &[u8]) -> Option<Nack> {
        Some(Nack {
            delivery_ms: be(v, 0)?,
            deliveries: be(v, 8)?,
            consumer: v.get(16..)?.to_vec(),
        })
    }
}

fn named(tag: u8, name: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(5 + name.len());
    s.push(tag);
    s.extend_from_slice(&(name.len() as u32).to_be_bytes());
    s.extend_from_slice(name);
    s
}

pub(super) fn group_sub(g: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(1 + g.len());
    s.push(GROUP);
    s.extend_from_slice(g);
    s
}

pub(super) fn consumer_sub(g: &[u8], c: &[u8]) -> Vec<u8> {
    let mut s = named(CONSUMER, g);
    s.extend_from_slice(c);
    s
}

pub(super) fn pel_sub(g: &[u8], id: Id) -> Vec<u8> {
    let mut s = named(PEL, g);
    s.extend_from_slice(&id.bytes());
    s
}

fn cpel_prefix(g: &[u8], c: &[u8]) -> Vec<u8> {
    let mut s = named(CPEL, g);
    s.extend_from_slice(&(c.len() as u32).to_be_bytes());
    s.extend_from_slice(c);
    s
}

pub(super) fn cpel_sub(g: &[u8], c: &[u8], id: Id) -> Vec<u8> {
    let mut s = cpel_prefix(g, c);
    s.extend_from_slice(&id.bytes());
    s
}

/// The first key after every key starting with `p`.
fn past(p: &[u8]) -> Vec<u8> {
    let mut e = p.to_vec();
    while let Some(last) = e.pop() {
        if last < 0xFF {
            e.push(last + 1);
            return e;
        }
    }
    vec![0xFF; p.len() + 1]
}

/// Redis's `streamEstimateDistanceFromFirstEverEntry` over a stream's meta
/// fields and length: the entries-read counter of ID `id`, when it can be
/// known.
pub(super) fn distance(s: &StreamMeta, len: u64, id: Id) -> Option<u64> {
    if s.added == 0 {
        return Some(0);
    }
    let last = Id::from_raw(s.last);
    if (len == 0 && id <= last) || id == last {
        return Some(s.added);
    }
    if id > last {
        return None;
    }
    let (first, maxdel) = (Id::from_raw(s.first), Id::from_raw(s.max_deleted));
    if maxdel == Id::MIN || maxdel < first {
        if id < first {
            return Some(s.added.saturating_sub(len));
        }
        if id == first {
            return Some(s.added.saturating_sub(len) + 1);
        }
    }
    None
}

impl Stream<'_> {
    fn read_sub<R>(&self, sub: &[u8], f: impl FnOnce(&[u8]) -> Option<R>) -> CmdResult<Option<R>> {
        if let Some(v) = self.staged.get(sub) {
            return match v {
                None => Ok(None),
                Some(v) => f(v).map(Some).ok_or(CORRUPT),
            };
        }
        let k = self.record(sub);
        match self.ks.store.get_with(&k, |v| v.map(f))? {
            None => Ok(None),
            Some(Some(r)) => Ok(Some(r)),
            Some(None) => Err(CORRUPT),
        }
    }

    fn put_sub(&mut self, sub: &[u8], v: &[u8]) {
        let k = self.record(sub);
        self.ks.store.put(&mut self.b, &k, v);
        self.staged.insert(sub.to_vec(), Some(v.to_vec()));
        self.touch();
    }

    fn del_sub(&mut self, sub: &[u8]) {
        let k = self.record(sub);
        self.ks.store.delete(&mut self.b, &k);
        self.staged.insert(sub.to_vec(), None);
        self.touch();
    }

    fn del_prefix(&mut self, p: &[u8]) {
        self.staged.retain(|k, _| !k.starts_with(p));
        let (a, b) = (self.record(p), self.record(&past(p)));
        self.ks.store.delete_range(&mut self.b, &a, &b);
        self.touch();
    }

    /// Scans records whose sub keys start with `prefix`, from `prefix ++
    /// from` on, passing (sub key after the prefix, value), until `f`
    /// returns false. `rev`: backwards from the end.
    fn scan_sub(&self, prefix: &[u8], from: &[u8], rev: bool, mut f: impl FnMut(&[u8], &[u8]) -> bool) -> CmdResult<()> {
        let mut lo = prefix.to_vec();
        lo.extend_from_slice(from);
        let (lo, hi) = (self.record(&lo), self.record(&past(prefix)));
        let cut = self.record(prefix).len();
        let mut visit = |k: &[u8], v: &[u8]| f(k.get(cut..).unwrap_or(&[]), v);
        if rev {
            self.ks.store.scan_back(&lo, &hi, &mut visit)?;
        } else {
            self.ks.store.scan(&lo, &hi, &mut visit)?;
        }
        Ok(())
    }

    pub fn group(&self, g: &[u8]) -> CmdResult<Option<Group>> {
        self.read_sub(&group_sub(g), Group::decode)
    }

    pub fn put_group(&mut self, g: &[u8], grp: &Group) {
        self.put_sub(&group_sub(g), &grp.encode());
    }

    /// Creates group `g` (the caller checked it is new).
    pub fn create_group(&mut self, g: &[u8], last: Id, entries_read: Option<u64>) {
        let grp = Group {
            last,
            entries_read,
            pending: 0,
            consumers: 0,
        };
        self.put_group(g, &grp);
        self.s.groups += 1;
    }

    /// Deletes group `g` and everything of it.
    pub fn destroy_group(&mut self, g: &[u8]) {
        self.del_sub(&group_sub(g));
        for tag in [CONSUMER, PEL, CPEL] {
            self.del_prefix(&named(tag, g));
        }
        self.s.groups = self.s.groups.saturating_sub(1);
    }

    /// The records under sub-key prefix `prefix`, decoded, by the rest of
    /// their sub key (a group's or a consumer's name).
    fn decoded_under<T>(&self, prefix: &[u8], decode: fn(&[u8]) -> Option<T>) -> CmdResult<Vec<(Vec<u8>, T)>> {
        let mut out = Vec::new();
        let mut bad = false;
        self.scan_sub(prefix, &[], false, |name, v| match decode(v) {
            Some(t) => {
                out.push((name.to_vec(), t));
                true
            }
            None => {
                bad = true;
                false
            }
        })?;
        if bad {
            return Err(CORRUPT);
        }
        Ok(out)
    }

    /// Every group, by name.
    pub fn groups(&self) -> CmdResult<Vec<(Vec<u8>, Group)>> {
        self.decoded_under(&[GROUP], Group::decode)
    }

    pub fn consumer(&self, g: &[u8], c: &[u8]) -> CmdResult<Option<Consumer>> {
        self.read_sub(&consumer_sub(g, c), Consumer::decode)
    }

    pub fn put_consumer(&mut self, g: &[u8], c: &[u8], con: &Consumer) {
        self.put_sub(&consumer_sub(g, c), &con.encode());
    }

    /// Group `g`'s consumers, by name.
    pub fn consumers(&self, g: &[u8]) -> CmdResult<Vec<(Vec<u8>, Consumer)>> {
        self.decoded_under(&named(CONSUMER, g), Consumer::decode)
    }

    /// Consumer `c` of `g`, made (seen now, never active) when missing;
    /// true when it was made (Redis sends `xgroup-createconsumer`).
    pub fn consumer_or_new(&mut self, g: &[u8], grp: &mut Group, c: &[u8], now: u64) -> CmdResult<(Consumer, bool)> {
        if let Some(con) = self.consumer(g, c)? {
            return Ok((con, false));
        }
        grp.consumers += 1;
        let con = Consumer {
            seen_ms: now,
            active_ms: 0,
            pending: 0,
        };
        self.put_consumer(g, c, &con);
        Ok((con, true))
    }

    /// Deletes consumer `c` of `g` and its pending entries; how many it had.
    pub fn delete_consumer(&mut self, g: &[u8], grp: &mut Group, c: &[u8]) -> CmdResult<u64> {
        let mut ids = Vec::new();
        self.consumer_pel(g, c, Id::MIN, Id::MAX, 0, |id| {
            ids.push(id);
            true
        })?;
        for &id in &ids {
            self.del_sub(&pel_sub(g, id));
        }
        self.del_prefix(&cpel_prefix(g, c));
        self.del_sub(&consumer_sub(g, c));
        grp.pending = grp.pending.saturating_sub(ids.len() as u64);
        grp.consumers = grp.consumers.saturating_sub(1);
        Ok(ids.len() as u64)
    }

    pub fn nack(&self, g: &[u8], id: Id) -> CmdResult<Option<Nack>> {
        self.read_sub(&pel_sub(g, id), Nack::decode)
    }

    /// Puts pending entry `id` (new or changed); the caller keeps the
    /// counts (a move between consumers is `cmd::xgroups::move_nack`).
    pub fn put_nack(&mut self, g: &[u8], id: Id, n: &Nack) {
        self.put_sub(&pel_sub(g, id), &n.encode());
        self.put_sub(&cpel_sub(g, &n.consumer, id), &[]);
    }

    /// Drops pending entry `id`, owned by `n.consumer`.
    pub fn drop_nack(&mut self, g: &[u8], id: Id, n: &Nack) {
        self.del_sub(&pel_sub(g, id));
        self.del_sub(&cpel_sub(g, &n.consumer, id));
    }

    /// Visits group `g`'s pending entries with IDs in `from..=to` (in
    /// order, or backwards when `rev`) until `f` returns false.
    pub fn group_pel(&self, g: &[u8], from: Id, to: Id, rev: bool, mut f: impl FnMut(Id, Nack) -> bool) -> CmdResult<()> {
        if from > to {
            return Ok(());
        }
        let mut bad = false;
        let prefix = named(PEL, g);
        let start = if rev { Vec::new() } else { from.bytes().to_vec() };
        self.scan_sub(&prefix, &start, rev, |sub, v| match (Id::from_bytes(sub), Nack::decode(v)) {
            (Some(id), _) if rev && id > to => true,
            (Some(id), _) if id > to || id < from => false,
            (Some(id), Some(n)) => f(id, n),
            _ => {
                bad = true;
                false
            }
        })?;
        if bad {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// Visits consumer `c`'s pending IDs in `from..=to`, in order, at most
    /// `count` (0: all), until `f` returns false.
    pub fn consumer_pel(&self, g: &[u8], c: &[u8], from: Id, to: Id, count: u64, mut f: impl FnMut(Id) -> bool) -> CmdResult<()> {
        let mut seen = 0u64;
        let mut bad = false;
        self.scan_sub(&cpel_prefix(g, c), &from.bytes(), false, |sub, _| match Id::from_bytes(sub) {
            Some(id) if id > to => false,
            Some(id) => {
                seen += 1;
                f(id) && (count == 0 || seen < count)
            }
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

    /// Whether a group still needs entry `id` (Redis 8.2's
    /// `streamEntryIsReferenced`): one has it pending, or one was not
    /// handed it yet.
    pub fn referenced(&self, id: Id, groups: &[(Vec<u8>, Group)]) -> CmdResult<bool> {
        for (g, grp) in groups {
            if id > grp.last || self.nack(g, id)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The first entry some group still needs (an ACKED trim stops there):
    /// its first pending entry, or the first it was not handed.
    pub fn first_needed(&self, groups: &[(Vec<u8>, Group)]) -> CmdResult<Option<Id>> {
        let mut first: Option<Id> = None;
        for (g, grp) in groups {
            let mut cand = grp.last.incr().unwrap_or(Id::MAX);
            self.group_pel(g, Id::MIN, cand, false, |id, _| {
                cand = cand.min(id);
                false
            })?;
            first = Some(first.map_or(cand, |f| f.min(cand)));
        }
        Ok(first)
    }

    /// Drops pending entry `id` from every group (DELREF); whether one had it.
    pub fn drop_refs(&mut self, id: Id, groups: &mut [(Vec<u8>, Group)]) -> CmdResult<bool> {
        let mut any = false;
        for (g, grp) in groups.iter_mut() {
            if let Some(n) = self.nack(g, id)? {
                self.forget_nack(g, grp, id, &n)?;
                any = true;
            }
        }
        Ok(any)
    }

    /// Drops every group's pending entries below `floor` (a DELREF trim).
    pub fn drop_refs_below(&mut self, floor: Id, groups: &mut [(Vec<u8>, Group)]) -> CmdResult {
        let Some(top) = floor.decr() else {
            return Ok(());
        };
        for (g, grp) in groups.iter_mut() {
            let mut gone = Vec::new();
            self.group_pel(g, Id::MIN, top, false, |id, n| {
                gone.push((id, n));
                true
            })?;
            for (id, n) in gone {
                self.forget_nack(g, grp, id, &n)?;
            }
        }
        Ok(())
    }

    /// Acknowledges pending entry `id` of group `g` (owned as `n` says):
    /// its records go and the counts follow; the group record is written.
    pub fn forget_nack(&mut self, g: &[u8], grp: &mut Group, id: Id, n: &Nack) -> CmdResult {
        self.drop_nack(g, id, n);
        if let Some(mut con) = self.consumer(g, &n.consumer)? {
            con.pending = con.pending.saturating_sub(1);
            self.put_consumer(g, &n.consumer, &con);
        }
        grp.pending = grp.pending.saturating_sub(1);
        self.put_group(g, grp);
        Ok(())
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the entries-read
    /// counter of ID `id`, when it can be known.
    pub fn distance_of(&self, id: Id) -> Option<u64> {
        distance(&self.s, self.len(), id)
    }

    /// Redis's `streamRangeHasTombstones` from `start` to the end.
    pub fn tombstones_from(&self, start: Id) -> bool {
        let maxdel = self.max_deleted();
        if self.is_empty() || maxdel == Id::MIN || self.first_id() > maxdel {
            return false;
        }
        start <= maxdel
    }

    /// A group's `lag`, when it can be known (negative when ENTRIESREAD
    /// claimed more than was added, as Redis reports it).
    pub fn lag(&self, grp: &Group) -> Option<i64> {
        let added = self.s.added as i64;
        if added == 0 {
            return Some(0);
        }
        if let Some(read) = grp.entries_read.filter(|_| !self.tombstones_from(grp.last)) {
            return Some(added.wrapping_sub(read as i64));
        }
        self.distance_of(grp.last).map(|read| added.wrapping_sub(read as i64))
    }

    /// A group's counters after it was handed entry `id` (`>` reads).
    pub fn advance_group(&self, grp: &mut Group, id: Id) {
        if id <= grp.last {
            return;
        }
        match grp.entries_read {
            Some(n) if !self.tombstones_from(id) => grp.entries_read = Some(n + 1),
            _ if self.s.added > 0 => grp.entries_read = self.distance_of(id),
            _ => {}
        }
        grp.last = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let g = Group {
            last: Id::new(5, 1),
            entries_read: None,
            pending: 3,
            consumers: 2,
        };
        assert_eq!(Group::decode(&g.encode()), Some(g.clone()));
        let g2 = Group {
            entries_read: Some(7),
            ..g
        };
        assert_eq!(Group::decode(&g2.encode()), Some(g2));
        let c = Consumer {
            seen_ms: 1,
            active_ms: 0,
            pending: 9,
        };
        assert_eq!(Consumer::decode(&c.encode()), Some(c));
        let n = Nack {
            delivery_ms: 4,
            deliveries: 2,
            consumer: b"alice".to_vec(),
        };
        assert_eq!(Nack::decode(&n.encode()), Some(n));
        assert_eq!(Group::decode(b"short"), None);
    }

    #[test]
    fn prefixes_keep_groups_apart() {
        assert!(pel_sub(b"a", Id::MAX) < past(&named(PEL, b"a")));
        assert!(named(PEL, b"ab") > past(&named(PEL, b"a")) || named(PEL, b"ab") < named(PEL, b"a"));
        assert_eq!(past(&[1, 0xFF]), vec![2]);
        assert!(cpel_sub(b"g", b"c", Id::MIN) > cpel_prefix(b"g", b"c"));
    }
}
