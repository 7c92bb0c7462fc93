//! The write tier's log: a file per shard, appended once per turn of the
//! shard's loop (`tier_commit`) with every connection's writes of the turn,
//! synced under `appendfsync always` before a reply and once a second
//! under `everysec` (`Engine::flush_written`, `Engine::sync_wal`).
//!
//! It lives in `<database dir>/tier-log/shard-<i>/`, in segments named by
//! the first log position they hold (`<pos>.log`, 20 digits), a new one
//! after [`SEGMENT_BYTES`], whose blocks are reserved when it begins (its
//! size stays what was written). A record is
//! `len u32 | crc32c u32 | kind u8 | pos u64 | body` (little-endian, the
//! CRC over kind, pos and body): a [`BATCH`] holds a WriteBatch
//! representation (the only kind so far). A segment is deleted once every
//! record in it is below what RocksDB persisted (`cut`). Replay reads every
//! segment; a record cut short or failing its CRC ends its segment, which
//! is truncated there (what follows in later segments is still read).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::storage::StorageError;

/// A segment is closed and a new one begun past this size.
const SEGMENT_BYTES: u64 = 64 << 20;
const HEADER: usize = 4 + 4 + 1 + 8;
/// Record kinds.
pub(super) const BATCH: u8 = 1;

/// CRC-32C (Castagnoli) of a record, with the CPU's CRC32 instruction
/// where it has one: the `crc` crate's table walks a byte at a time, and
/// that loop was 14% of a shard's CPU under SET -P16 with the tier on.
fn checksum(b: &[u8]) -> u32 {
    crc32c::crc32c(b)
}

fn io(what: &Path, e: std::io::Error) -> StorageError {
    StorageError(format!("write tier log {}: {e}", what.display()))
}

/// Reserves a new segment's blocks past its end (its size unchanged:
/// replay reads what was written), so that each append finds its blocks
/// allocated instead of reserving them (ext4's delayed allocation, per new
/// page). Best effort: a file system without `fallocate` appends as before.
/// SET -P16: `ext4_block_write_begin` 1.9% -> 1.0% of the shard. Whether
/// it took.
fn preallocate(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on a descriptor this function borrows.
    unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, SEGMENT_BYTES as libc::off_t) == 0 }
}

/// The log directory of shard `i` in the database at `db_dir`.
pub(in crate::storage) fn log_dir(db_dir: &Path, i: usize) -> PathBuf {
    db_dir.join("tier-log").join(format!("shard-{i}"))
}

/// The shards with a log directory in the database at `db_dir`.
pub(in crate::storage) fn shards_with_logs(db_dir: &Path) -> Vec<usize> {
    let Ok(rd) = std::fs::read_dir(db_dir.join("tier-log")) else {
        return Vec::new();
    };
    let mut out: Vec<usize> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("shard-")?.parse().ok())
        .collect();
    out.sort_unstable();
    out
}

/// The segments in `dir`, by first position.
fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StorageError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut segs: Vec<(u64, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let first = name.to_str()?.strip_suffix(".log")?.parse().ok()?;
            Some((first, e.path()))
        })
        .collect();
    segs.sort_unstable_by_key(|(p, _)| *p);
    Ok(segs)
}

/// One record read back.
pub(super) struct Record<'a> {
    pub(super) kind: u8,
    pub(super) pos: u64,
    pub(super) body: &'a [u8],
}

/// The whole records at the start of `buf`, and where they end (the
/// length to truncate a segment to).
fn parse(buf: &[u8]) -> (Vec<Record<'_>>, usize) {
    let mut out = Vec::new();
    let mut i = 0;
    while buf.len() - i >= HEADER {
        let len = u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]) as usize;
        let crc = u32::from_le_bytes([buf[i + 4], buf[i + 5], buf[i + 6], buf[i + 7]]);
        let Some(end) = (i + HEADER).checked_add(len).filter(|&e| e <= buf.len()) else {
            break;
        };
        if checksum(&buf[i + 8..end]) != crc {
            break;
        }
        let mut pos = [0; 8];
        pos.copy_from_slice(&buf[i + 9..i + 17]);
        out.push(Record {
            kind: buf[i + 8],
            pos: u64::from_le_bytes(pos),
            body: &buf[i + HEADER..end],
        });
        i = end;
    }
    (out, i)
}

