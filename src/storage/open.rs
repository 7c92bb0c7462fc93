//! Opening the databases: the one database (`dir/db`) with every shard's
//! families, or (`StoreOptions::split`) that database for the default
//! family and a database per shard (`dir/shard-<i>`) for its families, so
//! that no shard's write waits in another's WAL or write queue (issue 35,
//! item 0; tuning.md, "Two shards' writes"). Records written under the
//! other layout or shard count move to their families first, across
//! databases when they must (`move_out`).

use std::path::{Path, PathBuf};

use rocksdb::{Cache, ColumnFamilyDescriptor, Options, WriteBatch, DB};

use super::families::{cf_name, home_of, shard_cf_names, stored_shards, sub_cf_name, LAYOUT, LAYOUT_RECORD, SHARDS_RECORD};
use super::{gc, keys, options, redo, wtier, Engine, StorageError, StoreOptions};
use crate::slot::shard_of_slot;

/// How many records a move carries per round.
const MOVE_BATCH: usize = 4096;

/// Each shard family's compaction filter slot, and what each meta
/// family's filter found (`gc`).
type Slots = Vec<(String, gc::Slot)>;
type Founds = Vec<(String, gc::Found)>;

/// What opening found and made.
pub(super) struct Opened {
    /// The first holds the default family; in the split layout shard `i`'s
    /// database follows at `i + 1`.
    pub dbs: Vec<DB>,
    pub homes: Vec<usize>,
    pub gc_slots: Slots,
    pub gc_found: Founds,
    pub tier_starts: Vec<wtier::Replayed>,
    /// Each database's directory (its write tier logs live in it).
    pub db_dirs: Vec<PathBuf>,
}

/// Shard `i`'s database directory in the split layout.
fn shard_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("shard-{i}"))
}

/// The shard databases in `dir` (by index), after removing what an
/// interrupted drop left.
fn shard_dbs_in(dir: &Path) -> Vec<usize> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("shard-") && name.ends_with(".dropped") {
            let _ = std::fs::remove_dir_all(e.path());
            continue;
        }
        if let Some(i) = name.strip_prefix("shard-").and_then(|n| n.parse::<usize>().ok()) {
            if e.path().join("CURRENT").exists() {
                found.push(i);
            }
        }
    }
    found.sort_unstable();
    found
}

/// Closes a shard database and removes it (renamed first, so a crash in
/// the middle leaves a name `shard_dbs_in` clears, not half a database).
fn drop_shard_db(db: DB, dir: &Path, i: usize) -> Result<(), StorageError> {
    drop(db);
    let path = shard_dir(dir, i);
    let gone = dir.join(format!("shard-{i}.dropped"));
    let io = |e: std::io::Error| StorageError(format!("{}: {e}", path.display()));
    std::fs::rename(&path, &gone).map_err(io)?;
    std::fs::remove_dir_all(&gone).map_err(io)
}

/// The families of `names` with their options: a compaction filter per
/// shard family when `gc` (its slot and, for meta families, what it
/// found), the write buffer size for logs and the default family.
fn descriptors(cache: &Cache, opts: &StoreOptions, names: &[String], gc: Option<(&Slots, &Founds)>) -> Vec<ColumnFamilyDescriptor> {
    names
        .iter()
        .map(|n| {
            // The default family and the logs get the shards' write
            // buffer size. RocksDB resumes writes after a no-space error
            // only once the largest write buffer of any family is free on
            // disk, and rust-rocksdb opens an unnamed default family with
            // RocksDB's 64 MB: a 96 MB disk with 24 MB freed refused
            // writes forever (tests/full_disk.rs).
            if n == "default" || n.ends_with("-log") {
                let mut o = Options::default();
                o.set_write_buffer_size(opts.write_buffer_bytes);
                return ColumnFamilyDescriptor::new(n, o);
            }
            let filter = gc.and_then(|(slots, found)| {
                let slot = slots.iter().find(|(m, _)| m == n)?.1.clone();
                let family = match found.iter().find(|(m, _)| m == n) {
                    Some((_, f)) => gc::Family::Meta(f.clone()),
                    None => gc::Family::Members,
                };
                Some((slot, family))
            });
            ColumnFamilyDescriptor::new(n, options::cf_options(cache, opts, filter))
        })
        .collect()
}

