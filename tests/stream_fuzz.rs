//! Long random sequences of stream commands (entries, trims with and
//! without `~` over small nodes, deletes, ranges, consumer groups, their
//! reads, acknowledgements and claims) run against redis-server, the
//! reference model, and Basalt on 1 and 4 shards: every reply must be the
//! same. IDs are explicit and times masked, so replies are deterministic.

mod common;

use common::{show, Basalt, Raw, RedisServer, Rng};

const KEYS: &[&str] = &["s", "{t}u", "w"];
const GROUPS: &[&str] = &["g1", "g2"];
const CONSUMERS: &[&str] = &["alice", "bob", "carol"];

/// XPENDING's extended form with idle times zeroed.
const PENDING: &str = "local r = redis.call('xpending', KEYS[1], ARGV[1], '-', '+', 100) for _, e in ipairs(r) do e[3] = 0 end return r";
/// XINFO STREAM without radix-tree-nodes (Redis's rax internals).
const INFO: &str = "local r = redis.call('xinfo', 'stream', KEYS[1]) r[6] = 0 return r";

fn command(rng: &mut Rng, next_ms: &mut u64) -> Vec<String> {
    let k = rng.pick(KEYS).to_string();
    let g = rng.pick(GROUPS).to_string();
    let c = rng.pick(CONSUMERS).to_string();
    let id = |rng: &mut Rng, top: u64| format!("{}-{}", rng.below(top as usize + 2), rng.below(3));
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let top = *next_ms;
    match rng.below(24) {
        0..=4 => {
            *next_ms += 1 + rng.below(2) as u64;
            let mut cmd = s(&["XADD", &k]);
            match rng.below(5) {
                0 => cmd.extend(s(&["MAXLEN", "~", &rng.below(12).to_string()])),
                1 => cmd.extend(s(&["MAXLEN", &rng.below(12).to_string()])),
                2 => cmd.extend(s(&["MINID", "~", &id(rng, top)])),
                _ => {}
            }
            let seq = if rng.below(4) == 0 { "*".to_string() } else { "0".to_string() };
            cmd.push(format!("{}-{seq}", *next_ms));
            cmd.extend(s(&["f", &rng.below(100).to_string()]));
            if rng.below(3) == 0 {
                cmd.extend(s(&["g", "x"]));
            }
            cmd
        }
        5 => s(&["XDEL", &k, &id(rng, top), &id(rng, top)]),
        6 => match rng.below(3) {
            0 => s(&["XTRIM", &k, "MAXLEN", "=", &rng.below(10).to_string()]),
            1 => s(&["XTRIM", &k, "MAXLEN", "~", &rng.below(10).to_string()]),
            _ => s(&[
                "XTRIM",
                &k,
                "MAXLEN",
                "~",
                &rng.below(10).to_string(),
                "LIMIT",
                &rng.below(9).to_string(),
            ]),
        },
        7 => s(&["XTRIM", &k, "MINID", &id(rng, top)]),
        8 => s(&["XRANGE", &k, &id(rng, top), "+", "COUNT", &rng.below(5).to_string()]),
        9 => s(&["XREVRANGE", &k, "+", &id(rng, top)]),
        10 => s(&["XLEN", &k]),
        11 => s(&["XGROUP", "CREATE", &k, &g, if rng.below(2) == 0 { "$" } else { "0" }, "MKSTREAM"]),
        12 => s(&["XGROUP", "SETID", &k, &g, &id(rng, top)]),
        13 => s(&["XGROUP", "DELCONSUMER", &k, &g, &c]),
        14 => s(&["XGROUP", "CREATECONSUMER", &k, &g, &c]),
        15..=16 => s(&[
            "XREADGROUP",
            "GROUP",
            &g,
            &c,
            "COUNT",
            &(1 + rng.below(4)).to_string(),
            "STREAMS",
            &k,
            ">",
        ]),
        17 => s(&["XREADGROUP", "GROUP", &g, &c, "STREAMS", &k, "0"]),
        18 => s(&["XACK", &k, &g, &id(rng, top), &id(rng, top)]),
        19 => s(&["XCLAIM", &k, &g, &c, "0", &id(rng, top), &id(rng, top), "JUSTID"]),
        20 => s(&["XAUTOCLAIM", &k, &g, &c, "0", "0", "COUNT", "2", "JUSTID"]),
        21 => s(&["XPENDING", &k, &g]),
        22 => s(&["EVAL", PENDING, "1", &k, &g]),
        _ => match rng.below(3) {
            0 => s(&["XINFO", "GROUPS", &k]),
            1 => s(&["EVAL", INFO, "1", &k]),
            _ => s(&["XGROUP", "DESTROY", &k, &g]),
        },
    }
}

fn fuzz(shards: usize, seed: u64, steps: usize) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    for c in [&mut r, &mut b] {
        let _ = c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "4"]);
    }
    let mut rng = Rng(seed);
    let mut next_ms = 1;
    let mut log: Vec<String> = Vec::new();
    for step in 0..steps {
        let cmd = command(&mut rng, &mut next_ms);
        let want = r.cmd(&cmd);
        let got = b.cmd(&cmd);
        log.push(cmd.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(" "));
        if want != got {
            let _ = std::fs::write(std::env::temp_dir().join("stream_fuzz.log"), log.join("\n"));
        }
        let tail = log[log.len().saturating_sub(12)..].to_vec();
        assert!(
            want == got,
            "[{shards} shards, seed {seed}, step {step}] `{}`\n redis:  {}\n basalt: {}\nlast commands:\n{}",
            cmd.join(" "),
            show(&want),
            show(&got),
            tail.join("\n")
        );
    }
}

#[test]
#[ignore]
fn random_stream_commands_match_redis_long() {
    let seeds: u64 = std::env::var("STREAM_FUZZ_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    for seed in 100..100 + seeds {
        fuzz(if seed % 3 == 0 { 4 } else { 1 }, seed * 104_729, 4000);
    }
}

#[test]
fn random_stream_commands_match_redis() {
    for seed in 1..=4 {
        fuzz(1, seed * 7919, 1500);
    }
    for seed in 5..=6 {
        fuzz(4, seed * 7919, 1500);
    }
}

/// Raw keeps the connection; the fuzz needs `&mut Raw` for both.
#[allow(dead_code)]
fn _uses(_: &mut Raw) {}
