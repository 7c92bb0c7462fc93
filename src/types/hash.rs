//! Hash field expiration, the seed 002 way (Kvrocks' HFE proposal).
//!
//! A hash in field-expiration mode ("mode 1", every hash Basalt creates)
//! keeps in its meta `size` (physical fields), `persist` (physical fields
//! without a TTL) and `lower..=upper`, a conservative hint of where the TTLs
//! of the other `size - persist` fields (the *TTL candidates*) lie. Each field
//! value starts with an 8-byte expire time (0: none). A hash without those
//! meta fields ("mode 0", legacy layout) stores bare values and is converted
//! the first time a TTL is set on one of its fields.
//!
//! Invariants (checked by the tests below):
//! - `0 <= persist <= size`; `persist` is exact, because only writes that see
//!   a physical field change it and nothing removes a persistent field behind
//!   the metadata's back.
//! - `size == persist` means there is no TTL candidate, and then
//!   `lower == upper == 0`.
//! - Every TTL field's expire time lies in `lower..=upper`. Writes only widen
//!   the interval; only [`repair`] (which sees every field) and the end of a
//!   sweep (`types::hashsweep`, whose own bounds every write widens too)
//!   narrow it.
//! - `size` may over-count: a TTL field removed without a metadata update (a
//!   "TTL ghost", as a compaction filter would leave) stays counted until the
//!   next repair.
//!
//! A field is expired when its expire time is at or before now. Expired
//! fields are invisible to every read; reads never rewrite metadata, except
//! that a hash which may have no live field left is repaired on its meta read
//! (so a hash whose last field expired disappears as a key).

use super::notify::class;
use crate::error::{CmdResult, CORRUPT};
use crate::storage::keys;
use crate::storage::meta::{Coll, Hfe, KeyType, Meta};
use crate::types::keyspace::Keyspace;

/// A field's physical state, as a write sees it before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phys {
    Missing,
    Persist,
    /// A TTL field (live or already expired), expiring at this Unix ms.
    Ttl(u64),
}

impl Phys {
    pub fn of(ttl: u64) -> Phys {
        if ttl == 0 {
            Phys::Persist
        } else {
            Phys::Ttl(ttl)
        }
    }
}

/// True when a field expiring at `ttl` (0: never) is expired at `now`.
#[inline]
pub fn expired(ttl: u64, now: u64) -> bool {
    ttl != 0 && ttl <= now
}

/// Splits a stored field value into (expire ms, value).
#[inline]
pub fn decode_value(hfe: bool, raw: &[u8]) -> Option<(u64, &[u8])> {
    if !hfe {
        return Some((0, raw));
    }
    let prefix: [u8; 8] = raw.get(..8)?.try_into().ok()?;
    Some((u64::from_be_bytes(prefix), &raw[8..]))
}

/// Encodes a field value for a hash of the given mode.
pub fn encode_value(hfe: bool, ttl: u64, value: &[u8]) -> Vec<u8> {
    if !hfe {
        return value.to_vec();
    }
    let mut v = Vec::with_capacity(8 + value.len());
    v.extend_from_slice(&ttl.to_be_bytes());
    v.extend_from_slice(value);
    v
}

pub(super) fn widen_bounds(lower: &mut u64, upper: &mut u64, ts: u64) {
    if *lower == 0 && *upper == 0 {
        *lower = ts;
        *upper = ts;
    } else {
        *lower = (*lower).min(ts);
        *upper = (*upper).max(ts);
    }
}

/// Widens the hash's bounds, and a sweep's under way, to cover `ts`.
fn widen(h: &mut Hfe, ts: u64) {
    widen_bounds(&mut h.lower, &mut h.upper, ts);
    if let Some(s) = h.sweep.as_mut() {
        widen_bounds(&mut s.lower, &mut s.upper, ts);
    }
}

