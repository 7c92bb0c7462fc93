//! A many-to-one queue into one task of one shard: any thread posts, the
//! task that owns the [`Mailbox`] takes everything posted so far. Pub/sub
//! deliveries travel this way (a publisher on one core, a subscriber's
//! connection on another).
//!
//! As for replies, no `Waker` crosses threads: a post rings the home
//! shard's doorbell, and that shard's wake loop wakes the owner locally.
//! The owner is listed with the wake loop at most once at a time, so a
//! wait started and dropped again and again (a connection racing its next
//! read against the mailbox) does not grow the list.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use crate::{Pending, WAITING};

struct Slot<T> {
    queue: Mutex<VecDeque<T>>,
    /// Something was posted since the owner last took.
    ready: AtomicBool,
    /// An entry of the home shard's wake list stands for this mailbox.
    listed: AtomicBool,
    /// The mailbox is alive; once dropped, posts are refused.
    open: AtomicBool,
}

impl<T: Send> Pending for Slot<T> {
    fn is_ready(&self) -> bool {
        let ready = self.ready.load(Ordering::Acquire);
        if ready {
            // The wake loop drops its entry when this answers true.
            self.listed.store(false, Ordering::Release);
        }
        ready
    }
}

/// The receiving end, owned by one task of the shard that made it
/// ([`crate::Shard::mailbox`]).
pub struct Mailbox<T> {
    slot: Arc<Slot<T>>,
}

/// A posting end: clone it freely and post from any thread.
pub struct Post<T> {
    slot: Arc<Slot<T>>,
    ring: Arc<dyn Fn() + Send + Sync>,
}

impl<T> Clone for Post<T> {
    fn clone(&self) -> Self {
        Post {
            slot: self.slot.clone(),
            ring: self.ring.clone(),
        }
    }
}

impl<T: Send + 'static> Post<T> {
    /// Appends `v` and wakes the owner's shard. False when the owner is gone.
    pub fn post(&self, v: T) -> bool {
        self.post_many(std::iter::once(v))
    }

    /// Appends every item of `items` in order, with one wake-up. False
    /// when the owner is gone (nothing is kept then).
    pub fn post_many(&self, items: impl IntoIterator<Item = T>) -> bool {
        if !self.slot.open.load(Ordering::Acquire) {
            return false;
        }
        let Ok(mut q) = self.slot.queue.lock() else { return false };
        q.extend(items);
        drop(q);
        if !self.slot.ready.swap(true, Ordering::AcqRel) {
            (self.ring)();
        }
        true
    }

    /// Whether the owner still takes what is posted.
    pub fn is_open(&self) -> bool {
        self.slot.open.load(Ordering::Acquire)
    }
}

impl<T: Send + 'static> Mailbox<T> {
    pub(crate) fn new(ring: Arc<dyn Fn() + Send + Sync>) -> (Mailbox<T>, Post<T>) {
        let slot = Arc::new(Slot {
            queue: Mutex::new(VecDeque::new()),
            ready: AtomicBool::new(false),
            listed: AtomicBool::new(false),
            open: AtomicBool::new(true),
        });
        (Mailbox { slot: slot.clone() }, Post { slot, ring })
    }

    /// Everything posted so far, in order, without waiting (maybe nothing).
    pub fn take(&self) -> Vec<T> {
        self.slot.ready.store(false, Ordering::Release);
        match self.slot.queue.lock() {
            Ok(mut q) => q.drain(..).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits until something was posted; returns all of it, in order. A
    /// wait dropped before that may be started again: nothing is lost.
    pub fn recv(&self) -> impl Future<Output = Vec<T>> + '_ {
        std::future::poll_fn(move |cx| {
            if self.slot.ready.load(Ordering::Acquire) {
                let items = self.take();
                if !items.is_empty() {
                    return Poll::Ready(items);
                }
            }
            if !self.slot.listed.swap(true, Ordering::AcqRel) {
                let weak: std::sync::Weak<dyn Pending + Send + Sync> =
                    Arc::downgrade(&(self.slot.clone() as Arc<dyn Pending + Send + Sync>));
                WAITING.with(|w| w.borrow_mut().push((weak, cx.waker().clone())));
            }
            // A post between the check above and the listing rang the bell
            // already; the wake loop then finds the entry ready.
            Poll::Pending
        })
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        self.slot.open.store(false, Ordering::Release);
        if let Ok(mut q) = self.slot.queue.lock() {
            q.clear();
        }
    }
}
