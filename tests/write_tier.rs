//! The write tier prototype (`storage::wtier`, on with `BASALT_TIER`):
//! what it acknowledged survives kill -9, with the tier on again after the
//! restart and with it off (the log is written back, then dropped).

mod common;

use common::{show, Basalt, Raw};

/// Writes a round of lone and pipelined SETs, HSETs, INCRs and DELs, and
/// returns what must be read back: (command, expected reply).
fn write_round(c: &mut Raw, round: usize) -> Vec<(Vec<String>, String)> {
    let mut expect = Vec::new();
    for i in 0..300 {
        let (k, v) = (format!("s:{round}:{i}"), format!("v{i}"));
        assert_eq!(c.cmd(&["SET", &k, &v]), b"+OK\r\n");
        expect.push((vec!["GET".to_string(), k], format!("${}\r\n{v}\r\n", v.len())));
    }
    let mut req = Vec::new();
    for i in 0..200 {
        req.extend(Raw::encode(&["HSET", &format!("h:{round}"), &format!("f{i}"), &format!("{i}")]));
    }
    c.send_bytes(&req);
    for _ in 0..200 {
        assert_eq!(c.reply(), b":1\r\n");
    }
    expect.push((vec!["HLEN".to_string(), format!("h:{round}")], ":200\r\n".to_string()));
    expect.push((
        vec!["HGET".to_string(), format!("h:{round}"), "f77".to_string()],
        "$2\r\n77\r\n".to_string(),
    ));
    for n in 1..=50 {
        assert_eq!(c.cmd(&["INCR", "counter"]), format!(":{}\r\n", round * 50 + n).as_bytes());
        // 1 MB values between them fill the test's 4 MB write buffers:
        // flushes persist the tier's marks, and later applies cut the log.
        if n % 10 == 0 {
            let big = format!("{round}{n}").repeat(1 << 18);
            assert_eq!(c.cmd(&["SET", &format!("big:{round}:{n}"), &big]), b"+OK\r\n");
            expect.push((
                vec!["STRLEN".to_string(), format!("big:{round}:{n}")],
                format!(":{}\r\n", big.len()),
            ));
        }
    }
    for i in (0..300).step_by(3) {
        let k = format!("s:{round}:{i}");
        assert_eq!(c.cmd(&["DEL", &k]), b":1\r\n");
        expect.retain(|(cmd, _)| cmd[1] != k);
        expect.push((vec!["EXISTS".to_string(), k], ":0\r\n".to_string()));
    }
    expect
}

fn check(c: &mut Raw, expect: &[(Vec<String>, String)], rounds: usize) {
    for (cmd, want) in expect {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        assert_eq!(show(&c.cmd(&args)), show(want.as_bytes()), "{cmd:?}");
    }
    let n = (rounds * 50).to_string();
    let want = if rounds == 0 {
        "$-1\r\n".to_string()
    } else {
        format!("${}\r\n{n}\r\n", n.len())
    };
    assert_eq!(show(&c.cmd(&["GET", "counter"])), show(want.as_bytes()));
}

#[test]
fn acknowledged_writes_survive_kill_9_with_the_write_tier() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut expect = Vec::new();
    for round in 0..4 {
        // Rounds 0-2 with the tier (a small one, so applies and log cuts
        // happen during the round), round 3 with it off: the last run's log
        // is written back at startup either way.
        if round < 3 {
            std::env::set_var("BASALT_TIER", "97");
        } else {
            std::env::remove_var("BASALT_TIER");
        }
        let mut b = Basalt::start_in(&dir, 1, &[]);
        let mut c = b.raw();
        check(&mut c, &expect, round);
        expect.extend(write_round(&mut c, round));
        check(&mut c, &expect, round + 1);
        b.signal_and_wait("-KILL");
    }
    std::env::remove_var("BASALT_TIER");
    let b = Basalt::start_in(&dir, 1, &[]);
    check(&mut b.raw(), &expect, 4);
}
