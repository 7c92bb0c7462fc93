//! A generation's keys in key order, sorted as the generation fills.
//!
//! A generation used to be sorted whole when it started draining: about
//! 25 ms for 262144 keys inside one write, the tier's p99 at -P16 (issue
//! 35's measurements in tuning.md). Now each [`RUN`] new keys are sorted
//! as they arrive (a fraction of a millisecond, spread over the writes
//! that added them), and the drain takes the keys from a k-way merge of
//! those runs, a slice at a time (issue 52, item 2: "sorted runs, sorted
//! as they fill, merged when written back").

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::slab::Span;

/// New keys sorted together into one run.
pub(super) const RUN: usize = 4096;

/// A key with its first 16 bytes as a number: most comparisons end there,
/// without reading the key's bytes on the heap.
pub(super) type Keyed = (u128, Span);

fn keyed(k: Span) -> Keyed {
    let mut h = [0u8; 16];
    let n = k.len().min(16);
    h[..n].copy_from_slice(&k[..n]);
    (u128::from_be_bytes(h), k)
}

/// Where a range read's next keys start: at `lo`, or just past it.
#[derive(Clone, Copy)]
pub(super) struct Start<'a> {
    pub(super) lo: &'a [u8],
    pub(super) past: bool,
}

impl Start<'_> {
    /// Whether `k` comes before the start.
    fn before(&self, k: &[u8]) -> bool {
        if self.past {
            k <= self.lo
        } else {
            k < self.lo
        }
    }

    /// Whether `k` is in `[start, hi)`.
    fn holds(&self, k: &[u8], hi: &[u8]) -> bool {
        !self.before(k) && k < hi
    }
}

/// Keys a range read takes from a generation's runs ([`Runs::keys_in`]):
/// up to `n` from each sorted run, and the least of the last keys taken
/// from the runs that gave `n` (`bound`): every key of every run up to it
/// is among `keys`, so a read may use them up to it and go on past it.
#[derive(Default)]
pub(super) struct Taken {
    pub(super) keys: Vec<Span>,
    pub(super) bound: Option<Span>,
}

impl Taken {
    /// The first `n` keys of the sorted `run` in `[from, hi)`.
    fn take_run(&mut self, run: &[Keyed], from: Start<'_>, hi: &[u8], n: usize) {
        let start = run.partition_point(|(_, k)| from.before(k));
        let before = self.keys.len();
        self.keys
            .extend(run[start..].iter().take(n).take_while(|(_, k)| k.as_ref() < hi).map(|(_, k)| *k));
        if self.keys.len() - before == n {
            if let Some(last) = self.keys.last() {
                if self.bound.as_ref().is_none_or(|b| last < b) {
                    self.bound = Some(*last);
                }
            }
        }
    }
}

/// The keys a generation added, each once: sorted runs and the newest
/// keys not yet sorted.
#[derive(Default)]
pub(super) struct Runs {
    fresh: Vec<Span>,
    runs: Vec<Vec<Keyed>>,
    /// Emptied runs of a generation merged before it, for its own
    /// ([`Runs::reuse`]): a run is 4096 keys of 48 bytes, and a fresh one
    /// per seal came from pages the allocator had just given back (XADD
    /// -P16's faults and `_mi_malloc_generic` under `Runs::seal`).
    spare: Vec<Vec<Keyed>>,
}

impl Runs {
    /// Notes a key new to the generation. True when [`RUN`] of them wait
    /// to be sorted ([`Runs::seal`]).
    #[must_use]
    pub(super) fn add(&mut self, k: Span) -> bool {
        self.fresh.push(k);
        self.fresh.len() >= RUN
    }

    /// Sorts the keys added since the last run into a run, leaving out
    /// those `keep` says the generation no longer holds (a record that
    /// left whole: `Gen::put`), which the drain would pass over.
    pub(super) fn seal(&mut self, keep: impl Fn(&Span) -> bool) {
        // Drained, not taken: the next run's keys reuse its room.
        let mut run = self.spare.pop().unwrap_or_default();
        // Room for all of them at once: grown by doubling through a filter
        // (whose size hint is 0), a run without a spare reallocated a dozen
        // times, its last copies on fresh pages (3.6% of LPUSH -P16's
        // process, page faults under `Runs::seal`).
        run.reserve(self.fresh.len());
        run.extend(self.fresh.drain(..).filter(keep).map(keyed));
        if run.is_empty() {
            self.spare.push(run);
        } else {
            run.sort_unstable();
            self.runs.push(run);
        }
    }

