//! What a cross-shard write leaves in its intent records, and the replay of
//! the parts a crash left unapplied (see `storage::intent` for the
//! protocol, docs/cross-shard.md for what it guarantees).
//!
//! Each part is one [`Op`]: the writes one shard makes. Applying an op is
//! idempotent in its effect (the key ends with the same value), so a replay
//! cut short by another crash is simply run again.

use bytes::Bytes;

use crate::error::{CmdResult, WRONGTYPE};
use crate::slot::owner;
use crate::storage::intent::{IntentRef, Rider};
use crate::storage::meta::KeyType;
use crate::storage::Engine;
use crate::types::coll::{Owned, Writer};
use crate::types::keyspace::Keyspace;
use crate::types::list::{self, End};
use crate::types::multi as k;

/// One shard's share of a cross-shard write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// MSET's pairs on one shard.
    Mset { db: u8, pairs: Vec<(Bytes, Bytes)> },
    /// RENAME's destination: the value, replacing whatever is there.
    Place { db: u8, key: Vec<u8>, value: Owned },
    /// RENAME's destination for a collection moved in slices
    /// (`bigmove`): its members are there already under the version `raw`
    /// names; this meta value makes them the key, replacing what is there.
    PlaceMoved { db: u8, key: Vec<u8>, raw: Vec<u8> },
    /// SMOVE's destination: add `member` to the set `key`; if `key` is not a
    /// set by then, the member goes back to `back` (the source).
    Sadd {
        db: u8,
        key: Vec<u8>,
        member: Vec<u8>,
        back: Option<Vec<u8>>,
    },
    /// LMOVE's destination across shards: push `element` at `end` of the
    /// list `key`; if `key` is not a list by then, the element goes back to
    /// `back` (the source, at the end it came from).
    Push {
        db: u8,
        key: Vec<u8>,
        element: Vec<u8>,
        end: End,
        back: Option<(Vec<u8>, End)>,
    },
}

const MSET: u8 = 1;
const PLACE: u8 = 2;
const SADD: u8 = 3;
const PUSH: u8 = 4;
const PLACE_MOVED: u8 = 5;

fn end_byte(e: End) -> u8 {
    (e == End::Right) as u8
}

fn end_of(b: u8) -> Option<End> {
    match b {
        0 => Some(End::Left),
        1 => Some(End::Right),
        _ => None,
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_be_bytes());
    out.extend_from_slice(b);
}

/// Reads the stored bytes back; every length is checked (the bytes come
/// from disk).
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(a)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }

    /// A count of items each at least `min` bytes long: refuses counts the
    /// remaining bytes cannot hold (no huge allocation from a bad record).
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(min)? <= self.0.len()).then_some(n)
    }
}