/// Reads the log in `dir` at startup: calls `apply` with each batch past
/// `safe` and its position, in log order, truncating a segment where a
/// record is cut short or damaged. Returns how many batches it applied and
/// the highest position met (at least `safe`).
pub(super) fn replay(
    dir: &Path,
    safe: u64,
    mut apply: impl FnMut(u64, &[u8]) -> Result<(), StorageError>,
) -> Result<(usize, u64), StorageError> {
    let (mut n, mut last) = (0, safe);
    for (_, path) in segments(dir)? {
        let buf = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let (recs, end) = parse(&buf);
        for r in recs {
            last = last.max(r.pos);
            if r.kind == BATCH && r.pos > safe {
                apply(r.pos, r.body)?;
                n += 1;
            }
        }
        if end < buf.len() {
            tracing::warn!(segment = %path.display(), kept = end, dropped = buf.len() - end, "write tier log: a damaged or cut-short tail, truncated");
            let f = OpenOptions::new().write(true).open(&path).map_err(|e| io(&path, e))?;
            f.set_len(end as u64).map_err(|e| io(&path, e))?;
            f.sync_all().map_err(|e| io(&path, e))?;
        }
    }
    Ok((n, last))
}

/// The open segment.
struct Open {
    file: File,
    first: u64,
    bytes: u64,
}

struct Inner {
    dir: PathBuf,
    /// Closed segments by first position, oldest first.
    closed: Vec<(u64, PathBuf)>,
    /// Closed segments not yet synced.
    unsynced: Vec<File>,
    open: Option<Open>,
    rec: Vec<u8>,
}

/// A shard's log, shared with the threads that sync it.
pub(in crate::storage) struct TierLog {
    inner: Mutex<Inner>,
    /// Held through a whole sync: a second syncer (the shard under
    /// `appendfsync always` beside the every-second thread) would find the
    /// closed segments taken by the first, sync only the open one, and
    /// claim its target while the first still syncs them.
    syncing: Mutex<()>,
    /// Records appended, and appended before the last sync.
    written: AtomicU64,
    synced: AtomicU64,
    /// Tests: the next append fails.
    #[cfg(test)]
    pub(super) fail_next: std::sync::atomic::AtomicBool,
}

