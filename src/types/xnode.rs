//! A stream's emulated listpack nodes (docs/encoding.md, "Streams"):
//! where an XADD's entry goes, the closed nodes' records, and the trims,
//! which remove whole nodes as redis-server's do (`~`) before single
//! entries.

use super::stream::{node_sub, Id, NodeRec, Refs, Stream, Trim, TrimBy, NODE};
use crate::config::Encodings;
use crate::error::{CmdResult, CORRUPT};

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
    enc + crate::types::rdbpack::backlen_size(enc)
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

impl Stream<'_> {
    /// Counts an entry of `fields` into the tail node, opening a new node
    /// when the tail is full (Redis's `streamAppendItem` rule); the node
    /// the entry goes in.
    pub(super) fn place_in_node(&mut self, fields: &[&[u8]], enc: Encodings) -> u64 {
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
        s.tail_node
    }

    fn put_node(&mut self, n: u64, r: &NodeRec) {
        // The meta's copy of the first closed node follows its record.
        if n == self.s.head_node || self.s.head.is_some_and(|h| h.0 == n) {
            self.s.head = Some((n, r.valid, r.last.raw()));
        }
        let k = self.record(&node_sub(n));
        self.ks.store.put(&mut self.b, &k, &r.encode());
        self.staged_nodes.insert(n, Some(*r));
        self.dirty = true;
    }

    fn read_node(&self, n: u64) -> CmdResult<NodeRec> {
        if let Some(r) = self.staged_nodes.get(&n) {
            return r.ok_or(CORRUPT);
        }
        let k = self.record(&node_sub(n));
        let v = self.ks.store.get_with(&k, |v| v.map(NodeRec::decode))?;
        v.flatten().ok_or(CORRUPT)
    }

    /// Node `n` (closed) goes.
    fn drop_node(&mut self, n: u64) {
        self.head_gone(n);
        let k = self.record(&node_sub(n));
        self.ks.store.delete(&mut self.b, &k);
        self.staged_nodes.insert(n, None);
        self.s.nodes = self.s.nodes.saturating_sub(1);
        if n == self.s.head_node {
            self.s.head_node = n + 1;
        }
        self.dirty = true;
    }

    /// Node `n`'s record goes: the meta's copy of it too.
    fn head_gone(&mut self, n: u64) {
        if self.s.head.is_some_and(|h| h.0 == n) {
            self.s.head = None;
        }
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
            self.s.head_node = self.s.tail_node;
            return Ok(());
        }
        // The last closed node: in storage or staged by this command.
        let mut prev = None;
        let (lo, hi) = (self.record(&node_sub(self.s.head_node)), self.record(&node_sub(self.s.tail_node)));
        let prefix = lo.len() - 8;
        self.ks.store.scan_back(&lo, &hi, |k, v| {
            let n = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
            match n {
                Some(n) if self.staged_nodes.contains_key(&n) => true,
                Some(n) => {
                    prev = NodeRec::decode(v).map(|r| (n, r));
                    false
                }
                None => false,
            }
        })?;
        let staged = self
            .staged_nodes
            .range(self.s.head_node..self.s.tail_node)
            .rev()
            .find_map(|(n, r)| r.map(|r| (*n, r)));
        let prev = match (prev, staged) {
            (Some(p), Some(s)) => Some(if s.0 > p.0 { s } else { p }),
            (p, s) => p.or(s),
        };
        let (n, r) = prev.ok_or(CORRUPT)?;
        self.head_gone(n);
        let k = self.record(&node_sub(n));
        self.ks.store.delete(&mut self.b, &k);
        self.staged_nodes.insert(n, None);
        let s = &mut self.s;
        s.tail_node = n;
        s.tail_total = r.total;
        s.tail_valid = r.valid;
        s.tail_bytes = r.bytes;
        s.tail_last = r.last.raw();
        Ok(())
    }

    /// Closed nodes from the head, (node, valid, last ID), in order, until
    /// `f` returns false: storage's records merged with this command's.
    fn walk_nodes(&self, mut f: impl FnMut(u64, u64, Id) -> bool) -> CmdResult<()> {
        let (lo, hi) = (self.record(&node_sub(self.s.head_node)), self.record(&[NODE + 1]));
        let prefix = lo.len() - 8;
        let mut staged = self.staged_nodes.range(self.s.head_node..).peekable();
        let (mut bad, mut stop) = (false, false);
        self.ks.store.scan(&lo, &hi, |k, v| {
            let Some(n) = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes) else {
                bad = true;
                return false;
            };
            // Staged records before this one, then this one (staged wins).
            while let Some((&sn, &rec)) = staged.peek() {
                if sn > n {
                    break;
                }
                staged.next();
                if sn == n {
                    return match rec {
                        Some(r) if !f(n, r.valid, r.last) => {
                            stop = true;
                            false
                        }
                        _ => true,
                    };
                }
                if let Some(r) = rec {
                    if !f(sn, r.valid, r.last) {
                        stop = true;
                        return false;
                    }
                }
            }
            match NodeRec::decode(v) {
                Some(r) if f(n, r.valid, r.last) => true,
                Some(_) => {
                    stop = true;
                    false
                }
                None => {
                    bad = true;
                    false
                }
            }
        })?;
        if bad {
            return Err(CORRUPT);
        }
        if !stop {
            for (&n, rec) in staged {
                if let Some(r) = rec {
                    if !f(n, r.valid, r.last) {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The nodes from the head, the tail node last, as (node, valid, last
    /// ID), up to the first for which `more(valid, last)` says false.
    fn nodes_from_head(&self, mut more: impl FnMut(u64, Id) -> bool) -> CmdResult<Vec<(u64, u64, Id)>> {
        let mut out = Vec::new();
        let mut going = true;
        if self.s.nodes > 1 {
            self.walk_nodes(|n, v, l| {
                out.push((n, v, l));
                going = more(v, l);
                going
            })?;
        }
        if going && self.s.nodes > 0 {
            out.push((self.s.tail_node, self.s.tail_valid, Id::from_raw(self.s.tail_last)));
        }
        Ok(out)
    }

    /// Lowers node `n`'s live count by `k` (the tail's in the meta); a
    /// node left empty goes, as Redis frees an emptied listpack.
    pub(super) fn node_lost(&mut self, n: u64, k: u64) -> CmdResult {
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

    /// Trims as XTRIM / XADD's MAXLEN and MINID do; how many entries went.
    pub fn trim(&mut self, t: Trim) -> CmdResult<u64> {
        let nothing = match t.by {
            TrimBy::MaxLen(max) => self.c.size <= max,
            TrimBy::MinId(min) => self.c.size == 0 || Id::from_raw(self.s.first) >= min,
        };
        if nothing {
            return Ok(0);
        }
        // ACKED: nothing at or past the first entry a group still needs.
        let groups = match t.refs {
            Refs::Keep => Vec::new(),
            _ => self.groups()?,
        };
        let bound = match t.refs {
            Refs::Acked => self.first_needed(&groups)?,
            _ => None,
        }
        .unwrap_or(Id::MAX);
        // The nodes the trim may touch: those it removes whole, and the
        // first it does not (read no further: a long stream has many).
        let whole = |size: u64, valid: u64, last: Id| {
            last < bound
                && match t.by {
                    TrimBy::MaxLen(max) => size.checked_sub(valid).is_some_and(|left| left >= max),
                    TrimBy::MinId(min) => last < min,
                }
        };
        // At the cap, an approximate trim most often removes nothing: the
        // meta's copy of the first node says so without a scan (a scan
        // would also write the open group first, one write per XADD).
        if let (true, true, Some((_, valid, last))) = (t.approx, self.s.nodes > 1, self.s.head) {
            let last = Id::from_raw(last);
            if (t.limit != 0 && valid > t.limit) || !whole(self.c.size, valid, last) {
                return Ok(0);
            }
        }
        let (mut gone, mut size) = (0u64, self.c.size);
        let nodes = self.nodes_from_head(|valid, last| {
            if (t.limit != 0 && gone + valid > t.limit) || !whole(size, valid, last) {
                return false;
            }
            gone += valid;
            size -= valid;
            true
        })?;
        if let Some(&(n, valid, last)) = nodes.first().filter(|f| self.s.nodes > 1 && f.0 != self.s.tail_node) {
            self.s.head = Some((n, valid, last.raw()));
        }
        let mut removed = 0u64;
        let mut floor = Id::from_raw(self.s.floor);
        for (n, valid, last) in nodes {
            if self.c.size == 0 {
                break;
            }
            let whole = whole(self.c.size, valid, last);
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
                    self.s.head_node = n;
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
                let go = id < bound
                    && match t.by {
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
            if t.refs == Refs::Delete {
                let mut groups = groups;
                self.drop_refs_below(floor, &mut groups)?;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_estimates() {
        assert_eq!(lp_element_bytes(b"5"), 2);
        assert_eq!(lp_element_bytes(b"1000"), 3);
        assert_eq!(lp_element_bytes(b"abc"), 5);
        assert_eq!(lp_element_bytes(&[b'x'; 100]), 103);
    }
}
