//! DEBUG ALLOCATIONS and the counting allocator (`src/allocs.rs`): counted
//! only when the server starts with BASALT_COUNT_ALLOCS=1, and what a warm
//! pipelined connection's GETs and SETs allocate (issue 52, item 3: the
//! command path allocates nothing per request of its own; `perf/allocs`
//! reports the figures).

mod common;

use common::{show, Basalt, Raw};

const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

fn counts(c: &mut Raw) -> (u64, u64) {
    let r = show(&c.cmd(&["DEBUG", "ALLOCATIONS"]));
    let ints: Vec<u64> = r
        .split("\\r\\n")
        .filter_map(|l| l.strip_prefix(':'))
        .map(|n| n.parse().expect("an integer"))
        .collect();
    assert_eq!(ints.len(), 2, "{r}");
    (ints[0], ints[1])
}

/// Allocations per request of `n` pipelined copies of `args` (the
/// connection and its keys warmed up first), over several tries: the
/// least, since a flush or compaction thread may allocate meanwhile.
fn per_request(c: &mut Raw, args: &[&str], n: usize) -> f64 {
    let req: Vec<u8> = (0..n).flat_map(|_| Raw::encode(args)).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let before = counts(c).0;
        c.send_bytes(&req);
        for _ in 0..n {
            c.reply();
        }
        let after = counts(c).0;
        // The second DEBUG ALLOCATIONS' own reply is in the count.
        best = best.min((after - before) as f64 / n as f64);
    }
    best
}

#[test]
fn allocations_are_counted_only_when_asked() {
    let b = Basalt::start_with(1, DEBUG);
    let mut c = b.raw();
    assert_eq!(
        show(&c.cmd(&["DEBUG", "ALLOCATIONS"])),
        "-ERR allocations are counted only when the server starts with BASALT_COUNT_ALLOCS=1\\r\\n"
    );
    assert_eq!(
        show(&c.cmd(&["DEBUG", "ALLOCATIONS", "x"])),
        "-ERR unknown subcommand 'ALLOCATIONS'. Try DEBUG HELP.\\r\\n"
    );
    let help = show(&c.cmd(&["DEBUG", "HELP"]));
    assert!(help.contains("ALLOCATIONS"), "{help}");
}

#[test]
fn a_warm_pipeline_allocates_little_per_get_and_set() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let b = Basalt::start_in_env(tmp.path(), 1, DEBUG, &[("BASALT_COUNT_ALLOCS", "1")]);
    let mut c = b.raw();
    let (n0, bytes0) = counts(&mut c);
    assert!(n0 > 0 && bytes0 > 0, "the server allocated nothing at start?");
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    let (n1, bytes1) = counts(&mut c);
    assert!(n1 > n0 && bytes1 > bytes0, "{n0} {n1}");
    // Warm: the key is in the meta cache, the connection's buffers sized.
    per_request(&mut c, &["GET", "k"], 1000);
    let get = per_request(&mut c, &["GET", "k"], 1000);
    let set = per_request(&mut c, &["SET", "k", "0123456789"], 1000);
    assert_eq!(c.cmd(&["SET", "n", "0"]), b"+OK\r\n");
    per_request(&mut c, &["INCR", "n"], 1000);
    let incr = per_request(&mut c, &["INCR", "n"], 1000);
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), b":1\r\n");
    per_request(&mut c, &["HSET", "h", "f", "v"], 1000);
    let hset = per_request(&mut c, &["HSET", "h", "f", "v"], 1000);
    eprintln!("allocations per request: GET {get:.2}, SET {set:.2}, INCR {incr:.2}, HSET {hset:.2}");
    // What the path allocated when this test was written: GET 0.03 (it
    // was 1.3 before the meta key went on the stack), SET 4.0 (9 before
    // batches were reused: the meta value, its cache key and copy, the
    // group's map; under 1 once the write tier took records as they are
    // staged and the meta value went on the stack), INCR (5.5 before its
    // number was read, formatted and encoded without copies) and HSET
    // (12.5 before the collection writer kept keys on the stack and
    // updated the member it read in place). A new allocation per request
    // on these paths fails here.
    assert!(get <= 0.5, "GET allocates {get} per request");
    assert!(set <= 1.0, "SET allocates {set} per request");
    assert!(incr <= 2.0, "INCR allocates {incr} per request");
    assert!(hset <= 5.0, "HSET allocates {hset} per request");
}
