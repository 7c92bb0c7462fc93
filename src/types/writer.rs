//! The collection writer: stages member changes of one collection and
//! writes them with the updated metadata in one batch. The batch may carry
//! more (an intent record, the other half of an SMOVE on the same shard);
//! see [`Writer::with_batch`] and [`Writer::finish`].

use crate::error::{CmdResult, CORRUPT};
use crate::storage::intent::IntentRef;
use crate::storage::keys;
use crate::storage::meta::{Coll, Hfe, KeyType, Meta};
use crate::storage::Batch;
use crate::types::coll::{member_with, view};
use crate::types::hash::{self, Phys};
use crate::types::keyspace::{Keyspace, Prior};

/// A member's value as a writer keeps it: inline up to 128 bytes (an
/// HSET's existence check copied the field's value into an allocation of
/// its own, and the write copied the new one over it).
type Val = smallvec::SmallVec<[u8; 128]>;

/// A member's physical state: (expire ms, value), or gone.
type State = Option<(u64, Val)>;

/// A member's name, inline when short.
type Name = smallvec::SmallVec<[u8; 32]>;

/// Members a writer touched, past which a map finds them.
const FEW: usize = 8;

/// The members one writer read or staged: most commands touch one or two,
/// kept inline (HSET and SADD of one member allocated a hash table, the
/// name and a copy of the value for its existence check: 4 allocations of
/// their 4.1 per request); past [`FEW`] in a map.
#[derive(Default)]
struct Touched {
    few: smallvec::SmallVec<[(Name, State); 2]>,
    many: ahash::AHashMap<Name, State>,
}

thread_local! {
    /// Touched sets of writers gone, for the next (a writer held its
    /// 456 bytes inline, and each command moved it 4-6 times: ~600 of a
    /// SADD's 6200 instructions were `memcpy`).
    // Boxes: a writer takes one out and hands it back without a copy.
    #[allow(clippy::vec_box)]
    static SPARE: std::cell::RefCell<Vec<Box<Touched>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A writer's [`Touched`], boxed and taken from [`SPARE`]; handed back,
/// emptied, when the writer goes.
struct Pooled(Option<Box<Touched>>);

impl Pooled {
    fn take() -> Pooled {
        let spare = SPARE.with(|s| s.borrow_mut().pop());
        Pooled(Some(spare.unwrap_or_default()))
    }

    /// The set (Some until dropped).
    fn get(&mut self) -> &mut Touched {
        self.0.get_or_insert_with(Default::default)
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(mut t) = self.0.take() else { return };
        t.few.clear();
        if t.many.capacity() > 64 {
            // A big command's map is not kept.
            t.many = Default::default();
        } else {
            t.many.clear();
        }
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < 8 {
                s.push(t);
            }
        });
    }
}

impl Touched {
    fn find(&mut self, sub: &[u8]) -> Option<&mut State> {
        if self.many.is_empty() {
            self.few.iter_mut().find(|(n, _)| n[..] == *sub).map(|(_, s)| s)
        } else {
            self.many.get_mut(sub)
        }
    }

    /// Adds a member it does not hold.
    fn insert(&mut self, sub: &[u8], state: State) {
        if self.many.is_empty() && self.few.len() < FEW {
            self.few.push((Name::from_slice(sub), state));
            return;
        }
        self.many.extend(self.few.drain(..));
        self.many.insert(Name::from_slice(sub), state);
    }

    fn iter(&self) -> impl Iterator<Item = (&Name, &State)> {
        self.few.iter().map(|(n, s)| (n, s)).chain(self.many.iter())
    }
}

/// Stages member changes of one collection and writes them, with the
/// updated metadata, in one batch. Later reads through the writer see
/// earlier staged changes (a field repeated in one HSET).
pub struct Writer<'k> {
    ks: &'k Keyspace,
    db: u8,
    key: &'k [u8],
    ty: KeyType,
    now: u64,
    pub expire_ms: u64,
    prior: Prior,
    /// The collection as it was before this command (for its delete).
    orig: Coll,
    pub c: Coll,
    /// Physical state of members read or staged so far: (expire ms, value)
    /// or gone.
    touched: Pooled,
    b: Batch,
    dirty: bool,
    /// A member was added (cached sampling bounds may no longer cover all).
    added: bool,
}

