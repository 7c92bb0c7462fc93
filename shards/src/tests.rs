//! The runtime's tests: round trips, stress and bursts across shards.

mod tests {
    use crate::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn invoke_on_every_shard_and_back() {
        let total = Arc::new(AtomicUsize::new(0));
        let t2 = total.clone();
        let rt = Runtime::start(
            Config {
                shards: 3,
                cores: vec![],
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |id| id * 10,
            move |shard: Rc<Shard<usize>>| {
                let total = t2.clone();
                async move {
                    for target in 0..shard.count() {
                        let v = shard.invoke_on(target, |s: &usize| *s + 1).await;
                        assert_eq!(v, target * 10 + 1);
                    }
                    let all = shard.broadcast(|s: &usize| *s).await;
                    assert_eq!(all, vec![0, 10, 20]);
                    total.fetch_add(1, Ordering::SeqCst);
                    // Keep serving peers until everyone is done.
                    while total.load(Ordering::SeqCst) < shard.count() {
                        rt::sleep(Duration::from_millis(1)).await;
                    }
                }
            },
        )
        .map_err(|e| e.to_string());
        assert!(rt.is_ok(), "{rt:?}", rt = rt.as_ref().err());
        if let Ok(rt) = rt {
            rt.join();
        }
        assert_eq!(total.load(Ordering::SeqCst), 3);
    }
}

mod stress {
    use crate::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const STRESS_ROUNDS: usize = 30_000;

