//! The compaction filters: garbage goes in compaction (design.md).
//!
//! On the member families (`shard-<i>-sub`), a member record
//! (`db 'S' slot keylen key version member`) is dropped when compaction
//! meets it and
//! - its collection's meta record names a newer version (the collection
//!   was deleted or overwritten and recreated), or
//! - its collection expired more than [`EXPIRED_GRACE_MS`] ago (the key is
//!   dead whatever else happens; its meta record goes by the shard), or
//! - no meta record (or a string) is there and the member's version is more
//!   than [`GRACE_MS`] old, or
//! - it is a hash field whose 8-byte expire prefix is due. Its hash's
//!   metadata is left alone: it becomes a "TTL ghost", which the seed 002
//!   metadata rules allow for and the next repair counts away.
//!
//! A member whose version is newer than its meta's is kept: SINTERSTORE and
//! friends write a result's members before the meta record that names them.
//!
//! On the meta families (`shard-<i>`), in manual compactions (COMPACT),
//! an index entry is dropped when it no longer matches its
//! key: a TTL index entry whose meta record is gone or has another expiry,
//! a field expiration entry whose key is gone or is not a hash with field
//! TTLs. Every write that sets an expiry writes its entry anew in the same
//! batch, so a dropped entry is never one a later write needs. Automatic
//! compactions keep them: the check is a read per entry, and under a cache's
//! churn (every key with a TTL) it was 20% of a shard's core (perf record,
//! SET EX 2 at full speed, 1 shard); expiry changes delete their old entry
//! in the same batch, so stale entries come only from FLUSHDB, and active
//! expiry drops those when they are due. Meta records are never dropped here: only the owning shard
//! deletes a key, so its key counts stay exact. A meta record found expired
//! more than [`EXPIRED_GRACE_MS`] ago (one the TTL index somehow missed) is
//! handed to its shard ([`Found`]), whose active expiry deletes it.
//!
//! The filters read meta records from the shard's meta family, so they
//! need the open database: [`Engine::enable_gc`](super::Engine::enable_gc)
//! hands it over once the engine is `'static`; until then they keep
//! everything.
//!
//! RocksDB does not protect snapshots from compaction filters: a sliced read
//! (HGETALL from a snapshot) of a collection deleted meanwhile can lose
//! members that compaction dropped in between.

use std::ffi::{CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};

use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::compaction_filter_factory::{CompactionFilterContext, CompactionFilterFactory};
use rocksdb::{ColumnFamily, DB};

use super::keys::{self, TAG_META, TAG_SUB};
use super::meta::{KeyType, Meta};

/// How old (by its version's clock) a member with no collection to belong
/// to must be before it is garbage.
pub const GRACE_MS: u64 = 10 * 60 * 1000;

/// How long after its expiry a key's members are garbage and its meta
/// record is handed to its shard: far beyond any clock a command holds
/// (an EXEC, a CLIENT PAUSE's hold on expiry ends long before).
pub const EXPIRED_GRACE_MS: u64 = 60 * 1000;

/// Meta keys (as stored) of long-expired keys the meta filter met, for the
/// shard to delete ([`ShardStore::take_found_expired`](super::ShardStore::take_found_expired)).
pub type Found = Arc<Mutex<Vec<Vec<u8>>>>;

/// At most this many found keys wait for their shard; the next compaction
/// finds the rest.
const FOUND_CAP: usize = 65536;

/// The database and the column family a filter reads meta records from.
pub type Target = (&'static DB, &'static ColumnFamily);

/// Filled once the engine is `'static`; shared by the factory of one column family.
pub type Slot = Arc<OnceLock<Target>>;

/// Which family a filter works on: members, or meta records and indexes
/// (with where to hand long-expired keys).
#[derive(Clone)]
pub enum Family {
    Members,
    Meta(Found),
}

pub struct GcFactory {
    pub slot: Slot,
    family: Family,
    name: CString,
}

