//! Differential tests of the geospatial commands (GEOADD, GEOPOS, GEODIST,
//! GEOHASH, GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the
//! _RO forms): the same scripts, errors included, go to Debian's
//! redis-server (7.0) and to Basalt (1 and 4 shards, RESP2 and RESP3), and
//! every reply must be the same bytes (scores, coordinates, distances,
//! order). Then random points and searches against redis-server.
//!
//! The script format is `common::run_script`'s.

mod common;

use common::{run_resp3_script, run_scripts, show, Basalt, RedisServer, Rng};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "geoadd, geopos, geodist, geohash",
        r#"
        GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
        ZRANGE Sicily 0 -1 WITHSCORES
        GEOADD Sicily 13.361389 38.115556 Palermo
        GEOADD Sicily CH 13.361389 38.115557 Palermo
        GEOADD Sicily NX 1 1 Palermo 2 2 New
        GEOADD Sicily XX 3 3 Palermo 4 4 Other
        GEOADD Sicily XX CH 13.361389 38.115556 Palermo
        GEOADD Sicily NX XX 1 1 a
        GEOADD Sicily 1 1
        GEOADD Sicily 1 1 a 2
        GEOADD Sicily GT 1 1 a
        GEOADD Sicily CH CH NX 5 5 five
        GEOADD Sicily x 1 a
        GEOADD Sicily 1 y a
        GEOADD Sicily 200 1 a
        GEOADD Sicily 1 86 a
        GEOADD Sicily -180 -85.05112878 sw 180 85.05112878 ne
        GEOADD Sicily 1 1 ok 1 100 bad
        ZSCORE Sicily ok
        GEOPOS Sicily Palermo Catania nope sw ne
        GEOPOS Sicily
        GEOPOS nokey a b
        GEODIST Sicily Palermo Catania
        GEODIST Sicily Palermo Catania km
        GEODIST Sicily Palermo Catania MI
        GEODIST Sicily Palermo Catania ft
        GEODIST Sicily Palermo Catania m
        GEODIST Sicily Palermo Catania yards
        GEODIST Sicily Palermo Catania km extra
        GEODIST Sicily Palermo nope
        GEODIST nokey a b
        GEODIST nokey a b parsec
        GEODIST Sicily Palermo Palermo
        GEODIST Sicily sw ne km
        GEOHASH Sicily Palermo Catania nope sw ne
        GEOHASH nokey a
        GEOHASH Sicily
        SET str x
        GEOADD str 1 1 a
        GEOPOS str a
        GEODIST str a b
        GEOHASH str a
        GEOSEARCH str FROMLONLAT 1 1 BYRADIUS 1 km
        ZADD plain 1 one -5 neg 1e20 huge
        GEOPOS plain one
        GEOHASH plain one
        "#,
    ),
    (
        "georadius and georadiusbymember",
        r#"
        GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 13.583333 37.316667 Agrigento 12.758489 38.788135 edge1 17.241510 38.788135 edge2
        GEORADIUS Sicily 15 37 200 km
        GEORADIUS Sicily 15 37 200 km ASC
        GEORADIUS Sicily 15 37 200 km DESC
        GEORADIUS Sicily 15 37 200 km WITHDIST
        GEORADIUS Sicily 15 37 200 km WITHCOORD
        GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH
        GEORADIUS Sicily 15 37 200 km WITHHASH WITHCOORD WITHDIST ASC
        GEORADIUS Sicily 15 37 200 km COUNT 1
        GEORADIUS Sicily 15 37 200 km COUNT 2 DESC
        GEORADIUS Sicily 15 37 200 km COUNT 1 ANY
        GEORADIUS Sicily 15 37 200 km COUNT 3 ANY ASC
        GEORADIUS Sicily 15 37 200 km ANY
        GEORADIUS Sicily 15 37 200 km COUNT 0
        GEORADIUS Sicily 15 37 200 km COUNT -1
        GEORADIUS Sicily 15 37 200 km COUNT x
        GEORADIUS Sicily 15 37 200 km COUNT
        GEORADIUS Sicily 15 37 200 km BOGUS
        GEORADIUS Sicily 15 37 -1 km
        GEORADIUS Sicily 15 37 x km
        GEORADIUS Sicily 15 37 1 parsec
        GEORADIUS Sicily 200 37 1 km
        GEORADIUS Sicily 15 37 0 km
        GEORADIUS Sicily 15 37 20000 km
        GEORADIUS Sicily 15 37 5000 mi
        GEORADIUS Sicily 15 37 100000 ft WITHDIST
        GEORADIUS Sicily 15 37 200000 m WITHDIST
        GEORADIUS Sicily 15 37 200 km STORE dst
        ZRANGE dst 0 -1 WITHSCORES
        GEORADIUS Sicily 15 37 200 km STOREDIST dst2
        ZRANGE dst2 0 -1
        GEORADIUS Sicily 15 37 200 km STORE dst3 COUNT 2 DESC
        ZRANGE dst3 0 -1 WITHSCORES
        GEORADIUS Sicily 15 37 1 km STORE dst
        EXISTS dst
        GEORADIUS nokey 15 37 1 km STORE dst2
        EXISTS dst2
        GEORADIUS nokey 15 37 1 km
        GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST
        GEORADIUS Sicily 15 37 200 km STORE
        GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC
        GEORADIUS_RO Sicily 15 37 200 km STORE dst
        GEORADIUSBYMEMBER Sicily Agrigento 100 km
        GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST WITHCOORD DESC
        GEORADIUSBYMEMBER Sicily nope 100 km
        GEORADIUSBYMEMBER nokey nope x parsec
        GEORADIUSBYMEMBER nokey nope 100 km STORE d
        GEORADIUSBYMEMBER Sicily Palermo 300 km STOREDIST d
        ZRANGE d 0 -1
        GEORADIUSBYMEMBER_RO Sicily Palermo 300 km COUNT 2
        GEORADIUSBYMEMBER_RO Sicily Palermo 300 km STOREDIST d
        SET str x
        GEORADIUS str 15 37 1 km
        GEORADIUS Sicily 15 37 200 km STORE str
        TYPE str
        "#,
    ),
    (
        "geosearch and geosearchstore",
        r#"
        GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania 13.583333 37.316667 Agrigento 12.758489 38.788135 edge1 17.241510 38.788135 edge2
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST
        GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC WITHHASH
        GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 100 km
        GEOSEARCH Sicily FROMMEMBER nope BYRADIUS 100 km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 100 50 mi
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 0 0 km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 10 km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 10 km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 10 y km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 10 10 parsec
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 10 10 km
        GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km
        GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 200 km
        GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 200 km ASC
        GEOSEARCH Sicily BYRADIUS 200 km
        GEOSEARCH Sicily FROMLONLAT 15 37
        geosearch Sicily FROMLONLAT 15 37 ASC
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE x
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 ANY
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS
        GEOSEARCH nokey FROMLONLAT 15 37 BYRADIUS 200 km
        GEOSEARCH nokey FROMMEMBER x BYRADIUS 200 km
        GEOSEARCH nokey FROMMEMBER x BYRADIUS 200 km ANY
        GEOSEARCH Sicily FROMLONLAT 200 37 BYRADIUS 200 km
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km
        ZRANGE dst 0 -1 WITHSCORES
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
        ZRANGE dst 0 -1
        ZCOUNT dst 56.441257870158 56.441257870159
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km COUNT 2 DESC STOREDIST
        ZRANGE dst 0 -1
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE other
        GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 km
        EXISTS dst
        GEOSEARCHSTORE dst nokey FROMLONLAT 0 0 BYRADIUS 1 km
        GEOSEARCHSTORE dst Sicily FROMMEMBER nope BYRADIUS 1 km
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37
        "#,
    ),
    (
        "the poles, the date line and big radii",
        r#"
        GEOADD w -179.9 0 a 179.9 0 b 0 85 c 0 -85 d -179.99 85.05 e 179.99 -85.05 f 0 0 g 90 45 h -90 -45 i
        GEOSEARCH w FROMLONLAT 180 0 BYRADIUS 100 km ASC WITHDIST
        GEOSEARCH w FROMLONLAT -180 0 BYRADIUS 100 km ASC WITHDIST
        GEOSEARCH w FROMLONLAT 0 85.05 BYRADIUS 1000 km ASC WITHDIST
        GEOSEARCH w FROMLONLAT 0 0 BYRADIUS 20000 km ASC WITHDIST
        GEOSEARCH w FROMLONLAT 0 0 BYRADIUS 20000 km
        GEOSEARCH w FROMLONLAT 0 0 BYRADIUS 5000 km
        GEOSEARCH w FROMLONLAT 0 0 BYBOX 40000 20000 km
        GEOSEARCH w FROMLONLAT 10 10 BYBOX 40000 40000 km WITHCOORD
        GEOSEARCH w FROMLONLAT 0 0 BYRADIUS 0 m WITHDIST
        GEORADIUS w 0 0 10000 km WITHDIST WITHHASH WITHCOORD
        "#,
    ),
    (
        "inside transactions",
        r#"
        GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
        MULTI
        GEOADD g 13.583333 37.316667 Agrigento
        GEOPOS g Agrigento
        GEORADIUS g 15 37 200 km STORE s1
        GEOSEARCHSTORE s2 g FROMMEMBER Palermo BYRADIUS 300 km
        GEORADIUSBYMEMBER g Palermo 300 km COUNT 1
        GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 200 km ASC
        EXEC
        ZRANGE s1 0 -1 WITHSCORES
        ZRANGE s2 0 -1 WITHSCORES
        "#,
    ),
];

