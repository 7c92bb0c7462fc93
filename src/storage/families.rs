//! The column families: what each shard's are named, which one a record
//! belongs in (its slot's owner; members apart from the rest, see
//! docs/encoding.md), and the move of records to their families when the
//! shard count or the layout changed since the data was written.

use rocksdb::DB;

use super::{keys, StorageError};

/// Where the shard count the data was written with is kept (default CF).
pub(super) const SHARDS_RECORD: &[u8] = b"basalt:shards";
/// Where the record layout is kept (default CF): absent in data written
/// before members got their own column family.
pub(super) const LAYOUT_RECORD: &[u8] = b"basalt:layout";
/// Members in `shard-<i>-sub`, the rest in `shard-<i>`.
pub(super) const LAYOUT: &str = "2";

/// Shard `i`'s meta column family: meta records, the TTL indexes.
pub(super) fn cf_name(i: usize) -> String {
    format!("shard-{i}")
}

/// Shard `i`'s member column family. Apart from the meta records, a
/// flush of members written near one place (a list's end, a stream's tail)
/// makes L0 files that overlap only that place: with both in one family,
/// every L0 file spanned from its first meta key to its last member, and
/// each L0 compaction rewrote all of the base level in between (a 10M
/// list's RPOP rewrote the whole 48 MB list every 30 s).
pub(super) fn sub_cf_name(i: usize) -> String {
    format!("shard-{i}-sub")
}

/// Both column families of every shard.
pub(super) fn shard_cf_names(shards: usize) -> impl Iterator<Item = String> {
    (0..shards).flat_map(|i| [cf_name(i), sub_cf_name(i)])
}

/// The column family a record of slot owner `shard` belongs in.
pub(super) fn home_of(k: &[u8], shard: usize) -> String {
    if keys::is_sub(k) {
        sub_cf_name(shard)
    } else {
        cf_name(shard)
    }
}

/// The shard count the data was last opened with (None: a new data dir).
pub(super) fn stored_shards(db: &DB) -> Result<Option<usize>, StorageError> {
    Ok(db
        .get(SHARDS_RECORD)?
        .and_then(|v| String::from_utf8(v).ok())
        .and_then(|s| s.parse::<usize>().ok()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{test_opts, Engine};
    use super::*;
    use crate::slot::shard_of_slot;
    use rocksdb::Options;

    fn open(dir: &Path, shards: usize) -> Engine {
        Engine::open(&test_opts(dir, shards, 1 << 20)).unwrap()
    }

    /// The column families holding `key`.
    fn where_is(e: &Engine, shards: usize, key: &[u8]) -> Vec<String> {
        shard_cf_names(shards)
            .filter(|n| e.main().get_cf(e.main().cf_handle(n).unwrap(), key).unwrap().is_some())
            .collect()
    }

    #[test]
    fn members_have_their_own_column_family() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(open(dir.path(), 1)));
        let s = e.shard(0).unwrap();
        let (meta, member, ttl) = (keys::meta_key(0, b"h"), keys::sub_key(0, b"h", 7, b"f"), keys::ttl_key(5, 0, b"h"));
        let mut b = s.batch();
        for k in [&meta, &member, &ttl] {
            s.put(&mut b, k, b"v");
        }
        s.write(b).unwrap();
        assert_eq!(where_is(e, 1, &meta), vec![cf_name(0)]);
        assert_eq!(where_is(e, 1, &member), vec![sub_cf_name(0)]);
        assert_eq!(where_is(e, 1, &ttl), vec![cf_name(0)]);
        let mut seen = Vec::new();
        let (lo, hi) = keys::sub_range(0, b"h", 7);
        s.scan(&lo, &hi, |k, _| {
            seen.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(seen, vec![member.clone()]);
        assert_eq!(s.last_key(&lo, &hi).unwrap(), Some(member.clone()));
        assert_eq!(s.count(&lo, &hi).unwrap(), 1);
        let (mlo, mhi) = keys::meta_db_range(0);
        assert_eq!(s.count(&mlo, &mhi).unwrap(), 1);
        // FLUSHDB's range delete reaches both families.
        let (dlo, dhi) = keys::db_range(0);
        let mut b = s.batch();
        s.delete_range(&mut b, &dlo, &dhi);
        s.write(b).unwrap();
        assert!(where_is(e, 1, &meta).is_empty() && where_is(e, 1, &member).is_empty());
        assert_eq!(where_is(e, 1, &ttl), vec![cf_name(0)], "the index is outside every db");
    }

    #[test]
    fn members_written_in_one_family_move_to_their_own_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let member = keys::sub_key(3, b"list", 9, &5u64.to_be_bytes());
        let meta = keys::meta_key(3, b"list");
        {
            // As data written before the member families existed: members
            // in `shard-<i>`, no layout record.
            let e = open(dir.path(), 2);
            let owner = shard_of_slot(keys::slot_of_record(&member).unwrap(), 2);
            let cf = e.main().cf_handle(&cf_name(owner)).unwrap();
            e.main().put_cf(cf, &member, b"m").unwrap();
            e.main().put_cf(cf, &meta, b"x").unwrap();
            e.main().delete(LAYOUT_RECORD).unwrap();
        }
        let e = open(dir.path(), 2);
        let owner = shard_of_slot(keys::slot_of_record(&member).unwrap(), 2);
        assert_eq!(where_is(&e, 2, &member), vec![sub_cf_name(owner)]);
        assert_eq!(where_is(&e, 2, &meta), vec![cf_name(owner)]);
    }

    #[test]
    fn reopening_with_another_shard_count_moves_records() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<Vec<u8>> = (0..300).map(|i| format!("key:{i}").into_bytes()).collect();
        let records: Vec<Vec<u8>> = names
            .iter()
            .flat_map(|n| [keys::meta_key(0, n), keys::ttl_key(99, 0, n), keys::sub_key(0, n, 1, b"m")])
            .collect();
        {
            let e = open(dir.path(), 1);
            for r in &records {
                e.main().put_cf(e.main().cf_handle(&home_of(r, 0)).unwrap(), r, b"v").unwrap();
            }
        }
        for shards in [4, 3, 1] {
            let e = open(dir.path(), shards);
            for r in &records {
                let want = shard_of_slot(keys::slot_of_record(r).unwrap(), shards);
                assert_eq!(where_is(&e, shards, r), vec![home_of(r, want)]);
            }
            let mut cfs = DB::list_cf(&Options::default(), dir.path().join("db")).unwrap();
            cfs.sort();
            assert_eq!(cfs.len(), 2 * shards + 1, "stale column families dropped: {cfs:?}");
        }
    }
}