impl GcFactory {
    pub fn new(slot: Slot, family: Family) -> GcFactory {
        GcFactory {
            slot,
            family,
            name: CString::from(c"basalt-gc"),
        }
    }
}

impl CompactionFilterFactory for GcFactory {
    type Filter = GcFilter;

    fn create(&mut self, ctx: CompactionFilterContext) -> GcFilter {
        GcFilter {
            target: self.slot.get().copied(),
            family: self.family.clone(),
            check_entries: ctx.is_manual_compaction,
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
        /// Expired more than [`EXPIRED_GRACE_MS`] ago.
        dead: bool,
        /// A stream's floor: its entry records below it were trimmed.
        floor: Option<(u64, u64)>,
    },
}

pub struct GcFilter {
    target: Option<Target>,
    family: Family,
    /// Whether index entries are checked against their meta records (a
    /// read each): in manual compactions (COMPACT) only. RocksDB calls an
    /// automatic compaction of a small family "full" when it takes every
    /// file, so that flag would not keep the reads out of the churn.
    check_entries: bool,
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
        Owner::Coll { dead: true, .. } => Decision::Remove,
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
                        dead: long_expired(m.expire_ms, self.now_ms),
                        floor: c.stream.map(|s| s.floor),
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

/// Whether stream sub key `sub` is an entry record below `floor` (a
/// trimmed entry: `types::stream`).
fn below_floor(sub: &[u8], floor: (u64, u64)) -> bool {
    if sub.len() != 17 || sub[0] != b'e' {
        return false;
    }
    let be = |b: &[u8]| b.try_into().map_or(u64::MAX, u64::from_be_bytes);
    (be(&sub[1..9]), be(&sub[9..17])) < floor
}

/// Whether a key with expiry `expire_ms` (0: none) expired more than
/// [`EXPIRED_GRACE_MS`] before `now_ms`.
fn long_expired(expire_ms: u64, now_ms: u64) -> bool {
    expire_ms != 0 && expire_ms.saturating_add(EXPIRED_GRACE_MS) < now_ms
}

/// Whether index entry (`at`, field expiration or not) still matches its
/// key's meta record `meta` (None: no record).
fn entry_matches(at: u64, field: bool, meta: Option<&Meta<'_>>) -> bool {
    match meta {
        None => false,
        Some(m) if field => m.ty == KeyType::Hash && m.coll().is_some_and(|c| c.hfe.is_some()),
        Some(m) => m.expire_ms == at,
    }
}

impl GcFilter {
    fn filter_member(&mut self, key: &[u8], value: &[u8]) -> Decision {
        let Some((mk, version)) = split_member(key) else {
            return Decision::Keep;
        };
        match self.owner(&mk) {
            Some(Owner::Coll {
                version: v,
                floor: Some(floor),
                ..
            }) if v == version && below_floor(&key[mk.len() + 12..], floor) => Decision::Remove,
            Some(o) => decide(o, version, value, self.now_ms),
            None => Decision::Keep,
        }
    }

    fn filter_meta(&self, found: &Found, key: &[u8], value: &[u8]) -> Decision {
        if let Some((at, field, mk)) = keys::index_entry_owner(key) {
            let Some((db, cf)) = self.target.filter(|_| self.check_entries) else {
                return Decision::Keep;
            };
            return match db.get_pinned_cf(cf, &mk) {
                Ok(None) => Decision::Remove,
                Ok(Some(raw)) => match Meta::decode(&raw) {
                    Some(m) if !entry_matches(at, field, Some(&m)) => Decision::Remove,
                    _ => Decision::Keep,
                },
                Err(_) => Decision::Keep,
            };
        }
        if key.len() >= 4 && key[0] != 0xFF && key[1] == TAG_META {
            if let Some(m) = Meta::decode(value) {
                if long_expired(m.expire_ms, self.now_ms) {
                    if let Ok(mut f) = found.lock() {
                        if f.len() < FOUND_CAP {
                            f.push(key.to_vec());
                        }
                    }
                }
            }
        }
        Decision::Keep
    }
}

impl CompactionFilter for GcFilter {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
        if let Family::Meta(found) = &self.family {
            return self.filter_meta(found, key, value);
        }
        self.filter_member(key, value)
    }

