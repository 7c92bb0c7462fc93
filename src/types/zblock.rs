//! Count blocks: ranks of a big sorted set without a walk from its end
//! (docs/encoding.md, "Sorted sets: count blocks").
//!
//! The score records of a set over `2 x zset-rank-block` members are cut
//! into blocks of consecutive positions (a position is a score record's
//! sub key without its `s`: sort key and member). Each block has a head
//! record under the set's version:
//!
//! ```text
//! 'r' position -> count (8, BE)     the block from this position to the next head
//! ```
//! The first head is the empty position, so every score record is in a
//! block. A block over twice the block size splits into blocks of about
//! the block size; an emptied block (not the first) goes; a block under a
//! quarter of it joins the one before when they fit in one. Every change
//! goes in the batch of the member records it counts, so the counts are
//! exact across a crash. The meta's mode 3 says a set keeps blocks; a
//! smaller set keeps none (its walks are short) until it grows past the
//! threshold, and then keeps them for good.
//!
//! The rank of a position is the members in the blocks before its block
//! (the in-memory layout, `types::zlayout`) plus its place among the
//! block's positions: O(√blocks) additions and a binary search. The
//! layout keeps the positions of the blocks commands read (read from disk
//! once, then kept in step by every write), so the reads of a hot set, or
//! of a small set (one block: its whole order), step over none of the
//! tombstones its score changes leave on disk.

use smallvec::SmallVec;

use crate::error::{CmdResult, CORRUPT};
use crate::storage::keys;
use crate::types::writer::Writer;
use crate::types::zlayout::{block, Layout, Loc, Positions};
use crate::types::zset::{from_sort_key, sort_key, walk, At, RANK, SCORE};

/// A head's sub key: `r` and the position.
pub fn head_sub(pos: &[u8]) -> HeadSub {
    let mut s = HeadSub::new();
    s.push(RANK);
    s.extend_from_slice(pos);
    s
}

/// A head's sub key, inline for members up to 55 bytes.
pub type HeadSub = SmallVec<[u8; 64]>;

/// A position, inline for members up to 56 bytes (a ZADD's positions
/// were two or three allocations of its seven).
pub type Pos = SmallVec<[u8; 64]>;

/// A score record's position: sort key and member.
pub fn position(score: f64, m: &[u8]) -> Pos {
    let mut p = Pos::new();
    p.extend_from_slice(&sort_key(score));
    p.extend_from_slice(m);
    p
}

fn decode_count(v: &[u8]) -> CmdResult<u64> {
    let b: [u8; 8] = v.try_into().map_err(|_| CORRUPT)?;
    Ok(u64::from_be_bytes(b))
}

/// Reads the layout of `z` from its head records; a set without blocks
/// is one block of its size.
fn load(z: At<'_>) -> CmdResult<Layout> {
    if !z.c.zblocks {
        return Ok(Layout::from_heads(vec![(Vec::new(), z.c.size)]));
    }
    let lo = keys::sub_key(z.db, z.key, z.c.version, &[RANK]);
    let hi = keys::sub_key(z.db, z.key, z.c.version, &[RANK + 1]);
    let mut heads = Vec::new();
    let mut bad = false;
    z.ks.store.scan(&lo, &hi, |k, v| match decode_count(v) {
        Ok(n) => {
            heads.push((k[lo.len()..].to_vec(), n));
            true
        }
        Err(_) => {
            bad = true;
            false
        }
    })?;
    if bad || heads.first().is_none_or(|h| !h.0.is_empty()) {
        return Err(CORRUPT);
    }
    Ok(Layout::from_heads(heads))
}

/// Runs `f` on the layout of `z` (a set keeping blocks).
fn with_layout<R>(z: At<'_>, f: impl FnOnce(&mut Layout) -> R) -> CmdResult<R> {
    z.ks.zlayouts.with(z.c.version, z.ks.store.write_failures(), || load(z), f)
}

/// What one command did to a set's score records: the positions it put
/// and deleted, in order, netted when staged ([`Changes::net`]: a put
/// then a delete of one position is nothing). A list, not two sets: a
/// one-member ZADD made a tree node per set, and the nets of its two
/// positions are found by one sort.
#[derive(Default, Debug)]
pub struct Changes {
    ops: SmallVec<[(Pos, bool); 2]>,
}

