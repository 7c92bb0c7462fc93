//! The thread-per-core runtime under Basalt.
//!
//! This crate owns: one glommio executor per shard, each pinned to a core; a
//! full mesh between them (every shard can send to every other through the
//! target's inbox); `invoke_on(shard, job)` with a local fast
//! path; broadcast to every shard. It knows nothing of Redis, and it is the
//! only crate that names glommio's executor and channel types, so that the
//! runtime could be swapped without touching the server. The few glommio
//! items the server needs (TCP sockets, timers, spawning) are re-exported
//! from [`rt`] under neutral names.
//!
//! Cross-core wake-ups go through a doorbell socket: each shard keeps a
//! `recv` readiness poll pending on a socketpair, and any thread wakes it by
//! writing a byte. No `Waker` crosses threads: the shard's own wake loop
//! wakes its waiting tasks locally.
//!
//! glommio 0.9.0 itself had a scheduler bug that lost wake-ups under load:
//! after an early preempt check it parked in `io_uring_enter` with runnable
//! tasks and never woke (`stress::many_round_trips_do_not_hang` stalled about
//! half its runs). The workspace patches it with a vendored copy fixed as
//! upstream glommio/glommio#53 did; see `shards/glommio/README.basalt.md`.
//! An earlier version of this crate blamed glommio's latency ring and rang
//! every shard from a ticker thread every 2 ms; with the fix, timers, accept
//! and the doorbell all wake a parked shard without it.
//!
//! Invariants:
//! - A job sent to shard `i` runs on shard `i`'s thread, on a task queue with
//!   `Latency::Matters`, so a cross-core wake-up costs microseconds, not the
//!   ~100 ms a `NotImportant` queue can take (glommio PR #459).
//! - Replies come back in a reply slot and the asking shard's doorbell; its
//!   wake loop wakes the waiting task locally. No `Waker` crosses threads.
//! - The shard's main task and every task started with [`rt::spawn`] run in
//!   a `Latency::Matters` queue, ahead of throughput work.
//! - Jobs never run concurrently with other code of the same shard: a job is
//!   a plain synchronous closure over the shard's state.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Weak};
use std::task::Waker;

use glommio::{Latency, LocalExecutorBuilder, Placement, Shares};

mod mailbox;
pub use mailbox::{Mailbox, Post};

/// Items of the runtime the server may name: sockets, timers, spawning.
pub mod rt {
    pub use glommio::net::{TcpListener, TcpStream};
    pub use glommio::timer::{sleep, Timer};
    pub use glommio::yield_if_needed;

    /// Spawns a detached task on the current shard's latency-sensitive queue.
    /// Every task that awaits another shard must run there: see the crate docs.
    pub fn spawn<F: std::future::Future<Output = ()> + 'static>(fut: F) {
        match super::LATENCY_QUEUE.with(|q| q.get()) {
            Some(tq) => match glommio::spawn_local_into(fut, tq) {
                Ok(task) => {
                    task.detach();
                }
                Err(e) => tracing::error!(error = %e, "cannot spawn task"),
            },
            None => {
                glommio::spawn_local(fut).detach();
            }
        }
    }

    /// Lets every other ready task of this shard run (and I/O be polled)
    /// before the caller goes on: long work cut into slices calls it between
    /// slices so it never holds the core for long.
    pub async fn yield_now() {
        glommio::executor().yield_task_queue_now().await
    }

    /// Runs a blocking closure on the executor's blocking thread pool, so a
    /// long RocksDB call (checkpoint, compaction control) does not stall the core.
    pub async fn spawn_blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        glommio::executor().spawn_blocking(f).await
    }
}

/// A job shipped to another shard: runs there against that shard's state.
type Job<S> = Box<dyn FnOnce(&Rc<S>) + Send + 'static>;

/// A job's answer for [`Shard::invoke_on_then`]: now, or when a future
/// that runs on the target shard ends.
pub enum Then<R> {
    Now(R),
    Later(std::pin::Pin<Box<dyn Future<Output = R>>>),
}