impl Op {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Op::Mset { db, pairs } => {
                out.extend_from_slice(&[MSET, *db]);
                out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
                for (key, v) in pairs {
                    put_bytes(&mut out, key);
                    put_bytes(&mut out, v);
                }
            }
            Op::Place { db, key, value } => {
                out.extend_from_slice(&[PLACE, *db]);
                put_bytes(&mut out, key);
                put_bytes(&mut out, &value.raw);
                out.extend_from_slice(&(value.members.len() as u64).to_be_bytes());
                for (m, v) in &value.members {
                    put_bytes(&mut out, m);
                    put_bytes(&mut out, v);
                }
            }
            Op::PlaceMoved { db, key, raw } => {
                out.extend_from_slice(&[PLACE_MOVED, *db]);
                put_bytes(&mut out, key);
                put_bytes(&mut out, raw);
            }
            Op::Sadd { db, key, member, back } => {
                out.extend_from_slice(&[SADD, *db]);
                put_bytes(&mut out, key);
                put_bytes(&mut out, member);
                match back {
                    Some(b) => {
                        out.push(1);
                        put_bytes(&mut out, b);
                    }
                    None => out.push(0),
                }
            }
            Op::Push {
                db,
                key,
                element,
                end,
                back,
            } => {
                out.extend_from_slice(&[PUSH, *db]);
                put_bytes(&mut out, key);
                put_bytes(&mut out, element);
                out.push(end_byte(*end));
                match back {
                    Some((b, e)) => {
                        out.extend_from_slice(&[1, end_byte(*e)]);
                        put_bytes(&mut out, b);
                    }
                    None => out.push(0),
                }
            }
        }
        out
    }

    pub fn decode(raw: &[u8]) -> Option<Op> {
        let mut r = Reader(raw);
        let (tag, db) = (r.u8()?, r.u8()?);
        let op = match tag {
            MSET => {
                let n = r.count(16)?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    let key = Bytes::copy_from_slice(r.bytes()?);
                    pairs.push((key, Bytes::copy_from_slice(r.bytes()?)));
                }
                Op::Mset { db, pairs }
            }
            PLACE => {
                let key = r.bytes()?.to_vec();
                let raw = r.bytes()?.to_vec();
                let n = r.count(16)?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let m = r.bytes()?.to_vec();
                    members.push((m, r.bytes()?.to_vec()));
                }
                Op::Place {
                    db,
                    key,
                    value: Owned { raw, members },
                }
            }
            PLACE_MOVED => {
                let key = r.bytes()?.to_vec();
                let raw = r.bytes()?.to_vec();
                Op::PlaceMoved { db, key, raw }
            }
            SADD => {
                let key = r.bytes()?.to_vec();
                let member = r.bytes()?.to_vec();
                let back = match r.u8()? {
                    0 => None,
                    1 => Some(r.bytes()?.to_vec()),
                    _ => return None,
                };
                Op::Sadd { db, key, member, back }
            }
            PUSH => {
                let key = r.bytes()?.to_vec();
                let element = r.bytes()?.to_vec();
                let end = end_of(r.u8()?)?;
                let back = match r.u8()? {
                    0 => None,
                    1 => {
                        let e = end_of(r.u8()?)?;
                        Some((r.bytes()?.to_vec(), e))
                    }
                    _ => return None,
                };
                Op::Push {
                    db,
                    key,
                    element,
                    end,
                    back,
                }
            }
            _ => return None,
        };
        r.0.is_empty().then_some(op)
    }
}

/// SADD of one member, in a batch that deletes intent part `done` when
/// given (and holds whatever `b` already staged). WRONGTYPE (nothing
/// written) when `key` is not a set.
/// A move's destination refused its part (it stopped being the right type
/// since the check): in one batch, deletes part `part` and records part 1
/// of the same intent, `back` (putting the item back in the source).
/// Returns part 1, for the source's owner to apply.
pub fn hand_back(ks: &Keyspace, part: IntentRef, back: &Op) -> CmdResult<IntentRef> {
    let r = IntentRef { id: part.id, part: 1 };
    let mut b = ks.store.batch();
    ks.store.stage_intent_done(&mut b, part);
    ks.store.stage_intent(&mut b, r, &back.encode());
    ks.store.write(b)?;
    Ok(r)
}

pub fn add_member(ks: &Keyspace, db: u8, key: &[u8], member: &[u8], now: u64, done: Option<IntentRef>) -> CmdResult {
    let mut to = Writer::upsert(ks, db, key, KeyType::Set, now)?;
    if let Some(r) = done {
        to.intent_done(r);
    }
    let added = !to.exists(member)?;
    if added {
        to.put(member, 0, b"")?;
    }
    to.commit_with(crate::types::notify::class::SET, if added { &["sadd"] } else { &[] })?;
    Ok(())
}

/// Completes the parts of cross-shard writes a crash left unapplied, before
/// any shard serves a client. Each shard's keyspace is opened here just for
/// this (and only when there is something to replay); the shards open their
/// own afterwards and count keys from what is then on disk. Returns how many
/// parts were replayed.
pub fn replay(engine: &'static Engine, shards: usize, databases: usize, now: u64) -> Result<usize, String> {
    let pending = engine.pending_intents().map_err(|e| e.0)?;
    if pending.is_empty() {
        return Ok(0);
    }
    let spaces = (0..shards)
        .map(|i| {
            let store = engine.shard(i).map_err(|e| e.0)?;
            crate::types::open(store, databases).map_err(|e| e.0.to_string())
        })
        .collect::<Result<Vec<Keyspace>, String>>()?;
    let ks_of = |key: &[u8]| &spaces[owner(key, shards)];
    let mut n = 0;
    for (r, body) in pending {
        match Op::decode(&body) {
            None => tracing::error!(id = r.id, part = r.part, "unreadable intent record dropped"),
            Some(op) => {
                if let Err(e) = apply_replayed(&op, r, now, &ks_of) {
                    tracing::error!(id = r.id, part = r.part, error = %e.0, "intent replay failed; dropped");
                }
            }
        }
        engine.drop_intent(r).map_err(|e| e.0)?;
        n += 1;
    }
    // These stores are this function's own: what their write tiers hold
    // (what they replayed, and what the log's replay loaded into them)
    // goes to RocksDB before they are dropped, else only the log would
    // have it until the next start.
    for ks in &spaces {
        ks.store.write_back().map_err(|e| e.0)?;
    }
    tracing::info!(parts = n, "completed cross-shard writes interrupted by the last stop");
    Ok(n)
}