/// A command's changes netted: positions put and deleted, each sorted.
#[derive(Default, Debug)]
struct Net {
    ins: SmallVec<[Pos; 1]>,
    del: SmallVec<[Pos; 1]>,
}

impl Net {
    fn deleted(&self, p: &[u8]) -> bool {
        self.del.binary_search_by(|d| d.as_slice().cmp(p)).is_ok()
    }

    /// The positions put in `[from, to)`.
    fn put_in<'a>(&'a self, from: &[u8], to: Option<&[u8]>) -> &'a [Pos] {
        let a = self.ins.partition_point(|p| p.as_slice() < from);
        let b = to.map_or(self.ins.len(), |t| self.ins.partition_point(|p| p.as_slice() < t));
        &self.ins[a..b.max(a)]
    }
}

impl Changes {
    pub fn insert(&mut self, pos: Pos) {
        self.ops.push((pos, true));
    }

    pub fn delete(&mut self, pos: Pos) {
        self.ops.push((pos, false));
    }

    /// Puts less deletes of each position (a stable sort keeps their
    /// order): more puts, it is put; more deletes, deleted; as many,
    /// nothing.
    fn net(self) -> Net {
        let mut ops = self.ops;
        ops.sort_by(|a, b| a.0.cmp(&b.0));
        let mut net = Net::default();
        let mut it = ops.into_iter().peekable();
        while let Some((p, put)) = it.next() {
            let mut n: i64 = if put { 1 } else { -1 };
            while let Some((_, put)) = it.next_if(|(q, _)| *q == p) {
                n += if put { 1 } else { -1 };
            }
            match n.cmp(&0) {
                std::cmp::Ordering::Greater => net.ins.push(p),
                std::cmp::Ordering::Less => net.del.push(p),
                std::cmp::Ordering::Equal => {}
            }
        }
        net
    }
}

/// The positions in `[from, to)` after this command: the stored ones not
/// deleted, and the ones it put (its batch is not written yet).
fn positions(z: At<'_>, from: &[u8], to: Option<&[u8]>, ch: &Net) -> CmdResult<Positions> {
    let mut out = Vec::new();
    let start = [&[SCORE][..], from].concat();
    walk(z.ks, z.db, z.key, z.c, Some(&start), false, |s, m| {
        let p = position(s, m);
        if to.is_some_and(|t| p.as_slice() >= t) {
            return false;
        }
        if !ch.deleted(&p) {
            out.push(p.to_vec());
        }
        true
    })?;
    out.extend(ch.put_in(from, to).iter().map(|p| p.to_vec()));
    out.sort();
    out.dedup();
    Ok(Positions::from_sorted(out))
}

/// Cuts `ps` (in order, at least one) into blocks of about the block
/// size: (head, count) each, the first head `first`.
fn cut(ps: &Positions, first: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let len = ps.len() as u64;
    let pieces = (len / block()).max(1);
    (0..pieces)
        .map(|i| {
            let (a, b) = (i * len / pieces, (i + 1) * len / pieces);
            let head = if i == 0 {
                first.to_vec()
            } else {
                ps.get(a as usize).unwrap_or_default().to_vec()
            };
            (head, b - a)
        })
        .collect()
}

/// Brings the blocks of the set `w` writes up to date with `ch`, in `w`'s
/// batch: called once per command, before the commit. A set without blocks
/// gets them when it has grown past twice the block size. A kept layout
/// (and the positions it keeps) follows.
pub fn stage(w: &mut Writer<'_>, ch: Changes) -> CmdResult {
    let (ks, db, key) = w.place();
    let c = w.c.clone();
    if c.size == 0 {
        ks.zlayouts.forget(c.version);
        return Ok(());
    }
    let ch = ch.net();
    if ch.ins.is_empty() && ch.del.is_empty() {
        // Nothing left once netted (a member moved and back): no layout
        // to load, nothing to stage.
        return Ok(());
    }
    let z = At { ks, db, key, c: &c };
    let failures = ks.store.write_failures();
    if !c.zblocks {
        if c.size <= 2 * block() {
            ks.zlayouts.update(c.version, failures, |lay| {
                if let Some(l) = lay.first() {
                    lay.set(l, c.size);
                    lay.edit_kept(l, |k| apply(k, ch.ins.iter().map(|p| &p[..]), ch.del.iter().map(|p| &p[..])));
                }
            });
            return Ok(());
        }
        return give_blocks(w, z, &ch);
    }
    let mut writes: Heads = SmallVec::new();
    let done = with_layout(z, |lay| restructure(z, lay, &ch, &mut writes))?;
    if let Err(e) = done {
        ks.zlayouts.forget(c.version);
        return Err(e);
    }
    for (sub, n) in writes {
        match n {
            Some(n) => w.put_raw(&sub, &n.to_be_bytes()),
            None => w.delete_raw(&sub),
        }
    }
    Ok(())
}

