//! Redis's RDB value encodings of lists, sets, hashes and sorted sets (and,
//! through `types::rdbstream`, streams), for DUMP and RESTORE
//! (docs/encoding.md, "DUMP payload"), written from Redis's RDB format
//! descriptions.
//!
//! DUMP writes what every Redis 7.x reads (RDB version 10): a list as a
//! quicklist of listpacks (type 18), a set as a plain set (2), a hash as a
//! plain hash (4), a sorted set with binary scores (5); redis-server picks
//! its own compact encodings when it loads them. A hash with field TTLs
//! needs Redis 7.4's hash with metadata (24, RDB version 12). RESTORE
//! reads every encoding Redis 2.x-8.x writes for these types: plain, the
//! ziplists, zipmaps, intsets and listpacks, quicklists of either.

use std::collections::HashSet;

use crate::storage::meta::{Coll, Hfe, KeyType, Meta};
use crate::types::coll::Owned;
use crate::types::rdb::{self, Reader};
use crate::types::rdbpack;
use crate::types::rdbstream::{self, StreamValue};
use crate::types::zset::{sort_key, Scored, MEMBER};
use crate::types::{hash, lchunk, list, zwrite};

// RDB value types (Redis's rdb.h numbers).
const LIST: u8 = 1;
const SET: u8 = 2;
const ZSET: u8 = 3;
const HASH: u8 = 4;
const ZSET_2: u8 = 5;
const HASH_ZIPMAP: u8 = 9;
const LIST_ZIPLIST: u8 = 10;
const SET_INTSET: u8 = 11;
const ZSET_ZIPLIST: u8 = 12;
const HASH_ZIPLIST: u8 = 13;
const LIST_QUICKLIST: u8 = 14;
const HASH_LISTPACK: u8 = 16;
const ZSET_LISTPACK: u8 = 17;
const LIST_QUICKLIST_2: u8 = 18;
const SET_LISTPACK: u8 = 20;
const HASH_METADATA_PRE_GA: u8 = 22;
const HASH_LISTPACK_EX_PRE_GA: u8 = 23;
const HASH_METADATA: u8 = 24;
const HASH_LISTPACK_EX: u8 = 25;

/// The RDB version of a hash with field TTLs (Redis 7.4).
const RDB_VERSION_HFE: u16 = 12;

/// A listpack node of a dumped list holds at most this many elements or
/// bytes (Redis's `list-max-listpack-size -2`: 8 KiB).
const NODE_ITEMS: usize = 128;
const NODE_BYTES: usize = 8 * 1024;

/// A value in Redis's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    /// Field, value, expire time (Unix ms, 0: none).
    Hash(Vec<(Vec<u8>, Vec<u8>, u64)>),
    ZSet(Vec<Scored>),
    Stream(Box<StreamValue>),
}