    /// Waits for the runtime to finish, failing the test instead of hanging
    /// when a shard stops making progress.
    fn join_within(rt: Runtime, limit: Duration, what: &str) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            rt.join();
            let _ = tx.send(());
        });
        assert!(rx.recv_timeout(limit).is_ok(), "{what}: no progress for {limit:?}");
    }

    /// Many round trips in both directions at once: a lost cross-core
    /// wake-up shows up as a hang here. With glommio 0.9.0 unpatched this
    /// stalled in about half the runs (see `shards/glommio/README.basalt.md`).
    #[test]
    fn many_round_trips_do_not_hang() {
        let done = Arc::new(AtomicUsize::new(0));
        let d2 = done.clone();
        let rt = Runtime::start(
            Config {
                shards: 2,
                cores: available_cores(),
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |id| id,
            move |shard: Rc<Shard<usize>>| {
                let done = d2.clone();
                async move {
                    let peer = 1 - shard.id();
                    for i in 0..STRESS_ROUNDS {
                        let v = shard.invoke_on(peer, move |s: &usize| *s + i).await;
                        assert_eq!(v, peer + i);
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                    while done.load(Ordering::SeqCst) < 2 {
                        rt::sleep(Duration::from_millis(1)).await;
                    }
                }
            },
        );
        match rt {
            Ok(rt) => join_within(rt, Duration::from_secs(120), "two-way round trips"),
            Err(e) => panic!("runtime did not start: {e}"),
        }
        assert_eq!(done.load(Ordering::SeqCst), 2);
    }

    /// A job that answers later runs as a task on its shard: a job sent
    /// after it answers first, and both answers arrive.
    #[test]
    fn a_later_answer_does_not_hold_up_the_next_job() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let o2 = order.clone();
        let finished = Arc::new(AtomicBool::new(false));
        let f2 = finished.clone();
        let rt = Runtime::start(
            Config {
                shards: 2,
                cores: vec![],
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |id| id,
            move |shard: Rc<Shard<usize>>| {
                let order = o2.clone();
                let finished = f2.clone();
                async move {
                    if shard.id() != 0 {
                        while !finished.load(Ordering::SeqCst) {
                            rt::sleep(Duration::from_millis(1)).await;
                        }
                        return;
                    }
                    let (o1, o2) = (order.clone(), order.clone());
                    let slow = shard.invoke_on_then(1, move |s: &Rc<usize>| {
                        let s = s.clone();
                        Then::Later(Box::pin(async move {
                            rt::sleep(Duration::from_millis(50)).await;
                            o1.lock().map(|mut o| o.push("later")).ok();
                            *s + 10
                        }))
                    });
                    let quick = shard.invoke_on_then(1, move |s: &Rc<usize>| {
                        o2.lock().map(|mut o| o.push("now")).ok();
                        Then::Now(**s + 20)
                    });
                    let got = join_all(vec![
                        Box::pin(slow) as std::pin::Pin<Box<dyn Future<Output = usize>>>,
                        Box::pin(quick),
                    ])
                    .await;
                    assert_eq!(got, vec![11, 21]);
                    let here = shard.invoke_on_then(0, |s: &Rc<usize>| Then::Now(**s)).await;
                    assert_eq!(here, 0);
                    finished.store(true, Ordering::SeqCst);
                }
            },
        );
        match rt {
            Ok(rt) => join_within(rt, Duration::from_secs(60), "later answers"),
            Err(e) => panic!("runtime did not start: {e}"),
        }
        assert_eq!(*order.lock().unwrap(), vec!["now", "later"]);
    }

    /// Timers wake a parked shard: glommio arms them on its latency ring,
    /// which an earlier version of this crate did not trust (it rang every
    /// shard from a ticker thread). Nothing else wakes this shard.
    #[test]
    fn timers_wake_an_idle_shard() {
        let fired = Arc::new(AtomicUsize::new(0));
        let f2 = fired.clone();
        let rt = Runtime::start(
            Config {
                shards: 1,
                cores: vec![],
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |_| (),
            move |_shard: Rc<Shard<()>>| {
                let fired = f2.clone();
                async move {
                    for _ in 0..200 {
                        rt::sleep(Duration::from_millis(1)).await;
                        fired.fetch_add(1, Ordering::SeqCst);
                    }
                }
            },
        );
        match rt {
            Ok(rt) => join_within(rt, Duration::from_secs(60), "1 ms timers"),
            Err(e) => panic!("runtime did not start: {e}"),
        }
        assert_eq!(fired.load(Ordering::SeqCst), 200);
    }
}

mod bursts {
    use crate::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SENT: AtomicUsize = AtomicUsize::new(0);
    static RAN: AtomicUsize = AtomicUsize::new(0);
    static GOT: AtomicUsize = AtomicUsize::new(0);

    /// Bursts of round trips separated by idle periods in which shard 0's
    /// thread blocks outside the executor (as a benchmark driver does).
    #[test]
    fn bursts_after_idle_periods_do_not_hang() {
        let (req_tx, req_rx) = std::sync::mpsc::channel::<usize>();
        let (res_tx, res_rx) = std::sync::mpsc::channel::<()>();
        let req_rx = Arc::new(std::sync::Mutex::new(Some(req_rx)));
        let _rt = Runtime::start(
            Config {
                shards: 2,
                cores: available_cores(),
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |id| id,
            move |shard: Rc<Shard<usize>>| {
                let req_rx = req_rx.clone();
                let res_tx = res_tx.clone();
                async move {
                    if shard.id() != 0 {
                        std::future::pending::<()>().await;
                    }
                    let Some(rx) = req_rx.lock().ok().and_then(|mut g| g.take()) else {
                        return;
                    };
                    while let Ok(n) = rx.recv() {
                        for _ in 0..n {
                            SENT.fetch_add(1, Ordering::SeqCst);
                            shard
                                .invoke_on(1, |s: &usize| {
                                    RAN.fetch_add(1, Ordering::SeqCst);
                                    *s
                                })
                                .await;
                            GOT.fetch_add(1, Ordering::SeqCst);
                        }
                        let _ = res_tx.send(());
                    }
                }
            },
        );
        for burst in 0..300 {
            req_tx.send(1 + burst % 50).unwrap();
            if res_rx.recv_timeout(Duration::from_secs(5)).is_err() {
                panic!(
                    "burst {burst} hung: sent {} ran {} got {}",
                    SENT.load(Ordering::SeqCst),
                    RAN.load(Ordering::SeqCst),
                    GOT.load(Ordering::SeqCst)
                );
            }
            std::thread::sleep(Duration::from_micros(200 * (burst % 7) as u64));
        }
    }
}

mod mailboxes {
    use crate::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const POSTS: usize = 20_000;

    /// Shard 1 posts into a mailbox of shard 0 while shard 0's task races
    /// every wait against a short timer (as a subscriber's connection races
    /// its next read): everything arrives, once, in order, and the wake
    /// list does not grow with the dropped waits.
    #[test]
    fn posts_from_another_shard_arrive_in_order_through_dropped_waits() {
        let (post_tx, post_rx) = std::sync::mpsc::channel::<Post<usize>>();
        let post_rx = Arc::new(Mutex::new(post_rx));
        let got = Arc::new(AtomicUsize::new(0));
        let listed = Arc::new(AtomicUsize::new(0));
        let (g2, l2) = (got.clone(), listed.clone());
        let rt = Runtime::start(
            Config {
                shards: 2,
                cores: available_cores(),
                spin_before_park: Duration::ZERO,
                preempt: crate::DEFAULT_PREEMPT,
            },
            |id| id,
            move |shard: Rc<Shard<usize>>| {
                let (post_tx, post_rx, got, listed) = (post_tx.clone(), post_rx.clone(), g2.clone(), l2.clone());
                async move {
                    if shard.id() == 0 {
                        let (mb, post) = shard.mailbox::<usize>();
                        let _ = post_tx.send(post);
                        let mut next = 0;
                        while next < POSTS {
                            let timer = async {
                                rt::sleep(Duration::from_micros(50)).await;
                                Vec::new()
                            };
                            let items = futures_lite::FutureExt::or(mb.recv(), timer).await;
                            for v in items {
                                assert_eq!(v, next, "out of order");
                                next += 1;
                            }
                        }
                        got.store(next, Ordering::SeqCst);
                        // Waits that time out with nothing posted.
                        for _ in 0..100 {
                            let timer = async {
                                rt::sleep(Duration::from_micros(20)).await;
                                Vec::new()
                            };
                            assert!(futures_lite::FutureExt::or(mb.recv(), timer).await.is_empty());
                        }
                        listed.store(WAITING.with(|w| w.borrow().len()), Ordering::SeqCst);
                    } else {
                        let post = post_rx.lock().ok().and_then(|rx| rx.recv().ok());
                        let Some(post) = post else { return };
                        for i in 0..POSTS {
                            assert!(post.post(i));
                            if i % 64 == 0 {
                                rt::yield_now().await;
                            }
                        }
                    }
                }
            },
        )
        .map_err(|e| e.to_string());
        assert!(rt.is_ok(), "{:?}", rt.as_ref().err());
        if let Ok(rt) = rt {
            rt.join();
        }
        assert_eq!(got.load(Ordering::SeqCst), POSTS);
        assert!(
            listed.load(Ordering::SeqCst) <= 1,
            "wake list grew: {}",
            listed.load(Ordering::SeqCst)
        );
    }
}