#[test]
fn geo_commands_match_redis_on_one_shard() {
    run_scripts(SCRIPTS, 1);
}

#[test]
fn geo_commands_match_redis_on_four_shards() {
    run_scripts(SCRIPTS, 4);
}

#[test]
fn geo_commands_match_redis_in_resp3() {
    for (name, script) in SCRIPTS {
        run_resp3_script(name, script, 1);
    }
}

fn coord(rng: &mut Rng, span: f64) -> f64 {
    (rng.next() % 2_000_001) as f64 / 1_000_000.0 * span - span
}

/// Random points (a city-sized cluster, a country-sized one and the whole
/// world) and random searches of every form: the same replies, order and
/// digits included, and the same stored sets.
#[test]
fn random_points_and_searches_match_redis() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(4);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let mut rng = Rng(0x6e0);
    for (key, clon, clat, span, n) in [
        ("city", 2.35, 48.85, 0.2, 400),
        ("land", 10.0, 50.0, 8.0, 600),
        ("world", 0.0, 0.0, 179.0, 600),
    ] {
        for chunk in 0..n / 100 {
            let mut cmd = vec!["GEOADD".to_string(), key.to_string()];
            for i in 0..100 {
                let lon = (clon + coord(&mut rng, span)).clamp(-180.0, 180.0);
                let lat = (clat + coord(&mut rng, span / 2.0)).clamp(-85.0, 85.0);
                cmd.extend([format!("{lon:.6}"), format!("{lat:.6}"), format!("p{}", chunk * 100 + i)]);
            }
            assert_eq!(show(&r.cmd(&cmd)), show(&b.cmd(&cmd)));
        }
        let km = span * 111.0;
        for step in 0..150 {
            let lon = (clon + coord(&mut rng, span)).clamp(-180.0, 180.0);
            let lat = (clat + coord(&mut rng, span / 2.0)).clamp(-85.0, 85.0);
            let d = format!("{:.3}", km * (rng.next() % 1000) as f64 / 1000.0);
            let units = ["m", "km", "mi", "ft"];
            let unit = units[rng.below(4)];
            let d = match unit {
                "m" => format!("{:.1}", km * 1000.0 * (rng.next() % 1000) as f64 / 1000.0),
                "ft" => format!("{:.1}", km * 3280.0 * (rng.next() % 1000) as f64 / 1000.0),
                _ => d,
            };
            let mut cmd: Vec<String> = match rng.below(4) {
                0 => vec![
                    "GEORADIUS".into(),
                    key.into(),
                    format!("{lon:.5}"),
                    format!("{lat:.5}"),
                    d.clone(),
                    unit.into(),
                ],
                1 => vec![
                    "GEORADIUSBYMEMBER".into(),
                    key.into(),
                    format!("p{}", rng.below(n)),
                    d.clone(),
                    unit.into(),
                ],
                2 => {
                    let w = format!("{:.3}", km * 2.0 * (rng.next() % 1000) as f64 / 1000.0);
                    vec![
                        "GEOSEARCH".into(),
                        key.into(),
                        "FROMLONLAT".into(),
                        format!("{lon:.5}"),
                        format!("{lat:.5}"),
                        "BYBOX".into(),
                        w,
                        d.clone(),
                        "km".into(),
                    ]
                }
                _ => vec![
                    "GEOSEARCH".into(),
                    key.into(),
                    "FROMMEMBER".into(),
                    format!("p{}", rng.below(n)),
                    "BYRADIUS".into(),
                    d.clone(),
                    unit.into(),
                ],
            };
            for opt in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                if rng.below(2) == 0 {
                    cmd.push(opt.into());
                }
            }
            match rng.below(4) {
                0 => cmd.push("ASC".into()),
                1 => cmd.push("DESC".into()),
                _ => {}
            }
            if rng.below(3) == 0 {
                cmd.extend(["COUNT".into(), format!("{}", 1 + rng.below(20))]);
                if rng.below(3) == 0 {
                    cmd.push("ANY".into());
                }
            }
            let (want, got) = (r.cmd(&cmd), b.cmd(&cmd));
            assert!(
                want == got,
                "{key} step {step}: {}\n redis:  {}\n basalt: {}",
                cmd.join(" "),
                show(&want),
                show(&got)
            );
            if step % 10 == 0 {
                let store = vec![
                    "GEOSEARCHSTORE".to_string(),
                    "out{x}".into(),
                    key.into(),
                    "FROMLONLAT".into(),
                    format!("{lon:.5}"),
                    format!("{lat:.5}"),
                    "BYRADIUS".into(),
                    d.clone(),
                    unit.into(),
                    "STOREDIST".into(),
                ];
                assert_eq!(show(&r.cmd(&store)), show(&b.cmd(&store)));
                // Redis 7.0 prints scores with %.17g, Basalt (as 7.2+) the
                // shortest text: the same doubles, compared as numbers.
                let read = ["ZRANGE", "out{x}", "0", "-1", "WITHSCORES"];
                assert_eq!(scored(&r.cmd(&read)), scored(&b.cmd(&read)), "{}", store.join(" "));
            }
        }
        let members: Vec<String> = (0..20).map(|i| format!("p{}", i * 7)).collect();
        for c in ["GEOPOS", "GEOHASH"] {
            let mut cmd = vec![c.to_string(), key.to_string()];
            cmd.extend(members.iter().cloned());
            assert_eq!(show(&r.cmd(&cmd)), show(&b.cmd(&cmd)));
        }
        for i in 0..20 {
            let cmd = ["GEODIST", key, &members[i], &members[(i + 3) % 20], ["m", "km", "mi", "ft"][i % 4]];
            assert_eq!(show(&r.cmd(&cmd)), show(&b.cmd(&cmd)));
        }
    }
}

/// A flat RESP2 array of member, score pairs: the members and the scores
/// as doubles.
fn scored(reply: &[u8]) -> Vec<(String, f64)> {
    let text = String::from_utf8_lossy(reply).to_string();
    let items: Vec<&str> = text
        .split("\r\n")
        .filter(|l| !l.starts_with('*') && !l.starts_with('$') && !l.is_empty())
        .collect();
    items
        .chunks(2)
        .map(|p| (p[0].to_string(), p.get(1).and_then(|s| s.parse().ok()).unwrap_or(f64::NAN)))
        .collect()
}
