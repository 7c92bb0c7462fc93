//! Redis's RDB encodings of a stream (types 15, 19 and 21) for DUMP and
//! RESTORE (docs/encoding.md, "DUMP payload"), written from Redis's format
//! descriptions.
//!
//! A stream is its listpack nodes, each an RDB string of its master ID (16
//! bytes: ms and seq, big-endian) and an RDB string of the listpack: the
//! master entry (live entries, deleted entries, the master field count,
//! the master fields, 0), then each entry as flags (1: deleted, 2: the
//! master's fields), ms and seq relative to the master ID, then either the
//! field count and the fields with their values or, with the master's
//! fields, the values alone, then the entry's element count. Then the
//! length, the last ID, (19 on) the first ID, the largest deleted ID and the
//! entries ever added; then the consumer groups: name, last delivered ID,
//! (19 on) entries read (-1: unknown), the group's pending entries (ID in
//! 16 raw bytes, delivery time in 8 little-endian bytes, deliveries), its
//! consumers (name, seen time, (21) active time (-1: never), the IDs of
//! the pending entries they own).
//!
//! DUMP writes type 19 (RDB version 10, Redis 7.0 loads it) unless a
//! consumer's active time differs from its seen time, which only 21 (RDB
//! version 11, Redis 7.2) carries. Deleted entries are not written (Basalt
//! keeps none); node boundaries are Basalt's emulated nodes, so XINFO's
//! node count moves with the stream both ways.

use std::collections::{HashMap, HashSet};

use super::stream::{decode_entry, encode_entry, entry_sub, node_sub, Entry, Id, NodeRec, ENTRY};
use super::xgroup::{self, consumer_sub, cpel_sub, group_sub, pel_sub, Consumer, Group, Nack, CONSUMER, GROUP, PEL};
use crate::resp::parse::string2ll;
use crate::storage::meta::{Coll, KeyType, Meta, StreamMeta};
use crate::types::coll::Owned;
use crate::types::rdb::{self, Reader};
use crate::types::rdbpack;

pub const STREAM_LISTPACKS: u8 = 15;
pub const STREAM_LISTPACKS_2: u8 = 19;
pub const STREAM_LISTPACKS_3: u8 = 21;

/// The RDB version of a type-21 stream (Redis 7.2).
const RDB_VERSION_3: u16 = 11;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

/// A listpack node: its live entries, every entry it was given (deleted
/// ones too) and its listpack's bytes (0: not known).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub entries: Vec<Entry>,
    pub total: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct XConsumer {
    pub name: Vec<u8>,
    pub seen_ms: u64,
    /// 0: never active.
    pub active_ms: u64,
    pub pel: Vec<Id>,
}

/// A pending entry of a group: ID, last delivery time, deliveries.
pub type Pending = (Id, u64, u64);