/// Applies the metadata update for one field going from `before` to
/// `after` (the proposal's transition table). Mode 0 and sets only ever see
/// `Missing` and `Persist`.
pub fn transition(c: &mut Coll, before: Phys, after: Phys) {
    use Phys::*;
    let Some(h) = c.hfe.as_mut() else {
        match (before, after) {
            (Missing, Missing) => {}
            (Missing, _) => c.size += 1,
            (_, Missing) => c.size = c.size.saturating_sub(1),
            _ => {}
        }
        return;
    };
    match (before, after) {
        (Missing, Missing) | (Persist, Persist) => {}
        (Missing, Persist) => {
            c.size += 1;
            h.persist += 1;
        }
        (Missing, Ttl(t)) => {
            c.size += 1;
            widen(h, t);
        }
        (Persist, Ttl(t)) => {
            h.persist = h.persist.saturating_sub(1);
            widen(h, t);
        }
        (Ttl(_), Persist) => h.persist += 1,
        (Persist, Missing) => {
            c.size = c.size.saturating_sub(1);
            h.persist = h.persist.saturating_sub(1);
        }
        (Ttl(_), Missing) => c.size = c.size.saturating_sub(1),
        (Ttl(_), Ttl(t)) => widen(h, t),
    }
    h.persist = h.persist.min(c.size);
    if c.size == h.persist {
        h.lower = 0;
        h.upper = 0;
        h.sweep = None;
    }
}

/// What HLEN can tell from the metadata alone.
#[derive(Debug, PartialEq, Eq)]
pub enum FastLen {
    /// The exact number of live fields.
    Known(u64),
    /// Every field has expired: the key is gone.
    Gone,
    /// Only a scan can tell.
    Scan,
}

/// HLEN's fast paths: no TTL candidate, or none due yet (`now < lower`), or
/// all due and no persistent field (`now >= upper`, `persist == 0`).
pub fn fast_len(c: &Coll, now: u64) -> FastLen {
    match &c.hfe {
        None => FastLen::Known(c.size),
        Some(h) if c.size == h.persist || now < h.lower => FastLen::Known(c.size),
        Some(h) if now >= h.upper && h.persist == 0 => FastLen::Gone,
        Some(_) => FastLen::Scan,
    }
}

/// Hashes up to this many fields are repaired whole when a field is due; a
/// bigger one is swept in slices of [`SWEEP_SLICE`] fields (a repair scans
/// every field, which must not stall the core).
pub const ACTIVE_REPAIR_MAX: u64 = 4096;

/// The least time between two active repairs of one hash, in ms: fields
/// expiring one after another cost one scan per interval, not one each.
pub const ACTIVE_REPAIR_EVERY_MS: u64 = 100;

/// Schedules the active repair (or sweep) of hash `c` at `at` when it has
/// TTL candidates. An `at` the index walk has passed (a RENAME of a hash
/// whose lowest TTL has gone by) is put where the walk still comes.
pub fn stage_repair_at(ks: &Keyspace, b: &mut crate::storage::Batch, db: u8, key: &[u8], c: &Coll, at: u64) {
    if let Some(h) = &c.hfe {
        if c.size > h.persist {
            let at = ks.field_walk.place(at);
            ks.store.put(b, &keys::field_ttl_key(at, db, key), b"");
            ks.owe_expiry(true);
        }
    }
}

/// The exact state of a hash, from one scan of its physical fields.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Census {
    pub live: u64,
    pub persist: u64,
    pub lower: u64,
    pub upper: u64,
    /// Physical keys of expired fields.
    pub expired: Vec<Vec<u8>>,
}

/// Scans every physical field of a mode-1 hash.
pub fn census(ks: &Keyspace, db: u8, key: &[u8], c: &Coll, now: u64) -> CmdResult<Census> {
    let (lo, hi) = keys::sub_range(db, key, c.version);
    let mut out = Census::default();
    let mut bad = false;
    ks.store.scan(&lo, &hi, |k, v| {
        let Some((ttl, _)) = decode_value(true, v) else {
            bad = true;
            return false;
        };
        if expired(ttl, now) {
            out.expired.push(k.to_vec());
        } else if ttl == 0 {
            out.live += 1;
            out.persist += 1;
        } else {
            out.live += 1;
            out.lower = if out.lower == 0 { ttl } else { out.lower.min(ttl) };
            out.upper = out.upper.max(ttl);
        }
        true
    })?;
    if bad {
        return Err(CORRUPT);
    }
    Ok(out)
}

