//! FUNCTION libraries on disk: one record per library in the default
//! column family, `basalt:fn:<name>` -> its code. A change (LOAD, DELETE,
//! FLUSH, RESTORE) rewrites the whole set in one synced batch, so a crash
//! leaves the old set or the new one. The records belong to no shard: they
//! survive a reopen with another shard count, and a checkpoint (SAVE)
//! carries them.

use super::{Engine, StorageError};

const PREFIX: &[u8] = b"basalt:fn:";

/// Stored libraries: (name, code).
pub type Libraries = Vec<(Vec<u8>, Vec<u8>)>;
/// The first key past every library record.
const END: &[u8] = b"basalt:fn;";

impl Engine {
    /// Every stored library: (name, code), by name.
    pub fn function_libraries(&self) -> Result<Libraries, StorageError> {
        let mut out = Vec::new();
        let mut it = self.main().raw_iterator();
        it.seek(PREFIX);
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
            if k >= END {
                break;
            }
            out.push((k[PREFIX.len()..].to_vec(), v.to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Replaces the stored libraries with `libs` (name, code), written and
    /// synced before this returns.
    pub fn save_function_libraries(&self, libs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), StorageError> {
        let mut b = rocksdb::WriteBatch::default();
        for (k, _) in self.function_libraries()? {
            b.delete([PREFIX, &k].concat());
        }
        for (name, code) in libs {
            b.put([PREFIX, name].concat(), code);
        }
        self.main().write(b).map_err(|e| {
            let e = StorageError::from(e);
            self.disk.note_write_error(&e.0);
            e
        })?;
        self.sync_main()
    }
}
