//! SWAPDB on disk: which physical db byte each `SELECT` index names
//! (`keys::physical`), kept in the default column family as one record,
//! `basalt:dbmap` -> 256 bytes (entry `i` the physical db of index `i`;
//! absent: the identity). A swap is one put of that record, synced before
//! the map in memory changes: after a crash the data dir has either the
//! old map or the new one, so every shard's two databases are swapped or
//! none is. The records themselves never move.

use super::{keys, Engine, StorageError};

/// Where the map is kept (default CF).
const DBMAP_RECORD: &[u8] = b"basalt:dbmap";

impl Engine {
    /// Installs the persisted map (the identity when there is none), before
    /// anything reads a key. A record that is not a permutation is refused
    /// with an error rather than read through a wrong map.
    pub(super) fn load_db_map(db: &rocksdb::DB) -> Result<(), StorageError> {
        match db.get(DBMAP_RECORD)? {
            Some(map) if !keys::set_db_map(&map) => Err(StorageError("corrupt basalt:dbmap record".into())),
            Some(_) => Ok(()),
            None => {
                let identity: Vec<u8> = (0..=255u8).collect();
                keys::set_db_map(&identity);
                Ok(())
            }
        }
    }

    /// SWAPDB `a` `b`: persists the swapped map (written and synced), then
    /// switches to it. Call only while no command runs on any shard (the
    /// transaction gate); on an error nothing changed.
    pub fn swap_dbs(&self, a: u8, b: u8) -> Result<(), StorageError> {
        if a == b {
            return Ok(());
        }
        let mut map = keys::db_map();
        map.swap(a as usize, b as usize);
        self.main().put(DBMAP_RECORD, &map).map_err(|e| {
            let e = StorageError::from(e);
            self.disk.note_write_error(&e.0);
            e
        })?;
        self.sync_main()?;
        keys::swap_dbs(a, b);
        Ok(())
    }
}