/// SCAN_AND_REPAIR: drops expired fields and rewrites exact metadata, or
/// deletes the key when no field is live. `raw` is the key's meta value.
/// Returns the new meta value, None when the key is gone.
pub fn repair(ks: &Keyspace, db: u8, key: &[u8], raw: &[u8], now: u64) -> CmdResult<Option<Vec<u8>>> {
    let m = Meta::decode(raw).ok_or(CORRUPT)?;
    let Some(mut c) = m.coll() else { return Ok(Some(raw.to_vec())) };
    if c.hfe.is_none() {
        return Ok(Some(raw.to_vec()));
    }
    let mut b = ks.store.batch();
    let expired_fields = &ks.stats.expired_fields;
    if fast_len(&c, now) == FastLen::Gone {
        ks.stage_delete(&mut b, db, key, &m);
        ks.store.write(b)?;
        expired_fields.set(expired_fields.get() + c.size);
        notify_emptied(ks, db, key);
        return Ok(None);
    }
    let found = census(ks, db, key, &c, now)?;
    // The fields counted but not live expired: the dead ones met, and the
    // ghosts compaction dropped (`storage::gc`).
    let gone = c.size.saturating_sub(found.live).max(found.expired.len() as u64);
    expired_fields.set(expired_fields.get() + gone);
    if found.live == 0 {
        ks.stage_delete(&mut b, db, key, &m);
        ks.store.write(b)?;
        notify_emptied(ks, db, key);
        return Ok(None);
    }
    for k in &found.expired {
        ks.store.delete(&mut b, k);
    }
    c.size = found.live;
    c.hfe = Some(Hfe {
        persist: found.persist,
        lower: found.lower,
        upper: found.upper,
        sweep: None,
    });
    let fixed = c.encode(KeyType::Hash, m.expire_ms);
    ks.stage_put(&mut b, db, key, &fixed, Some(m.expire_ms));
    stage_repair_at(ks, &mut b, db, key, &c, found.lower.max(now + ACTIVE_REPAIR_EVERY_MS));
    ks.store.write(b)?;
    if !found.expired.is_empty() {
        ks.notify(class::HASH, "hexpired", db, key);
    }
    Ok(Some(fixed))
}

/// The events of a hash whose last fields expired: `hexpired`, then
/// `del` (Redis 7.4).
pub(super) fn notify_emptied(ks: &Keyspace, db: u8, key: &[u8]) {
    ks.notify(class::HASH, "hexpired", db, key);
    ks.notify(class::GENERIC, "del", db, key);
}

#[cfg(test)]
mod tests {
    use super::Phys::*;
    use super::*;

    fn hfe(size: u64, persist: u64, lower: u64, upper: u64) -> Coll {
        Coll {
            version: 1,
            size,
            hfe: Some(Hfe {
                persist,
                lower,
                upper,
                sweep: None,
            }),
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        }
    }

    fn after(mut c: Coll, before: Phys, to: Phys) -> Coll {
        transition(&mut c, before, to);
        c
    }

    #[test]
    fn the_proposals_transition_table() {
        // Missing -> persistent: size++, persist++.
        assert_eq!(after(hfe(0, 0, 0, 0), Missing, Persist), hfe(1, 1, 0, 0));
        // Missing -> TTL: size++, widen the bounds.
        assert_eq!(after(hfe(1, 1, 0, 0), Missing, Ttl(50)), hfe(2, 1, 50, 50));
        assert_eq!(after(hfe(2, 1, 50, 50), Missing, Ttl(20)), hfe(3, 1, 20, 50));
        // Persistent -> TTL: persist--, widen.
        assert_eq!(after(hfe(3, 1, 20, 50), Persist, Ttl(90)), hfe(3, 0, 20, 90));
        // TTL -> persistent: persist++; bounds stay (stale but conservative).
        assert_eq!(after(hfe(3, 0, 20, 90), Ttl(90), Persist), hfe(3, 1, 20, 90));
        // Persistent -> deleted: size--, persist--.
        assert_eq!(after(hfe(3, 1, 20, 90), Persist, Missing), hfe(2, 0, 20, 90));
        // TTL -> deleted: size--.
        assert_eq!(after(hfe(2, 0, 20, 90), Ttl(20), Missing), hfe(1, 0, 20, 90));
        // TTL -> TTL: widen only if outside.
        assert_eq!(after(hfe(1, 0, 20, 90), Ttl(90), Ttl(30)), hfe(1, 0, 20, 90));
        assert_eq!(after(hfe(1, 0, 20, 90), Ttl(90), Ttl(99)), hfe(1, 0, 20, 99));
        // No change.
        assert_eq!(after(hfe(1, 1, 0, 0), Persist, Persist), hfe(1, 1, 0, 0));
        assert_eq!(after(hfe(1, 1, 0, 0), Missing, Missing), hfe(1, 1, 0, 0));
    }

