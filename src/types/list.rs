//! Lists on the versioned encoding (docs/encoding.md, "Lists").
//!
//! The meta record holds the version, the length and `head`, the index of
//! the first element; element `i` (0-based from the left) is the sub record
//! `... version index(8)` with `index = head + i`. Indexes are big-endian,
//! so the elements sort in list order and a range is one scan. A new list
//! starts at [`MID`], so either end can grow 2^63 times.
//!
//! Pushes and pops at either end, LINDEX and LSET touch one element record
//! and the meta record. The list stays dense (no holes): LINSERT and LREM
//! shift the shorter side of the change, LTRIM deletes what it cuts (one
//! range delete when that is long). Deleting or expiring a list of any
//! length is one record: its elements become garbage by version.

use super::notify::class;
use crate::config::Encodings;
use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::intent::IntentRef;
use crate::storage::keys;
use crate::storage::meta::{Coll, KeyType, Meta};
use crate::storage::Batch;
use crate::types::keyspace::{Keyspace, Prior};

/// The index of a new list's first element.
pub const MID: u64 = 1 << 63;

/// More element records than this cut by one LTRIM go in one range delete.
const RANGE_DELETE_OVER: u64 = 64;

/// Elements a pop reads ahead for the pops after it (`List::get_at_end`).
const AHEAD: u64 = 64;

/// Elements read per step when a list is walked from its right end.
const BACK_STEP: u64 = 128;

/// A list end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    pub fn other(self) -> End {
        match self {
            End::Left => End::Right,
            End::Right => End::Left,
        }
    }

    /// The keyspace event of a pop at this end.
    pub fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }

    /// The keyspace event of a push at this end.
    pub fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }
}

/// One list, opened for reading and staging changes that [`List::commit`]
/// writes in one batch with the new meta record.
pub struct List<'k> {
    ks: &'k Keyspace,
    db: u8,
    key: &'k [u8],
    pub expire_ms: u64,
    prior: Prior,
    orig: Coll,
    c: Coll,
    head: u64,
    b: Batch,
    dirty: bool,
}

