//! The write tier's log records: parsing one (a WriteBatch
//! representation), and writing at startup what a shard's log holds past
//! its families' persisted marks (`replay_files`; `replay` for the log
//! families runs before issue 52 left).

use std::borrow::Cow;

use bytes::Bytes;
use rocksdb::{WriteBatch, WriteOptions, DB};

use super::{direct_key, log_cf_name, MARK};
use crate::storage::rep::{cf_id, varint, CF_DELETE, CF_PUT, CF_RANGE, DELETE, PUT, RANGE};
use crate::storage::StorageError;

/// The records of a WriteBatch representation (after its 12-byte header):
/// (key, value or None for a delete). None if it holds anything else.
pub(super) fn records(rep: &Bytes) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let mut out = Vec::new();
    let mut i = 12;
    let b = rep.as_ref();
    let slice = |i: &mut usize, n: u32| -> Option<Bytes> {
        let end = i.checked_add(n as usize)?;
        (end <= b.len()).then(|| {
            let s = rep.slice(*i..end);
            *i = end;
            s
        })
    };
    let mut one = |i: &mut usize| -> Option<()> {
        let tag = *b.get(*i)?;
        *i += 1;
        match tag {
            // Column-family value / deletion.
            CF_PUT | CF_DELETE => {
                varint(b, i)?;
                let kl = varint(b, i)?;
                let k = slice(i, kl)?;
                let v = if tag == CF_PUT {
                    let vl = varint(b, i)?;
                    Some(slice(i, vl)?)
                } else {
                    None
                };
                out.push((k, v));
                Some(())
            }
            _ => None,
        }
    };
    while i < b.len() {
        one(&mut i)?;
    }
    Some(out)
}

/// Calls `f` with each put or delete (key, value or None) of a WriteBatch
/// representation of column-family records, passing over range deletes
/// and the default family's records (intents: neither meta nor member
/// records); false if it holds anything else (or is cut short).
pub(in crate::storage) fn each_record(rep: &[u8], mut f: impl FnMut(&[u8], Option<&[u8]>)) -> bool {
    visit(rep, true, |op| match op {
        Op::Record(k, v) => f(k, v),
        Op::Range(..) => {}
    })
}

/// [`each_record`] of a batch of column-family puts and deletes only:
/// false if it holds anything else.
pub(super) fn each_put(rep: &[u8], mut f: impl FnMut(&[u8], Option<&[u8]>)) -> bool {
    visit(rep, false, |op| {
        if let Op::Record(k, v) = op {
            f(k, v)
        }
    })
}

/// A column-family record of a batch ([`each_op`]).
pub(super) enum Op<'a> {
    /// A put (key, value) or a delete (key, None).
    Record(&'a [u8], Option<&'a [u8]>),
    /// A range delete, `[from, to)`.
    Range(&'a [u8], &'a [u8]),
}

/// Calls `f` with each column-family record of a WriteBatch
/// representation, range deletes too, passing over the default family's
/// records; false if it holds anything else (or is cut short).
pub(super) fn each_op<'a>(rep: &'a [u8], f: impl FnMut(Op<'a>)) -> bool {
    visit(rep, true, f)
}

/// `others`: the default family's records are passed over (else the
/// batch is refused), and so are range deletes' (else refused too).
fn visit<'a>(rep: &'a [u8], others: bool, mut f: impl FnMut(Op<'a>)) -> bool {
    let mut i = 12;
    let slice = |i: &mut usize| -> Option<&'a [u8]> {
        let n = varint(rep, i)? as usize;
        let end = i.checked_add(n).filter(|&e| e <= rep.len())?;
        let s = &rep[*i..end];
        *i = end;
        Some(s)
    };
    let mut one = |i: &mut usize| -> Option<()> {
        let tag = *rep.get(*i)?;
        *i += 1;
        match tag {
            CF_PUT => {
                varint(rep, i)?;
                let k = slice(i)?;
                f(Op::Record(k, Some(slice(i)?)));
            }
            CF_DELETE => {
                varint(rep, i)?;
                f(Op::Record(slice(i)?, None));
            }
            // Column-family range deletion.
            CF_RANGE if others => {
                varint(rep, i)?;
                let from = slice(i)?;
                f(Op::Range(from, slice(i)?));
            }
            // The default family's put, range deletion and deletion.
            PUT | RANGE if others => {
                slice(i)?;
                slice(i)?;
            }
            DELETE if others => {
                slice(i)?;
            }
            _ => return None,
        }
        Some(())
    };
    while i < rep.len() {
        if one(&mut i).is_none() {
            return false;
        }
    }
    true
}