    #[test]
    fn removing_the_last_candidate_resets_the_bounds() {
        assert_eq!(after(hfe(2, 1, 5, 10), Ttl(5), Persist), hfe(2, 2, 0, 0));
        assert_eq!(after(hfe(2, 1, 5, 10), Ttl(5), Missing), hfe(1, 1, 0, 0));
        assert_eq!(after(hfe(1, 0, 5, 5), Ttl(5), Missing), hfe(0, 0, 0, 0));
    }

    #[test]
    fn mode_zero_counts_members_only() {
        let mut c = Coll::new(1, false);
        transition(&mut c, Missing, Persist);
        transition(&mut c, Missing, Persist);
        transition(&mut c, Persist, Persist);
        transition(&mut c, Persist, Missing);
        assert_eq!((c.size, c.hfe), (1, None));
    }

    #[test]
    fn hlen_fast_paths_follow_the_proposals_example() {
        // field1 expires at 5, field2 at 10.
        let c = hfe(2, 0, 5, 10);
        assert_eq!(fast_len(&c, 0), FastLen::Known(2));
        assert_eq!(fast_len(&c, 2), FastLen::Known(2));
        assert_eq!(fast_len(&c, 6), FastLen::Scan);
        // After the repair at 6: lower = upper = 10, size 1.
        let c = hfe(1, 0, 10, 10);
        assert_eq!(fast_len(&c, 7), FastLen::Known(1));
        assert_eq!(fast_len(&c, 9), FastLen::Known(1));
        assert_eq!(fast_len(&c, 11), FastLen::Gone);
        // Only persistent fields, or mode 0: always known.
        assert_eq!(fast_len(&hfe(3, 3, 0, 0), u64::MAX), FastLen::Known(3));
        assert_eq!(
            fast_len(
                &Coll {
                    version: 1,
                    size: 4,
                    hfe: None,
                    list_head: None,
                    zblocks: false,
                    chunk_shift: 0,
                    stream: None,
                },
                u64::MAX
            ),
            FastLen::Known(4)
        );
    }

    #[test]
    fn compaction_ghosts_never_delete_persistent_fields() {
        // One expired TTL field (expire 5); compaction removes the subkey
        // without touching the metadata.
        let ghost = hfe(1, 0, 5, 5);
        // HSET of the same field sees it missing: Missing -> Persist.
        let c = after(ghost, Missing, Persist);
        assert_eq!(c, hfe(2, 1, 5, 5));
        // size over-counts by the ghost, but persist = 1 keeps the fast path
        // from deleting the key once now > upper.
        assert_eq!(fast_len(&c, 100), FastLen::Scan);
        // A write removing the persistent field leaves only the ghost: the
        // metadata then proves the hash empty once the ghost's time passed.
        let c = after(c, Persist, Missing);
        assert_eq!(c, hfe(1, 0, 5, 5));
        assert_eq!(fast_len(&c, 100), FastLen::Gone);
    }

    #[test]
    fn a_ghost_then_a_new_ttl_field_keeps_bounds_conservative() {
        // Ghost of a field expiring at 5, then HEXPIRE-style write of a new
        // TTL field at 50 that the write saw missing.
        let c = after(hfe(1, 0, 5, 5), Missing, Ttl(50));
        assert_eq!(c, hfe(2, 0, 5, 50));
        // Between the ghost's time and the new field's, only a scan can tell.
        assert_eq!(fast_len(&c, 20), FastLen::Scan);
        assert_eq!(fast_len(&c, 50), FastLen::Gone);
    }

    #[test]
    fn values_carry_the_expire_prefix_only_in_mode_one() {
        let v = encode_value(true, 77, b"abc");
        assert_eq!(decode_value(true, &v), Some((77, &b"abc"[..])));
        assert_eq!(decode_value(false, b"abc"), Some((0, &b"abc"[..])));
        assert_eq!(encode_value(false, 0, b"abc"), b"abc");
        assert_eq!(decode_value(true, b"short"), None);
        assert!(expired(5, 5) && !expired(6, 5) && !expired(0, u64::MAX));
    }
}
