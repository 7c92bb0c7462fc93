//! The log's replay at startup: which records it writes again, and into
//! which families.

use super::*;

/// Replay writes a log record's own families' records, not the
/// default family's (an intent), nor anything past a cut-short end.
#[test]
fn replay_keeps_only_the_shards_own_records() {
    let (_d, s, _p) = stores(0);
    let mut wb = WriteBatch::default();
    wb.put(b"intent", b"part");
    wb.put_cf(s.cf, b"k1", b"v1");
    wb.delete(b"gone");
    wb.delete_cf(s.sub, b"k2");
    wb.delete_range_cf(s.sub, b"a", b"b");
    wb.delete_range(b"x", b"y");
    let own = own_records(wb.data());
    let mut want = WriteBatch::default();
    want.put_cf(s.cf, b"k1", b"v1");
    want.delete_cf(s.sub, b"k2");
    want.delete_range_cf(s.sub, b"a", b"b");
    assert_eq!(&own[12..], &want.data()[12..]);
    assert_eq!(own[8..12], 3u32.to_le_bytes());
    // Only default-family records: an empty batch.
    let mut wb = WriteBatch::default();
    wb.put(b"intent", b"part");
    assert_eq!(&own_records(wb.data())[..], &[0u8; 12][..]);
    // Cut short: kept whole (RocksDB refuses it, as before).
    let data = want.data();
    assert_eq!(&own_records(&data[..data.len() - 1])[..], &data[..data.len() - 1]);
}

/// A family that holds a batch already (its mark is at or past the
/// batch's position) gets none of its records again.
#[test]
fn replay_leaves_out_a_family_that_holds_the_batch() {
    let (_d, s, _p) = stores(0);
    let mut wb = WriteBatch::default();
    wb.put(b"intent", b"part");
    wb.put_cf(s.cf, b"k1", b"v1");
    wb.delete_cf(s.sub, b"k2");
    wb.delete_range_cf(s.sub, b"a", b"b");
    wb.put_cf(s.sub, b"k3", b"v3");
    let sub = crate::storage::rep::cf_id(s.sub);
    let meta = crate::storage::rep::cf_id(s.cf);
    let mut want = WriteBatch::default();
    want.put_cf(s.cf, b"k1", b"v1");
    let own = own_records_past(wb.data(), &[sub]);
    assert_eq!(&own[12..], &want.data()[12..]);
    assert_eq!(own[8..12], 1u32.to_le_bytes());
    assert_eq!(&own_records_past(wb.data(), &[sub, meta])[..], &[0u8; 12][..]);
    assert_eq!(own_records_past(wb.data(), &[]), own_records(wb.data()));
}

/// A replay writes each family only what the log holds past that
/// family's own mark: a family whose mark is past a batch holds it (and
/// maybe later values over it), and writing it again would take the family
/// back to that batch under a mark that claims more. A crash after a flush
/// of such a rewrite left a sorted set's deleted score record in the
/// family for good (tests/crash_atomic.rs, sorted sets, about 1 run in 8).
/// Both ways a replay writes: through the WAL (the tier off) and without
/// it (kept on, a batch that cannot wait in memory: a range delete).
#[test]
fn replay_does_not_take_a_family_back_below_its_mark() {
    for keep in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (meta_name, sub_name) = (crate::storage::cf_name(0), crate::storage::sub_cf_name(0));
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, dir.path(), [&meta_name, &sub_name]).unwrap();
        let (meta, sub) = (db.cf_handle(&meta_name).unwrap(), db.cf_handle(&sub_name).unwrap());
        // The meta family persisted up to position 3, the member family up
        // to 10: it holds position 5's put of `k` and a later delete.
        db.put_cf(meta, MARK, 3u64.to_be_bytes()).unwrap();
        db.put_cf(sub, MARK, 10u64.to_be_bytes()).unwrap();
        let log = file::TierLog::open(file::log_dir(dir.path(), 0)).unwrap();
        let mut b4 = WriteBatch::default();
        b4.delete_range_cf(sub, b"x", b"y");
        log.append(file::BATCH, 4, b4.data()).unwrap();
        let mut b5 = WriteBatch::default();
        b5.put_cf(sub, b"k", b"old");
        b5.put_cf(meta, b"m", b"five");
        log.append(file::BATCH, 5, b5.data()).unwrap();
        let mut b11 = WriteBatch::default();
        b11.put_cf(sub, b"n", b"eleven");
        log.append(file::BATCH, 11, b11.data()).unwrap();
        drop(log);
        let out = replay_files(&db, dir.path(), keep).unwrap();
        assert_eq!(out.len(), 1);
        assert!(out[0].loaded.is_empty(), "keep {keep}: a range delete cannot wait in memory");
        assert_eq!(out[0].last, 11);
        assert_eq!(
            db.get_cf(sub, b"k").unwrap(),
            None,
            "keep {keep}: the member family went back to position 5"
        );
        assert_eq!(
            db.get_cf(meta, b"m").unwrap(),
            Some(b"five".to_vec()),
            "keep {keep}: past the meta family's mark"
        );
        assert_eq!(
            db.get_cf(sub, b"n").unwrap(),
            Some(b"eleven".to_vec()),
            "keep {keep}: past both marks"
        );
    }
}