#[derive(Debug, Clone, PartialEq)]
pub struct XGroup {
    pub name: Vec<u8>,
    pub last: Id,
    pub entries_read: Option<u64>,
    pub pel: Vec<Pending>,
    pub consumers: Vec<XConsumer>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StreamValue {
    pub nodes: Vec<Node>,
    pub length: u64,
    pub last: Id,
    pub first: Id,
    pub max_deleted: Id,
    pub added: u64,
    pub groups: Vec<XGroup>,
}

/// `glen(4) group rest` of a group record's sub key (after its tag).
fn split_named(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = u32::from_be_bytes(s.get(..4)?.try_into().ok()?) as usize;
    Some((s.get(4..4 + n)?, s.get(4 + n..)?))
}

/// The value of a stored stream; None for another type, records that do
/// not decode, or a pending entry of a consumer without a record.
pub fn of_owned(v: &Owned) -> Option<StreamValue> {
    let m = Meta::decode(&v.raw)?;
    if m.ty != KeyType::Stream {
        return None;
    }
    let c = m.coll()?;
    let s = c.stream?;
    let floor = Id::from_raw(s.floor);
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_of: Option<u64> = None;
    let mut groups: Vec<XGroup> = Vec::new();
    let mut consumers: Vec<(Vec<u8>, Vec<u8>, Consumer)> = Vec::new();
    let mut nacks: Vec<(Vec<u8>, Id, Nack)> = Vec::new();
    for (k, val) in &v.members {
        let rest = k.get(1..)?;
        match *k.first()? {
            ENTRY => {
                let id = Id::from_bytes(rest)?;
                if id < floor {
                    continue;
                }
                let (node, fields) = decode_entry(val)?;
                if node_of != Some(node) {
                    nodes.push(Node {
                        entries: Vec::new(),
                        total: 0,
                        bytes: 0,
                    });
                    node_of = Some(node);
                }
                let n = nodes.last_mut()?;
                n.entries.push((id, fields));
                n.total += 1;
            }
            GROUP => {
                let g = Group::decode(val)?;
                groups.push(XGroup {
                    name: rest.to_vec(),
                    last: g.last,
                    entries_read: g.entries_read,
                    pel: Vec::new(),
                    consumers: Vec::new(),
                });
            }
            CONSUMER => {
                let (g, name) = split_named(rest)?;
                consumers.push((g.to_vec(), name.to_vec(), Consumer::decode(val)?));
            }
            PEL => {
                let (g, id) = split_named(rest)?;
                nacks.push((g.to_vec(), Id::from_bytes(id)?, Nack::decode(val)?));
            }
            // Node records and the consumers' own PELs follow from the
            // entries and the group PELs.
            _ => {}
        }
    }
    // The records are the truth (the meta's counts follow them).
    let length: u64 = nodes.iter().map(|n| n.entries.len() as u64).sum();
    let index: HashMap<Vec<u8>, usize> = groups.iter().enumerate().map(|(i, g)| (g.name.clone(), i)).collect();
    let mut owner: HashMap<(usize, Vec<u8>), usize> = HashMap::new();
    for (g, name, con) in consumers {
        let gi = *index.get(&g)?;
        let grp = &mut groups[gi];
        owner.insert((gi, name.clone()), grp.consumers.len());
        grp.consumers.push(XConsumer {
            name,
            seen_ms: con.seen_ms,
            active_ms: con.active_ms,
            pel: Vec::new(),
        });
    }
    for (g, id, n) in nacks {
        let gi = *index.get(&g)?;
        let ci = *owner.get(&(gi, n.consumer))?;
        let grp = &mut groups[gi];
        grp.pel.push((id, n.delivery_ms, n.deliveries));
        grp.consumers[ci].pel.push(id);
    }
    Some(StreamValue {
        nodes,
        length,
        last: Id::from_raw(s.last),
        first: Id::from_raw(s.first),
        max_deleted: Id::from_raw(s.max_deleted),
        added: s.added,
        groups,
    })
}

fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    rdb::write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

fn int(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The listpack of a node of live entries (not empty), with the first
/// entry's ID as master ID and its fields as master fields.
fn node_listpack(entries: &[Entry]) -> Vec<u8> {
    let (master, master_fields) = (&entries[0].0, &entries[0].1);
    let names: Vec<&[u8]> = master_fields.iter().step_by(2).map(Vec::as_slice).collect();
    let mut items: Vec<Vec<u8>> = vec![int(entries.len() as i64), int(0), int(names.len() as i64)];
    items.extend(names.iter().map(|n| n.to_vec()));
    items.push(int(0));
    for (id, fields) in entries {
        let n = fields.len() / 2;
        let same = n == names.len() && fields.iter().step_by(2).zip(&names).all(|(a, b)| a == b);
        items.push(int(if same { FLAG_SAMEFIELDS } else { 0 }));
        items.push(int(id.ms.wrapping_sub(master.ms) as i64));
        items.push(int(id.seq.wrapping_sub(master.seq) as i64));
        if same {
            items.extend(fields.iter().skip(1).step_by(2).cloned());
            items.push(int(n as i64 + 3));
        } else {
            items.push(int(n as i64));
            items.extend(fields.iter().cloned());
            items.push(int(2 * n as i64 + 4));
        }
    }
    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    rdbpack::listpack(&refs)
}

/// Writes `v`'s type byte and body into `out`; the RDB version it needs.
pub fn write(v: &StreamValue, out: &mut Vec<u8>) -> u16 {
    let v3 = v.groups.iter().flat_map(|g| &g.consumers).any(|c| c.active_ms != c.seen_ms);
    out.push(if v3 { STREAM_LISTPACKS_3 } else { STREAM_LISTPACKS_2 });
    let nodes: Vec<&Node> = v.nodes.iter().filter(|n| !n.entries.is_empty()).collect();
    rdb::write_len(out, nodes.len() as u64);
    for n in nodes {
        write_string(out, &n.entries[0].0.bytes());
        write_string(out, &node_listpack(&n.entries));
    }
    for x in [
        v.length,
        v.last.ms,
        v.last.seq,
        v.first.ms,
        v.first.seq,
        v.max_deleted.ms,
        v.max_deleted.seq,
        v.added,
    ] {
        rdb::write_len(out, x);
    }
    rdb::write_len(out, v.groups.len() as u64);
    for g in &v.groups {
        write_string(out, &g.name);
        rdb::write_len(out, g.last.ms);
        rdb::write_len(out, g.last.seq);
        rdb::write_len(out, g.entries_read.unwrap_or(u64::MAX));
        rdb::write_len(out, g.pel.len() as u64);
        for (id, delivery, count) in &g.pel {
            out.extend_from_slice(&id.bytes());
            out.extend_from_slice(&delivery.to_le_bytes());
            rdb::write_len(out, *count);
        }
        rdb::write_len(out, g.consumers.len() as u64);
        for c in &g.consumers {
            write_string(out, &c.name);
            out.extend_from_slice(&c.seen_ms.to_le_bytes());
            if v3 {
                let active = if c.active_ms == 0 { u64::MAX } else { c.active_ms };
                out.extend_from_slice(&active.to_le_bytes());
            }
            rdb::write_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id.bytes());
            }
        }
    }
    if v3 {
        RDB_VERSION_3
    } else {
        rdb::RDB_VERSION
    }
}