/// The bytes of the write-ahead log files in the database at `path`.
fn wal_bytes(path: &Path) -> u64 {
    let Ok(dir) = std::fs::read_dir(path) else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Opens the database at `path` with the families `names`. Its log
/// replays into memtables that hold all of it: `avoid_flush_during_recovery`
/// still flushes a memtable that fills, and on a nearly full disk that
/// flush failed the start for lack of space (tests/full_disk.rs: 8 MB
/// free, 4 MB write buffers). So with more log than a write buffer, the
/// families open with buffers of twice the log (a memtable entry costs more
/// than its log record) and get their own size back once open; the
/// memtables then flush at their next write, when the disk guard lets one
/// through.
fn open_db(
    db_opts: &Options,
    cache: &Cache,
    opts: &StoreOptions,
    path: &Path,
    names: &[String],
    gc: Option<(&Slots, &Founds)>,
) -> Result<DB, StorageError> {
    let wal = wal_bytes(path);
    if wal <= opts.write_buffer_bytes as u64 {
        return Ok(DB::open_cf_descriptors(db_opts, path, descriptors(cache, opts, names, gc))?);
    }
    let mut roomy = opts.clone();
    roomy.write_buffer_bytes = usize::try_from(wal.saturating_mul(2)).unwrap_or(usize::MAX);
    let db = DB::open_cf_descriptors(db_opts, path, descriptors(cache, &roomy, names, gc))?;
    let size = opts.write_buffer_bytes.to_string();
    for n in names {
        if let Some(cf) = db.cf_handle(n) {
            db.set_options_cf(&cf, &[("write_buffer_size", size.as_str())])?;
        }
    }
    Ok(db)
}

/// Every shard family gets a compaction filter; each reads the meta
/// family of its shard (`Engine::enable_gc`). The meta families hand the
/// long-expired keys they meet to their shard (`gc_found`).
fn gc_for(names: &[String]) -> (Slots, Founds) {
    let found = names
        .iter()
        .filter(|n| !n.ends_with("-sub") && !n.ends_with("-log") && *n != "default")
        .map(|n| (n.clone(), gc::Found::default()))
        .collect();
    let slots = names
        .iter()
        .filter(|n| !n.ends_with("-log") && *n != "default")
        .map(|n| (n.clone(), gc::Slot::default()))
        .collect();
    (slots, found)
}

/// The one database with every shard's families (the layout so far).
pub(super) fn open_shared(db_opts: &Options, cache: &Cache, opts: &StoreOptions) -> Result<Opened, StorageError> {
    let path = opts.dir.join("db");
    let existing = DB::list_cf(db_opts, &path).unwrap_or_default();
    let logs = wtier::logs(&existing);
    let mut names: Vec<String> = existing.into_iter().filter(|n| n != "default" && !n.ends_with("-log")).collect();
    let same_shards = names.len() == 2 * opts.shards && shard_cf_names(opts.shards).all(|n| names.contains(&n));
    for n in shard_cf_names(opts.shards) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let (gc_slots, gc_found) = gc_for(&names);
    let mut all = names.clone();
    all.push("default".into());
    all.extend(logs.iter().cloned());
    let mut db = open_db(db_opts, cache, opts, &path, &all, Some((&gc_slots, &gc_found)))?;
    // What the write tier's logs hold past what the families persisted
    // goes back first, with the shard count it was written with (the log
    // files once writes over several databases are whole, as in
    // `open_split`).
    wtier::replay_all(&db, &logs)?;
    // Records a split layout left in shard databases come back here, once
    // the writes over several of them a crash cut short are whole.
    let mut left = Vec::new();
    for i in shard_dbs_in(&opts.dir) {
        left.push((i, open_to_drop(db_opts, cache, opts, i)?));
    }
    let mut all: Vec<(usize, &DB)> = vec![(0, &db)];
    all.extend(left.iter().map(|(i, d)| (i + 1, d)));
    redo::recover(&all)?;
    drop(all);
    let tier_starts = wtier::replay_files(&db, &path, opts.tier_on() && same_shards)?;
    for (i, sdb) in &left {
        wtier::replay_files(sdb, &shard_dir(&opts.dir, *i), false)?;
    }
    for (i, sdb) in left {
        let sources = shard_families_at(db_opts, &shard_dir(&opts.dir, i));
        move_out(&sdb, &sources, &|_| Some(&db), opts.shards)?;
        drop_shard_db(sdb, &opts.dir, i)?;
    }
    reshard(&db, &names, opts.shards)?;
    let wanted: Vec<String> = shard_cf_names(opts.shards).collect();
    for stale in names.iter().chain(&logs).filter(|n| !wanted.contains(n)) {
        db.drop_cf(stale)?;
    }
    Ok(Opened {
        dbs: vec![db],
        homes: vec![0; opts.shards],
        gc_slots,
        gc_found,
        tier_starts,
        db_dirs: vec![path],
    })
}

/// The default family in `dir/db` and each shard's families in a
/// database of its own.
pub(super) fn open_split(db_opts: &Options, cache: &Cache, opts: &StoreOptions) -> Result<Opened, StorageError> {
    let path = opts.dir.join("db");
    let existing = DB::list_cf(db_opts, &path).unwrap_or_default();
    // Families a shared layout left in the main database: replayed (its
    // logs), moved out and dropped; they get no compaction filter, whose
    // meta family would be in another database.
    let mut main_names: Vec<String> = existing.into_iter().filter(|n| n != "default").collect();
    let main_logs: Vec<String> = main_names.iter().filter(|n| n.ends_with("-log")).cloned().collect();
    main_names.push("default".into());
    let mut main = open_db(db_opts, cache, opts, &path, &main_names, None)?;
    main_names.pop();
    let stored = stored_shards(&main)?;
    let same_shards = stored == Some(opts.shards) && main_names.is_empty();
    wtier::replay_all(&main, &main_logs)?;
    let names: Vec<String> = shard_cf_names(opts.shards).collect();
    let (gc_slots, gc_found) = gc_for(&names);
    let mut shard_dbs = Vec::with_capacity(opts.shards);
    for i in 0..opts.shards {
        let dir = shard_dir(&opts.dir, i);
        let existing = DB::list_cf(db_opts, &dir).unwrap_or_default();
        let logs = wtier::logs(&existing);
        let mut all: Vec<String> = existing.into_iter().filter(|n| n != "default" && !n.ends_with("-log")).collect();
        for n in [cf_name(i), sub_cf_name(i)] {
            if !all.contains(&n) {
                all.push(n);
            }
        }
        all.push("default".into());
        all.extend(logs.iter().cloned());
        let mut db = open_db(db_opts, cache, opts, &dir, &all, Some((&gc_slots, &gc_found)))?;
        wtier::replay_all(&db, &logs)?;
        for n in &logs {
            db.drop_cf(n)?;
        }
        shard_dbs.push(db);
    }
    let mut extra = Vec::new();
    for i in shard_dbs_in(&opts.dir).into_iter().filter(|&i| i >= opts.shards) {
        extra.push((i, open_to_drop(db_opts, cache, opts, i)?));
    }
    // Writes over several databases a crash cut short are made whole
    // before any record moves (their batches name the families where
    // they were).
    let mut all: Vec<(usize, &DB)> = vec![(0, &main)];
    all.extend(shard_dbs.iter().enumerate().map(|(i, d)| (i + 1, d)));
    all.extend(extra.iter().map(|(i, d)| (i + 1, d)));
    redo::recover(&all)?;
    drop(all);
    // Only then the write tiers' log files: a batch written again above
    // carries its direct record, which takes its place among the log's
    // records by position. Loaded into memory before it, a shard's older
    // records drained over the batch (tests/crash_atomic.rs: a torn MSET,
    // whose later part a kill took from one shard's WAL and the next open
    // wrote again from the intent database's copy).
    // (Shared-layout logs: their shards' records move out below.)
    wtier::replay_files(&main, &path, false)?;
    let mut tier_starts = Vec::new();
    for (i, db) in shard_dbs.iter().enumerate() {
        tier_starts.extend(wtier::replay_files(db, &shard_dir(&opts.dir, i), opts.tier_on() && same_shards)?);
    }
    for (i, db) in &extra {
        wtier::replay_files(db, &shard_dir(&opts.dir, *i), false)?;
    }
    let home = |s: usize| shard_dbs.get(s);
    // The shared layout's families, then shard databases past the shard
    // count, then (when the count changed) each shard's own.
    // (The logs were emptied by their replay; their keys are positions,
    // not records.)
    let old_families: Vec<String> = main_names.iter().filter(|n| !n.ends_with("-log")).cloned().collect();
    move_out(&main, &old_families, &home, opts.shards)?;
    for n in &main_names {
        main.drop_cf(n)?;
    }
    for (i, sdb) in extra {
        let sources = shard_families_at(db_opts, &shard_dir(&opts.dir, i));
        move_out(&sdb, &sources, &home, opts.shards)?;
        drop_shard_db(sdb, &opts.dir, i)?;
    }
    if stored.is_some_and(|s| s != opts.shards) {
        for (i, db) in shard_dbs.iter().enumerate() {
            move_out(db, &shard_families_at(db_opts, &shard_dir(&opts.dir, i)), &home, opts.shards)?;
        }
    }
    let mut db_dirs = vec![path];
    db_dirs.extend((0..opts.shards).map(|i| shard_dir(&opts.dir, i)));
    let mut dbs = vec![main];
    dbs.extend(shard_dbs);
    Ok(Opened {
        dbs,
        homes: (1..=opts.shards).collect(),
        gc_slots,
        gc_found,
        tier_starts,
        db_dirs,
    })
}

/// A shard database of a layout or shard count no longer used, opened to
/// move its records out (its old log family replayed into it; its log
/// files are replayed by the caller, after `redo::recover`).
fn open_to_drop(db_opts: &Options, cache: &Cache, opts: &StoreOptions, i: usize) -> Result<DB, StorageError> {
    let dir = shard_dir(&opts.dir, i);
    let mut names = DB::list_cf(db_opts, &dir).unwrap_or_default();
    if !names.iter().any(|n| n == "default") {
        names.push("default".into());
    }
    let db = open_db(db_opts, cache, opts, &dir, &names, None)?;
    wtier::replay_all(&db, &wtier::logs(&names))?;
    Ok(db)
}

/// The shard families (not the default family, not logs) of the
/// database in `dir`.
fn shard_families_at(db_opts: &Options, dir: &Path) -> Vec<String> {
    DB::list_cf(db_opts, dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != "default" && !n.ends_with("-log"))
        .collect()
}

/// Moves every record of `src`'s families `names` whose home (by its
/// slot's owner among `shards`, and its tag) is another family: into
/// `home(owner)`'s family. Within one database a record's put and delete
/// are one batch. Across databases the puts are written and synced before
/// the deletes, so a crash in between leaves a copy in both places, which
/// the next open moves again (no writes run before it ends). Records with
/// no slot (the write tier's marks) stay, and go with their family.
pub(super) fn move_out<'a>(
    src: &DB,
    names: &[String],
    home: &dyn Fn(usize) -> Option<&'a DB>,
    shards: usize,
) -> Result<usize, StorageError> {
    let mut moved = 0usize;
    for name in names {
        let Some(from) = src.cf_handle(name) else { continue };
        let mut it = src.raw_iterator_cf(from);
        it.seek_to_first();
        let mut local = WriteBatch::default();
        let mut dels = WriteBatch::default();
        let mut puts: Vec<(&DB, WriteBatch)> = Vec::new();
        let mut pending = 0;
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
            if let Some(slot) = keys::slot_of_record(k) {
                let owner = shard_of_slot(slot, shards);
                let target = home_of(k, owner);
                if let Some(to_db) = home(owner) {
                    let same_db = std::ptr::eq(to_db, src);
                    if !(same_db && &target == name) {
                        if let Some(to) = to_db.cf_handle(&target) {
                            if same_db {
                                local.put_cf(to, k, v);
                                local.delete_cf(from, k);
                            } else {
                                match puts.iter_mut().find(|(d, _)| std::ptr::eq(*d, to_db)) {
                                    Some((_, b)) => b.put_cf(to, k, v),
                                    None => {
                                        let mut b = WriteBatch::default();
                                        b.put_cf(to, k, v);
                                        puts.push((to_db, b));
                                    }
                                }
                                dels.delete_cf(from, k);
                            }
                            moved += 1;
                            pending += 1;
                        }
                    }
                }
            }
            if pending >= MOVE_BATCH {
                flush_moves(src, &mut local, &mut puts, &mut dels)?;
                pending = 0;
            }
            it.next();
        }
        it.status()?;
        flush_moves(src, &mut local, &mut puts, &mut dels)?;
    }
    if moved > 0 {
        tracing::info!(moved, "records moved to their shards' families");
    }
    Ok(moved)
}

