//! Redo records: one write over several databases (the split layout's
//! transaction over several shards), all or nothing across a crash
//! without a shared WAL.
//!
//! Each database's batch carries, in its default family, a redo record of
//! the whole write: every database's batch. A database's WAL comes back
//! as a prefix after a crash, so a database without the record lost its
//! batch and everything it wrote after it; at the next open the batch is
//! written there again from another database's copy ([`recover`]).
//!
//! The copies go once every database has synced the write (the
//! every-second tick, [`Engine::redo_tick`]), in three steps a tick apart,
//! each after a sync: the first database of the write (the anchor)
//! replaces its copy with a "done" record; then the others delete theirs;
//! then the anchor deletes the done record. So while any copy is left,
//! either the anchor has its copy (the databases without one lost their
//! batch) or it has the done record (the write is whole; the copies left
//! are stale).
//!
//! Record: `basalt:redo:` id(8,BE) -> count(2,BE), then per database its
//! index(2,BE), length(4,BE) and batch representation. Done record:
//! `basalt:redone:` id(8,BE) -> empty.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rocksdb::{WriteBatch, DB};

use super::{Engine, StorageError};

const REDO: &[u8] = b"basalt:redo:";
const DONE: &[u8] = b"basalt:redone:";

fn key(prefix: &[u8], id: u64) -> Vec<u8> {
    [prefix, &id.to_be_bytes()].concat()
}

/// `parts`' redo record value.
pub(super) fn encode(parts: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + parts.iter().map(|(_, r)| 6 + r.len()).sum::<usize>());
    out.extend_from_slice(&(parts.len() as u16).to_be_bytes());
    for (d, rep) in parts {
        out.extend_from_slice(&(*d as u16).to_be_bytes());
        out.extend_from_slice(&(rep.len() as u32).to_be_bytes());
        out.extend_from_slice(rep);
    }
    out
}

/// A redo record value's parts; None if it is cut short or malformed.
pub(super) fn decode(b: &[u8]) -> Option<Vec<(usize, Vec<u8>)>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let h = b.get(at..at.checked_add(n)?)?;
        at += n;
        Some(h)
    };
    let count = u16::from_be_bytes(take(2)?.try_into().ok()?);
    let mut parts = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let d = u16::from_be_bytes(take(2)?.try_into().ok()?) as usize;
        let n = u32::from_be_bytes(take(4)?.try_into().ok()?) as usize;
        parts.push((d, take(n)?.to_vec()));
    }
    (at == b.len()).then_some(parts)
}

/// A written redo record on its way out: its id, databases (the anchor
/// first) and how many steps of the cleanup are done.
pub(super) struct Pending {
    id: u64,
    dbs: Vec<usize>,
    step: u8,
}

/// The cleanup queue.
pub(super) type Queue = Mutex<Vec<Pending>>;

impl Engine {
    /// Writes `parts` (database index, batch representation), each in its
    /// database with the redo record; one database: just its batch.
    pub(super) fn write_across(&self, mut parts: Vec<(usize, Vec<u8>)>) -> Result<(), StorageError> {
        parts.sort_by_key(|(d, _)| *d);
        if parts.len() == 1 {
            let (d, rep) = &parts[0];
            return self.write_in(&self.dbs[*d], WriteBatch::from_data(rep));
        }
        let id = self.next_intent_id();
        let redo = encode(&parts);
        let k = key(REDO, id);
        for (d, rep) in &parts {
            let mut wb = WriteBatch::from_data(rep);
            wb.put(&k, &redo);
            // A failure leaves the earlier databases written, with their
            // copies: the next open completes the write.
            self.write_in(&self.dbs[*d], wb)?;
        }
        let mut q = self.redo_queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push(Pending {
            id,
            dbs: parts.iter().map(|(d, _)| *d).collect(),
            step: 0,
        });
        Ok(())
    }