/// Head records to write (the head's sub key, Some count) or delete (None).
type Heads = SmallVec<[(HeadSub, Option<u64>); 2]>;

/// Cuts the set `w` writes into blocks (it just grew past twice the block
/// size): their heads go in `w`'s batch, the meta gets mode 3, and the
/// layout, with every block's positions, is kept.
fn give_blocks(w: &mut Writer<'_>, z: At<'_>, ch: &Net) -> CmdResult {
    let all = positions(z, b"", None, ch)?;
    let heads = cut(&all, b"");
    for (h, n) in &heads {
        w.put_raw(&head_sub(h), &n.to_be_bytes());
    }
    w.c.zblocks = true;
    let mut lay = Layout::from_heads(heads.clone());
    let (mut at, mut l) = (0usize, lay.first());
    for (_, n) in &heads {
        let Some(x) = l else { break };
        lay.keep(x, Some(all.slice(at, at + *n as usize)));
        at += *n as usize;
        l = lay.next(x);
    }
    z.ks.zlayouts.keep(z.c.version, lay);
    Ok(())
}

/// Applies puts and deletes to kept positions (kept sorted); a put takes
/// the buffer of a position deleted (a score change moves a member).
fn apply<'a>(kept: &mut Positions, ins: impl Iterator<Item = &'a [u8]>, del: impl Iterator<Item = &'a [u8]>) {
    let mut spare: SmallVec<[Vec<u8>; 1]> = SmallVec::new();
    for p in del {
        spare.extend(kept.remove(p));
    }
    for p in ins {
        kept.add_in(p, spare.pop());
    }
}

/// One block's share of a command's changes: where the block was before
/// any block moved, and its positions put and deleted.
struct Share<'a> {
    at: Loc,
    ins: SmallVec<[&'a Pos; 1]>,
    del: SmallVec<[&'a Pos; 1]>,
}

impl Share<'_> {
    /// A position in the block: the block is the one holding it, whatever
    /// blocks after it split or joined.
    fn any(&self) -> &[u8] {
        self.ins.first().or(self.del.first()).map_or(&[][..], |p| p.as_slice())
    }
}