impl TierLog {
    /// The log in `dir` (after its replay): appends go to a new segment.
    pub(in crate::storage) fn open(dir: PathBuf) -> Result<TierLog, StorageError> {
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let mut closed = segments(&dir)?;
        // A segment with no record (created, then killed before its first
        // record was whole: replay truncated it to nothing) holds nothing,
        // and this run may begin one of the same name.
        closed.retain(|(_, path)| match std::fs::metadata(path) {
            Ok(m) if m.len() == 0 => std::fs::remove_file(path).is_err(),
            _ => true,
        });
        Ok(TierLog {
            inner: Mutex::new(Inner {
                dir,
                closed,
                unsynced: Vec::new(),
                open: None,
                rec: Vec::new(),
            }),
            syncing: Mutex::new(()),
            written: AtomicU64::new(0),
            #[cfg(test)]
            fail_next: Default::default(),
            synced: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a record to the file (one write; not synced). On failure
    /// the file is put back to its length before (a record cut short
    /// would end replay of its segment there).
    pub(super) fn append(&self, kind: u8, pos: u64, body: &[u8]) -> Result<(), StorageError> {
        #[cfg(test)]
        if self.fail_next.swap(false, Ordering::AcqRel) {
            return Err(StorageError("ERR test: the log append failed".into()));
        }
        let mut g = self.lock();
        let g = &mut *g;
        if g.open.as_ref().is_some_and(|o| o.bytes >= SEGMENT_BYTES) {
            if let Some(o) = g.open.take() {
                g.closed.push((o.first, g.dir.join(format!("{:020}.log", o.first))));
                g.unsynced.push(o.file);
            }
        }
        if g.open.is_none() {
            let path = g.dir.join(format!("{pos:020}.log"));
            // A segment of this name left by an earlier run holds no whole
            // record (its records would be past this position): it is the
            // open one now, never a closed one a cut deletes under it.
            g.closed.retain(|(first, _)| *first != pos);
            let file = OpenOptions::new().create(true).append(true).open(&path).map_err(|e| io(&path, e))?;
            let bytes = file.metadata().map_err(|e| io(&path, e))?.len();
            preallocate(&file);
            g.open = Some(Open { file, first: pos, bytes });
        }
        g.rec.clear();
        g.rec.extend_from_slice(&(body.len() as u32).to_le_bytes());
        g.rec.extend_from_slice(&[0; 4]);
        g.rec.push(kind);
        g.rec.extend_from_slice(&pos.to_le_bytes());
        g.rec.extend_from_slice(body);
        let crc = checksum(&g.rec[8..]);
        g.rec[4..8].copy_from_slice(&crc.to_le_bytes());
        let Some(o) = g.open.as_mut() else { return Ok(()) };
        if let Err(e) = o.file.write_all(&g.rec) {
            if o.file.set_len(o.bytes).is_err() {
                // Cannot put it back: the next append begins a segment.
                if let Some(o) = g.open.take() {
                    g.closed.push((o.first, g.dir.join(format!("{:020}.log", o.first))));
                }
            }
            return Err(io(&g.dir, e));
        }
        o.bytes += g.rec.len() as u64;
        self.written.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Whether a record appended is not yet synced.
    pub(in crate::storage) fn unsynced(&self) -> bool {
        self.synced.load(Ordering::Acquire) < self.written.load(Ordering::Acquire)
    }

    /// Syncs what was appended (the data, not the file's times).
    pub(in crate::storage) fn sync(&self) -> Result<(), StorageError> {
        let target = self.written.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) >= target {
            return Ok(());
        }
        let _one = self.syncing.lock().unwrap_or_else(|e| e.into_inner());
        if self.synced.load(Ordering::Acquire) >= target {
            // Another sync covered it while this one waited.
            return Ok(());
        }
        // The files are taken (the open one's descriptor duplicated) and
        // synced with the lock released: the shard appends under it, and
        // an `everysec` sync that held it through fdatasync stalled the
        // shard for as long (20 ms seen under SET -P1; p99 3.5 ms).
        let (closed, open, dir) = {
            let mut g = self.lock();
            let open = match &g.open {
                Some(o) => Some(o.file.try_clone().map_err(|e| io(&g.dir, e))?),
                None => None,
            };
            (std::mem::take(&mut g.unsynced), open, g.dir.clone())
        };
        for (i, f) in closed.iter().enumerate() {
            if let Err(e) = f.sync_data() {
                // It and the rest are kept for the next sync.
                let mut rest = closed;
                self.lock().unsynced.extend(rest.drain(i..));
                return Err(StorageError(format!("write tier log: {e}")));
            }
        }
        if let Some(f) = open {
            f.sync_data().map_err(|e| io(&dir, e))?;
        }
        self.synced.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Deletes the closed segments whose every record is at or below
    /// `safe` (a segment's records are below the next one's first).
    pub(super) fn cut(&self, safe: u64) -> Result<(), StorageError> {
        let mut g = self.lock();
        let g = &mut *g;
        let next_first = |i: usize, g: &Inner| g.closed.get(i + 1).map(|s| s.0).or(g.open.as_ref().map(|o| o.first));
        let mut gone = 0;
        while gone < g.closed.len() && next_first(gone, g).is_some_and(|n| n <= safe.saturating_add(1)) {
            gone += 1;
        }
        for (_, path) in g.closed.drain(..gone) {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&path, e)),
            }
        }
        Ok(())
    }

    /// Whether it holds a closed segment (one a cut may take).
    pub(super) fn has_closed(&self) -> bool {
        !self.lock().closed.is_empty()
    }

    /// Copies every segment into `to` (a checkpoint's log directory).
    pub(in crate::storage) fn copy_to(&self, to: &Path) -> Result<(), StorageError> {
        let g = self.lock();
        std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
        for (_, path) in segments(&g.dir)? {
            if let Some(name) = path.file_name() {
                std::fs::copy(&path, to.join(name)).map_err(|e| io(&path, e))?;
            }
        }
        Ok(())
    }

    /// Bytes in its segments (INFO).
    pub(in crate::storage) fn bytes(&self) -> u64 {
        let g = self.lock();
        let closed: u64 = g
            .closed
            .iter()
            .filter_map(|(_, p)| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        closed + g.open.as_ref().map_or(0, |o| o.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(dir: &Path, safe: u64) -> (Vec<Vec<u8>>, u64) {
        let mut got = Vec::new();
        let (n, last) = replay(dir, safe, |_, b| {
            got.push(b.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(n, got.len());
        (got, last)
    }

    /// Logs written before the switch to `crc32c` (the `crc` crate's
    /// CRC_32_ISCSI) still read: the same checksum.
    #[test]
    fn the_checksum_is_crc32c_as_before() {
        let old = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
        assert_eq!(checksum(b"123456789"), 0xE306_9283);
        for n in [0usize, 1, 7, 8, 15, 16, 63, 64, 1000, 4097] {
            let b: Vec<u8> = (0..n).map(|i| (i * 31 + 7) as u8).collect();
            assert_eq!(checksum(&b), old.checksum(&b), "length {n}");
        }
    }

    #[test]
    fn a_segment_is_preallocated_past_its_end_and_keeps_its_size() {
        let d = tempfile::tempdir().unwrap();
        let dir = log_dir(d.path(), 0);
        // Whether this file system takes it at all.
        let probe = File::create(d.path().join("probe")).unwrap();
        let takes = preallocate(&probe);
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 1, b"one").unwrap();
        log.append(BATCH, 2, b"two").unwrap();
        let (_, path) = segments(&dir).unwrap().pop().unwrap();
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), 2 * (HEADER as u64 + 3), "the size is what was written");
        if takes {
            use std::os::unix::fs::MetadataExt;
            assert!(m.blocks() * 512 >= SEGMENT_BYTES, "{} blocks", m.blocks());
        }
        drop(log);
        let (got, last) = read_all(&dir, 0);
        assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(last, 2);
    }

    #[test]
    fn records_come_back_in_order_past_the_safe_point() {
        let d = tempfile::tempdir().unwrap();
        let dir = log_dir(d.path(), 3);
        let log = TierLog::open(dir.clone()).unwrap();
        for p in 1..=5u64 {
            log.append(BATCH, p, format!("batch {p}").as_bytes()).unwrap();
        }
        log.append(7, 6, b"a kind replay skips").unwrap();
        assert!(log.unsynced());
        log.sync().unwrap();
        assert!(!log.unsynced());
        drop(log);
        assert_eq!(shards_with_logs(d.path()), vec![3]);
        let (got, last) = read_all(&dir, 1);
        let want: Vec<Vec<u8>> = (2..=5).map(|p| format!("batch {p}").into_bytes()).collect();
        assert_eq!(got, want);
        assert_eq!(last, 6);
        // Past everything: nothing, the safe point kept.
        assert_eq!(read_all(&dir, 9), (vec![], 9));
    }

    #[test]
    fn a_damaged_tail_is_truncated_and_later_segments_still_read() {
        let d = tempfile::tempdir().unwrap();
        let dir = log_dir(d.path(), 0);
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 1, b"one").unwrap();
        log.append(BATCH, 2, b"two").unwrap();
        drop(log);
        let seg = dir.join(format!("{:020}.log", 1));
        let whole = std::fs::metadata(&seg).unwrap().len();
        // The second record's last byte flipped, then a record cut short.
        let mut bytes = std::fs::read(&seg).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 0xFF;
        bytes.extend_from_slice(&[9, 0, 0]);
        std::fs::write(&seg, &bytes).unwrap();
        // A later segment (a run after that one).
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 7, b"seven").unwrap();
        drop(log);
        let (got, last) = read_all(&dir, 0);
        assert_eq!(got, vec![b"one".to_vec(), b"seven".to_vec()]);
        assert_eq!(last, 7);
        let kept = std::fs::metadata(&seg).unwrap().len();
        assert_eq!(kept, (HEADER + 3) as u64);
        assert!(kept < whole);
    }

    /// kill -9 during a run's first append (a write(2) a fatal signal cuts
    /// short) leaves a segment whose only record is torn: replay truncates
    /// it to nothing, and the next run, going on from the same position,
    /// opens a segment of the same name. It must be that run's open
    /// segment, not also a closed one that a cut deletes under it (every
    /// later append then went to an unlinked file: a way to lose
    /// acknowledged writes, found while looking for why a CI run of
    /// tests/crash_atomic.rs lost an acknowledged ZINCRBY once).
    #[test]
    fn a_segment_left_empty_by_a_torn_first_record_is_never_cut_under_the_next_run() {
        let d = tempfile::tempdir().unwrap();
        let dir = log_dir(d.path(), 0);
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 1, b"one").unwrap();
        drop(log);
        // The next run's first record (position 2), cut short.
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 2, b"two, torn").unwrap();
        drop(log);
        let seg2 = dir.join(format!("{:020}.log", 2));
        let n = std::fs::metadata(&seg2).unwrap().len();
        let f = OpenOptions::new().write(true).open(&seg2).unwrap();
        f.set_len(n - 3).unwrap();
        drop(f);
        assert_eq!(read_all(&dir, 0), (vec![b"one".to_vec()], 1));
        // A run going on from position 1 again.
        let log = TierLog::open(dir.clone()).unwrap();
        log.append(BATCH, 2, b"two again").unwrap();
        log.append(BATCH, 3, b"three").unwrap();
        // Everything through 1 persisted: segment 1 goes, 2 is open.
        log.cut(1).unwrap();
        log.cut(2).unwrap();
        log.append(BATCH, 4, b"four").unwrap();
        drop(log);
        let (got, last) = read_all(&dir, 1);
        assert_eq!(got, vec![b"two again".to_vec(), b"three".to_vec(), b"four".to_vec()]);
        assert_eq!(last, 4);
    }

    #[test]
    fn cut_deletes_only_segments_wholly_at_or_below_the_safe_point() {
        let d = tempfile::tempdir().unwrap();
        let dir = log_dir(d.path(), 0);
        let log = TierLog::open(dir.clone()).unwrap();
        let big = vec![7u8; (SEGMENT_BYTES / 2) as usize + 1];
        // Segments begin at 1, 3 and 5 (two records fill one).
        for p in 1..=5u64 {
            log.append(BATCH, p, &big).unwrap();
        }
        let firsts = || segments(&dir).unwrap().into_iter().map(|s| s.0).collect::<Vec<_>>();
        assert_eq!(firsts(), vec![1, 3, 5]);
        log.cut(1).unwrap();
        assert_eq!(firsts(), vec![1, 3, 5]);
        log.cut(3).unwrap();
        assert_eq!(firsts(), vec![3, 5]);
        log.cut(100).unwrap();
        // The open segment stays.
        assert_eq!(firsts(), vec![5]);
        let (got, _) = read_all(&dir, 0);
        assert_eq!(got.len(), 1);
        let to = d.path().join("copy");
        log.copy_to(&to).unwrap();
        assert_eq!(read_all(&to, 4).0.len(), 1);
    }
}
