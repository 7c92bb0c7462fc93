//! The meta cache's tests (`cache.rs`).

mod basics {
    use super::super::*;

    fn got(c: &MetaCache, k: &[u8]) -> Option<Option<Vec<u8>>> {
        c.get(k).map(|e| e.value().map(<[u8]>::to_vec))
    }

    fn peeked(c: &MetaCache, k: &[u8]) -> Option<Option<Vec<u8>>> {
        c.peek(k).map(|e| e.value().map(<[u8]>::to_vec))
    }

    fn some(v: &[u8]) -> Option<Option<Vec<u8>>> {
        Some(Some(v.to_vec()))
    }

    #[test]
    fn meta_keys_and_ranges_are_told_apart() {
        let mk = crate::storage::keys::meta_key(3, b"k");
        assert!(is_meta(&mk));
        let (lo, hi) = crate::storage::keys::sub_range(3, b"k", 7);
        assert!(!is_meta(&lo));
        assert!(range_spares_meta(&lo, &hi), "a collection's members");
        let (lo, hi) = crate::storage::keys::db_range(3);
        assert!(!range_spares_meta(&lo, &hi), "FLUSHDB covers meta records");
        let (lo, hi) = crate::storage::keys::meta_db_range(3);
        assert!(!range_spares_meta(&lo, &hi));
        assert!(!is_meta(&crate::storage::keys::ttl_key(5, 3, b"k")));
        assert!(range_spares_meta(&[0xFF, b'T'], &[0xFF, b'U']));
        assert!(!range_spares_meta(b"", b"\xff"));
    }

    /// A slot's stamp copy (`with_stamp`): there only while the key's
    /// entry is, kept by the table's growth, dropped by a new value (the
    /// key was written, and touched meanwhile through the write tier's
    /// copy), found by the key's hash.
    #[test]
    fn a_stamp_copy_lives_with_its_entry() {
        let c = MetaCache::new(1 << 20);
        let h = |k: &[u8]| c.hasher().hash_one(k);
        let stamp = |k: &[u8]| {
            let mut got = None;
            c.with_stamp(h(k), |w| {
                got = Some(w);
                None
            })
            .then_some(got)
            .flatten()
        };
        assert!(!c.with_stamp(h(b"\0Mk"), |_| Some(9)), "no entry, no copy");
        c.insert(b"\0Mk", Some(b"v"));
        assert_eq!(stamp(b"\0Mk"), Some(0), "a new entry has none yet");
        assert!(c.with_stamp(h(b"\0Mk"), |_| Some(77)));
        assert_eq!(stamp(b"\0Mk"), Some(77));
        c.update(b"\0Mk", Some(b"w"));
        assert_eq!(stamp(b"\0Mk"), Some(0), "a new value drops it");
        assert!(c.with_stamp(h(b"\0Mk"), |_| Some(78)));
        c.insert(b"\0Mk", None);
        assert_eq!(stamp(b"\0Mk"), Some(0), "so does a new insert of the key");
        assert!(c.with_stamp(h(b"\0Mk"), |_| Some(77)));
        assert!(c.get(b"\0Mk").is_some());
        assert_eq!(stamp(b"\0Mk"), Some(77), "a read keeps it");
        for i in 0..5_000u32 {
            let k = format!("\0Mk{i}");
            c.insert(k.as_bytes(), Some(b"x"));
            assert!(c.with_stamp(h(k.as_bytes()), |_| Some(u64::from(i) + 1)));
        }
        for i in (0..5_000u32).step_by(97) {
            assert_eq!(
                stamp(format!("\0Mk{i}").as_bytes()),
                Some(u64::from(i) + 1),
                "k{i} after the growth"
            );
        }
        assert_eq!(stamp(b"\0Mk"), Some(77));
        c.clear();
        assert_eq!(stamp(b"\0Mk"), None, "gone with its entry");
        c.insert(b"\0Mk", Some(b"v"));
        assert_eq!(stamp(b"\0Mk"), Some(0), "a new entry starts without");
    }

