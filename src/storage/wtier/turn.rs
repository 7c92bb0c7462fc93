//! The turn's log record ([`ShardStore::tier_commit`]): each key a group
//! changed, once, at its last value.

use ahash::AHashSet;

use crate::storage::rep::Rep;
use crate::storage::ShardStore;

impl ShardStore {
    /// The turn's log record, in `body`: the last value staged since the
    /// last append of each key (`undo`, walked from its end), once; a
    /// delete for a key deleted or gone whole (a record new in dirty
    /// deleted since, `Gen::put`). A key staged several times in one turn
    /// is logged once: a push to one list rewrote its end record ~100
    /// times a turn of LPUSH -P16, and the log took 503 bytes a push
    /// (tuning.md, session 57). A record written again unchanged staged
    /// nothing (`Gen::put`): dirty's value of it was logged before, past
    /// the marks.
    pub(super) fn tier_turn_record(&self, body: &mut Rep) {
        let t = &self.wtier;
        body.clear();
        let undo = t.undo.borrow();
        if undo.is_empty() {
            return;
        }
        let (mut seen, mut last) = (t.seen.borrow_mut(), t.last.borrow_mut());
        seen.clear();
        last.clear();
        // Each record's last change, found from the end. By the address of
        // the tier's own key (one allocation per record held): a key gone
        // whole and staged again has two, its older one's changes all
        // before the newer's, so written in staging order the newer comes
        // last, as in the batches staged.
        for (i, (k, _, _)) in undo.iter().enumerate().rev() {
            if seen.insert(k.as_ptr() as usize) {
                last.push(i);
            }
        }
        for &i in last.iter().rev() {
            let (k, _, now) = &undo[i];
            match now {
                Some(v) => body.put_cf(self.id_of(k), k, v),
                None => body.delete_cf(self.id_of(k), k),
            }
        }
        if seen.capacity() > 1 << 16 {
            *seen = AHashSet::default();
            *last = Vec::new();
        }
    }
}