    /// One step of every pending cleanup, after syncing every database
    /// (so the last tick's step is on disk). Called once a second.
    pub fn redo_tick(&self) -> Result<(), StorageError> {
        // Taken out of the queue: a shard that adds to it must not wait
        // for this tick's syncs.
        let mut q = std::mem::take(&mut *self.redo_queue.lock().unwrap_or_else(|e| e.into_inner()));
        if q.is_empty() {
            return Ok(());
        }
        let synced = self.sync_wal();
        if synced.is_err() {
            self.redo_queue.lock().unwrap_or_else(|e| e.into_inner()).append(&mut q);
            return synced;
        }
        let mut per_db: BTreeMap<usize, WriteBatch> = BTreeMap::new();
        for p in q.iter_mut() {
            let anchor = p.dbs[0];
            match p.step {
                0 => {
                    let b = per_db.entry(anchor).or_default();
                    b.delete(key(REDO, p.id));
                    b.put(key(DONE, p.id), b"");
                }
                1 => {
                    for d in &p.dbs[1..] {
                        per_db.entry(*d).or_default().delete(key(REDO, p.id));
                    }
                }
                _ => per_db.entry(anchor).or_default().delete(key(DONE, p.id)),
            }
            p.step += 1;
        }
        let mut written = Ok(());
        for (d, b) in per_db {
            if let Err(e) = self.write_in(&self.dbs[d], b) {
                written = Err(e);
            }
        }
        // A step whose write failed is taken again (each is idempotent).
        if written.is_err() {
            for p in q.iter_mut() {
                p.step -= 1;
            }
        }
        q.retain(|p| p.step < 3);
        self.redo_queue.lock().unwrap_or_else(|e| e.into_inner()).append(&mut q);
        written
    }
}

/// A database's redo records (by id) and done records.
type Found = (BTreeMap<u64, Vec<u8>>, Vec<u64>);

/// The redo and done records of the default family of `db`.
fn records_in(db: &DB) -> Result<Found, StorageError> {
    let mut redo = BTreeMap::new();
    let mut done = Vec::new();
    let id = |k: &[u8], p: &[u8]| k.get(p.len()..).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes);
    for (prefix, is_redo) in [(REDO, true), (DONE, false)] {
        let mut it = db.raw_iterator();
        it.seek(prefix);
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
            if !k.starts_with(prefix) {
                break;
            }
            if let Some(id) = id(k, prefix) {
                if is_redo {
                    redo.insert(id, v.to_vec());
                } else {
                    done.push(id);
                }
            }
            it.next();
        }
        it.status()?;
    }
    Ok((redo, done))
}

/// At open, before anything reads the shards' families or moves records:
/// completes every write over several databases a crash cut short, and
/// removes every redo and done record. `dbs`: (database index, database).
/// Returns how many batches it wrote again.
pub(super) fn recover(dbs: &[(usize, &DB)]) -> Result<usize, StorageError> {
    let mut found = Vec::new();
    for (d, db) in dbs {
        let (redo, done) = records_in(db)?;
        if !redo.is_empty() || !done.is_empty() {
            found.push((*d, redo, done));
        }
    }
    if found.is_empty() {
        return Ok(0);
    }
    let db_of = |d: usize| dbs.iter().find(|(i, _)| *i == d).map(|(_, db)| *db);
    let has = |d: usize, id: u64| found.iter().any(|(i, r, _)| *i == d && r.contains_key(&id));
    let ids: std::collections::BTreeSet<u64> = found.iter().flat_map(|(_, r, _)| r.keys().copied()).collect();
    let mut rewritten = 0;
    for id in ids {
        let Some(parts) = found.iter().find_map(|(_, r, _)| r.get(&id)).and_then(|v| decode(v)) else {
            tracing::error!(id, "unreadable redo record dropped");
            continue;
        };
        let Some(anchor) = parts.first().map(|(d, _)| *d) else { continue };
        let whole = found.iter().any(|(i, _, done)| *i == anchor && done.contains(&id));
        if whole {
            continue;
        }
        for (d, rep) in &parts {
            if has(*d, id) {
                continue;
            }
            let Some(db) = db_of(*d) else {
                return Err(StorageError(format!("redo record {id} names database {d}, which is gone")));
            };
            db.write(WriteBatch::from_data(rep))?;
            rewritten += 1;
        }
    }
    // Every database is whole now. The records go as the tick removes
    // them, each step synced before the next: a crash in between leaves
    // the anchor's done record until the copies are gone.
    let sync_all = || -> Result<(), StorageError> {
        for (_, db) in dbs {
            db.flush_wal(true)?;
        }
        Ok(())
    };
    let write_each = |f: &dyn Fn(usize, &mut WriteBatch)| -> Result<(), StorageError> {
        for (d, db) in dbs {
            let mut b = WriteBatch::default();
            f(*d, &mut b);
            if !b.is_empty() {
                db.write(b)?;
            }
        }
        sync_all()
    };
    sync_all()?;
    let anchors: Vec<(u64, usize)> = found
        .iter()
        .flat_map(|(_, r, _)| r.iter())
        .filter_map(|(id, v)| Some((*id, decode(v)?.first()?.0)))
        .collect();
    write_each(&|d, b| {
        for (id, _) in anchors.iter().filter(|(_, a)| *a == d) {
            b.delete(key(REDO, *id));
            b.put(key(DONE, *id), b"");
        }
    })?;
    write_each(&|d, b| {
        if let Some((_, redo, _)) = found.iter().find(|(i, _, _)| *i == d) {
            for id in redo.keys() {
                b.delete(key(REDO, *id));
            }
        }
    })?;
    write_each(&|d, b| {
        for (id, _) in anchors.iter().filter(|(_, a)| *a == d) {
            b.delete(key(DONE, *id));
        }
        if let Some((_, _, done)) = found.iter().find(|(i, _, _)| *i == d) {
            for id in done {
                b.delete(key(DONE, *id));
            }
        }
    })?;
    if rewritten > 0 {
        tracing::info!(
            batches = rewritten,
            "completed writes over several databases cut short by the last stop"
        );
    }
    Ok(rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redo_values_round_trip_and_refuse_bad_bytes() {
        let parts = vec![(1, b"abc".to_vec()), (3, vec![]), (2, vec![7; 300])];
        let v = encode(&parts);
        assert_eq!(decode(&v), Some(parts));
        assert_eq!(decode(&v[..v.len() - 1]), None);
        assert_eq!(decode(&[v.as_slice(), b"x"].concat()), None);
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0, 1, 0, 1, 255, 255, 255, 255]), None);
    }
}