    #[test]
    fn hits_misses_and_absent_keys() {
        let c = MetaCache::new(1 << 20);
        assert_eq!(got(&c, b"\0Mk"), None);
        c.insert(b"\0Mk", None);
        assert_eq!(got(&c, b"\0Mk"), Some(None));
        c.insert(b"\0Mk", Some(b"v"));
        assert_eq!(got(&c, b"\0Mk"), some(b"v"));
        assert_eq!(peeked(&c, b"\0Mk"), some(b"v"), "a peer sees it");
        assert_eq!(c.get(b"\0Mk").and_then(|e| e.to_bytes()), Some(Bytes::from_static(b"v")));
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries), (3, 1, 1), "peers are not counted");
        // An empty record is not an absent key.
        c.insert(b"\0Me", Some(b""));
        assert_eq!(got(&c, b"\0Me"), some(b""));
        c.clear();
        assert_eq!(got(&c, b"\0Mk"), None);
        assert_eq!(c.stats().entries, 0);
    }

    #[test]
    fn a_reader_keeps_its_record_past_a_write() {
        let c = MetaCache::new(1 << 20);
        c.insert(b"\0Mk", Some(b"old"));
        let held = c.get(b"\0Mk");
        c.insert(b"\0Mk", Some(b"new"));
        c.clear();
        assert_eq!(held.as_ref().and_then(Cached::value), Some(&b"old"[..]));
    }

    #[test]
    fn an_entry_held_is_updated_in_place() {
        let c = MetaCache::new(1 << 20);
        let k = b"\0Mk";
        assert!(!c.holds(k));
        c.insert(k, Some(b"v"));
        assert!(c.holds(k));
        let before = c.stats().bytes;
        c.update(k, Some(b"longer"));
        assert_eq!(peeked(&c, k), some(b"longer"));
        assert_eq!(c.stats().bytes, before + 5, "weighed again");
        c.update(k, None);
        assert_eq!(peeked(&c, k), Some(None), "a deletion is remembered");
        assert_eq!(c.stats().entries, 1);
    }

    #[test]
    fn weight_stays_within_the_budget() {
        let c = MetaCache::new(64 * 1024);
        for i in 0..10_000u32 {
            c.insert(format!("\0Mkey{i}").as_bytes(), Some(&[7u8; 100]));
        }
        let s = c.stats();
        assert!(s.bytes <= 64 * 1024, "{s:?}");
        assert!(s.entries > 100, "{s:?}");
    }
}

mod table {
    use super::super::*;

    fn val(n: usize, b: u8) -> Option<Vec<u8>> {
        Some(vec![b; n])
    }

    fn got(c: &MetaCache, k: &[u8]) -> Option<Option<Vec<u8>>> {
        c.get(k).map(|e| e.value().map(<[u8]>::to_vec))
    }

    fn peeked(c: &MetaCache, k: &[u8]) -> Option<Option<Vec<u8>>> {
        c.peek(k).map(|e| e.value().map(<[u8]>::to_vec))
    }

    #[test]
    fn a_big_table_finds_every_key_it_keeps_and_nothing_else() {
        // Room for all: growth moves every entry and loses none.
        let c = MetaCache::new(1 << 30);
        for i in 0..50_000u32 {
            c.insert(format!("\0Mk{i}").as_bytes(), val(8, i as u8).as_deref());
        }
        assert_eq!(c.stats().entries, 50_000);
        for i in 0..50_000u32 {
            assert_eq!(got(&c, format!("\0Mk{i}").as_bytes()), Some(val(8, i as u8)), "k{i}");
        }
        assert_eq!(got(&c, b"\0Mk50000"), None);
    }