    /// Whether keys wait to be sorted ([`Runs::seal`]).
    pub(super) fn has_fresh(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// Its first `n` keys in `[from, hi)` from each of its sealed runs,
    /// into `out` ([`Taken`]).
    pub(super) fn keys_in(&self, from: Start<'_>, hi: &[u8], n: usize, out: &mut Taken) {
        for run in &self.runs {
            out.take_run(run, from, hi, n);
        }
    }

    /// Hands its spare runs to `next` (a generation after it).
    pub(super) fn pass_spare(&mut self, next: &mut Runs) {
        next.spare.append(&mut self.spare);
    }

    /// Takes `runs` (emptied, [`Merge::into_spare`]) for its next seals,
    /// as many as it has sealed and `most` at most together.
    pub(super) fn reuse(&mut self, runs: Vec<Vec<Keyed>>, most: usize) {
        for r in runs {
            if self.spare.len() >= most {
                break;
            }
            self.spare.push(r);
        }
    }

    /// Every key added, merged in key order (sealed first: [`Runs::seal`]).
    pub(super) fn merge(mut self) -> Merge {
        self.seal(|_| true);
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        let mut left = 0;
        for (r, run) in self.runs.iter_mut().enumerate() {
            left += run.len();
            if let Some((h, k)) = run.first_mut() {
                heap.push(Reverse((*h, *k, r)));
            }
        }
        Merge {
            pos: vec![0; self.runs.len()],
            runs: self.runs,
            heap,
            lead: None,
            left,
            back: Default::default(),
        }
    }
}

/// A k-way merge of sorted runs, taken a key at a time.
pub(super) struct Merge {
    runs: Vec<Vec<Keyed>>,
    /// The next key of each run.
    pos: Vec<usize>,
    heap: BinaryHeap<Reverse<(u128, Span, usize)>>,
    /// The next key, out of the heap while its run keeps the lead: runs
    /// that do not interleave (a list's pushes, a stream's entries) are
    /// then taken with one comparison a key instead of a pop and a push
    /// (the heap's sifts were ~650 instructions a key of LPUSH's drain).
    lead: Option<(u128, Span, usize)>,
    left: usize,
    /// Keys taken and given back (a slice that failed to apply), first.
    back: std::collections::VecDeque<Span>,
}

impl Merge {
    /// Its runs, emptied, for a later generation's seals ([`Runs::reuse`]).
    pub(super) fn into_spare(self) -> Vec<Vec<Keyed>> {
        let mut runs = self.runs;
        for r in &mut runs {
            r.clear();
        }
        runs
    }

    /// Its first `n` keys not yet taken in `[from, hi)` from each run,
    /// into `out` ([`Taken`]). A run's keys up to its next one
    /// were moved out (`pos`), its next one is in the heap or the lead.
    pub(super) fn keys_in(&self, from: Start<'_>, hi: &[u8], n: usize, out: &mut Taken) {
        for (r, run) in self.runs.iter().enumerate() {
            if let Some(rest) = run.get(self.pos[r] + 1..) {
                out.take_run(rest, from, hi, n);
            }
        }
        let next = self
            .heap
            .iter()
            .map(|Reverse((_, k, _))| k)
            .chain(self.lead.iter().map(|(_, k, _)| k));
        out.keys.extend(next.chain(self.back.iter()).filter(|k| from.holds(k, hi)).copied());
    }

    /// Keys not yet taken.
    pub(super) fn left(&self) -> usize {
        self.left
    }