fn flush_moves(src: &DB, local: &mut WriteBatch, puts: &mut Vec<(&DB, WriteBatch)>, dels: &mut WriteBatch) -> Result<(), StorageError> {
    if !local.is_empty() {
        src.write(std::mem::take(local))?;
    }
    for (db, b) in puts.drain(..) {
        db.write(b)?;
        db.flush_wal(true)?;
    }
    if !dels.is_empty() {
        src.write(std::mem::take(dels))?;
    }
    Ok(())
}

impl Engine {
    /// Records the shard count and layout in the default family, once the
    /// records are where they belong.
    pub(super) fn record_layout(main: &DB, shards: usize) -> Result<(), StorageError> {
        main.put(SHARDS_RECORD, shards.to_string())?;
        main.put(LAYOUT_RECORD, LAYOUT)?;
        main.flush_wal(true)?;
        Ok(())
    }
}

/// Moves every record whose slot now belongs to another shard, or that
/// was written before members had a family of their own, within the one
/// database ([`move_out`]). Safe to rerun after a crash: a record's
/// target depends only on its slot and tag.
pub(super) fn reshard(db: &DB, names: &[String], shards: usize) -> Result<(), StorageError> {
    let stored = stored_shards(db)?;
    let layout = db.get(LAYOUT_RECORD)?;
    if stored.is_none() || (stored == Some(shards) && layout.as_deref() == Some(LAYOUT.as_bytes())) {
        return Ok(());
    }
    tracing::info!(from = ?stored, to = shards, "moving records to their column families (shard count or layout changed)");
    move_out(db, names, &|_| Some(db), shards)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_opts;
    use super::*;

    fn open(dir: &Path, shards: usize, split: bool) -> Engine {
        let mut o = test_opts(dir, shards, 1 << 20);
        o.split = split;
        Engine::open(&o).unwrap()
    }

    /// Where `key` is: (database index, family) of every copy.
    fn where_is(e: &Engine, key: &[u8]) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (d, db) in e.dbs.iter().enumerate() {
            for n in shard_cf_names(8) {
                if let Some(cf) = db.db.cf_handle(&n) {
                    if db.db.get_cf(cf, key).unwrap().is_some() {
                        out.push((d, n));
                    }
                }
            }
        }
        out
    }

    fn records() -> Vec<Vec<u8>> {
        (0..200)
            .map(|i| format!("key:{i}").into_bytes())
            .flat_map(|n| [keys::meta_key(0, &n), keys::ttl_key(99, 0, &n), keys::sub_key(0, &n, 1, b"m")])
            .collect()
    }

    /// Each record in its home family, as its shard's store writes it.
    fn write_all(e: &Engine, shards: usize, recs: &[Vec<u8>]) {
        for r in recs {
            let owner = shard_of_slot(keys::slot_of_record(r).unwrap(), shards);
            let db = &e.home(owner).db;
            db.put_cf(db.cf_handle(&home_of(r, owner)).unwrap(), r, b"v").unwrap();
        }
        e.flush_written().unwrap();
    }

    fn assert_home(e: &Engine, shards: usize, split: bool, recs: &[Vec<u8>]) {
        for r in recs {
            let owner = shard_of_slot(keys::slot_of_record(r).unwrap(), shards);
            let db = if split { owner + 1 } else { 0 };
            assert_eq!(where_is(e, r), vec![(db, home_of(r, owner))], "split {split}, {shards} shards");
        }
    }

    #[test]
    fn a_split_layout_keeps_each_shard_in_its_own_database() {
        let dir = tempfile::tempdir().unwrap();
        let recs = records();
        {
            let e = open(dir.path(), 2, true);
            assert_eq!(e.dbs.len(), 3);
            write_all(&e, 2, &recs);
            assert_home(&e, 2, true, &recs);
        }
        let e: &'static Engine = Box::leak(Box::new(open(dir.path(), 2, true)));
        assert_home(e, 2, true, &recs);
        assert!(shard_dir(dir.path(), 0).join("CURRENT").exists() && shard_dir(dir.path(), 1).join("CURRENT").exists());
        {
            let s = e.shard(1).unwrap();
            let mut seen = 0;
            let (lo, hi) = keys::meta_db_range(0);
            s.scan(&lo, &hi, |_, _| {
                seen += 1;
                true
            })
            .unwrap();
            assert!(seen > 0 && seen < 200, "shard 1 sees only its own keys: {seen}");
            // Its writes go to its own database.
            let k = (0..1000)
                .map(|i| keys::meta_key(0, format!("new:{i}").as_bytes()))
                .find(|k| shard_of_slot(keys::slot_of_record(k).unwrap(), 2) == 1)
                .unwrap();
            let mut b = s.batch();
            s.put(&mut b, &k, b"v");
            s.write(b).unwrap();
            assert_eq!(where_is(e, &k), vec![(2, cf_name(1))]);
        }
    }

    #[test]
    fn records_move_between_layouts_and_shard_counts() {
        let dir = tempfile::tempdir().unwrap();
        let recs = records();
        write_all(&open(dir.path(), 2, false), 2, &recs);
        for (shards, split) in [(3, true), (2, true), (4, true), (1, false), (2, true), (3, false)] {
            let e = open(dir.path(), shards, split);
            assert_home(&e, shards, split, &recs);
            let dbs = shard_dbs_in(dir.path());
            if split {
                assert_eq!(dbs, (0..shards).collect::<Vec<_>>(), "no shard database past the count");
                let main = DB::list_cf(&Options::default(), dir.path().join("db")).unwrap();
                assert_eq!(main, vec!["default".to_string()], "the main database keeps the default family only");
            } else {
                assert!(dbs.is_empty(), "shard databases gone: {dbs:?}");
            }
        }
    }
}