/// The value of a stored list, set, hash, sorted set or stream (a hash's
/// fields expired at `now` left out); None for strings, or records that do
/// not decode.
pub fn of_owned(v: &Owned, now: u64) -> Option<Value> {
    let m = Meta::decode(&v.raw)?;
    if m.ty == KeyType::Stream {
        return rdbstream::of_owned(v).map(|s| Value::Stream(Box::new(s)));
    }
    let c = m.coll()?;
    let mut members: Vec<&(Vec<u8>, Vec<u8>)> = v.members.iter().collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    Some(match m.ty {
        KeyType::List => Value::List(lchunk::elements(&c, &members)?),
        KeyType::Set => Value::Set(members.iter().map(|(k, _)| k.clone()).collect()),
        KeyType::Hash => {
            let mut out = Vec::with_capacity(members.len());
            for (f, raw) in members {
                let (ttl, val) = hash::decode_value(c.hfe.is_some(), raw)?;
                if !hash::expired(ttl, now) {
                    out.push((f.clone(), val.to_vec(), ttl));
                }
            }
            Value::Hash(out)
        }
        KeyType::ZSet => Value::ZSet(
            members
                .iter()
                .filter(|(k, _)| k.first() == Some(&MEMBER))
                .map(|(k, s)| {
                    Some((
                        k[1..].to_vec(),
                        f64::from_bits(u64::from_be_bytes(<[u8; 8]>::try_from(&s[..]).ok()?)),
                    ))
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    rdb::write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A DUMP payload of `v`: type, value, RDB version, CRC-64.
pub fn dump(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let mut version = rdb::RDB_VERSION;
    match v {
        Value::List(items) => {
            out.push(LIST_QUICKLIST_2);
            let mut nodes: Vec<&[Vec<u8>]> = Vec::new();
            let mut start = 0;
            let mut bytes = 0;
            for (i, it) in items.iter().enumerate() {
                if i > start && (i - start >= NODE_ITEMS || bytes + it.len() > NODE_BYTES) {
                    nodes.push(&items[start..i]);
                    start = i;
                    bytes = 0;
                }
                bytes += it.len() + 2;
            }
            if start < items.len() {
                nodes.push(&items[start..]);
            }
            rdb::write_len(&mut out, nodes.len() as u64);
            for node in nodes {
                // Container 2: a packed node (a listpack).
                rdb::write_len(&mut out, 2);
                let refs: Vec<&[u8]> = node.iter().map(Vec::as_slice).collect();
                write_string(&mut out, &rdbpack::listpack(&refs));
            }
        }
        Value::Set(items) => {
            out.push(SET);
            rdb::write_len(&mut out, items.len() as u64);
            for it in items {
                write_string(&mut out, it);
            }
        }
        Value::Hash(fields) if fields.iter().all(|f| f.2 == 0) => {
            out.push(HASH);
            rdb::write_len(&mut out, fields.len() as u64);
            for (f, val, _) in fields {
                write_string(&mut out, f);
                write_string(&mut out, val);
            }
        }
        Value::Hash(fields) => {
            // Redis 7.4: the lowest TTL, then each field's TTL relative to
            // it plus one (0: none), the field, the value.
            version = RDB_VERSION_HFE;
            out.push(HASH_METADATA);
            let min = fields.iter().filter(|f| f.2 != 0).map(|f| f.2).min().unwrap_or(0);
            out.extend_from_slice(&min.to_le_bytes());
            rdb::write_len(&mut out, fields.len() as u64);
            for (f, val, ttl) in fields {
                rdb::write_len(&mut out, if *ttl == 0 { 0 } else { ttl - min + 1 });
                write_string(&mut out, f);
                write_string(&mut out, val);
            }
        }
        Value::ZSet(items) => {
            out.push(ZSET_2);
            rdb::write_len(&mut out, items.len() as u64);
            for (m, s) in items {
                write_string(&mut out, m);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
        Value::Stream(s) => version = rdbstream::write(s, &mut out),
    }
    out.extend_from_slice(&version.to_le_bytes());
    let crc = rdb::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn strings(r: &mut Reader<'_>, n: usize) -> Option<Vec<Vec<u8>>> {
    (0..n).map(|_| r.string()).collect()
}

/// A score of Redis's old text form: a length byte (253 NaN, 254 +inf,
/// 255 -inf) and the digits.
fn text_score(r: &mut Reader<'_>) -> Option<f64> {
    match r.byte()? {
        253 => None,
        254 => Some(f64::INFINITY),
        255 => Some(f64::NEG_INFINITY),
        n => score_of(r.take(n as usize)?),
    }
}

/// A score from its text (a listpack or ziplist entry); NaN is refused.
fn score_of(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?;
    let v: f64 = match t {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => t.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

fn pairs(items: Vec<Vec<u8>>) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    if !items.len().is_multiple_of(2) {
        return None;
    }
    let mut it = items.into_iter();
    let mut out = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Some(out)
}

/// The value of a Redis payload body of a list, set, hash, sorted set or
/// stream type; None when it is malformed ("Bad data format").
pub fn read(body: &[u8]) -> Option<Value> {
    let mut r = Reader { buf: body, at: 0 };
    let ty = r.byte()?;
    let v = match ty {
        LIST | SET => {
            let n = r.count()?;
            let items = strings(&mut r, n)?;
            if ty == LIST {
                Value::List(items)
            } else {
                Value::Set(items)
            }
        }
        ZSET | ZSET_2 => {
            let n = r.count()?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if ty == ZSET {
                    text_score(&mut r)?
                } else {
                    f64::from_le_bytes(r.take(8)?.try_into().ok()?)
                };
                if s.is_nan() {
                    return None;
                }
                items.push((m, s));
            }
            Value::ZSet(items)
        }
        HASH => {
            let n = r.count()?;
            let mut fields = Vec::with_capacity(n);
            for _ in 0..n {
                fields.push((r.string()?, r.string()?, 0));
            }
            Value::Hash(fields)
        }
        HASH_METADATA | HASH_METADATA_PRE_GA => {
            let min = if ty == HASH_METADATA {
                u64::from_le_bytes(r.take(8)?.try_into().ok()?)
            } else {
                0
            };
            let n = r.count()?;
            let mut fields = Vec::with_capacity(n);
            for _ in 0..n {
                let ttl = r.len()?.ok()?;
                let at = match (ty, ttl) {
                    (_, 0) => 0,
                    (HASH_METADATA, t) => t.checked_add(min)? - 1,
                    (_, t) => t,
                };
                fields.push((r.string()?, r.string()?, at));
            }
            Value::Hash(fields)
        }
        LIST_QUICKLIST | LIST_QUICKLIST_2 => {
            let n = r.count()?;
            let mut items = Vec::new();
            for _ in 0..n {
                let container = if ty == LIST_QUICKLIST_2 { r.len()?.ok()? } else { 2 };
                let blob = r.string()?;
                match (ty, container) {
                    (LIST_QUICKLIST_2, 1) if !blob.is_empty() => items.push(blob),
                    (LIST_QUICKLIST_2, 2) => items.extend(rdbpack::read_listpack(&blob)?),
                    (LIST_QUICKLIST, _) => items.extend(rdbpack::read_ziplist(&blob)?),
                    _ => return None,
                }
            }
            Value::List(items)
        }
        HASH_LISTPACK_EX | HASH_LISTPACK_EX_PRE_GA => {
            if ty == HASH_LISTPACK_EX {
                r.take(8)?;
            }
            let items = rdbpack::read_listpack(&r.string()?)?;
            if !items.len().is_multiple_of(3) {
                return None;
            }
            let mut fields = Vec::new();
            for t in items.chunks(3) {
                let ttl = crate::resp::parse::string2ll(&t[2]).filter(|v| *v >= 0)? as u64;
                fields.push((t[0].clone(), t[1].clone(), ttl));
            }
            Value::Hash(fields)
        }
        HASH_ZIPMAP | LIST_ZIPLIST | SET_INTSET | ZSET_ZIPLIST | HASH_ZIPLIST | HASH_LISTPACK | ZSET_LISTPACK | SET_LISTPACK => {
            let blob = r.string()?;
            match ty {
                HASH_ZIPMAP => Value::Hash(rdbpack::read_zipmap(&blob)?.into_iter().map(|(f, v)| (f, v, 0)).collect()),
                LIST_ZIPLIST => Value::List(rdbpack::read_ziplist(&blob)?),
                SET_INTSET => Value::Set(rdbpack::read_intset(&blob)?.iter().map(|v| v.to_string().into_bytes()).collect()),
                SET_LISTPACK => Value::Set(rdbpack::read_listpack(&blob)?),
                HASH_ZIPLIST | HASH_LISTPACK => {
                    let items = if ty == HASH_ZIPLIST {
                        rdbpack::read_ziplist(&blob)?
                    } else {
                        rdbpack::read_listpack(&blob)?
                    };
                    Value::Hash(pairs(items)?.into_iter().map(|(f, v)| (f, v, 0)).collect())
                }
                _ => {
                    let items = if ty == ZSET_ZIPLIST {
                        rdbpack::read_ziplist(&blob)?
                    } else {
                        rdbpack::read_listpack(&blob)?
                    };
                    let scored = pairs(items)?
                        .into_iter()
                        .map(|(m, s)| Some((m, score_of(&s)?)))
                        .collect::<Option<_>>()?;
                    Value::ZSet(scored)
                }
            }
        }
        rdbstream::STREAM_LISTPACKS | rdbstream::STREAM_LISTPACKS_2 | rdbstream::STREAM_LISTPACKS_3 => {
            Value::Stream(Box::new(rdbstream::read(&mut r, ty)?))
        }
        _ => return None,
    };
    (r.at == body.len()).then_some(v)
}

/// The stored form of `v` expiring at `expire_ms`: None when Redis would
/// refuse it (empty, duplicate members or fields; an empty stream is
/// kept), or when every field of a hash has expired by `now`.
pub fn to_owned(v: Value, expire_ms: u64, now: u64) -> Option<Owned> {
    let mut c = Coll {
        version: 0,
        size: 0,
        hfe: None,
        list_head: None,
        zblocks: false,
        chunk_shift: 0,
        stream: None,
    };
    let (ty, members) = match v {
        Value::List(items) => {
            c.list_head = Some(list::MID);
            c.chunk_shift = lchunk::SHIFT;
            c.size = items.len() as u64;
            (KeyType::List, lchunk::records_of(list::MID, lchunk::SHIFT, items))
        }
        Value::Set(items) => {
            let mut seen = HashSet::with_capacity(items.len());
            if !items.iter().all(|m| seen.insert(m.as_slice())) {
                return None;
            }
            drop(seen);
            (KeyType::Set, items.into_iter().map(|m| (m, Vec::new())).collect())
        }
        Value::Hash(fields) => {
            let mut seen = HashSet::with_capacity(fields.len());
            if !fields.iter().all(|f| seen.insert(f.0.as_slice())) {
                return None;
            }
            drop(seen);
            let mut h = Hfe::default();
            let mut members = Vec::with_capacity(fields.len());
            for (f, val, ttl) in fields {
                if hash::expired(ttl, now) {
                    continue;
                }
                if ttl == 0 {
                    h.persist += 1;
                } else {
                    hash::widen_bounds(&mut h.lower, &mut h.upper, ttl);
                }
                members.push((f, hash::encode_value(true, ttl, &val)));
            }
            c.hfe = Some(h);
            (KeyType::Hash, members)
        }
        Value::Stream(s) => return Some(rdbstream::to_owned(*s, expire_ms)),
        Value::ZSet(mut items) => {
            // -0 is stored as 0 (ZADD does the same).
            for it in items.iter_mut() {
                if it.1 == 0.0 {
                    it.1 = 0.0;
                }
            }
            items.sort_by(|a, b| (sort_key(a.1), &a.0).cmp(&(sort_key(b.1), &b.0)));
            let mut seen = HashSet::with_capacity(items.len());
            if !items.iter().all(|m| seen.insert(m.0.as_slice())) {
                return None;
            }
            drop(seen);
            c.zblocks = true;
            let mut members = Vec::with_capacity(items.len() * 2 + 1);
            zwrite::records(0, &items, |sub, val| members.push((sub.to_vec(), val.to_vec())));
            c.size = items.len() as u64;
            (KeyType::ZSet, members)
        }
    };
    if ty != KeyType::ZSet && ty != KeyType::List {
        c.size = members.len() as u64;
    }
    if c.size == 0 {
        return None;
    }
    Some(Owned {
        raw: c.encode(ty, expire_ms),
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: Value) {
        let p = dump(&v);
        let body = rdb::open(&p).unwrap();
        assert_eq!(read(body).unwrap(), v);
        let owned = to_owned(v.clone(), 0, 1).unwrap();
        let back = of_owned(&owned, 1).unwrap();
        match (&v, back) {
            // A set's members and a hash's fields come back in byte order;
            // a sorted set's in its order.
            (Value::Set(a), Value::Set(mut b)) => {
                let mut a = a.clone();
                a.sort();
                b.sort();
                assert_eq!(a, b);
            }
            (Value::Hash(a), Value::Hash(b)) => {
                let mut a = a.clone();
                a.sort();
                assert_eq!(a, b);
            }
            (Value::ZSet(a), Value::ZSet(b)) => {
                let mut a = a.clone();
                a.sort_by(|x, y| x.0.cmp(&y.0));
                assert_eq!(a, b);
            }
            (a, b) => assert_eq!(*a, b),
        }
    }

    #[test]
    fn every_type_round_trips() {
        let many: Vec<Vec<u8>> = (0..1000).map(|i| format!("element-{i}").into_bytes()).collect();
        round_trip(Value::List(vec![
            b"a".to_vec(),
            b"1".to_vec(),
            b"-5000".to_vec(),
            vec![b'z'; 20000],
        ]));
        round_trip(Value::List(many.clone()));
        round_trip(Value::Set(many.clone()));
        round_trip(Value::Set(vec![b"1".to_vec(), b"2".to_vec(), b"x".to_vec()]));
        round_trip(Value::Hash(vec![
            (b"f".to_vec(), b"v".to_vec(), 0),
            (b"g".to_vec(), b"".to_vec(), 0),
        ]));
        round_trip(Value::Hash(vec![
            (b"f".to_vec(), b"v".to_vec(), 5000),
            (b"g".to_vec(), b"w".to_vec(), 0),
            (b"h".to_vec(), b"x".to_vec(), 9000),
        ]));
        round_trip(Value::ZSet(vec![
            (b"a".to_vec(), 1.5),
            (b"b".to_vec(), f64::NEG_INFINITY),
            (b"c".to_vec(), -0.25),
        ]));
        let big: Vec<Scored> = (0..500).map(|i| (format!("m{i}").into_bytes(), (i % 7) as f64)).collect();
        round_trip(Value::ZSet(big));
    }

    #[test]
    fn a_list_dumps_as_redis_dumps_it() {
        // DUMP of RPUSH l a 1 1000 -1 hello on redis-server 7.0.15.
        let redis = [
            18u8, 1, 2, 25, 25, 0, 0, 0, 5, 0, 129, 97, 2, 1, 1, 195, 232, 2, 223, 255, 2, 133, 104, 101, 108, 108, 111, 6, 255, 10, 0,
            205, 38, 226, 226, 53, 244, 76, 32,
        ];
        let items: Vec<Vec<u8>> = ["a", "1", "1000", "-1", "hello"].iter().map(|s| s.as_bytes().to_vec()).collect();
        assert_eq!(dump(&Value::List(items.clone())), redis);
        assert_eq!(read(rdb::open(&redis).unwrap()), Some(Value::List(items)));
    }

    #[test]
    fn what_redis_refuses_is_refused() {
        // Duplicates and empty values.
        assert!(to_owned(Value::Set(vec![b"a".to_vec(), b"a".to_vec()]), 0, 1).is_none());
        assert!(to_owned(Value::Set(Vec::new()), 0, 1).is_none());
        assert!(to_owned(Value::ZSet(vec![(b"a".to_vec(), 1.0), (b"a".to_vec(), 2.0)]), 0, 1).is_none());
        assert!(
            to_owned(Value::Hash(vec![(b"f".to_vec(), b"v".to_vec(), 1)]), 0, 5).is_none(),
            "all fields expired"
        );
        // A NaN score.
        let mut p = vec![ZSET_2, 1, 1, b'a'];
        p.extend_from_slice(&f64::NAN.to_le_bytes());
        assert!(read(&p).is_none());
        // Trailing bytes, cuts and flips never panic.
        let good = dump(&Value::List((0..300).map(|i| i.to_string().into_bytes()).collect()));
        let body = rdb::open(&good).unwrap().to_vec();
        let mut extra = body.clone();
        extra.push(0);
        assert!(read(&extra).is_none());
        for i in 0..body.len() {
            let _ = read(&body[..i]);
            let mut bad = body.clone();
            bad[i] ^= 0x5a;
            let _ = read(&bad);
        }
        // A hostile count allocates nothing.
        assert!(read(&[SET, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_none());
    }
}