/// How to start the shards.
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of shards (executors).
    pub shards: usize,
    /// Cores to pin to; shard `i` runs on `cores[i % cores.len()]`. Empty: no pinning.
    pub cores: Vec<usize>,
    /// Busy-poll this long before parking an idle executor. Cuts cross-core
    /// wake-up latency at the price of CPU; zero disables it.
    pub spin_before_park: Duration,
    /// How long a shard runs tasks before it polls its rings again while
    /// it has work (glommio's preempt timer, of its `Latency::Matters`
    /// queue): the longest a busy shard leaves a socket's readiness or
    /// another shard's request waiting. [`DEFAULT_PREEMPT`].
    pub preempt: Duration,
}

/// 2 ms. At 200 us a shard under 50 pipelining clients took ~3000 timer
/// interrupts a second (each preempt timer that fired, then its task work)
/// and polled its rings in the middle of each pass over its connections:
/// INCR -P16 used 1.75 us of CPU per request, 1.25-1.57 us at 2 ms
/// (tuning.md, session 47). Redis's own loop passes over every ready
/// client before it polls again.
pub const DEFAULT_PREEMPT: Duration = Duration::from_millis(2);

/// The cores this process may run on, in order.
pub fn available_cores() -> Vec<usize> {
    match glommio::CpuSet::online() {
        Ok(set) => {
            let mut ids: Vec<usize> = set.into_iter().map(|c| c.cpu).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        }
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Wakes one shard reliably from any thread: one byte on a socket whose
/// `recv` the shard keeps pending on glommio's main ring, the ring it sleeps
/// on. `signalled` makes a burst of events cost one byte: it is set by the
/// first sender and cleared by the shard before it looks for work.
struct Doorbell {
    writer: std::os::unix::net::UnixStream,
    signalled: AtomicBool,
}

impl Doorbell {
    fn ring(&self) {
        if !self.signalled.swap(true, Ordering::SeqCst) {
            // WouldBlock means bytes are already queued: the shard will wake.
            let _ = std::io::Write::write(&mut &self.writer, &[1u8]);
        }
    }
}

/// Where a job's result travels back to the shard that asked for it.
struct ReplySlot<R> {
    value: Mutex<Option<R>>,
    ready: AtomicBool,
}

/// What a shard's wake loop asks of an event one of its tasks waits for.
trait Pending {
    fn is_ready(&self) -> bool;
}

impl<R: Send> Pending for ReplySlot<R> {
    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

thread_local! {
    /// Cross-shard events this shard's tasks wait for, with their wakers.
    static WAITING: RefCell<Vec<(Weak<dyn Pending + Send + Sync>, Waker)>> = const { RefCell::new(Vec::new()) };
}

/// Waits for a reply slot to be filled; the wake loop wakes this task.
async fn wait_reply<R: Send + 'static>(slot: Arc<ReplySlot<R>>) -> R {
    let mut registered = false;
    std::future::poll_fn(|cx| {
        if slot.ready.load(Ordering::Acquire) {
            if let Some(v) = slot.value.lock().ok().and_then(|mut v| v.take()) {
                return Poll::Ready(v);
            }
        }
        if !registered {
            registered = true;
            let weak: Weak<dyn Pending + Send + Sync> = Arc::downgrade(&(slot.clone() as Arc<dyn Pending + Send + Sync>));
            WAITING.with(|w| w.borrow_mut().push((weak, cx.waker().clone())));
        }
        Poll::Pending
    })
    .await
}

/// The sending half of a [`Shard::oneshot`]: any shard may send, and the
/// first value sent is the one received (later ones are dropped).
pub struct Sender<R> {
    slot: Arc<ReplySlot<R>>,
    ring: Arc<dyn Fn() + Send + Sync>,
}

impl<R: Send + 'static> Sender<R> {
    /// Delivers `v` and wakes the receiving shard. False when a value was
    /// already sent.
    pub fn send(&self, v: R) -> bool {
        let Ok(mut slot) = self.slot.value.lock() else { return false };
        if self.slot.ready.load(Ordering::Acquire) {
            return false;
        }
        *slot = Some(v);
        self.slot.ready.store(true, Ordering::Release);
        drop(slot);
        (self.ring)();
        true
    }
}

/// The receiving half of a [`Shard::oneshot`], awaited on the shard that
/// made it.
pub struct Receiver<R> {
    slot: Arc<ReplySlot<R>>,
}

impl<R: Send + 'static> Receiver<R> {
    /// Waits for the value. A wait dropped before it came (a timeout won a
    /// race) may be started again.
    pub async fn recv(&self) -> R {
        wait_reply(self.slot.clone()).await
    }
}