/// A log record's batch without its default-family records (intents, the
/// db map): those went through the WAL and only it says whether they
/// survived; writing one again would bring back an intent another shard's
/// part already deleted. A record it cannot parse is kept whole.
pub(super) fn own_records(rep: &[u8]) -> Cow<'_, [u8]> {
    own_records_past(rep, &[])
}

/// [`own_records`] without the records of the families in `holding` (by
/// id): those whose persisted mark says they hold the batch already.
/// Written again, its records would take such a family back to what it
/// held at the batch's position, under a mark that claims a later one: a
/// replay cut short by a crash after a flush left a family that old, and
/// the next replay, starting past that mark, never brought it forward (a
/// sorted set's score record deleted before its mark came back,
/// tests/crash_atomic.rs).
pub(super) fn own_records_past<'a>(rep: &'a [u8], holding: &[u32]) -> Cow<'a, [u8]> {
    let skip = |i: &mut usize| -> Option<()> {
        let n = varint(rep, i)? as usize;
        *i = i.checked_add(n).filter(|&e| e <= rep.len())?;
        Some(())
    };
    let mut out = Vec::with_capacity(rep.len());
    out.extend_from_slice(&[0; 12]);
    let mut kept = 0u32;
    let mut i = 12;
    while i < rep.len() {
        let start = i;
        let tag = rep[i];
        i += 1;
        let own = match tag {
            // Default family: delete, put, single delete, range delete.
            0x0 | 0x7 => skip(&mut i).map(|_| false),
            0x1 | 0xF => skip(&mut i).and_then(|_| skip(&mut i)).map(|_| false),
            // A family's delete, single delete; put, range delete.
            0x4 | 0x8 => varint(rep, &mut i).and_then(|cf| skip(&mut i).map(|_| !holding.contains(&cf))),
            0x5 | 0xE => varint(rep, &mut i)
                .and_then(|cf| skip(&mut i).map(|_| cf))
                .and_then(|cf| skip(&mut i).map(|_| !holding.contains(&cf))),
            _ => None,
        };
        match own {
            None => return Cow::Borrowed(rep),
            Some(true) => {
                out.extend_from_slice(&rep[start..i]);
                kept += 1;
            }
            Some(false) => {}
        }
    }
    out[8..12].copy_from_slice(&kept.to_le_bytes());
    Cow::Owned(out)
}

/// The write tier's log families an older run left (before issue 52 the
/// log was a family): opened to be replayed and dropped.
pub(in crate::storage) fn logs(existing: &[String]) -> Vec<String> {
    existing.iter().filter(|n| n.ends_with("-log")).cloned().collect()
}

/// [`replay`] of every log family in `logs`, through the WAL; the families
/// are to be dropped after.
pub(in crate::storage) fn replay_all(db: &DB, logs: &[String]) -> Result<(), StorageError> {
    for n in logs {
        let Some(i) = n
            .strip_prefix("shard-")
            .and_then(|r| r.strip_suffix("-log"))
            .and_then(|i| i.parse().ok())
        else {
            continue;
        };
        let records = replay(db, i)?;
        if records > 0 {
            tracing::info!(shard = i, records, "write tier: log family records written again");
        }
    }
    Ok(())
}