impl<'k> Writer<'k> {
    /// Opens `key` as a collection of type `ty`. WRONGTYPE for another type.
    /// A missing key gives a new empty collection when `create`, else None.
    /// Inlined: the writer is built in its caller's frame, not moved out
    /// through `CmdResult<Option<_>>` (each move a `memcpy` of the whole).
    #[inline]
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], ty: KeyType, now: u64, create: bool) -> CmdResult<Option<Writer<'k>>> {
        let found = view(ks, db, key, ty, now)?;
        let (expire_ms, prior, c) = match found {
            Some(v) => (v.expire_ms, Some(v.expire_ms), v.c),
            None if create => {
                let version = ks.next_version(crate::clock::now_us());
                (0, None, Coll::new(version, ty == KeyType::Hash))
            }
            None => return Ok(None),
        };
        Ok(Some(Writer {
            ks,
            db,
            key,
            ty,
            now,
            expire_ms,
            prior,
            orig: c.clone(),
            c,
            touched: Pooled::take(),
            b: ks.store.batch(),
            dirty: false,
            added: false,
        }))
    }

    /// [`Writer::open`] creating the collection when missing.
    #[inline]
    pub fn upsert(ks: &'k Keyspace, db: u8, key: &'k [u8], ty: KeyType, now: u64) -> CmdResult<Writer<'k>> {
        Self::open(ks, db, key, ty, now, true)?.ok_or(CORRUPT)
    }

    /// The keyspace, db and key this writer writes.
    pub fn place(&self) -> (&'k Keyspace, u8, &'k [u8]) {
        (self.ks, self.db, self.key)
    }

    /// True when the key existed before this command.
    pub fn existed(&self) -> bool {
        self.prior.is_some()
    }

    /// A member's physical (expire ms, value), expired or not. Each member
    /// is read from storage at most once per command: the answer is kept
    /// with the staged changes, so a check followed by a write costs one read.
    pub fn physical(&mut self, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
        Ok(self.touch(sub)?.as_ref().map(|(t, v)| (*t, v.to_vec())))
    }

    /// [`Writer::physical`], the value borrowed (no copy).
    pub fn physical_ref(&mut self, sub: &[u8]) -> CmdResult<Option<(u64, &[u8])>> {
        Ok(self.touch(sub)?.as_ref().map(|(t, v)| (*t, &v[..])))
    }

    /// Whether a member is there, expired or not ([`Writer::physical`]
    /// without a copy of the value).
    pub fn exists(&mut self, sub: &[u8]) -> CmdResult<bool> {
        Ok(self.touch(sub)?.is_some())
    }

    /// [`Writer::physical`] without a copy of the value.
    fn touch(&mut self, sub: &[u8]) -> CmdResult<&mut State> {
        if self.touched.get().find(sub).is_none() {
            let found = if self.existed() {
                member_with(self.ks, self.db, self.key, &self.c, sub, Val::from_slice)?
            } else {
                None
            };
            self.touched.get().insert(sub, found);
        }
        self.touched.get().find(sub).ok_or(CORRUPT)
    }

    /// Tells the writer what a read of member `sub` just found (`Some`:
    /// its expire ms and value), so that its own read of it costs
    /// nothing: a caller that looked the member up before opening the
    /// writer (SADD's check that every member is there already). Only
    /// for a state read in this command, before anything was staged.
    pub fn seed(&mut self, sub: &[u8], found: Option<(u64, &[u8])>) {
        if self.touched.get().find(sub).is_none() {
            let state = found.map(|(t, v)| (t, Val::from_slice(v)));
            self.touched.get().insert(sub, state);
        }
    }

    /// A member's (expire ms, value) if live.
    pub fn live(&mut self, sub: &[u8]) -> CmdResult<Option<(u64, Vec<u8>)>> {
        Ok(self.physical(sub)?.filter(|(t, _)| !hash::expired(*t, self.now)))
    }

    /// Whether a member is live ([`Writer::live`] without a copy of the
    /// value).
    pub fn is_live(&mut self, sub: &[u8]) -> CmdResult<bool> {
        let now = self.now;
        Ok(self.touch(sub)?.as_ref().is_some_and(|(t, _)| !hash::expired(*t, now)))
    }

    fn state(p: &State) -> Phys {
        match p {
            None => Phys::Missing,
            Some((t, _)) => Phys::of(*t),
        }
    }

    /// Stores a member with expiry `ttl` (0: none; hashes only).
    pub fn put(&mut self, sub: &[u8], ttl: u64, value: &[u8]) -> CmdResult<Phys> {
        let t = self.touch(sub)?;
        let before = Self::state(t);
        // What later reads in this command see, in the buffer the read left.
        match t {
            Some((at, v)) => {
                *at = ttl;
                v.clear();
                v.extend_from_slice(value);
            }
            None => *t = Some((ttl, Val::from_slice(value))),
        }
        self.added |= before == Phys::Missing;
        hash::transition(&mut self.c, before, Phys::of(ttl));
        let k = keys::sub_key_buf(self.db, self.key, self.c.version, sub);
        let mut with_ttl = smallvec::SmallVec::<[u8; 128]>::new();
        let value = match self.c.hfe {
            Some(_) => {
                with_ttl.extend_from_slice(&ttl.to_be_bytes());
                with_ttl.extend_from_slice(value);
                &with_ttl[..]
            }
            None => value,
        };
        if before == Phys::Missing {
            // Read missing: nothing below the tier holds it.
            self.ks.store.put_new(&mut self.b, &k, value);
        } else {
            self.ks.store.put(&mut self.b, &k, value);
        }
        self.dirty = true;
        Ok(before)
    }

    /// Deletes a member; returns its physical state before.
    pub fn delete(&mut self, sub: &[u8]) -> CmdResult<Phys> {
        let t = self.touch(sub)?;
        let before = Self::state(t);
        if before != Phys::Missing {
            *t = None;
            hash::transition(&mut self.c, before, Phys::Missing);
            let k = keys::sub_key_buf(self.db, self.key, self.c.version, sub);
            self.ks.store.delete(&mut self.b, &k);
            self.dirty = true;
        }
        Ok(before)
    }

    /// Stages a record under this collection's version that is not a
    /// member of its own (a sorted set's score record): no count changes,
    /// no read-back through [`Writer::physical`].
    pub fn put_raw(&mut self, sub: &[u8], value: &[u8]) {
        let k = keys::sub_key_buf(self.db, self.key, self.c.version, sub);
        self.ks.store.put(&mut self.b, &k, value);
        self.dirty = true;
    }

    /// [`Writer::put_raw`] of a record known absent (a sorted set's new
    /// score record: [`ShardStore::put_new`]).
    pub fn put_raw_new(&mut self, sub: &[u8], value: &[u8]) {
        let k = keys::sub_key_buf(self.db, self.key, self.c.version, sub);
        self.ks.store.put_new(&mut self.b, &k, value);
        self.dirty = true;
    }

    /// Stages the delete of a record [`Writer::put_raw`] wrote.
    pub fn delete_raw(&mut self, sub: &[u8]) {
        let k = keys::sub_key_buf(self.db, self.key, self.c.version, sub);
        self.ks.store.delete(&mut self.b, &k);
        self.dirty = true;
    }

    /// Converts a mode-0 hash to field-expiration mode: every value is
    /// rewritten with a zero expire prefix (members this command already
    /// staged are re-staged in the new encoding).
    pub fn ensure_hfe(&mut self) -> CmdResult {
        if self.c.hfe.is_some() {
            return Ok(());
        }
        let (lo, hi) = keys::sub_range(self.db, self.key, self.c.version);
        let (ks, b, touched) = (self.ks, &mut self.b, self.touched.get());
        ks.store.scan(&lo, &hi, |k, v| {
            // Later reads in this command must see the converted values,
            // which are only staged so far.
            let sub = &k[lo.len()..];
            if touched.find(sub).is_none() {
                touched.insert(sub, Some((0, Val::from_slice(v))));
            }
            true
        })?;
        for (sub, state) in touched.iter() {
            if let Some((_, v)) = state {
                let k = keys::sub_key(self.db, self.key, self.c.version, sub);
                ks.store.put(b, &k, &hash::encode_value(true, 0, v));
            }
        }
        // Mode 0 counts exactly, and every field is persistent.
        self.c.hfe = Some(Hfe {
            persist: self.c.size,
            lower: 0,
            upper: 0,
            sweep: None,
        });
        self.dirty = true;
        Ok(())
    }

    /// Starts this writer's batch from `b` (writes staged elsewhere that
    /// must land with this collection's, e.g. the source half of a
    /// same-shard SMOVE). Call before staging anything.
    pub fn with_batch(mut self, b: Batch) -> Self {
        self.b = b;
        self
    }

    /// Adds intent part `r` to the batch (see `storage::intent`).
    pub fn stage_intent(&mut self, r: IntentRef, body: &[u8]) {
        self.ks.store.stage_intent(&mut self.b, r, body);
    }

    /// Adds the delete of intent part `r` to the batch: this write applies it.
    pub fn intent_done(&mut self, r: IntentRef) {
        self.ks.store.stage_intent_done(&mut self.b, r);
    }

    /// [`Writer::commit`], then the keyspace events: `events` (of `class`,
    /// in order), and `del` when the key went away (Redis's order: `hdel`
    /// then `del`, `srem` then `del`...).
    #[inline]
    pub fn commit_with(self, class: u32, events: &[&'static str]) -> CmdResult<bool> {
        let (ks, db, key, had) = (self.ks, self.db, self.key, self.existed());
        let exists = self.commit()?;
        for e in events {
            ks.notify(class, e, db, key);
        }
        if had && !exists {
            ks.notify(super::notify::class::GENERIC, "del", db, key);
        }
        Ok(exists)
    }

    /// Writes everything staged. A collection left with no member (or, for
    /// a hash, provably no live field) is deleted. Returns whether the key
    /// exists afterwards.
    #[inline]
    pub fn commit(self) -> CmdResult<bool> {
        let ks = self.ks;
        let (exists, b) = self.finish()?;
        ks.store.write(b)?;
        Ok(exists)
    }

    /// [`Writer::commit`] without the write: the batch is returned for the
    /// caller to extend and write. Whether the key exists afterwards.
    pub fn finish(mut self) -> CmdResult<(bool, Batch)> {
        if !self.dirty {
            return Ok((self.existed(), self.b));
        }
        let empty = self.c.size == 0 || hash::fast_len(&self.c, self.now) == hash::FastLen::Gone;
        if empty {
            if let Some(e) = self.prior {
                let old = self.orig.encode(self.ty, e);
                let m = Meta::decode(&old).ok_or(CORRUPT)?;
                self.ks.stage_delete(&mut self.b, self.db, self.key, &m);
            }
            return Ok((false, self.b));
        }
        if self.added && !self.ks.sample_bounds.borrow().is_empty() {
            self.ks
                .sample_bounds
                .borrow_mut()
                .remove(&(self.db, self.key.to_vec(), self.c.version));
        }
        // Overwriting a field's value leaves the metadata as it was: then
        // only the member is written.
        if !self.existed() || self.c != self.orig {
            let raw = self.c.encode_buf(self.ty, self.expire_ms);
            self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        }
        // A field now expires earlier than any before: active expiration
        // visits the hash then.
        let lower = |c: &Coll| c.hfe.as_ref().filter(|h| c.size > h.persist).map(|h| h.lower);
        if let Some(at) = lower(&self.c).filter(|l| Some(*l) != lower(&self.orig) || !self.existed()) {
            hash::stage_repair_at(self.ks, &mut self.b, self.db, self.key, &self.c, at);
        }
        Ok((true, self.b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touched_set_comes_back_empty_and_a_big_map_is_not_kept() {
        SPARE.with(|s| s.borrow_mut().clear());
        {
            let mut p = Pooled::take();
            p.get().insert(b"a", None);
            p.get().insert(b"b", Some((0, Val::from_slice(b"v"))));
            assert!(p.get().find(b"b").is_some());
        }
        assert_eq!(SPARE.with(|s| s.borrow().len()), 1);
        let mut p = Pooled::take();
        assert_eq!(SPARE.with(|s| s.borrow().len()), 0, "the spare was taken");
        assert!(p.get().find(b"a").is_none() && p.get().find(b"b").is_none(), "it comes back empty");
        for i in 0..500u32 {
            p.get().insert(&i.to_be_bytes(), None);
        }
        assert!(p.get().many.capacity() > 64);
        drop(p);
        let mut p = Pooled::take();
        assert_eq!(p.get().many.capacity(), 0, "a big command's map is dropped");
        assert!(p.get().find(&7u32.to_be_bytes()).is_none());
        // Nested writers (SMOVE's two) each hold their own.
        let mut q = Pooled::take();
        q.get().insert(b"x", None);
        assert!(p.get().find(b"x").is_none());
    }
}
