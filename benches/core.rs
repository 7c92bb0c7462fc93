//! Micro-benchmarks of the hot paths: RESP parsing and reply writing, key
//! and meta value encoding and decoding, command lookup, and a cross-shard `invoke_on` round trip.
//! Run: `cargo bench --bench core` (release profile, symbols kept).

use std::hint::black_box;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use basalt::cmd::lookup;
use basalt::resp::{parse_request, Limits, Reply};
use basalt::slot::slot_of;
use basalt::storage::keys::{meta_key, split_meta_key};
use basalt::storage::meta::{encode_string, Meta};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const LIMITS: Limits = Limits {
    max_bulk: 512 << 20,
    unauthenticated: false,
};

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse_all(buf: &[u8]) -> usize {
    let mut at = 0;
    let mut n = 0;
    while let Ok(Some(f)) = parse_request(&buf[at..], LIMITS) {
        at += f.consumed;
        n += f.args.len();
        if at >= buf.len() {
            break;
        }
    }
    n
}

fn resp(c: &mut Criterion) {
    let ping = encode(&[b"PING"]);
    let get = encode(&[b"GET", b"key:000000012345"]);
    let value = vec![b'x'; 100];
    let set = encode(&[b"SET", b"key:000000012345", &value]);
    let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key:{i:012}").into_bytes()).collect();
    let mut mset_args: Vec<&[u8]> = vec![b"MSET"];
    for k in &keys {
        mset_args.push(k);
        mset_args.push(&value);
    }
    let mset = encode(&mset_args);
    let mut g = c.benchmark_group("resp_parse");
    for (name, buf) in [("ping", &ping), ("get", &get), ("set_100b", &set), ("mset_100", &mset)] {
        g.throughput(Throughput::Bytes(buf.len() as u64));
        g.bench_function(name, |b| b.iter(|| parse_all(black_box(buf))));
    }
    // A request arriving in 7-byte fragments: each partial parse must say
    // "need more" cheaply.
    g.bench_function("set_100b_fragments", |b| {
        b.iter(|| {
            let mut done = 0;
            for end in (7..set.len()).step_by(7).chain([set.len()]) {
                if let Ok(Some(f)) = parse_request(black_box(&set[..end]), LIMITS) {
                    done = f.consumed;
                }
            }
            done
        })
    });
    g.finish();

    let mut g = c.benchmark_group("resp_reply");
    g.bench_function("bulk_100b", |b| {
        let mut r = Reply::new(false);
        b.iter(|| {
            r.buf.clear();
            r.bulk(black_box(&value));
        })
    });
    g.bench_function("int", |b| {
        let mut r = Reply::new(false);
        b.iter(|| {
            r.buf.clear();
            r.int(black_box(1234567));
        })
    });
    g.finish();
}

fn keys(c: &mut Criterion) {
    let key = b"user:{1000}:profile";
    c.bench_function("slot_of", |b| b.iter(|| slot_of(black_box(key))));
    c.bench_function("meta_key", |b| b.iter(|| meta_key(0, black_box(key))));
    let mk = meta_key(0, key);
    c.bench_function("split_meta_key", |b| b.iter(|| split_meta_key(black_box(&mk))));
    let value = encode_string(0, &[b'v'; 100]);
    c.bench_function("meta_encode_string_100b", |b| b.iter(|| encode_string(0, black_box(&[b'v'; 100]))));
    c.bench_function("meta_decode_string_100b", |b| b.iter(|| Meta::decode(black_box(&value)).is_some()));
    c.bench_function("command_lookup_incrbyfloat", |b| b.iter(|| lookup(black_box(b"INCRBYFLOAT"))));
    // The last command of the table (a linear scan's worst hit) and a miss.
    c.bench_function("command_lookup_sscan", |b| b.iter(|| lookup(black_box(b"sscan"))));
    c.bench_function("command_lookup_unknown", |b| b.iter(|| lookup(black_box(b"LPUSH"))));
}

/// `BASALT_SPIN_US`: busy-poll before parking, as the server's `shard-spin-us`.
fn spin_from_env() -> Duration {
    Duration::from_micros(std::env::var("BASALT_SPIN_US").ok().and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Round trips from shard 0 to shard 1 through the mesh. The benchmark
/// thread asks shard 0 for `iters` round trips and gets their total time.
fn cross_shard(c: &mut Criterion) {
    let (req_tx, req_rx) = mpsc::channel::<u64>();
    let (res_tx, res_rx) = mpsc::channel::<Duration>();
    let req_rx = std::sync::Arc::new(std::sync::Mutex::new(Some(req_rx)));
    let cores = shards::available_cores();
    let rt = shards::Runtime::start(
        shards::Config {
            shards: 2,
            cores: cores.clone(),
            spin_before_park: spin_from_env(),
            preempt: shards::DEFAULT_PREEMPT,
        },
        |id| id,
        move |shard: Rc<shards::Shard<usize>>| {
            let req_rx = req_rx.clone();
            let res_tx = res_tx.clone();
            async move {
                if shard.id() != 0 {
                    // Shard 1 serves mesh messages until the process exits.
                    std::future::pending::<()>().await;
                }
                let Some(rx) = req_rx.lock().ok().and_then(|mut g| g.take()) else {
                    return;
                };
                while let Ok(iters) = rx.recv() {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(shard.invoke_on(1, |s: &usize| *s + 1).await);
                    }
                    if res_tx.send(start.elapsed()).is_err() {
                        return;
                    }
                }
                std::process::exit(0);
            }
        },
    );
    let Ok(_rt) = rt else {
        eprintln!("cross_shard: cannot start the runtime, skipped");
        return;
    };
    c.bench_function("invoke_on_round_trip", |b| {
        b.iter_custom(|iters| {
            if req_tx.send(iters).is_err() {
                return Duration::ZERO;
            }
            res_rx.recv().unwrap_or_default()
        })
    });
}

criterion_group!(benches, resp, keys, cross_shard);
criterion_main!(benches);
