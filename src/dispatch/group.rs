//! One RocksDB write per run of pipelined commands on a shard
//! (`storage::group` has the rules that keep reads exact).
//!
//! The dispatcher opens a group before a run of shard commands that runs
//! without a pause (a remote shard's share of a pipeline, or the local run
//! between two awaits), notes where each command's reply starts, and closes
//! it before the replies can leave. If a part of the group failed to write,
//! the commands whose writes it held get the write's error as their reply
//! instead of the one they wrote, as if each had failed on its own.

use crate::error::CmdError;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::storage::group::Lost;

use super::Later;

/// An open group and where each command of it starts in the reply buffer.
pub struct Grouped<'a> {
    st: &'a ShardState,
    /// Per command: where its reply starts, and the store's staged count
    /// before it ran.
    spans: Vec<(usize, u64)>,
    open: bool,
}

impl<'a> Grouped<'a> {
    pub fn begin(st: &'a ShardState) -> Grouped<'a> {
        st.ks.begin_group();
        Grouped {
            st,
            spans: st.spans.borrow_mut().pop().unwrap_or_default(),
            open: true,
        }
    }

    /// Call before each command runs, with the buffer it replies into.
    #[inline]
    pub fn before(&mut self, r: &Reply) {
        self.spans.push((r.buf.len(), self.st.ks.store.staged()));
    }

    /// Writes and closes the group. When writes were lost, rewrites those
    /// commands' replies in `r` and moves the offsets in `marks` (reply ends
    /// of the caller's own bookkeeping) and in `later` to match.
    pub fn end(mut self, r: &mut Reply, marks: &mut [(usize, usize)], later: &mut [Later]) {
        self.open = false;
        let lost = self.st.ks.end_group();
        if lost.is_empty() || self.spans.is_empty() {
            return;
        }
        let errors: Vec<String> = lost.iter().map(|l| CmdError::from(l.error.clone()).0.into_owned()).collect();
        let (buf, ends) = rewrite(r, &self.spans, self.st.ks.store.staged(), &lost, &errors, |msg| {
            self.st.record_error(msg)
        });
        let remap = |x: usize| -> usize {
            match ends.iter().rev().find(|(old, _)| *old <= x) {
                Some(&(old, new)) => x - old + new,
                None => x,
            }
        };
        for m in marks.iter_mut() {
            m.0 = remap(m.0);
        }
        for l in later.iter_mut() {
            l.at = remap(l.at);
        }
        r.buf = buf;
    }
}

/// A connection's group closed unwritten at the end of its run (see
/// `storage::group`, "Turns"): where each command's reply starts, to turn
/// the replies of writes lost with the turn's write into the error.
pub struct Deferred {
    spans: Vec<(usize, u64)>,
    staged_end: u64,
}

impl Grouped<'_> {
    /// Closes the group and leaves its writes held for the turn's write.
    pub fn defer(mut self) -> Deferred {
        self.open = false;
        self.st.ks.defer_group();
        Deferred {
            spans: std::mem::take(&mut self.spans),
            staged_end: self.st.ks.store.staged(),
        }
    }
}

impl Deferred {
    /// After the turn's write ([`crate::types::keyspace::Keyspace::end_turn`]):
    /// replaces in `r` the replies of the commands whose writes were lost.
    /// `r` must not have changed before the last command's reply ends.
    pub fn settle(self, st: &ShardState, r: &mut Reply) {
        if let Some(&(_, first)) = self.spans.first() {
            let lost = st.ks.store.lost_since(first);
            if !lost.is_empty() {
                let errors: Vec<String> = lost.iter().map(|l| CmdError::from(l.error.clone()).0.into_owned()).collect();
                let (buf, _) = rewrite(r, &self.spans, self.staged_end, &lost, &errors, |msg| st.record_error(msg));
                r.buf = buf;
            }
        }
        keep_spans(st, self.spans);
    }
}