/// A listpack element that must be an integer.
fn lp_int(it: &mut std::slice::Iter<'_, Vec<u8>>) -> Option<i64> {
    string2ll(it.next()?)
}

/// The entries of a node listpack keyed `master`, each ID above `*prev`
/// (which follows them); None when malformed or inconsistent.
fn read_node(master: Id, lp: &[u8], prev: &mut Option<Id>) -> Option<Node> {
    let items = rdbpack::read_listpack(lp)?;
    let mut it = items.iter();
    let (count, deleted, nf) = (lp_int(&mut it)?, lp_int(&mut it)?, lp_int(&mut it)?);
    if count < 0 || deleted < 0 || nf < 0 || nf as usize > items.len() {
        return None;
    }
    let names: Vec<&Vec<u8>> = (0..nf).map(|_| it.next()).collect::<Option<_>>()?;
    if lp_int(&mut it)? != 0 {
        return None;
    }
    let mut node = Node {
        entries: Vec::new(),
        total: 0,
        bytes: lp.len() as u64,
    };
    while it.len() > 0 {
        let flags = lp_int(&mut it)?;
        if flags & !(FLAG_DELETED | FLAG_SAMEFIELDS) != 0 {
            return None;
        }
        let id = Id::new(
            master.ms.wrapping_add(lp_int(&mut it)? as u64),
            master.seq.wrapping_add(lp_int(&mut it)? as u64),
        );
        if id < master || prev.is_some_and(|p| id <= p) {
            return None;
        }
        *prev = Some(id);
        let mut fields = Vec::new();
        let want = if flags & FLAG_SAMEFIELDS != 0 {
            for name in &names {
                fields.push((*name).clone());
                fields.push(it.next()?.clone());
            }
            nf + 3
        } else {
            let n = lp_int(&mut it)?;
            if n < 0 || n as usize > it.len() {
                return None;
            }
            for _ in 0..2 * n {
                fields.push(it.next()?.clone());
            }
            2 * n + 4
        };
        if lp_int(&mut it)? != want {
            return None;
        }
        node.total += 1;
        if flags & FLAG_DELETED == 0 {
            node.entries.push((id, fields));
        }
    }
    let live = node.entries.len() as u64;
    (live == count as u64 && node.total - live == deleted as u64).then_some(node)
}