/// A shard's incoming jobs from every other shard, and its doorbell.
struct Inbox<S> {
    queue: Mutex<VecDeque<Job<S>>>,
    bell: Doorbell,
}

impl<S> Inbox<S> {
    fn push(&self, job: Job<S>) {
        if let Ok(mut q) = self.queue.lock() {
            q.push_back(job);
        }
        self.bell.ring();
    }

    fn take_all(&self, into: &mut Vec<Job<S>>) {
        if let Ok(mut q) = self.queue.lock() {
            into.extend(q.drain(..));
        }
    }
}

/// What a shard's state does when other shards' jobs arrive.
pub trait Receives {
    /// Runs on the shard's thread before it answers other shards (once
    /// before a run of their jobs, and before each answer a job gives
    /// later): what the shard must settle before another shard may see
    /// its state.
    fn before_answer(&self) {}
}

/// A plain number or nothing as a shard's state (tests, benchmarks):
/// nothing to settle.
impl Receives for usize {}
impl Receives for () {}

/// The shard's wake loop: waits for its doorbell, then runs every queued
/// job in arrival order and wakes every local task whose reply has come.
async fn serve_inbox<S: Receives + 'static>(state: Rc<S>, inbox: Arc<Inbox<S>>, reader: std::os::unix::net::UnixStream) {
    use futures_lite::AsyncReadExt;
    // SAFETY: the fd comes from a socketpair this function now owns.
    let mut reader =
        unsafe { <glommio::net::UnixStream as std::os::fd::FromRawFd>::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(reader)) };
    let mut buf = [0u8; 256];
    let mut jobs = Vec::new();
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => {
                tracing::error!("shard doorbell closed: cross-shard messages to this shard stop");
                return;
            }
            Ok(_) => {}
            // A spurious wake-up of the readiness poll: look for work anyway.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) => {}
            Err(e) => {
                tracing::error!(error = %e, "shard doorbell read failed");
                glommio::timer::sleep(Duration::from_millis(1)).await;
            }
        }
        // Clear before looking: an event after this point rings again.
        inbox.bell.signalled.store(false, Ordering::SeqCst);
        inbox.take_all(&mut jobs);
        if !jobs.is_empty() {
            state.before_answer();
        }
        for job in jobs.drain(..) {
            job(&state);
        }
        WAITING.with(|w| {
            w.borrow_mut().retain(|(event, waker)| match event.upgrade() {
                Some(e) if e.is_ready() => {
                    waker.wake_by_ref();
                    false
                }
                Some(_) => true,
                None => false,
            })
        });
    }
}

/// A shard's view of the runtime: its id, its state, and the mesh to every peer.
pub struct Shard<S: 'static> {
    id: usize,
    count: usize,
    state: Rc<S>,
    inboxes: Arc<Vec<Arc<Inbox<S>>>>,
}

