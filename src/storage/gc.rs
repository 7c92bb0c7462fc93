//! The compaction filter: garbage goes in compaction (design.md).
//!
//! A member record (`db 'S' slot keylen key version member`) is dropped
//! when compaction meets it and
//! - its collection's meta record names a newer version (the collection
//!   was deleted or overwritten and recreated), or
//! - no meta record (or a string) is there and the member's version is more
//!   than [`GRACE_MS`] old, or
//! - it is a hash field whose 8-byte expire prefix is due. Its hash's
//!   metadata is left alone: it becomes a "TTL ghost", which the seed 002
//!   metadata rules allow for and the next repair counts away.
//!
//! A member whose version is newer than its meta's is kept: SINTERSTORE and
//! friends write a result's members before the meta record that names them.
//! Meta records and index entries are never filtered.
//!
//! The filter runs on the member families (`shard-<i>-sub`) and reads meta
//! records from the same shard's meta family (`shard-<i>`), so it
//! needs the open database: [`Engine::enable_gc`](super::Engine::enable_gc)
//! hands it over once the engine is `'static`; until then the filter keeps
//! everything.
//!
//! RocksDB does not protect snapshots from compaction filters: a sliced read
//! (HGETALL from a snapshot) of a collection deleted meanwhile can lose
//! members that compaction dropped in between.

use std::ffi::{CStr, CString};
use std::sync::{Arc, OnceLock};

use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use rocksdb::{ColumnFamily, DB};

use super::keys::{TAG_META, TAG_SUB};
use super::meta::{KeyType, Meta};

/// How old (by its version's clock) a member with no collection to belong
/// to must be before it is garbage.
pub const GRACE_MS: u64 = 10 * 60 * 1000;

/// The database and the column family a filter reads meta records from.
pub type Target = (&'static DB, &'static ColumnFamily);

/// Filled once the engine is `'static`; shared by the factory of one column family.
pub type Slot = Arc<OnceLock<Target>>;

pub struct GcFactory {
    pub slot: Slot,
    name: CString,
}

impl GcFactory {
    pub fn new(slot: Slot) -> GcFactory {
        GcFactory {
            slot,
            name: CString::from(c"basalt-gc"),
        }
    }
}

impl CompactionFilterFactory for GcFactory {
    type Filter = GcFilter;

    fn create(&mut self, _: CompactionFilterContext) -> GcFilter {
        GcFilter {
            target: self.slot.get().copied(),
            now_ms: now_ms(),
            last: None,
            name: self.name.clone(),
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What the filter learned of one collection's meta record.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    /// No meta record, or a string: members of any version are orphans.
    None,
    Coll {
        version: u64,
        hfe: bool,
    },
}

pub struct GcFilter {
    target: Option<Target>,
    now_ms: u64,
    /// The last meta key looked up and what it said: members of one
    /// collection come one after another.
    last: Option<(Vec<u8>, Owner)>,
    name: CString,
}

/// Splits a member key into (meta key, version); None for other records.
fn split_member(k: &[u8]) -> Option<(Vec<u8>, u64)> {
    if k.len() < 16 || k[1] != TAG_SUB {
        return None;
    }
    let kl = u32::from_be_bytes(k[4..8].try_into().ok()?) as usize;
    let key = k.get(8..8 + kl)?;
    let version = u64::from_be_bytes(k.get(8 + kl..16 + kl)?.try_into().ok()?);
    let mut mk = Vec::with_capacity(4 + kl);
    mk.extend_from_slice(&[k[0], TAG_META, k[2], k[3]]);
    mk.extend_from_slice(key);
    Some((mk, version))
}

/// The decision for member `(version, value)` of a collection `owner`.
fn decide(owner: Owner, version: u64, value: &[u8], now_ms: u64) -> Decision {
    match owner {
        Owner::Coll { version: v, .. } if version > v => Decision::Keep,
        Owner::Coll { version: v, .. } if version < v => Decision::Remove,
        Owner::Coll { hfe: true, .. } => {
            let ttl = value.get(..8).and_then(|p| p.try_into().ok()).map_or(0, u64::from_be_bytes);
            if ttl != 0 && ttl <= now_ms {
                Decision::Remove
            } else {
                Decision::Keep
            }
        }
        Owner::Coll { .. } => Decision::Keep,
        // Versions are microseconds << 11.
        Owner::None if (version >> 11) / 1000 + GRACE_MS < now_ms => Decision::Remove,
        Owner::None => Decision::Keep,
    }
}

impl GcFilter {
    fn owner(&mut self, mk: &[u8]) -> Option<Owner> {
        if let Some((k, o)) = &self.last {
            if k == mk {
                return Some(*o);
            }
        }
        let (db, cf) = self.target?;
        let o = match db.get_pinned_cf(cf, mk) {
            Ok(None) => Owner::None,
            Ok(Some(raw)) => match Meta::decode(&raw) {
                Some(m) if m.ty == KeyType::String => Owner::None,
                Some(m) => match m.coll() {
                    Some(c) => Owner::Coll {
                        version: c.version,
                        hfe: c.hfe.is_some(),
                    },
                    None => return None,
                },
                None => return None,
            },
            // Unreadable: keep everything of it.
            Err(_) => return None,
        };
        self.last = Some((mk.to_vec(), o));
        Some(o)
    }
}

impl CompactionFilter for GcFilter {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
        let Some((mk, version)) = split_member(key) else {
            return Decision::Keep;
        };
        match self.owner(&mk) {
            Some(o) => decide(o, version, value, self.now_ms),
            None => Decision::Keep,
        }
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keys;

    #[test]
    fn member_keys_name_their_meta_key() {
        let k = keys::sub_key(3, b"h", 42, b"field");
        assert_eq!(split_member(&k), Some((keys::meta_key(3, b"h"), 42)));
        assert_eq!(split_member(&keys::meta_key(0, b"some-long-key")), None);
        assert_eq!(split_member(&keys::ttl_key(5, 0, b"k")), None);
    }

    #[test]
    fn decisions() {
        let now = 1_000_000_000;
        let coll = |version, hfe| Owner::Coll { version, hfe };
        let ttl = |t: u64| {
            let mut v = t.to_be_bytes().to_vec();
            v.extend_from_slice(b"value");
            v
        };
        assert!(matches!(decide(coll(10, false), 9, b"", now), Decision::Remove), "old incarnation");
        assert!(matches!(decide(coll(10, false), 11, b"", now), Decision::Keep), "store in flight");
        assert!(matches!(decide(coll(10, false), 10, b"", now), Decision::Keep));
        assert!(
            matches!(decide(coll(10, true), 10, &ttl(now), now), Decision::Remove),
            "expired field"
        );
        assert!(matches!(decide(coll(10, true), 10, &ttl(now + 1), now), Decision::Keep));
        assert!(
            matches!(decide(coll(10, true), 10, &ttl(0), now), Decision::Keep),
            "persistent field"
        );
        let old = ((now - GRACE_MS - 1) * 1000) << 11;
        let recent = ((now - 1000) * 1000) << 11;
        assert!(matches!(decide(Owner::None, old, b"", now), Decision::Remove), "orphan");
        assert!(
            matches!(decide(Owner::None, recent, b"", now), Decision::Keep),
            "maybe a store in flight"
        );
    }
}