/// The direct records ([`super::DIRECT`]) in `meta` past `safe`, by
/// position.
fn direct_records(db: &DB, meta: &rocksdb::ColumnFamily, safe: u64) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
    let mut out = Vec::new();
    let mut it = db.raw_iterator_cf(meta);
    it.seek(direct_key(safe.saturating_add(1)));
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        let Some(pos) = k
            .strip_prefix(super::DIRECT)
            .and_then(|p| p.try_into().ok())
            .map(u64::from_be_bytes)
        else {
            break;
        };
        out.push((pos, v.to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// The mark ([`MARK`]) a family holds in `db` (0: none yet).
fn mark_in(db: &DB, cf: &rocksdb::ColumnFamily) -> Result<u64, StorageError> {
    Ok(db
        .get_pinned_cf(cf, MARK)?
        .and_then(|v| v.as_ref().try_into().ok())
        .map_or(0, u64::from_be_bytes))
}

/// Where shard `i`'s tier goes on in `db`: past its families' marks and
/// past what its log replay met (`replayed`), so that no new record's
/// position looks persisted already.
pub(in crate::storage) fn start_of(db: &DB, i: usize, replayed: &[Replayed]) -> Result<u64, StorageError> {
    let mut start = replayed.iter().filter(|r| r.shard == i).map(|r| r.last).max().unwrap_or(0);
    for name in [crate::storage::cf_name(i), crate::storage::sub_cf_name(i)] {
        if let Some(cf) = db.cf_handle(&name) {
            start = start.max(mark_in(db, cf)?);
        }
    }
    Ok(start)
}

/// A shard's families with the marks they hold (persisted or not).
struct Marks<'a> {
    meta: &'a rocksdb::ColumnFamily,
    sub: &'a rocksdb::ColumnFamily,
    /// Each family's mark, by its id.
    each: [(u32, u64); 2],
}

impl Marks<'_> {
    /// The lower of the two: the log is read past it.
    fn safe(&self) -> u64 {
        self.each[0].1.min(self.each[1].1)
    }

    /// The families that hold the batch at `pos` already (their mark is
    /// at or past it), by id: a replay leaves their records out
    /// ([`own_records_past`]).
    fn holding(&self, pos: u64) -> SmallIds {
        self.each.iter().filter(|(_, m)| *m >= pos).map(|(id, _)| *id).collect()
    }
}

type SmallIds = smallvec::SmallVec<[u32; 2]>;

/// Shard `i`'s families in `db` and their marks; None if the shard has
/// none there.
fn marks(db: &DB, i: usize) -> Result<Option<Marks<'_>>, StorageError> {
    let (Some(meta), Some(sub)) = (
        db.cf_handle(&crate::storage::cf_name(i)),
        db.cf_handle(&crate::storage::sub_cf_name(i)),
    ) else {
        return Ok(None);
    };
    let each = [(cf_id(meta), mark_in(db, meta)?), (cf_id(sub), mark_in(db, sub)?)];
    Ok(Some(Marks { meta, sub, each }))
}

/// At startup, before anything reads shard `i`'s families: writes again
/// every record its log family holds past what both families persisted,
/// through the WAL, and empties the family. Returns how many.
fn replay(db: &DB, i: usize) -> Result<usize, StorageError> {
    let Some(log) = db.cf_handle(&log_cf_name(i)) else {
        return Ok(0);
    };
    let Some(m) = marks(db, i)? else {
        return Ok(0);
    };
    let (safe, meta, sub) = (m.safe(), m.meta, m.sub);
    let (mut n, mut last) = (0, safe);
    let mut it = db.raw_iterator_cf(log);
    it.seek((safe + 1).to_be_bytes());
    while it.valid() {
        let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
        let pos = k
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| StorageError(format!("log of shard {i}: a key of {} bytes", k.len())))?;
        db.write(WriteBatch::from_data(&own_records_past(v, &m.holding(pos))))?;
        (n, last) = (n + 1, pos.max(last));
        it.next();
    }
    it.status()?;
    let mut wb = WriteBatch::default();
    wb.delete_range_cf(log, 0u64.to_be_bytes(), u64::MAX.to_be_bytes());
    wb.put_cf(meta, MARK, last.to_be_bytes());
    wb.put_cf(sub, MARK, last.to_be_bytes());
    db.write(wb)?;
    Ok(n)
}