    #[test]
    fn removals_keep_probe_chains_whole() {
        // A small budget evicts constantly (each eviction shifts a chain
        // back): what the cache answers must always be the key's last value
        // or nothing.
        let c = MetaCache::new(16 * 4 * 1024);
        let mut last = std::collections::HashMap::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for round in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = format!("\0Mk{}", x % 3000);
            if round % 3 == 0 {
                let v = if x.is_multiple_of(11) {
                    None
                } else {
                    val((x % 40) as usize, round as u8)
                };
                c.insert(k.as_bytes(), v.as_deref());
                last.insert(k, v);
            } else if round % 5 == 0 {
                let v = val((x % 60) as usize, round as u8);
                c.update(k.as_bytes(), v.as_deref());
                if c.holds(k.as_bytes()) {
                    last.insert(k, v);
                }
            } else if let Some(g) = got(&c, k.as_bytes()) {
                assert_eq!(Some(&g), last.get(&k), "{k}");
            }
        }
        let s = c.stats();
        assert!(s.bytes <= 16 * 4 * 1024 && s.entries > 0, "{s:?}");
        // Every key kept answers its last value, and the weight kept is the
        // entries' own.
        let (mut sum, mut n) = (0, 0);
        for (k, v) in &last {
            if let Some(g) = peeked(&c, k.as_bytes()) {
                assert_eq!(&g, v, "{k}");
                sum += weigh(k.as_bytes(), v.as_deref());
                n += 1;
            }
        }
        assert_eq!((sum, n), (s.bytes, s.entries));
    }

    #[test]
    fn read_keys_outlive_keys_never_read() {
        let c = MetaCache::new(16 * 8 * 1024);
        for i in 0..200u32 {
            c.insert(format!("\0Mhot{i}").as_bytes(), val(20, 1).as_deref());
        }
        for i in 0..20_000u32 {
            for h in (0..200u32).step_by(10).map(|h| h + i % 10) {
                let _ = c.get(format!("\0Mhot{h}").as_bytes());
            }
            c.insert(format!("\0Mcold{i}").as_bytes(), val(20, 2).as_deref());
        }
        let kept = (0..200u32).filter(|h| c.holds(format!("\0Mhot{h}").as_bytes())).count();
        let cold = (0..20_000u32).filter(|i| c.holds(format!("\0Mcold{i}").as_bytes())).count();
        assert!(kept >= 190, "hot keys kept: {kept}, cold kept: {cold}");
        assert!(cold < 20_000);
    }

    #[test]
    fn long_keys_and_heavy_values() {
        let c = MetaCache::new(16 * 1024);
        let long = vec![b'x'; 300];
        c.insert(&long, Some(b"aaaaa"));
        assert_eq!(got(&c, &long), Some(val(5, b'a')), "a long key");
        let mut other = long.clone();
        other[299] = b'y';
        assert_eq!(got(&c, &other), None);
        // Heavier than a part's budget (1 KiB): not kept, and the older
        // value leaves with it.
        c.insert(&long, val(2000, 2).as_deref());
        assert_eq!(got(&c, &long), None);
        assert_eq!(c.stats().entries, 0);
        c.insert(b"\0Mk", Some(b"aaaaa"));
        c.update(b"\0Mk", val(2000, 3).as_deref());
        assert_eq!(got(&c, b"\0Mk"), None, "too heavy an update leaves too");
        c.insert(b"\0Mk", Some(b"aaaaa"));
        c.update(b"\0Mk", val(10, 3).as_deref());
        assert_eq!(got(&c, b"\0Mk"), Some(val(10, 3)));
        c.update(b"\0Mnot", Some(b"x"));
        assert_eq!(got(&c, b"\0Mnot"), None, "update makes no entry");
        // A record past 256 bytes is laid out on the heap.
        let big = MetaCache::new(1 << 20);
        big.insert(&long, val(1000, 9).as_deref());
        assert_eq!(got(&big, &long), Some(val(1000, 9)));
    }

    #[test]
    fn a_table_past_the_caches_is_big_until_cleared() {
        let c = MetaCache::new(1 << 30);
        // Prefetches of an empty table, absent keys and present ones are
        // hints only.
        c.prefetch_slot(b"\0Mnone");
        assert!(!c.prefetch_entry(b"\0Mnone"), "an empty table holds no entry");
        assert!(!c.big());
        for i in 0..(PARTS * BIG_SLOTS) as u32 {
            c.insert(format!("\0Mk{i}").as_bytes(), Some(b"v"));
        }
        assert!(c.big(), "{:?}", c.stats());
        let h = c.hasher().hash_one(b"\0Mk7");
        c.prefetch_slot_hashed(h);
        assert!(c.prefetch_entry_hashed(h), "a cached key's home slot holds it");
        assert_eq!(got(&c, b"\0Mk7"), Some(Some(b"v".to_vec())));
        assert_eq!(c.get_hashed(h, b"\0Mk7").and_then(|e| e.to_bytes()), Some(Bytes::from_static(b"v")));
        c.clear();
        assert!(!c.big());
    }

    #[test]
    fn peers_read_while_the_owner_writes() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let c = Arc::new(MetaCache::new(16 * 16 * 1024));
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let peer = {
            let (c, stop, seen) = (c.clone(), stop.clone(), seen.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..500u32 {
                        if let Some(Some(v)) = peeked(&c, format!("\0Mk{i}").as_bytes()) {
                            // Every value written for k<i> is i's byte, 16 long.
                            assert!(v.len() == 16 && v.iter().all(|&b| b == i as u8));
                            seen.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        };
        // At least 100 rounds, and on until the peer has read some (with
        // the tests beside it on two cores, the peer's thread could start
        // after 100 rounds were done: `seen` 0, about 1 run in 30).
        let began = std::time::Instant::now();
        let mut r = 0u32;
        while r < 100 || (seen.load(Ordering::Relaxed) == 0 && began.elapsed().as_secs() < 30) {
            for i in 0..500u32 {
                c.insert(format!("\0Mk{i}").as_bytes(), val(16, i as u8).as_deref());
                if r.is_multiple_of(7) && i == 250 {
                    c.clear();
                }
            }
            r += 1;
        }
        stop.store(true, Ordering::Relaxed);
        assert!(peer.join().is_ok(), "a peer read a torn or foreign value");
        assert!(seen.load(Ordering::Relaxed) > 0);
    }
}