    fn name(&self) -> &CStr {
        &self.name
    }
}

impl super::ShardStore {
    /// Takes up to `max` of the long-expired keys the meta filter met:
    /// (db, key) pairs for active expiry to delete if they still are what
    /// the filter saw.
    pub fn take_found_expired(&self, max: usize) -> Vec<(u8, Vec<u8>)> {
        let Some(found) = &self.found else {
            return Vec::new();
        };
        let taken: Vec<Vec<u8>> = match found.lock() {
            Ok(mut f) if !f.is_empty() => {
                // One compaction after another may meet the same record.
                f.sort_unstable();
                f.dedup();
                let n = f.len().min(max);
                f.drain(..n).collect()
            }
            _ => return Vec::new(),
        };
        taken
            .iter()
            .filter_map(|k| keys::split_meta_key(k).map(|(db, _, key)| (db, key.to_vec())))
            .collect()
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
    fn trimmed_stream_entries_are_below_the_floor() {
        let mut sub = vec![b'e'];
        sub.extend_from_slice(&5u64.to_be_bytes());
        sub.extend_from_slice(&2u64.to_be_bytes());
        assert!(below_floor(&sub, (5, 3)));
        assert!(below_floor(&sub, (6, 0)));
        assert!(!below_floor(&sub, (5, 2)), "the floor itself is live");
        sub[0] = b'n';
        assert!(!below_floor(&sub, (9, 0)), "only entry records");
    }

    #[test]
    fn decisions() {
        let now = 1_000_000_000;
        let coll = |version, hfe| Owner::Coll {
            version,
            hfe,
            dead: false,
            floor: None,
        };
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
        assert!(
            matches!(
                decide(
                    Owner::Coll {
                        version: 10,
                        hfe: false,
                        dead: true,
                        floor: None,
                    },
                    10,
                    b"",
                    now
                ),
                Decision::Remove
            ),
            "members of a long-expired collection"
        );
        assert!(
            matches!(
                decide(
                    Owner::Coll {
                        version: 10,
                        hfe: false,
                        dead: true,
                        floor: None,
                    },
                    11,
                    b"",
                    now
                ),
                Decision::Keep
            ),
            "the next incarnation's, in flight"
        );
        let old = ((now - GRACE_MS - 1) * 1000) << 11;
        let recent = ((now - 1000) * 1000) << 11;
        assert!(matches!(decide(Owner::None, old, b"", now), Decision::Remove), "orphan");
        assert!(
            matches!(decide(Owner::None, recent, b"", now), Decision::Keep),
            "maybe a store in flight"
        );
    }

    #[test]
    fn index_entries_match_their_meta_record() {
        use crate::storage::meta::encode_string;
        let raw = encode_string(500, b"v");
        let m = Meta::decode(&raw);
        assert!(entry_matches(500, false, m.as_ref()));
        assert!(!entry_matches(400, false, m.as_ref()), "expiry changed since");
        assert!(!entry_matches(500, false, None), "key gone");
        assert!(!entry_matches(500, true, m.as_ref()), "a field entry of a string");
        let (at, field, mk) = keys::index_entry_owner(&keys::ttl_key(500, 2, b"k")).unwrap();
        assert_eq!((at, field, mk), (500, false, keys::meta_key(2, b"k")));
        assert!(keys::index_entry_owner(&keys::field_ttl_key(7, 0, b"h")).unwrap().1);
        assert!(long_expired(1, EXPIRED_GRACE_MS + 2));
        assert!(!long_expired(1, EXPIRED_GRACE_MS));
        assert!(!long_expired(0, u64::MAX), "no expiry");
    }
}