impl<'k> List<'k> {
    /// Opens the list at `key`: WRONGTYPE for another type; a missing key
    /// gives a new empty list when `create`, else None.
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], now: u64, create: bool) -> CmdResult<Option<List<'k>>> {
        let found = ks.read(db, key, now, |m| match m {
            None => Ok(None),
            Some(m) if m.ty == KeyType::List => m.coll().map(|c| Some((m.expire_ms, c))).ok_or(CORRUPT),
            Some(_) => Err(WRONGTYPE),
        })??;
        let (expire_ms, prior, c) = match found {
            Some((e, c)) => (e, Some(e), c),
            None if create => (0, None, Coll::new_list(ks.next_version(crate::clock::now_us()), MID)),
            None => return Ok(None),
        };
        let head = c.list_head.ok_or(CORRUPT)?;
        Ok(Some(List {
            ks,
            db,
            key,
            expire_ms,
            prior,
            orig: c.clone(),
            c,
            head,
            b: ks.store.batch(),
            dirty: false,
        }))
    }

    /// A new empty list at `key`, whatever is stored there now: the caller
    /// stages the old key's deletion in the batch it gives with
    /// [`List::with_batch`] (SORT ... STORE replaces any key).
    pub fn fresh(ks: &'k Keyspace, db: u8, key: &'k [u8]) -> List<'k> {
        let c = Coll::new_list(ks.next_version(crate::clock::now_us()), MID);
        List {
            ks,
            db,
            key,
            expire_ms: 0,
            prior: None,
            orig: c.clone(),
            c,
            head: MID,
            b: ks.store.batch(),
            dirty: false,
        }
    }

    /// Starts this list's batch from `b` (writes that must land with this
    /// list's: the other list of a same-shard LMOVE). Call before staging.
    pub fn with_batch(mut self, b: Batch) -> Self {
        self.b = b;
        self
    }

    pub fn len(&self) -> u64 {
        self.c.size
    }

    /// Adds intent part `r` to the batch (see `storage::intent`).
    pub fn stage_intent(&mut self, r: IntentRef, body: &[u8]) {
        self.ks.store.stage_intent(&mut self.b, r, body);
    }

    /// Adds the delete of intent part `r` to the batch: this write applies it.
    pub fn intent_done(&mut self, r: IntentRef) {
        self.ks.store.stage_intent_done(&mut self.b, r);
        self.dirty = true;
    }

    pub fn is_empty(&self) -> bool {
        self.c.size == 0
    }

    /// True when the key existed before this command.
    pub fn existed(&self) -> bool {
        self.prior.is_some()
    }

    fn record(&self, at: u64) -> keys::SubKeyBuf {
        keys::sub_key_buf(self.db, self.key, self.c.version, &at.to_be_bytes())
    }

    fn stage(&mut self, at: u64, v: &[u8]) {
        let k = self.record(at);
        self.ks.store.put(&mut self.b, &k, v);
        self.dirty = true;
    }

    /// [`List::stage`] of a position outside the list: every position
    /// past its ends was deleted when it left, so nothing holds it
    /// (`ShardStore::put_new`: a queue's element popped soon after its
    /// push never reaches the families).
    fn stage_new(&mut self, at: u64, v: &[u8]) {
        let k = self.record(at);
        self.ks.store.put_new(&mut self.b, &k, v);
        self.dirty = true;
    }

    fn unstage(&mut self, at: u64) {
        let k = self.record(at);
        self.ks.store.delete(&mut self.b, &k);
        self.dirty = true;
    }

    /// Element `i` (0-based from the left), None past the end. Reads what
    /// is in storage: elements this command staged are not seen.
    pub fn get(&self, i: u64) -> CmdResult<Option<Vec<u8>>> {
        if i >= self.c.size {
            return Ok(None);
        }
        let k = self.record(self.head.wrapping_add(i));
        let v = self.ks.store.get_with(&k, |v| v.map(<[u8]>::to_vec))?;
        v.ok_or(CORRUPT).map(Some)
    }

    /// Element `i`, the one at `end`: read together with the elements the
    /// next pops at that end take (`storage::ahead`), so a run of pops costs
    /// one scan per [`AHEAD`] elements instead of a point read each.
    fn get_at_end(&self, i: u64, end: End) -> CmdResult<Vec<u8>> {
        let (lo, hi) = match end {
            End::Left => (i, (i + AHEAD).min(self.c.size)),
            End::Right => (i.saturating_sub(AHEAD - 1), i + 1),
        };
        let key = self.record(self.head.wrapping_add(i));
        let (from, to) = (self.record(self.head.wrapping_add(lo)), self.record(self.head.wrapping_add(hi)));
        let v = self.ks.store.get_ahead(&key, &from, &to)?;
        v.map(|v| v.to_vec()).ok_or(CORRUPT)
    }

    /// Elements `from..=to` (clamped to the list), in order.
    pub fn range(&self, from: u64, to: u64) -> CmdResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if self.c.size == 0 || from >= self.c.size {
            return Ok(out);
        }
        let to = to.min(self.c.size - 1);
        if from > to {
            return Ok(out);
        }
        out.reserve((to - from + 1).min(1 << 16) as usize);
        self.walk(from, to, |_, v| {
            out.push(v.to_vec());
            true
        })?;
        Ok(out)
    }

    /// Visits elements `from..=to` in order with their position until `f`
    /// returns false. A hole in the records is corruption.
    pub fn walk(&self, from: u64, to: u64, mut f: impl FnMut(u64, &[u8]) -> bool) -> CmdResult<()> {
        if self.c.size == 0 || from > to || from >= self.c.size {
            return Ok(());
        }
        let to = to.min(self.c.size - 1);
        let (lo, hi) = (
            self.record(self.head.wrapping_add(from)),
            self.record(self.head.wrapping_add(to + 1)),
        );
        let prefix = lo.len() - 8;
        let (mut next, mut bad, mut stopped) = (from, false, false);
        self.ks.store.scan(&lo, &hi, |k, v| {
            let at = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
            if at != Some(self.head.wrapping_add(next)) {
                bad = true;
                return false;
            }
            stopped = !f(next, v);
            next += 1;
            !stopped
        })?;
        if bad || (!stopped && next <= to) {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// Visits elements from the right end leftwards, with their position,
    /// until `f` returns false (read in steps of [`BACK_STEP`]).
    pub fn walk_back(&self, mut f: impl FnMut(u64, &[u8]) -> bool) -> CmdResult<()> {
        let mut end = self.c.size;
        while end > 0 {
            let from = end.saturating_sub(BACK_STEP);
            let chunk = self.range(from, end - 1)?;
            if chunk.len() as u64 != end - from {
                return Err(CORRUPT);
            }
            for (j, v) in chunk.iter().enumerate().rev() {
                if !f(from + j as u64, v) {
                    return Ok(());
                }
            }
            end = from;
        }
        Ok(())
    }

    /// Pushes `v` at `end`.
    pub fn push(&mut self, end: End, v: &[u8]) {
        match end {
            End::Left => {
                self.head = self.head.wrapping_sub(1);
                self.stage_new(self.head, v);
            }
            End::Right => self.stage_new(self.head.wrapping_add(self.c.size), v),
        }
        self.c.size += 1;
    }

    /// Pops the element at `end`; None when the list is empty.
    pub fn pop(&mut self, end: End) -> CmdResult<Option<Vec<u8>>> {
        let i = match end {
            _ if self.c.size == 0 => return Ok(None),
            End::Left => 0,
            End::Right => self.c.size - 1,
        };
        let v = self.get_at_end(i, end)?;
        self.unstage(self.head.wrapping_add(i));
        if end == End::Left {
            self.head = self.head.wrapping_add(1);
        }
        self.c.size -= 1;
        Ok(Some(v))
    }

    /// Pops up to `n` elements at `end`, in pop order.
    pub fn pop_many(&mut self, end: End, n: u64) -> CmdResult<Vec<Vec<u8>>> {
        let n = n.min(self.c.size);
        if n == 0 {
            return Ok(Vec::new());
        }
        let (from, to) = match end {
            End::Left => (0, n - 1),
            End::Right => (self.c.size - n, self.c.size - 1),
        };
        let mut got = self.range(from, to)?;
        if got.len() as u64 != n {
            return Err(CORRUPT);
        }
        self.cut(from, n);
        if end == End::Right {
            got.reverse();
        }
        Ok(got)
    }

    /// Deletes the records of positions `from .. from + n` (at one end).
    fn cut(&mut self, from: u64, n: u64) {
        if n == 0 {
            return;
        }
        let (lo, hi) = (self.head.wrapping_add(from), self.head.wrapping_add(from + n));
        if n > RANGE_DELETE_OVER {
            let (a, b) = (self.record(lo), self.record(hi));
            self.ks.store.delete_range(&mut self.b, &a, &b);
            self.dirty = true;
        } else {
            for at in lo..hi {
                self.unstage(at);
            }
        }
        if from == 0 {
            self.head = hi;
        }
        self.c.size -= n;
    }

    /// LSET: replaces element `i`; false when it is out of range.
    pub fn set(&mut self, i: u64, v: &[u8]) -> bool {
        if i >= self.c.size {
            return false;
        }
        self.stage(self.head.wrapping_add(i), v);
        true
    }

    /// LTRIM: keeps positions `from..=to` (both within the list, `from <=
    /// to`), or nothing when `keep` is None.
    pub fn trim(&mut self, keep: Option<(u64, u64)>) {
        let size = self.c.size;
        match keep {
            None => self.cut(0, size),
            Some((from, to)) => {
                self.cut(to + 1, size - to - 1);
                self.cut(0, from);
            }
        }
    }

    /// LINSERT: puts `v` at position `at` (0..=len), shifting the shorter
    /// side of the list by one.
    pub fn insert(&mut self, at: u64, v: &[u8]) -> CmdResult<()> {
        let size = self.c.size;
        let at = at.min(size);
        if at <= size - at {
            // Elements 0..at move one index left.
            let moved = if at > 0 { self.range(0, at - 1)? } else { Vec::new() };
            let head = self.head.wrapping_sub(1);
            for (j, m) in moved.iter().enumerate() {
                self.stage(head.wrapping_add(j as u64), m);
            }
            self.head = head;
            self.stage(head.wrapping_add(at), v);
        } else {
            // Elements at..size move one index right.
            let moved = self.range(at, size - 1)?;
            for (j, m) in moved.iter().enumerate() {
                self.stage(self.head.wrapping_add(at + 1 + j as u64), m);
            }
            self.stage(self.head.wrapping_add(at), v);
        }
        self.c.size += 1;
        Ok(())
    }

    /// LREM: removes the elements at `gone` (ascending positions), closing
    /// the gaps from the cheaper side: the tail after the first removed
    /// element shifts left, or the head before the last one shifts right.
    pub fn remove(&mut self, gone: &[u64]) -> CmdResult<()> {
        let (Some(&first), Some(&last)) = (gone.first(), gone.last()) else {
            return Ok(());
        };
        let size = self.c.size;
        let n = gone.len() as u64;
        if size - first <= last + 1 {
            let seg = self.range(first, size - 1)?;
            let mut w = first;
            let mut g = gone.iter().peekable();
            for (j, v) in seg.iter().enumerate() {
                let pos = first + j as u64;
                if g.peek() == Some(&&pos) {
                    g.next();
                    continue;
                }
                self.stage(self.head.wrapping_add(w), v);
                w += 1;
            }
            for at in (size - n)..size {
                self.unstage(self.head.wrapping_add(at));
            }
        } else {
            let seg = self.range(0, last)?;
            let mut w = last;
            let mut g = gone.iter().rev().peekable();
            for (j, v) in seg.iter().enumerate().rev() {
                let pos = j as u64;
                if g.peek() == Some(&&pos) {
                    g.next();
                    continue;
                }
                self.stage(self.head.wrapping_add(w), v);
                w = w.wrapping_sub(1);
            }
            for at in 0..n {
                self.unstage(self.head.wrapping_add(at));
            }
            self.head = self.head.wrapping_add(n);
        }
        self.c.size -= n;
        Ok(())
    }

    /// Writes everything staged; a list left empty is deleted. Returns
    /// whether the key exists afterwards.
    pub fn commit(self) -> CmdResult<bool> {
        let ks = self.ks;
        let (exists, b) = self.finish()?;
        ks.store.write(b)?;
        Ok(exists)
    }

    /// [`List::commit`], then the keyspace events: `events` (class l, in
    /// order), and `del` when the list went away (Redis's order).
    pub fn commit_with(self, events: &[&'static str]) -> CmdResult<bool> {
        let (ks, db, key, had) = (self.ks, self.db, self.key, self.existed());
        let exists = self.commit()?;
        for e in events {
            ks.notify(class::LIST, e, db, key);
        }
        if had && !exists {
            ks.notify(class::GENERIC, "del", db, key);
        }
        Ok(exists)
    }

    /// [`List::commit`] without the write: the batch, for the caller to
    /// extend and write, and whether the key exists afterwards.
    pub fn finish(mut self) -> CmdResult<(bool, Batch)> {
        if !self.dirty {
            return Ok((self.existed(), self.b));
        }
        self.c.list_head = Some(self.head);
        if self.c.size == 0 {
            if let Some(e) = self.prior {
                let old = self.orig.encode(KeyType::List, e);
                let m = Meta::decode(&old).ok_or(CORRUPT)?;
                self.ks.stage_delete(&mut self.b, self.db, self.key, &m);
            }
            return Ok((false, self.b));
        }
        if !self.existed() || self.c != self.orig {
            let raw = self.c.encode(KeyType::List, self.expire_ms);
            self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        }
        Ok((true, self.b))
    }

    /// OBJECT ENCODING: `listpack` while the list would fit one listpack
    /// under `list-max-listpack-size`, else `quicklist` (Redis 7.2's
    /// `quicklistNodeExceedsLimit`, told from what the list holds now).
    pub fn encoding(&self, enc: Encodings) -> CmdResult<&'static str> {
        let fill = enc.list_size;
        if fill >= 0 && self.c.size > fill as u64 {
            return Ok("quicklist");
        }
        let limit = if fill >= 0 {
            SIZE_SAFETY_LIMIT
        } else {
            4096u64 << (fill.unsigned_abs().clamp(1, 5) - 1)
        };
        // Every entry takes at least two bytes.
        if LISTPACK_OVERHEAD + 2 * self.c.size > limit {
            return Ok("quicklist");
        }
        let mut bytes = LISTPACK_OVERHEAD;
        self.walk(0, self.c.size.saturating_sub(1), |_, v| {
            bytes += listpack_entry_bytes(v);
            bytes <= limit
        })?;
        Ok(if bytes <= limit { "listpack" } else { "quicklist" })
    }
}

/// LMOVE with both lists on this shard, in one batch: pops at `from` of
/// `src` and pushes at `to` of `dst`. None when `src` is missing;
/// WRONGTYPE (nothing moved) when either key holds another type.
pub fn move_element(ks: &Keyspace, db: u8, src: &[u8], dst: &[u8], (from, to): (End, End), now: u64) -> CmdResult<Option<Vec<u8>>> {
    let Some(mut s) = List::open(ks, db, src, now, false)? else {
        return Ok(None);
    };
    if src == dst {
        let v = s.pop(from)?;
        if let Some(v) = &v {
            s.push(to, v);
        }
        // As Redis's LMOVE: the push's event, then the pop's.
        let events = [to.push_event(), from.pop_event()];
        s.commit_with(if v.is_some() { &events } else { &[] })?;
        return Ok(v);
    }
    // Redis checks the destination before it pops.
    List::open(ks, db, dst, now, false)?;
    let Some(v) = s.pop(from)? else { return Ok(None) };
    let (left, b) = s.finish()?;
    let mut d = List::open(ks, db, dst, now, true)?.ok_or(CORRUPT)?.with_batch(b);
    d.push(to, &v);
    d.commit()?;
    ks.notify(class::LIST, to.push_event(), db, dst);
    ks.notify(class::LIST, from.pop_event(), db, src);
    if !left {
        ks.notify(class::GENERIC, "del", db, src);
    }
    Ok(Some(v))
}

/// Pushes `v` at `end` of `key` in a batch that also deletes intent part
/// `done` when given (the push completes a cross-shard move). WRONGTYPE
/// (nothing written) when `key` holds another type.
pub fn push_one(ks: &Keyspace, db: u8, key: &[u8], end: End, v: &[u8], now: u64, done: Option<IntentRef>) -> CmdResult {
    let mut l = List::open(ks, db, key, now, true)?.ok_or(CORRUPT)?;
    if let Some(r) = done {
        l.intent_done(r);
    }
    l.push(end, v);
    l.commit_with(&[end.push_event()])?;
    Ok(())
}

/// Puts back at `end` of `key` an element a cross-shard move popped and
/// could not push (its destination stopped being a list), in the batch
/// that deletes intent part `done`. No event: to a client the move was
/// refused.
pub fn push_back(ks: &Keyspace, db: u8, key: &[u8], end: End, v: &[u8], now: u64, done: IntentRef) -> CmdResult {
    let mut l = List::open(ks, db, key, now, true)?.ok_or(CORRUPT)?;
    l.intent_done(done);
    l.push(end, v);
    l.commit()?;
    Ok(())
}

/// A listpack's header and end byte.
const LISTPACK_OVERHEAD: u64 = 7;

/// Redis's `SIZE_SAFETY_LIMIT`: a count-limited listpack never exceeds 8 KiB.
const SIZE_SAFETY_LIMIT: u64 = 8192;

/// The bytes `v` takes as a listpack entry (encoding, data, back length),
/// as Redis's `lpEncodeGetType` and `lpEncodeBacklen` size it.
fn listpack_entry_bytes(v: &[u8]) -> u64 {
    let body = match crate::resp::parse::string2ll(v) {
        Some(n) if v.len() <= 20 => match n {
            0..=127 => 1,
            -4096..=4095 => 2,
            -32768..=32767 => 3,
            -8388608..=8388607 => 4,
            -2147483648..=2147483647 => 5,
            _ => 9,
        },
        _ => {
            let l = v.len() as u64;
            l + if l < 64 {
                1
            } else if l < 4096 {
                2
            } else {
                5
            }
        }
    };
    body + match body {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Redis's index rules: a negative index counts from the right end. The
/// position, or None when it falls outside a list of `len` elements.
pub fn position(index: i64, len: u64) -> Option<u64> {
    let i = if index < 0 { len as i128 + index as i128 } else { index as i128 };
    (0..len as i128).contains(&i).then_some(i as u64)
}

/// LRANGE's and LTRIM's clamping of `start` and `stop` to a list of `len`
/// elements: the positions `from..=to`, or None for an empty range.
pub fn span(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i128;
    let from_end = |i: i64| if i < 0 { len + i as i128 } else { i as i128 };
    // A start before the list is its first element; a stop before it
    // leaves nothing (Redis clamps only the start).
    let (from, to) = (from_end(start).max(0), from_end(stop));
    (from <= to && from < len).then_some((from as u64, to.min(len - 1) as u64))
}

/// Checks DUMP/RESTORE members of a list: exactly `c.size` records at
/// `head .. head + size`, in order.
pub fn members_fit(c: &Coll, members: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let Some(head) = c.list_head else { return false };
    members.len() as u64 == c.size
        && members
            .iter()
            .enumerate()
            .all(|(i, (sub, _))| <[u8; 8]>::try_from(&sub[..]).is_ok_and(|s| u64::from_be_bytes(s) == head.wrapping_add(i as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::keyspace::for_test as keyspace;
    use std::collections::VecDeque;

    fn check(ks: &Keyspace, model: &VecDeque<Vec<u8>>) {
        let l = List::open(ks, 0, b"l", 1, false).unwrap();
        match l {
            None => assert!(model.is_empty()),
            Some(l) => {
                assert_eq!(l.len(), model.len() as u64);
                let all = l.range(0, u64::MAX).unwrap();
                assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
                let mut back = Vec::new();
                l.walk_back(|_, v| {
                    back.push(v.to_vec());
                    true
                })
                .unwrap();
                back.reverse();
                assert_eq!(back, all);
            }
        }
    }

    #[test]
    fn operations_agree_with_a_deque() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        for step in 0..3000u64 {
            let v = format!("v{}", rnd(20)).into_bytes();
            let mut l = List::open(&ks, 0, b"l", 1, true).unwrap().unwrap();
            match rnd(9) {
                0 => {
                    l.push(End::Left, &v);
                    model.push_front(v);
                }
                1 | 2 => {
                    l.push(End::Right, &v);
                    model.push_back(v);
                }
                3 => assert_eq!(l.pop(End::Left).unwrap(), model.pop_front()),
                4 => assert_eq!(l.pop(End::Right).unwrap(), model.pop_back()),
                5 => {
                    let at = rnd(model.len() as u64 + 1);
                    l.insert(at, &v).unwrap();
                    model.insert(at as usize, v);
                }
                6 => {
                    let gone: Vec<u64> = (0..model.len() as u64).filter(|_| rnd(4) == 0).collect();
                    l.remove(&gone).unwrap();
                    for &g in gone.iter().rev() {
                        model.remove(g as usize);
                    }
                }
                7 if step % 50 == 0 => {
                    let len = model.len() as u64;
                    let keep = span(rnd(len + 2) as i64 - 1, rnd(len + 2) as i64 - 1, len);
                    l.trim(keep);
                    match keep {
                        None => model.clear(),
                        Some((from, to)) => {
                            model.truncate(to as usize + 1);
                            model.drain(..from as usize);
                        }
                    }
                }
                _ => {
                    let n = rnd(4);
                    let end = if rnd(2) == 0 { End::Left } else { End::Right };
                    let got = l.pop_many(end, n).unwrap();
                    let want: Vec<_> = (0..n.min(model.len() as u64))
                        .filter_map(|_| if end == End::Left { model.pop_front() } else { model.pop_back() })
                        .collect();
                    assert_eq!(got, want);
                }
            }
            l.commit().unwrap();
            if step % 100 == 0 {
                check(&ks, &model);
            }
        }
        check(&ks, &model);
    }

    #[test]
    fn long_trims_and_pops_use_range_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let ks = keyspace(dir.path());
        let mut l = List::open(&ks, 0, b"l", 1, true).unwrap().unwrap();
        for i in 0..1000u32 {
            l.push(End::Right, &i.to_be_bytes());
        }
        l.commit().unwrap();
        let mut l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
        l.trim(span(100, -101, 1000));
        l.commit().unwrap();
        let mut l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
        assert_eq!(l.len(), 800);
        assert_eq!(l.get(0).unwrap(), Some(100u32.to_be_bytes().to_vec()));
        let got = l.pop_many(End::Right, 500).unwrap();
        assert_eq!(got[0], 899u32.to_be_bytes().to_vec());
        l.commit().unwrap();
        let l = List::open(&ks, 0, b"l", 1, false).unwrap().unwrap();
        assert_eq!(l.range(0, u64::MAX).unwrap().len(), 300);
    }

    #[test]
    fn index_rules_like_redis() {
        assert_eq!(position(-1, 3), Some(2));
        assert_eq!(position(-4, 3), None);
        assert_eq!(position(3, 3), None);
        assert_eq!(position(i64::MIN, 3), None);
        assert_eq!(span(0, -1, 3), Some((0, 2)));
        assert_eq!(span(-100, 100, 3), Some((0, 2)));
        assert_eq!(span(2, 1, 3), None);
        assert_eq!(span(5, 10, 3), None);
        assert_eq!(span(0, 0, 0), None);
        assert_eq!(span(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(span(0, -6, 1), None);
        assert_eq!(span(-1, -3, 1), None);
        assert_eq!(span(-5, -3, 3), Some((0, 0)));
    }

    #[test]
    fn listpack_sizes() {
        assert_eq!(listpack_entry_bytes(b"5"), 2);
        assert_eq!(listpack_entry_bytes(b"hello"), 7);
        assert_eq!(listpack_entry_bytes(&[b'a'; 100]), 103);
    }
}