fn read_id(r: &mut Reader<'_>) -> Option<Id> {
    Some(Id::new(r.len()?.ok()?, r.len()?.ok()?))
}

fn read_raw_id(r: &mut Reader<'_>) -> Option<Id> {
    Id::from_bytes(r.take(16)?)
}

fn read_ms(r: &mut Reader<'_>) -> Option<u64> {
    Some(u64::from_le_bytes(r.take(8)?.try_into().ok()?))
}

/// The stream of a payload body of type `ty` (15, 19 or 21) after its type
/// byte; None when malformed or inconsistent ("Bad data format").
pub fn read(r: &mut Reader<'_>, ty: u8) -> Option<StreamValue> {
    let n = r.count()?;
    let mut nodes = Vec::with_capacity(n);
    let (mut prev, mut prev_master) = (None, None);
    for _ in 0..n {
        let master = Id::from_bytes(&r.string()?)?;
        if prev_master.is_some_and(|p| master <= p) {
            return None;
        }
        prev_master = Some(master);
        let lp = r.string()?;
        nodes.push(read_node(master, &lp, &mut prev)?);
    }
    let length = r.len()?.ok()?;
    let last = read_id(r)?;
    let live: u64 = nodes.iter().map(|n| n.entries.len() as u64).sum();
    if length != live || prev.is_some_and(|p| p > last) {
        return None;
    }
    let (first, max_deleted, added) = if ty >= STREAM_LISTPACKS_2 {
        (read_id(r)?, read_id(r)?, r.len()?.ok()?)
    } else {
        (Id::MIN, Id::MIN, length)
    };
    // The first live entry, when there is one.
    let first = nodes.iter().find_map(|n| n.entries.first()).map_or(first, |e| e.0);
    let mut v = StreamValue {
        nodes,
        length,
        last,
        first,
        max_deleted,
        added,
        groups: Vec::new(),
    };
    let ng = r.count()?;
    let mut names = HashSet::new();
    for _ in 0..ng {
        let name = r.string()?;
        if !names.insert(name.clone()) {
            return None;
        }
        let last = read_id(r)?;
        let entries_read = if ty >= STREAM_LISTPACKS_2 {
            Some(r.len()?.ok()?).filter(|&n| n != u64::MAX)
        } else {
            let meta = StreamMeta {
                last: v.last.raw(),
                first: v.first.raw(),
                added: v.added,
                ..StreamMeta::default()
            };
            xgroup::distance(&meta, v.length, last)
        };
        let np = r.count()?;
        let mut pel = Vec::with_capacity(np);
        let mut owned: HashMap<Id, bool> = HashMap::with_capacity(np);
        for _ in 0..np {
            let id = read_raw_id(r)?;
            let delivery = read_ms(r)?;
            let count = r.len()?.ok()?;
            if owned.insert(id, false).is_some() {
                return None;
            }
            pel.push((id, delivery, count));
        }
        pel.sort_by_key(|p| p.0);
        let nc = r.count()?;
        let mut consumers = Vec::with_capacity(nc);
        let mut seen = HashSet::new();
        for _ in 0..nc {
            let name = r.string()?;
            if !seen.insert(name.clone()) {
                return None;
            }
            let seen_ms = read_ms(r)?;
            let active_ms = if ty == STREAM_LISTPACKS_3 {
                match read_ms(r)? {
                    u64::MAX => 0,
                    t => t,
                }
            } else {
                seen_ms
            };
            let nids = r.count()?;
            let mut ids = Vec::with_capacity(nids);
            for _ in 0..nids {
                let id = read_raw_id(r)?;
                // In the group's PEL, and owned by this consumer alone.
                match owned.get_mut(&id) {
                    Some(o) if !*o => *o = true,
                    _ => return None,
                }
                ids.push(id);
            }
            ids.sort();
            consumers.push(XConsumer {
                name,
                seen_ms,
                active_ms,
                pel: ids,
            });
        }
        // Every pending entry has a consumer.
        if owned.values().any(|o| !o) {
            return None;
        }
        v.groups.push(XGroup {
            name,
            last,
            entries_read,
            pel,
            consumers,
        });
    }
    v.groups.sort_by(|a, b| a.name.cmp(&b.name));
    for g in &mut v.groups {
        g.consumers.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Some(v)
}

/// The stored form of `v` expiring at `expire_ms`: one Basalt node per
/// listpack node with live entries.
pub fn to_owned(v: StreamValue, expire_ms: u64) -> Owned {
    let nodes: Vec<Node> = v.nodes.into_iter().filter(|n| !n.entries.is_empty()).collect();
    let mut s = StreamMeta {
        last: v.last.raw(),
        first: v.first.raw(),
        max_deleted: v.max_deleted.raw(),
        added: v.added,
        groups: v.groups.len() as u64,
        nodes: nodes.len() as u64,
        ..StreamMeta::default()
    };
    let mut members = Vec::new();
    let count = nodes.len();
    for (i, node) in nodes.into_iter().enumerate() {
        let rec = NodeRec {
            valid: node.entries.len() as u64,
            total: node.total,
            bytes: node.bytes,
            last: node.entries.last().map_or(Id::MIN, |e| e.0),
        };
        let n = i as u64;
        if i + 1 < count {
            if i == 0 {
                s.head = Some((0, rec.valid, rec.last.raw()));
            }
            members.push((node_sub(n).to_vec(), rec.encode()));
        } else {
            s.tail_node = n;
            s.tail_total = rec.total;
            s.tail_valid = rec.valid;
            s.tail_bytes = rec.bytes;
            s.tail_last = rec.last.raw();
        }
        for (id, fields) in node.entries {
            let refs: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
            members.push((entry_sub(id).to_vec(), encode_entry(n, &refs)));
        }
    }
    for g in v.groups {
        let grp = Group {
            last: g.last,
            entries_read: g.entries_read,
            pending: g.pel.len() as u64,
            consumers: g.consumers.len() as u64,
        };
        members.push((group_sub(&g.name), grp.encode()));
        let mut owner: HashMap<Id, &[u8]> = HashMap::with_capacity(g.pel.len());
        for c in &g.consumers {
            let con = Consumer {
                seen_ms: c.seen_ms,
                active_ms: c.active_ms,
                pending: c.pel.len() as u64,
            };
            members.push((consumer_sub(&g.name, &c.name), con.encode()));
            for id in &c.pel {
                owner.insert(*id, &c.name);
                members.push((cpel_sub(&g.name, &c.name, *id), Vec::new()));
            }
        }
        for (id, delivery_ms, deliveries) in &g.pel {
            let nack = Nack {
                delivery_ms: *delivery_ms,
                deliveries: *deliveries,
                consumer: owner.get(id).map_or_else(Vec::new, |c| c.to_vec()),
            };
            members.push((pel_sub(&g.name, *id), nack.encode()));
        }
    }
    let c = Coll {
        version: 0,
        size: v.length,
        hfe: None,
        list_head: None,
        zblocks: false,
        chunk_shift: 0,
        stream: Some(Box::new(s)),
    };
    Owned {
        raw: c.encode(KeyType::Stream, expire_ms),
        members,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<Vec<u8>> {
        pairs
            .iter()
            .flat_map(|(f, v)| [f.as_bytes().to_vec(), v.as_bytes().to_vec()])
            .collect()
    }

    fn sample() -> StreamValue {
        let e = |ms, seq, f: &[(&str, &str)]| (Id::new(ms, seq), fields(f));
        StreamValue {
            nodes: vec![
                Node {
                    entries: vec![
                        e(1000, 0, &[("a", "1"), ("b", "x")]),
                        e(1000, 1, &[("a", "-70000"), ("b", "")]),
                        e(1001, 0, &[("c", "long value here")]),
                    ],
                    total: 3,
                    bytes: 0,
                },
                Node {
                    entries: vec![e(2000, 5, &[("a", "2")])],
                    total: 1,
                    bytes: 0,
                },
            ],
            length: 4,
            last: Id::new(2000, 7),
            first: Id::new(1000, 0),
            max_deleted: Id::new(2000, 6),
            added: 6,
            groups: vec![XGroup {
                name: b"g1".to_vec(),
                last: Id::new(1000, 1),
                entries_read: Some(2),
                pel: vec![(Id::new(1000, 0), 5000, 2), (Id::new(1000, 1), 6000, 1)],
                consumers: vec![
                    XConsumer {
                        name: b"alice".to_vec(),
                        seen_ms: 7000,
                        active_ms: 7000,
                        pel: vec![Id::new(1000, 0)],
                    },
                    XConsumer {
                        name: b"bob".to_vec(),
                        seen_ms: 8000,
                        active_ms: 8000,
                        pel: vec![Id::new(1000, 1)],
                    },
                ],
            }],
        }
    }

    /// What a dump and read give back: node sizes are the listpacks'.
    fn through(v: &StreamValue) -> (u8, StreamValue) {
        let mut out = Vec::new();
        write(v, &mut out);
        let mut r = Reader { buf: &out, at: 1 };
        let back = read(&mut r, out[0]).unwrap();
        assert_eq!(r.at, out.len());
        (out[0], back)
    }

    fn same_but_sizes(a: &StreamValue, b: &StreamValue) {
        let strip = |v: &StreamValue| {
            let mut v = v.clone();
            for n in &mut v.nodes {
                n.bytes = 0;
            }
            v
        };
        assert_eq!(strip(a), strip(b));
    }

    #[test]
    fn streams_round_trip() {
        let v = sample();
        let (ty, back) = through(&v);
        assert_eq!(ty, STREAM_LISTPACKS_2);
        same_but_sizes(&v, &back);
        // An active time of its own, or never: type 21.
        let mut v3 = v.clone();
        v3.groups[0].consumers[0].active_ms = 0;
        v3.groups[0].consumers[1].active_ms = 7500;
        let (ty, back) = through(&v3);
        assert_eq!(ty, STREAM_LISTPACKS_3);
        same_but_sizes(&v3, &back);
        // Through the stored form and back.
        let owned = to_owned(back.clone(), 0);
        let again = of_owned(&owned).unwrap();
        assert_eq!(again.nodes.len(), 2);
        same_but_sizes(&back, &again);
        // An empty stream with a group and no consumers.
        let empty = StreamValue {
            nodes: Vec::new(),
            length: 0,
            last: Id::new(5, 5),
            first: Id::MIN,
            max_deleted: Id::new(5, 5),
            added: 3,
            groups: vec![XGroup {
                name: b"g".to_vec(),
                last: Id::new(5, 5),
                entries_read: None,
                pel: Vec::new(),
                consumers: Vec::new(),
            }],
        };
        let (_, back) = through(&empty);
        assert_eq!(back, empty);
        assert_eq!(of_owned(&to_owned(back, 0)).unwrap(), empty);
    }

    #[test]
    fn a_redis_stream_loads() {
        // DUMP of redis-server 7.0.15 after XADD s 1-1 a 1 b 2, XADD s 1-2
        // a 3 b 4, XADD s 2-0 c 5, XDEL s 1-2, XGROUP CREATE s g 0,
        // XREADGROUP GROUP g c COUNT 1 STREAMS s > (its node listpack is
        // LZF-compressed).
        let redis: &[u8] = &[
            19, 1, 16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 195, 56, 61, 18, 61, 0, 0, 0, 25, 0, 2, 1, 1, 1, 2, 1, 129, 97, 2,
            129, 98, 2, 0, 32, 9, 0, 0, 32, 1, 64, 17, 2, 5, 1, 3, 96, 9, 2, 3, 1, 4, 32, 11, 64, 19, 1, 223, 255, 32, 43, 7, 129, 99, 2,
            5, 1, 6, 1, 255, 2, 2, 0, 1, 1, 1, 2, 3, 1, 1, 103, 1, 1, 129, 255, 255, 255, 255, 255, 255, 255, 255, 1, 0, 0, 0, 0, 0, 0, 0,
            1, 0, 0, 0, 0, 0, 0, 0, 1, 211, 149, 122, 26, 162, 1, 0, 0, 1, 1, 1, 99, 211, 149, 122, 26, 162, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
            0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 10, 0, 195, 193, 234, 74, 120, 171, 240, 48,
        ];
        let body = rdb::open(redis).unwrap();
        let mut r = Reader { buf: body, at: 1 };
        let v = read(&mut r, body[0]).unwrap();
        assert_eq!(r.at, body.len());
        assert_eq!(v.nodes[0].total, 3, "the deleted entry counts in its node");
        assert_eq!(
            v.nodes[0].entries,
            vec![
                (Id::new(1, 1), fields(&[("a", "1"), ("b", "2")])),
                (Id::new(2, 0), fields(&[("c", "5")]))
            ]
        );
        assert_eq!((v.length, v.last, v.first), (2, Id::new(2, 0), Id::new(1, 1)));
        assert_eq!((v.max_deleted, v.added), (Id::new(1, 2), 3));
        let t = 1_795_740_571_091;
        assert_eq!(v.groups[0].name, b"g");
        assert_eq!((v.groups[0].last, v.groups[0].entries_read), (Id::new(1, 1), None));
        assert_eq!(v.groups[0].pel, vec![(Id::new(1, 1), t, 1)]);
        assert_eq!(
            v.groups[0].consumers,
            vec![XConsumer {
                name: b"c".to_vec(),
                seen_ms: t,
                active_ms: t,
                pel: vec![Id::new(1, 1)]
            }]
        );
        let owned = to_owned(v.clone(), 0);
        let m = Meta::decode(&owned.raw).unwrap();
        let s = m.coll().unwrap().stream.unwrap();
        assert_eq!((s.nodes, s.tail_total, s.tail_valid), (1, 3, 2));
        // And back out: the same value, written as Redis would (but for the
        // deleted entry, which is not kept).
        let back = of_owned(&owned).unwrap();
        assert_eq!(back.nodes[0].entries, v.nodes[0].entries);
        assert_eq!(back.groups, v.groups);

        // Type 15 (Redis 5-6): no first ID, deleted ID, added count, nor
        // entries read; the group's counter is estimated.
        let mut items: Vec<&str> = vec!["2", "0", "2", "a", "b", "0"];
        items.extend(["2", "0", "0", "1", "2", "5"]);
        items.extend(["0", "1", "-1", "1", "c", "5", "6"]);
        let refs: Vec<&[u8]> = items.iter().map(|s| s.as_bytes()).collect();
        let mut old = vec![STREAM_LISTPACKS, 1];
        write_string(&mut old, &Id::new(1, 1).bytes());
        write_string(&mut old, &rdbpack::listpack(&refs));
        for x in [2u64, 2, 0, 1] {
            rdb::write_len(&mut old, x);
        }
        write_string(&mut old, b"g");
        for x in [0u64, 0, 0, 0] {
            rdb::write_len(&mut old, x);
        }
        let mut r = Reader { buf: &old, at: 1 };
        let v = read(&mut r, STREAM_LISTPACKS).unwrap();
        assert_eq!(r.at, old.len());
        assert_eq!((v.added, v.max_deleted, v.groups[0].entries_read), (2, Id::MIN, Some(0)));
    }

    #[test]
    fn inconsistent_streams_are_refused() {
        let mut out = Vec::new();
        write(&sample(), &mut out);
        let ok = |b: &[u8]| {
            let mut r = Reader { buf: b, at: 1 };
            read(&mut r, b[0]).filter(|_| r.at == b.len()).is_some()
        };
        assert!(ok(&out));
        for i in 1..out.len() {
            let _ = ok(&out[..i]);
            let mut bad = out.clone();
            bad[i] ^= 0x21;
            let _ = ok(&bad);
        }
        // A wrong length, a last ID below an entry, a PEL ID no consumer
        // owns, a consumer owning an ID the group does not hold.
        let mut v = sample();
        v.length = 5;
        out.clear();
        write(&v, &mut out);
        assert!(!ok(&out));
        let mut v = sample();
        v.last = Id::new(1, 0);
        out.clear();
        write(&v, &mut out);
        assert!(!ok(&out));
        let mut v = sample();
        v.groups[0].consumers[1].pel.clear();
        out.clear();
        write(&v, &mut out);
        assert!(!ok(&out));
        let mut v = sample();
        v.groups[0].consumers[1].pel.push(Id::new(9, 9));
        out.clear();
        write(&v, &mut out);
        assert!(!ok(&out));
    }
}