/// `ch` cut into its blocks' shares, in order: its positions, both lists
/// sorted, are met in order, so a block's are consecutive.
fn shares<'a>(lay: &Layout, ch: &'a Net) -> CmdResult<SmallVec<[Share<'a>; 2]>> {
    let mut out: SmallVec<[Share<'a>; 2]> = SmallVec::new();
    let (mut i, mut d) = (ch.ins.iter().peekable(), ch.del.iter().peekable());
    loop {
        let put = match (i.peek(), d.peek()) {
            (Some(a), Some(b)) => a < b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let Some(p) = (if put { i.next() } else { d.next() }) else { break };
        let at = lay.find(p).ok_or(CORRUPT)?;
        if out.last().is_none_or(|s| s.at != at) {
            out.push(Share {
                at,
                ins: SmallVec::new(),
                del: SmallVec::new(),
            });
        }
        if let Some(s) = out.last_mut() {
            if put {
                s.ins.push(p);
            } else {
                s.del.push(p);
            }
        }
    }
    Ok(out)
}

/// Applies `ch` to `lay` block by block, last block first (a split or a
/// join only changes the blocks from it on), and lists the head records to
/// put or delete.
fn restructure(z: At<'_>, lay: &mut Layout, ch: &Net, writes: &mut Heads) -> CmdResult {
    let per = shares(lay, ch)?;
    let first = lay.first().ok_or(CORRUPT)?;
    let size = block();
    // Blocks split, joined or went: the places found before may be off
    // (a group split moves blocks before the one that split), so each
    // block is found again by a position it holds.
    let mut moved = false;
    for share in per.iter().rev() {
        let l = if moved { lay.find(share.any()).ok_or(CORRUPT)? } else { share.at };
        let n = (lay.count(l) + share.ins.len() as u64)
            .checked_sub(share.del.len() as u64)
            .ok_or(CORRUPT)?;
        // The block's positions after the command, if kept.
        let was_kept = lay.kept(l).is_some();
        lay.edit_kept(l, |k| apply(k, share.ins.iter().map(|p| &p[..]), share.del.iter().map(|p| &p[..])));
        let prev = lay.prev(l).filter(|p| n < size / 4 && lay.count(*p) + n <= size);
        if n > 2 * size {
            moved = true;
            let head = lay.head(l).to_vec();
            // A kept block's positions, the command's changes applied,
            // are the block: no scan (a scan of the set's records first
            // wrote what the write tier held of it to RocksDB; splits made
            // it 2.6% of ZADD -P16 over 1000 members).
            let all = match was_kept.then(|| lay.take_kept(l)).flatten() {
                Some(all) => all,
                None => {
                    let next = lay.next(l).map(|x| lay.head(x).to_vec());
                    positions(z, &head, next.as_deref(), ch)?
                }
            };
            let mut at = l;
            let mut from = 0usize;
            for (i, (h, k)) in cut(&all, &head).into_iter().enumerate() {
                if i == 0 {
                    lay.set(l, k);
                } else {
                    lay.insert_after(at, h.clone(), k);
                    at = lay.find(&h).ok_or(CORRUPT)?;
                }
                // A block that was read keeps its pieces' positions (a block
                // no read needed stays unread: a load of a big set splits
                // all over it).
                lay.keep(at, was_kept.then(|| all.slice(from, from + k as usize)));
                from += k as usize;
                writes.push((head_sub(&h), Some(k)));
            }
        } else if n == 0 && l != first {
            moved = true;
            writes.push((head_sub(lay.head(l)), None));
            lay.remove(l);
        } else if let (Some(p), false) = (prev, l == first) {
            moved = true;
            let joined = lay.count(p) + n;
            let mine = lay.take_kept(l);
            match mine {
                Some(b) if lay.kept(p).is_some() => lay.edit_kept(p, |a| a.extend(b)),
                _ => lay.keep(p, None),
            }
            lay.set(p, joined);
            writes.push((head_sub(lay.head(l)), None));
            writes.push((head_sub(lay.head(p)), Some(joined)));
            lay.remove(l);
        } else if n != lay.count(l) {
            lay.set(l, n);
            writes.push((head_sub(lay.head(l)), Some(n)));
        }
        // Else a member moved inside the block: its head record stands.
    }
    Ok(())
}

/// Reads block `l`'s positions from disk when `lay` does not keep them:
/// the second read of a block keeps them (a hot block), the first only
/// returns them (a random read of a big set would otherwise fill memory
/// with blocks read once). None: they are kept, `lay.kept(l)` has them.
fn read_block(z: At<'_>, lay: &mut Layout, l: Loc) -> CmdResult<Option<Positions>> {
    if lay.kept(l).is_some() {
        lay.touch(l);
        return Ok(None);
    }
    let keep = lay.should_keep(l);
    load_block(z, lay, l, keep)
}

/// Reads block `l`'s positions from disk: kept (None) or handed back.
fn load_block(z: At<'_>, lay: &mut Layout, l: Loc, keep: bool) -> CmdResult<Option<Positions>> {
    let head = lay.head(l).to_vec();
    let next = lay.next(l).map(|x| lay.head(x).to_vec());
    let ps = positions(z, &head, next.as_deref(), &Net::default())?;
    if keep {
        lay.keep(l, Some(ps));
        return Ok(None);
    }
    Ok(Some(ps))
}

/// Splits a position into (score, member).
pub fn split(pos: &[u8]) -> CmdResult<(f64, &[u8])> {
    let k: [u8; 8] = pos.get(..8).and_then(|k| k.try_into().ok()).ok_or(CORRUPT)?;
    Ok((from_sort_key(k), &pos[8..]))
}

/// Visits the members of `z` in order from position `from` (inclusive)
/// on, or backwards from `from` (exclusive) when `rev`; None: from the
/// end they start at. Stops when `f` returns false. Each block's
/// positions come from the layout, read from disk the first time.
pub fn visit(z: At<'_>, from: Option<&[u8]>, rev: bool, mut f: impl FnMut(f64, &[u8]) -> bool) -> CmdResult {
    with_layout(z, |lay| -> CmdResult {
        let mut at = match (from, rev) {
            (Some(p), _) => lay.find(p),
            (None, false) => lay.first(),
            (None, true) => lay.last(),
        };
        let mut bound = from;
        while let Some(l) = at {
            let read = read_block(z, lay, l)?;
            let ps = match &read {
                Some(ps) => ps,
                None => lay.kept(l).ok_or(CORRUPT)?,
            };
            let cut = bound.take().map(|b| ps.below(b));
            let part = if rev {
                ps.range(0, cut.unwrap_or(ps.len()))
            } else {
                ps.range(cut.unwrap_or(0), ps.len())
            };
            let mut go = |p: &[u8]| -> CmdResult<bool> {
                let (s, m) = split(p)?;
                Ok(f(s, m))
            };
            if rev {
                for p in part.rev() {
                    if !go(p)? {
                        return Ok(());
                    }
                }
            } else {
                for p in part {
                    if !go(p)? {
                        return Ok(());
                    }
                }
            }
            at = if rev { lay.prev(l) } else { lay.next(l) };
        }
        Ok(())
    })?
}

/// How many members of `z` sit before position `pos`: the blocks before
/// its block, and its block's positions before it.
pub fn rank_of(z: At<'_>, pos: &[u8]) -> CmdResult<u64> {
    with_layout(z, |lay| -> CmdResult<u64> {
        let l = lay.find(pos).ok_or(CORRUPT)?;
        if lay.kept(l).is_some() {
            lay.touch(l);
        } else if lay.should_keep(l) {
            load_block(z, lay, l, true)?;
        } else {
            // A block not to be kept (read for the first time, or cold
            // with no room left: a random member of a big set): count its
            // records before `pos` instead of reading them all (half the
            // block on average, nothing decoded).
            let count = |p: &[u8]| keys::sub_key(z.db, z.key, z.c.version, &[&[SCORE][..], p].concat());
            let mut n = 0u64;
            z.ks.store.scan(&count(lay.head(l)), &count(pos), |_, _| {
                n += 1;
                true
            })?;
            return Ok(lay.before(l) + n);
        }
        let ps = lay.kept(l).ok_or(CORRUPT)?;
        Ok(lay.before(l) + ps.below(pos) as u64)
    })?
}

/// The position of the member of rank `rank` of `z`; None past the end.
pub fn at_rank(z: At<'_>, rank: u64) -> CmdResult<Option<Vec<u8>>> {
    with_layout(z, |lay| -> CmdResult<Option<Vec<u8>>> {
        let Some((l, off)) = lay.locate(rank) else {
            return Ok(None);
        };
        let read = read_block(z, lay, l)?;
        let ps = match &read {
            Some(ps) => ps,
            None => lay.kept(l).ok_or(CORRUPT)?,
        };
        Ok(ps.get(off as usize).map(<[u8]>::to_vec))
    })?
}

/// Whether the head records among `records` (a sorted set's sub records
/// in key order, as a DUMP payload holds them) are exact for its score
/// records: none when `zblocks` is off; else the first head empty, each
/// count the score records up to the next head.
pub fn heads_fit(zblocks: bool, records: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let heads: Vec<(&[u8], &[u8])> = records
        .iter()
        .filter(|(s, _)| s.first() == Some(&RANK))
        .map(|(s, v)| (&s[1..], &v[..]))
        .collect();
    if !zblocks {
        return heads.is_empty();
    }
    let mut ps: Vec<&[u8]> = records
        .iter()
        .filter(|(s, _)| s.first() == Some(&SCORE))
        .map(|(s, _)| &s[1..])
        .collect();
    ps.sort();
    if heads.first().is_none_or(|h| !h.0.is_empty()) || heads.windows(2).any(|w| w[0].0 >= w[1].0) {
        return false;
    }
    heads.iter().enumerate().all(|(i, (h, v))| {
        let to = heads.get(i + 1).map(|n| n.0);
        let n = ps.iter().filter(|p| **p >= *h && to.is_none_or(|t| **p < t)).count() as u64;
        decode_count(v).ok() == Some(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_into_blocks_of_about_the_block_size() {
        let ps = Positions::from_sorted((0..300u16).map(|n| n.to_be_bytes().to_vec()).collect());
        let b = block();
        let heads = cut(&ps, b"");
        assert_eq!(heads.len() as u64, 300 / b);
        assert_eq!(heads[0].0, b"");
        assert_eq!(heads.iter().map(|h| h.1).sum::<u64>(), 300);
        assert!(heads.iter().all(|h| h.1 >= b && h.1 < 2 * b));
        assert_eq!(cut(&ps.slice(0, 3), b"x"), vec![(b"x".to_vec(), 3)]);
    }

    #[test]
    fn changes_net_out() {
        let net = |ops: &[(&[u8], bool)]| {
            let mut ch = Changes::default();
            for (p, put) in ops {
                if *put {
                    ch.insert(Pos::from_slice(p));
                } else {
                    ch.delete(Pos::from_slice(p));
                }
            }
            let n = ch.net();
            let v = |ps: SmallVec<[Pos; 1]>| ps.into_iter().map(|p| p.to_vec()).collect::<Vec<_>>();
            (v(n.ins), v(n.del))
        };
        let none: (Vec<Vec<u8>>, Vec<Vec<u8>>) = (vec![], vec![]);
        assert_eq!(net(&[(b"a", true), (b"a", false)]), none);
        assert_eq!(net(&[(b"b", false), (b"b", true)]), none);
        assert_eq!(net(&[(b"c", true)]), (vec![b"c".to_vec()], vec![]));
        // A member moved twice in one command (ZADD m 1 m 2 over score 0):
        // its first and last positions only.
        assert_eq!(
            net(&[(b"0", false), (b"1", true), (b"1", false), (b"2", true)]),
            (vec![b"2".to_vec()], vec![b"0".to_vec()])
        );
        // Back where it started: nothing.
        assert_eq!(net(&[(b"0", false), (b"1", true), (b"1", false), (b"0", true)]), none);
        // Both lists come out sorted.
        let (ins, del) = net(&[(b"z", true), (b"y", false), (b"a", true), (b"b", false)]);
        assert_eq!(ins, vec![b"a".to_vec(), b"z".to_vec()]);
        assert_eq!(del, vec![b"b".to_vec(), b"y".to_vec()]);
        let pos = |ps: &[Vec<u8>]| ps.iter().map(|p| Pos::from_slice(p)).collect::<SmallVec<[Pos; 1]>>();
        let n = Net {
            ins: pos(&ins),
            del: pos(&del),
        };
        assert!(n.deleted(b"y") && !n.deleted(b"z"));
        assert_eq!(n.put_in(b"b", None), &pos(&ins)[1..]);
        assert_eq!(n.put_in(b"", Some(b"b")), &pos(&ins)[..1]);
        assert!(n.put_in(b"q", Some(b"c")).is_empty());
    }

    #[test]
    fn dump_heads_are_checked() {
        let rec = |p: &[u8]| ([&[SCORE][..], p].concat(), vec![]);
        let head = |p: &[u8], n: u64| ([&[RANK][..], p].concat(), n.to_be_bytes().to_vec());
        let mut r = vec![head(b"", 2), head(b"c", 1), rec(b"a"), rec(b"b"), rec(b"c")];
        r.sort();
        assert!(heads_fit(true, &r));
        assert!(!heads_fit(false, &r), "heads without the mode");
        let mut wrong = vec![head(b"", 1), head(b"c", 2), rec(b"a"), rec(b"b"), rec(b"c")];
        wrong.sort();
        assert!(!heads_fit(true, &wrong));
        let no_first = vec![head(b"a", 3), rec(b"a"), rec(b"b"), rec(b"c")];
        assert!(!heads_fit(true, &no_first));
        assert!(heads_fit(false, &[rec(b"a")]));
    }
}