impl<S: Receives + 'static> Shard<S> {
    /// This shard's index.
    pub fn id(&self) -> usize {
        self.id
    }

    /// How many shards there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// This shard's own state.
    pub fn state(&self) -> &Rc<S> {
        &self.state
    }

    /// Jobs waiting in every shard's inbox, in shard order (INFO's queue depth).
    pub fn queue_depths(&self) -> Vec<usize> {
        self.inboxes.iter().map(|i| i.queue.lock().map_or(0, |q| q.len())).collect()
    }

    /// A one-shot channel into this shard: the [`Receiver`] is awaited
    /// here, the [`Sender`] may travel to any shard.
    pub fn oneshot<R: Send + 'static>(&self) -> (Sender<R>, Receiver<R>) {
        let slot = Arc::new(ReplySlot {
            value: Mutex::new(None),
            ready: AtomicBool::new(false),
        });
        let home = self.inboxes[self.id].clone();
        let ring: Arc<dyn Fn() + Send + Sync> = Arc::new(move || home.bell.ring());
        (Sender { slot: slot.clone(), ring }, Receiver { slot })
    }

    /// A many-to-one queue into a task of this shard: the [`Mailbox`] is
    /// awaited here, its [`Post`]s may travel to any shard.
    pub fn mailbox<T: Send + 'static>(&self) -> (Mailbox<T>, Post<T>) {
        let home = self.inboxes[self.id].clone();
        Mailbox::new(Arc::new(move || home.bell.ring()))
    }

    /// Runs `job` on shard `target` and returns its result. On the local
    /// shard it runs inline, with no message and no await point.
    pub async fn invoke_on<R, F>(&self, target: usize, job: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&S) -> R + Send + 'static,
    {
        if target == self.id {
            return job(&self.state);
        }
        let slot = Arc::new(ReplySlot {
            value: Mutex::new(None),
            ready: AtomicBool::new(false),
        });
        let reply = slot.clone();
        let home = self.inboxes[self.id].clone();
        let boxed: Job<S> = Box::new(move |state: &Rc<S>| {
            let v = job(state);
            if let Ok(mut slot) = reply.value.lock() {
                *slot = Some(v);
            }
            reply.ready.store(true, Ordering::Release);
            home.bell.ring();
        });
        match self.inboxes.get(target) {
            Some(inbox) => inbox.push(boxed),
            None => panic!("invoke_on: shard {target} of {}", self.count),
        }
        wait_reply(slot).await
    }

    /// Runs `job` on shard `target`: it answers at once ([`Then::Now`]) or
    /// hands back a future ([`Then::Later`]) that runs there as a task of
    /// its own, while the shard goes on with other work, and whose output
    /// is the answer. On the local shard it runs inline. Jobs start in the
    /// order they were sent; one that answers later may finish after jobs
    /// sent after it.
    pub async fn invoke_on_then<R, F>(&self, target: usize, job: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&Rc<S>) -> Then<R> + Send + 'static,
    {
        if target == self.id {
            return match job(&self.state) {
                Then::Now(v) => v,
                Then::Later(f) => f.await,
            };
        }
        let slot = Arc::new(ReplySlot {
            value: Mutex::new(None),
            ready: AtomicBool::new(false),
        });
        let reply = slot.clone();
        let home = self.inboxes[self.id].clone();
        let boxed: Job<S> = Box::new(move |state: &Rc<S>| {
            let answer = move |v: R| {
                if let Ok(mut slot) = reply.value.lock() {
                    *slot = Some(v);
                }
                reply.ready.store(true, Ordering::Release);
                home.bell.ring();
            };
            match job(state) {
                Then::Now(v) => answer(v),
                Then::Later(f) => {
                    let state = state.clone();
                    rt::spawn(async move {
                        let v = f.await;
                        state.before_answer();
                        answer(v)
                    })
                }
            }
        });
        match self.inboxes.get(target) {
            Some(inbox) => inbox.push(boxed),
            None => panic!("invoke_on_then: shard {target} of {}", self.count),
        }
        wait_reply(slot).await
    }

    /// Runs `job` on every shard (in parallel) and returns the results in shard order.
    pub async fn broadcast<R, F>(&self, job: F) -> Vec<R>
    where
        R: Send + 'static,
        F: Fn(&S) -> R + Send + Sync + 'static,
    {
        let job = Arc::new(job);
        let mut pending = Vec::with_capacity(self.count);
        for target in 0..self.count {
            let job = job.clone();
            pending.push(self.invoke_on(target, move |s| job(s)));
        }
        join_all(pending).await
    }
}

/// Awaits every future, polling them together; results in input order.
pub async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<_> = futs.into_iter().map(Box::pin).collect();
    let mut outs: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (fut, out) in futs.iter_mut().zip(outs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outs.into_iter().flatten().collect()
}