#[cfg(test)]
mod split_tests {
    use std::path::Path;

    use super::super::{test_opts, Engine};
    use super::*;
    use crate::storage::families::{cf_name, home_of};
    use crate::storage::keys;

    fn open(dir: &Path) -> Engine {
        let mut o = test_opts(dir, 2, 1 << 20);
        o.split = true;
        Engine::open(&o).unwrap()
    }

    /// A key of shard `shard` (of 2).
    fn key_of(shard: usize, tag: &str) -> Vec<u8> {
        (0..1000)
            .map(|i| keys::meta_key(0, format!("{tag}:{i}").as_bytes()))
            .find(|k| crate::slot::shard_of_slot(keys::slot_of_record(k).unwrap(), 2) == shard)
            .unwrap()
    }

    fn put_rep(e: &Engine, shard: usize, k: &[u8], v: &[u8]) -> Vec<u8> {
        let db = &e.dbs[shard + 1].db;
        let mut b = WriteBatch::default();
        b.put_cf(db.cf_handle(&home_of(k, shard)).unwrap(), k, v);
        b.data().to_vec()
    }

    fn get(e: &Engine, shard: usize, k: &[u8]) -> Option<Vec<u8>> {
        let db = &e.dbs[shard + 1].db;
        db.get_cf(db.cf_handle(&cf_name(shard)).unwrap(), k).unwrap()
    }

    fn copies(e: &Engine) -> usize {
        e.dbs
            .iter()
            .map(|d| records_in(&d.db).map(|(r, done)| r.len() + done.len()).unwrap())
            .sum()
    }

