//! Intents: the redo log that makes a write spanning shards all-or-nothing
//! across a crash.
//!
//! Every shard writes only its own column family, so a command whose keys
//! live on several shards is several write batches. To make them one on
//! disk, the command first writes an *intent*: one record per part (the
//! writes one shard must make, encoded by the layer above) in the default
//! column family, all in one batch. Each shard then applies its part in a
//! batch that also deletes that part's record. All column families share one
//! WAL, so after a crash either no intent was written (nothing of the
//! command was applied: the client had no reply), or the intent's surviving
//! parts are exactly the parts not applied yet, and replaying them at the
//! next start completes the command. With a database per shard the intent
//! records stay in the first database, and a batch that writes or deletes
//! one is a write over two databases, whole through its redo records
//! (`redo`), so the same holds. A shard may also write a later part in
//! the batch that applies an earlier one (RENAME: the source's delete
//! carries the destination's part).
//!
//! Record: `basalt:intent:` id(8,BE) part(2,BE) -> opaque bytes.

use std::sync::atomic::Ordering;

use super::{Batch, Engine, ShardStore, StorageError};

const PREFIX: &[u8] = b"basalt:intent:";

/// Names one part of one intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentRef {
    pub id: u64,
    pub part: u16,
}

impl IntentRef {
    fn key(self) -> Vec<u8> {
        let mut k = Vec::with_capacity(PREFIX.len() + 10);
        k.extend_from_slice(PREFIX);
        k.extend_from_slice(&self.id.to_be_bytes());
        k.extend_from_slice(&self.part.to_be_bytes());
        k
    }

    fn parse(k: &[u8]) -> Option<IntentRef> {
        let rest = k.strip_prefix(PREFIX)?;
        if rest.len() != 10 {
            return None;
        }
        Some(IntentRef {
            id: u64::from_be_bytes(rest[..8].try_into().ok()?),
            part: u16::from_be_bytes(rest[8..].try_into().ok()?),
        })
    }
}

/// The first key after every intent record.
fn end_of_intents() -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    if let Some(last) = k.last_mut() {
        *last += 1;
    }
    k
}

impl Engine {
    /// A fresh intent id, unique in this process and above every id still
    /// on disk.
    pub fn next_intent_id(&self) -> u64 {
        self.intent_ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Every intent part left on disk (after a crash), in id order.
    pub fn pending_intents(&self) -> Result<Vec<(IntentRef, Vec<u8>)>, StorageError> {
        let mut out = Vec::new();
        let mut it = self.main().raw_iterator();
        it.seek(PREFIX);
        let end = end_of_intents();
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
            if k >= end.as_slice() {
                break;
            }
            if let Some(r) = IntentRef::parse(k) {
                out.push((r, v.to_vec()));
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Deletes one intent part (after its replay).
    pub fn drop_intent(&self, r: IntentRef) -> Result<(), StorageError> {
        Ok(self.main().delete(r.key())?)
    }

    /// The largest intent id on disk, plus one (1 when none).
    pub(super) fn first_free_intent_id(db: &rocksdb::DB) -> u64 {
        let mut it = db.raw_iterator();
        it.seek_for_prev(end_of_intents());
        match it.key().and_then(IntentRef::parse) {
            Some(r) => r.id + 1,
            None => 1,
        }
    }
}

/// What a batch that applies one part also carries.
#[derive(Debug, Clone, Copy)]
pub enum Rider<'a> {
    /// Nothing (a write within one shard).
    None,
    /// The delete of the part it applies.
    Done(IntentRef),
    /// The intent parts of the other shards (the first part of a write is
    /// applied in the batch that writes the intent).
    Carry(&'a [(IntentRef, Vec<u8>)]),
}

impl ShardStore {
    /// Adds what `rider` carries to `b`.
    pub fn stage_rider(&self, b: &mut Batch, rider: Rider<'_>) {
        match rider {
            Rider::None => {}
            Rider::Done(r) => self.stage_intent_done(b, r),
            Rider::Carry(parts) => {
                for (r, body) in parts {
                    self.stage_intent(b, *r, body);
                }
            }
        }
    }

    /// Adds intent part `r` with `body` to `b`.
    pub fn stage_intent(&self, b: &mut Batch, r: IntentRef, body: &[u8]) {
        self.intent_batch(b).put(&r.key(), body);
    }

    /// Adds the delete of intent part `r` to `b`: the batch that applies a
    /// part carries it.
    pub fn stage_intent_done(&self, b: &mut Batch, r: IntentRef) {
        self.intent_batch(b).delete(&r.key());
    }

    /// Where `b`'s intent records go: its own batch, or with a database
    /// per shard the part for the first database (where every intent
    /// lives), which [`ShardStore::write`] writes with the rest through a
    /// redo record (`redo`).
    fn intent_batch<'b>(&self, b: &'b mut Batch) -> &'b mut super::rep::Rep {
        if self.home_index == 0 {
            &mut b.wb
        } else {
            b.main.get_or_insert_with(Default::default)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_by_id_then_part() {
        let a = IntentRef { id: 7, part: 1 };
        let b = IntentRef { id: 7, part: 2 };
        let c = IntentRef { id: 8, part: 0 };
        assert_eq!(IntentRef::parse(&a.key()), Some(a));
        assert!(a.key() < b.key() && b.key() < c.key());
        assert!(c.key() < end_of_intents());
        assert!(IntentRef::parse(b"basalt:shards").is_none());
        assert!(IntentRef::parse(b"basalt:intent:short").is_none());
    }
}