/// What a shard's log replay left: the position its tier goes on from,
/// and (kept on, same shards) the batches past the persisted marks, in
/// log order, for its tier's memory.
pub(in crate::storage) struct Replayed {
    pub(in crate::storage) shard: usize,
    pub(in crate::storage) last: u64,
    pub(in crate::storage) loaded: Vec<Bytes>,
}

/// At startup, before anything reads the families of the database at
/// `db_dir`: for each shard with a log file there (`file`), the batches
/// the log holds past what both of the shard's families persisted, with
/// the direct records past them among them by position.
///
/// With `keep` (the tier stays on, same shards) they are loaded into the
/// tier's memory (`Replayed::loaded`), as they were before the restart,
/// and nothing is written: the drains write them back, and the log is
/// cut once marks past them are persisted, as in any run (writing them
/// into the memtables at startup met ENOSPC on a nearly full disk, and
/// the server could not start: tests/full_disk.rs). A direct record that
/// is not plain puts and deletes (a range delete) cannot wait in memory:
/// then everything is written again without the WAL instead, the log
/// kept. Without `keep`, they go through the WAL, which is synced, and
/// the log is removed (the tier is off, or the shards change and their
/// records move). Written, a batch's records go only to the families
/// whose mark is below its position ([`own_records_past`]).
pub(in crate::storage) fn replay_files(db: &DB, db_dir: &std::path::Path, keep: bool) -> Result<Vec<Replayed>, StorageError> {
    let mut out = Vec::new();
    for i in super::file::shards_with_logs(db_dir) {
        let dir = super::file::log_dir(db_dir, i);
        let Some(m) = marks(db, i)? else {
            tracing::warn!(shard = i, dir = %dir.display(), "write tier: a log for a shard with no families here, left as it is");
            continue;
        };
        let (safe, meta, sub) = (m.safe(), m.meta, m.sub);
        let direct = direct_records(db, meta, safe)?;
        // By log position.
        let mut batches: Vec<(u64, Bytes)> = Vec::new();
        let mut rest = direct.into_iter().peekable();
        let (_, mut last) = super::file::replay(&dir, safe, |pos, body| {
            while let Some((p, d)) = rest.next_if(|(p, _)| *p < pos) {
                batches.push((p, own_records(&d).into_owned().into()));
            }
            batches.push((pos, Bytes::copy_from_slice(body)));
            Ok(())
        })?;
        for (p, d) in rest {
            batches.push((p, own_records(&d).into_owned().into()));
            last = last.max(p);
        }
        let n = batches.len();
        if keep && batches.iter().all(|(_, b)| records(b).is_some()) {
            if n > 0 {
                tracing::info!(shard = i, batches = n, "write tier: log loaded into memory");
            }
            // Loaded whole: the tier keeps each record's last value, so its
            // drains move a family only forward.
            out.push(Replayed {
                shard: i,
                last,
                loaded: batches.into_iter().map(|(_, b)| b).collect(),
            });
            continue;
        }
        let mut wo = WriteOptions::default();
        wo.disable_wal(keep);
        for (pos, b) in &batches {
            db.write_opt(WriteBatch::from_data(&own_records_past(b, &m.holding(*pos))), &wo)?;
        }
        if n > 0 {
            tracing::info!(shard = i, records = n, "write tier: log records written again");
        }
        if keep {
            out.push(Replayed {
                shard: i,
                last,
                loaded: Vec::new(),
            });
            continue;
        }
        let mut wb = WriteBatch::default();
        wb.put_cf(meta, MARK, last.to_be_bytes());
        wb.put_cf(sub, MARK, last.to_be_bytes());
        wb.delete_range_cf(meta, direct_key(0), direct_key(u64::MAX));
        db.write(wb)?;
        db.flush_wal(true)?;
        std::fs::remove_dir_all(&dir).map_err(|e| StorageError(format!("{}: {e}", dir.display())))?;
        out.push(Replayed {
            shard: i,
            last,
            loaded: Vec::new(),
        });
    }
    Ok(out)
}