/// The reply buffer with the replies of commands whose writes were lost
/// replaced by the error (`errors[k]` for `lost[k]`), and each command's
/// (old end, new end). `spans`: per command, reply start and staged count
/// before it; `staged_now`: the count after the last.
fn rewrite(
    r: &Reply,
    spans: &[(usize, u64)],
    staged_now: u64,
    lost: &[Lost],
    errors: &[String],
    mut on_error: impl FnMut(&str),
) -> (Vec<u8>, Vec<(usize, usize)>) {
    let first = spans.first().map_or(r.buf.len(), |s| s.0);
    let mut out = Vec::with_capacity(r.buf.len());
    out.extend_from_slice(&r.buf[..first]);
    let mut ends = Vec::with_capacity(spans.len());
    for (i, &(start, s0)) in spans.iter().enumerate() {
        let (end, s1) = spans.get(i + 1).copied().unwrap_or((r.buf.len(), staged_now));
        match lost.iter().position(|l| l.covers(s0, s1)) {
            Some(k) => {
                on_error(&errors[k]);
                let mut e = Reply::new(r.resp3);
                e.error(&errors[k]);
                out.extend_from_slice(&e.buf);
            }
            None => out.extend_from_slice(&r.buf[start..end]),
        }
        ends.push((end, out.len()));
    }
    (out, ends)
}

impl Drop for Grouped<'_> {
    /// A run cut short (a panic) still writes and closes its group, so the
    /// shard's later writes are not staged forever. Its spans' vector is
    /// kept for the next group.
    fn drop(&mut self) {
        if self.open {
            let _ = self.st.ks.end_group();
        }
        keep_spans(self.st, std::mem::take(&mut self.spans));
    }
}

/// Most emptied span vectors a shard keeps, and the longest one kept.
const SPARE_SPANS: usize = 64;
const SPARE_SPAN_LEN: usize = 1024;

fn keep_spans(st: &ShardState, mut spans: Vec<(usize, u64)>) {
    let mut spare = st.spans.borrow_mut();
    if spans.capacity() == 0 || spans.capacity() > SPARE_SPAN_LEN || spare.len() >= SPARE_SPANS {
        return;
    }
    spans.clear();
    spare.push(spans);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageError;

    #[test]
    fn only_the_commands_whose_writes_were_lost_get_the_error() {
        let mut r = Reply::new(false);
        r.buf.extend_from_slice(b"+before\r\n");
        // Four commands: a write (staged #0), a read, two writes (#1, #2).
        let mut spans = Vec::new();
        for (reply, staged_before) in [(&b"+OK\r\n"[..], 0), (b"$1\r\nv\r\n", 1), (b":1\r\n", 1), (b"+OK\r\n", 2)] {
            spans.push((r.buf.len(), staged_before));
            r.buf.extend_from_slice(reply);
        }
        // The group that held #1 and #2 failed; #0 was written earlier.
        let lost = [Lost {
            from: 1,
            to: 3,
            error: StorageError("IO error: No space left on device".into()),
        }];
        let errors = ["ERR boom".to_string()];
        let mut seen = 0;
        let (buf, ends) = rewrite(&r, &spans, 3, &lost, &errors, |_| seen += 1);
        assert_eq!(buf, b"+before\r\n+OK\r\n$1\r\nv\r\n-ERR boom\r\n-ERR boom\r\n");
        assert_eq!(seen, 2);
        let old_ends: Vec<usize> = ends.iter().map(|e| e.0).collect();
        assert_eq!(old_ends, vec![14, 21, 25, 30]);
        let new_ends: Vec<usize> = ends.iter().map(|e| e.1).collect();
        assert_eq!(new_ends, vec![14, 21, 32, 43]);
    }

    #[test]
    fn lost_ranges_cover_only_commands_that_staged_inside_them() {
        let l = Lost {
            from: 4,
            to: 7,
            error: StorageError(String::new()),
        };
        assert!(l.covers(4, 5));
        assert!(l.covers(6, 9));
        assert!(l.covers(2, 5));
        assert!(!l.covers(7, 8));
        assert!(!l.covers(2, 4));
        // A command that staged nothing lost nothing.
        assert!(!l.covers(5, 5));
    }
}