    /// Gives back `keys`, the last ones taken, in the order taken: they
    /// come out again before the rest.
    pub(super) fn put_back(&mut self, keys: Vec<Span>) {
        self.left += keys.len();
        for k in keys.into_iter().rev() {
            self.back.push_front(k);
        }
    }
}

impl Iterator for Merge {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        if let Some(k) = self.back.pop_front() {
            self.left -= 1;
            return Some(k);
        }
        let (_, k, r) = match self.lead.take() {
            Some(l) => l,
            None => self.heap.pop()?.0,
        };
        self.pos[r] += 1;
        if let Some(&(h, next)) = self.runs[r].get(self.pos[r]) {
            let next = (h, next, r);
            match self.heap.peek() {
                Some(Reverse(top)) if *top < next => self.heap.push(Reverse(next)),
                _ => self.lead = Some(next),
            }
        }
        self.left -= 1;
        Some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys added in any order, more than one run's worth, sharing long
    /// prefixes (ties on the first 16 bytes), come out in key order, each
    /// once, the count left falling to 0.
    #[test]
    fn the_merge_is_the_keys_in_order() {
        let mut runs = Runs::default();
        let mut want = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..(RUN * 3 + 17) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = if i % 3 == 0 {
                format!("a-common-prefix-of-more-than-16-bytes:{x}")
            } else {
                format!("{x:x}")
            };
            // A key the generation no longer holds (here: ending in 7)
            // is left out when its run is sealed; the last keys, sorted by
            // the merge, are all kept.
            if !k.ends_with('7') || i >= RUN * 3 {
                want.push(k.clone().into_bytes());
            }
            if runs.add(Span::leaked(k.as_bytes())) {
                runs.seal(|k| !k.ends_with(b"7"));
            }
        }
        assert!(want.len() < RUN * 3, "some keys were left out");
        want.sort();
        let mut m = runs.merge();
        assert_eq!(m.left(), want.len());
        let mut got = Vec::new();
        for _ in 0..100 {
            got.push(m.next().unwrap().to_vec());
        }
        assert_eq!(m.left(), want.len() - 100);
        // A slice that failed to apply is taken again, in order.
        let taken: Vec<Span> = m.by_ref().take(5).collect();
        m.put_back(taken);
        assert_eq!(m.left(), want.len() - 100);
        got.extend(m.by_ref().map(|k| k.to_vec()));
        assert_eq!(got, want);
        assert_eq!(m.left(), 0);
        assert!(m.next().is_none());
        assert_eq!(Runs::default().merge().left(), 0);
    }

    /// A generation's runs, emptied after its merge, serve the next one's
    /// seals (no key of the first is left in them), up to `most`.
    #[test]
    fn runs_merged_are_reused_empty() {
        let fill = |runs: &mut Runs, tag: &str| {
            let mut want = Vec::new();
            for i in (0..RUN * 2 + 3).rev() {
                let k = format!("{tag}:{i:08}");
                want.push(k.clone().into_bytes());
                if runs.add(Span::leaked(k.as_bytes())) {
                    runs.seal(|_| true);
                }
            }
            want.sort();
            want
        };
        let mut first = Runs::default();
        let want = fill(&mut first, "a");
        let mut m = first.merge();
        assert_eq!(m.by_ref().map(|k| k.to_vec()).collect::<Vec<_>>(), want);
        let spare = m.into_spare();
        assert_eq!(spare.len(), 3);
        assert!(spare.iter().all(|r| r.is_empty() && r.capacity() > 0));
        let mut next = Runs::default();
        next.reuse(spare, 2);
        assert_eq!(next.spare.len(), 2);
        let want = fill(&mut next, "b");
        assert_eq!(next.merge().map(|k| k.to_vec()).collect::<Vec<_>>(), want);
    }

    /// Runs that do not interleave (a list pushed at its head: each run
    /// below the one before), and a key in two runs, come out in order,
    /// each time it was added.
    #[test]
    fn runs_that_do_not_interleave_merge_in_order() {
        let mut runs = Runs::default();
        let mut want = Vec::new();
        for i in (0..(RUN * 3) as u64).rev() {
            let k = [&b"\x00list-prefix-longer-than-16:"[..], &i.to_be_bytes()].concat();
            want.push(k.clone());
            if runs.add(Span::leaked(&k)) {
                runs.seal(|_| true);
            }
        }
        // Written again after its run was sealed: there twice.
        let again = [&b"\x00list-prefix-longer-than-16:"[..], &5u64.to_be_bytes()].concat();
        want.push(again.clone());
        let _ = runs.add(Span::leaked(&again));
        want.sort();
        let got: Vec<Vec<u8>> = runs.merge().map(|k| k.to_vec()).collect();
        assert_eq!(got, want);
    }
}