/// Handle to the running shards: wait for them with [`Runtime::join`].
pub struct Runtime {
    handles: Vec<glommio::ExecutorJoinHandle<()>>,
}

/// Why the runtime could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

impl Runtime {
    /// Starts `config.shards` executors. On each, `make_state(id)` builds the
    /// shard's state and `main(shard)` runs as its main task; the executor
    /// exits when `main` returns.
    pub fn start<S, MS, M, Fut>(config: Config, make_state: MS, main: M) -> Result<Runtime, StartError>
    where
        S: Receives + 'static,
        MS: Fn(usize) -> S + Send + Sync + Clone + 'static,
        M: Fn(Rc<Shard<S>>) -> Fut + Send + Sync + Clone + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let n = config.shards.max(1);
        let mut readers = Vec::with_capacity(n);
        let mut bells = Vec::with_capacity(n);
        for id in 0..n {
            let (reader, writer) =
                std::os::unix::net::UnixStream::pair().map_err(|e| StartError(format!("shard {id}: cannot create its doorbell: {e}")))?;
            writer
                .set_nonblocking(true)
                .map_err(|e| StartError(format!("shard {id}: doorbell: {e}")))?;
            reader
                .set_nonblocking(true)
                .map_err(|e| StartError(format!("shard {id}: doorbell: {e}")))?;
            readers.push(Some(reader));
            bells.push(Arc::new(Inbox {
                queue: Mutex::new(VecDeque::new()),
                bell: Doorbell {
                    writer,
                    signalled: AtomicBool::new(false),
                },
            }));
        }
        let inboxes = Arc::new(bells);
        let mut handles = Vec::with_capacity(n);
        for id in 0..n {
            let placement = if config.cores.is_empty() {
                Placement::Unbound
            } else {
                Placement::Fixed(config.cores[id % config.cores.len()])
            };
            let mut builder = LocalExecutorBuilder::new(placement).name(&format!("shard-{id}"));
            let preempt = config.preempt.max(Duration::from_micros(10));
            if !config.spin_before_park.is_zero() {
                builder = builder.spin_before_park(config.spin_before_park);
            }
            let inboxes = inboxes.clone();
            let reader = readers[id].take();
            let make_state = make_state.clone();
            let main = main.clone();
            let handle = builder
                .spawn(move || async move {
                    let state = Rc::new(make_state(id));
                    let tq = glommio::executor().create_task_queue(Shares::default(), Latency::Matters(preempt), "latency");
                    LATENCY_QUEUE.with(|q| q.set(Some(tq)));
                    let Some(reader) = reader else { return };
                    match glommio::spawn_local_into(serve_inbox(state.clone(), inboxes[id].clone(), reader), tq) {
                        Ok(task) => {
                            task.detach();
                        }
                        Err(e) => {
                            tracing::error!(shard = id, error = %e, "cannot start the inbox task");
                            return;
                        }
                    }
                    let shard = Rc::new(Shard {
                        id,
                        count: n,
                        state,
                        inboxes,
                    });
                    CURRENT.with(|c| *c.borrow_mut() = Some(shard.clone() as Rc<dyn std::any::Any>));
                    match glommio::spawn_local_into(main(shard), tq) {
                        Ok(task) => task.await,
                        Err(e) => tracing::error!(shard = id, error = %e, "cannot start the shard's main task"),
                    }
                })
                .map_err(|e| StartError(format!("shard {id}: cannot start executor: {e}")))?;
            handles.push(handle);
        }
        Ok(Runtime { handles })
    }

    /// Waits for every shard's main task to finish.
    pub fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<dyn std::any::Any>>> = const { RefCell::new(None) };
    /// This executor's `Latency::Matters` task queue.
    static LATENCY_QUEUE: std::cell::Cell<Option<glommio::TaskQueueHandle>> = const { std::cell::Cell::new(None) };
}

/// The shard running on this thread, if any (for code far from the connection loop).
pub fn current<S: 'static>() -> Option<Rc<Shard<S>>> {
    CURRENT.with(|c| c.borrow().clone().and_then(|rc| rc.downcast::<Shard<S>>().ok()))
}

#[cfg(test)]
mod tests;