    #[test]
    fn a_write_over_two_databases_lands_whole_and_its_records_go_in_three_ticks() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        let (a, b) = (key_of(0, "a"), key_of(1, "b"));
        e.write_across(vec![(2, put_rep(&e, 1, &b, b"vb")), (1, put_rep(&e, 0, &a, b"va"))])
            .unwrap();
        assert_eq!(get(&e, 0, &a).as_deref(), Some(&b"va"[..]));
        assert_eq!(get(&e, 1, &b).as_deref(), Some(&b"vb"[..]));
        assert_eq!(copies(&e), 2);
        e.redo_tick().unwrap();
        // The anchor (the lower index) holds the done record instead.
        let (r1, d1) = records_in(&e.dbs[1].db).unwrap();
        assert!(r1.is_empty() && d1.len() == 1);
        e.redo_tick().unwrap();
        e.redo_tick().unwrap();
        assert_eq!(copies(&e), 0);
        e.redo_tick().unwrap();
        // One database: its batch alone.
        e.write_across(vec![(1, put_rep(&e, 0, &a, b"again"))]).unwrap();
        assert_eq!(copies(&e), 0);
    }

    #[test]
    fn an_open_completes_a_cut_short_write_and_leaves_a_whole_one_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (key_of(0, "a"), key_of(1, "b"));
        let (a2, b2) = (key_of(0, "a2"), key_of(1, "b2"));
        {
            let e = open(dir.path());
            // Write 7 reached only the second database (the anchor lost it).
            let parts = vec![(1, put_rep(&e, 0, &a, b"7a")), (2, put_rep(&e, 1, &b, b"7b"))];
            let mut wb = WriteBatch::from_data(&parts[1].1);
            wb.put(key(REDO, 7), encode(&parts));
            e.dbs[2].db.write(wb).unwrap();
            // Write 8 is whole: the anchor has its done record, the other
            // database a stale copy; a2 was written since, over it.
            let parts = vec![(1, put_rep(&e, 0, &a2, b"8a")), (2, put_rep(&e, 1, &b2, b"8b"))];
            e.dbs[1]
                .db
                .put_cf(e.dbs[1].db.cf_handle(&cf_name(0)).unwrap(), &a2, b"later")
                .unwrap();
            e.dbs[1].db.put(key(DONE, 8), b"").unwrap();
            e.dbs[2].db.put(key(REDO, 8), encode(&parts)).unwrap();
            for d in &e.dbs {
                d.db.flush_wal(true).unwrap();
            }
        }
        let e = open(dir.path());
        assert_eq!(get(&e, 0, &a).as_deref(), Some(&b"7a"[..]), "the lost batch is written again");
        assert_eq!(get(&e, 1, &b).as_deref(), Some(&b"7b"[..]));
        assert_eq!(
            get(&e, 0, &a2).as_deref(),
            Some(&b"later"[..]),
            "a whole write is not written again"
        );
        assert_eq!(get(&e, 1, &b2), None, "a stale copy does not write its batch");
        assert_eq!(copies(&e), 0, "every record removed");
    }

    /// With the write tier on, a shard's part of a write over two
    /// databases carries its direct record (its log position). A kill
    /// took the later of two such writes from the shard's WAL but not
    /// from the intent database's: the open writes it again, and the
    /// tier's log replay must see it. Replayed before it, the earlier
    /// write's direct record was loaded into the tier's memory and read
    /// (and drained) over the later one: a torn MSET in
    /// tests/crash_atomic.rs.
    #[test]
    fn a_batch_written_again_at_open_is_replayed_after_the_tier_records_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let k = key_of(0, "k");
        let opts = |dir: &Path| {
            let mut o = test_opts(dir, 2, 1 << 20);
            o.split = true;
            o.write_tier = 100;
            o
        };
        {
            let e = Engine::open(&opts(dir.path())).unwrap();
            let db = &e.dbs[1].db;
            let meta = db.cf_handle(&cf_name(0)).unwrap();
            // The shard's part at log position `pos`, with its copy.
            let part = |pos: u64, v: &[u8]| {
                let own = put_rep(&e, 0, &k, v);
                let mut wb = WriteBatch::from_data(&own);
                wb.put_cf(meta, crate::storage::wtier::direct_key(pos), &own);
                wb.data().to_vec()
            };
            let intent = |n: u8| {
                let mut wb = WriteBatch::default();
                wb.put([b"intent".as_slice(), &[n]].concat(), b"part");
                wb.data().to_vec()
            };
            e.write_across(vec![(0, intent(1)), (1, part(1, b"old"))]).unwrap();
            // The second write reached only the intent database.
            let parts = vec![(0, intent(2)), (1, part(2, b"new"))];
            let mut wb = WriteBatch::from_data(&parts[0].1);
            wb.put(key(REDO, 1 << 40), encode(&parts));
            e.dbs[0].db.write(wb).unwrap();
            for d in &e.dbs {
                d.db.flush_wal(true).unwrap();
            }
        }
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts(dir.path())).unwrap()));
        assert_eq!(get(e, 0, &k).as_deref(), Some(&b"new"[..]), "written again");
        let s = e.shard(0).unwrap();
        assert_eq!(
            crate::storage::testkit::get(&s, &k).as_deref(),
            Some(&b"new"[..]),
            "the tier's memory holds the later write, not the earlier"
        );
        s.write_back().unwrap();
        assert_eq!(get(e, 0, &k).as_deref(), Some(&b"new"[..]), "and drains it last");
    }
}