fn apply_replayed<'a>(op: &Op, r: IntentRef, now: u64, ks_of: &dyn Fn(&[u8]) -> &'a Keyspace) -> CmdResult {
    match op {
        Op::Mset { db, pairs } => {
            // The shard count may have changed since: each pair to its owner.
            for (key, v) in pairs {
                k::mset_pairs(ks_of(key), *db, &[(key.clone(), v.clone())], now, false, Rider::None)?;
            }
        }
        Op::Place { db, key, value } => {
            k::put_value(ks_of(key), *db, key, value, now, true, None)?;
        }
        // The members went to the owner at the time; a shard-count change
        // since moved them with the meta's slot, so the owner has them.
        Op::PlaceMoved { db, key, raw } => {
            k::place_moved(ks_of(key), *db, key, raw, now, None)?;
        }
        Op::Sadd { db, key, member, back } => match (add_member(ks_of(key), *db, key, member, now, None), back) {
            (Err(e), Some(src)) if e == WRONGTYPE => add_member(ks_of(src), *db, src, member, now, None)?,
            (other, _) => other?,
        },
        // A push is not idempotent: it deletes its part in the same batch,
        // so a replay cut short never pushes twice.
        Op::Push {
            db,
            key,
            element,
            end,
            back,
        } => match (list::push_one(ks_of(key), *db, key, *end, element, now, Some(r)), back) {
            (Err(e), Some((src, from))) if e == WRONGTYPE => list::push_one(ks_of(src), *db, src, *from, element, now, Some(r))?,
            (other, _) => other?,
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_bad_bytes_are_refused() {
        let ops = [
            Op::Mset {
                db: 3,
                pairs: vec![(Bytes::from_static(b"a"), Bytes::from_static(b"1")), (Bytes::new(), Bytes::new())],
            },
            Op::Place {
                db: 0,
                key: b"dst".to_vec(),
                value: Owned {
                    raw: vec![1, 2, 3],
                    members: vec![(b"m".to_vec(), b"v".to_vec())],
                },
            },
            Op::PlaceMoved {
                db: 2,
                key: b"dst".to_vec(),
                raw: vec![1, 2, 3, 4],
            },
            Op::Sadd {
                db: 9,
                key: b"s".to_vec(),
                member: b"x".to_vec(),
                back: Some(b"src".to_vec()),
            },
            Op::Push {
                db: 1,
                key: b"l".to_vec(),
                element: b"e".to_vec(),
                end: End::Right,
                back: Some((b"src".to_vec(), End::Left)),
            },
            Op::Push {
                db: 1,
                key: b"l".to_vec(),
                element: vec![],
                end: End::Left,
                back: None,
            },
            Op::Sadd {
                db: 9,
                key: b"s".to_vec(),
                member: vec![],
                back: None,
            },
        ];
        for op in &ops {
            let raw = op.encode();
            assert_eq!(Op::decode(&raw).as_ref(), Some(op));
            for cut in 0..raw.len() {
                assert_eq!(Op::decode(&raw[..cut]), None, "{op:?} cut at {cut}");
            }
            let mut longer = raw.clone();
            longer.push(0);
            assert_eq!(Op::decode(&longer), None);
        }
        // A count no record could hold is refused before allocating.
        let mut huge = vec![MSET, 0];
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(Op::decode(&huge), None);
        assert_eq!(Op::decode(&[42, 0]), None);
    }
}
