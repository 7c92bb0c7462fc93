//! Geospatial commands on sorted sets: GEOADD, GEOPOS, GEODIST, GEOHASH,
//! GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the _RO
//! forms, with Redis's scores, search cells, distances and number text
//! (`types::geo`). A search runs on the source's owner; the storing forms
//! then write the result on the destination's owner, as ZRANGESTORE does.

use bytes::Bytes;

use super::args::{is, parse_f64, parse_i64};
use super::zsets::zadd;
use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::clock::now_ms;
use crate::coord::zset as across;
use crate::error::{CmdError, CmdResult, NOT_FLOAT, NOT_INT, SYNTAX};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::coll::{self, View};
use crate::types::geo::{self, Form, Shape};
use crate::types::keyspace::Keyspace;
use crate::types::zblock;
use crate::types::zset::{self, sort_key, At};
use crate::types::KeyType;

/// The geospatial commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "geoadd"               -5 [write denyoom]             1 1 1 Shard(geoadd)               geo "3.2.0"  "Adds one or more members to a geospatial index. The key is created if it doesn't exist.";
    "geodist"              -4 [readonly]                  1 1 1 Shard(geodist)              geo "3.2.0"  "Returns the distance between two members of a geospatial index.";
    "geohash"              -2 [readonly]                  1 1 1 Shard(geohash)              geo "3.2.0"  "Returns members from a geospatial index as geohash strings.";
    "geopos"               -2 [readonly]                  1 1 1 Shard(geopos)               geo "3.2.0"  "Returns the longitude and latitude of members from a geospatial index.";
    "georadius"            -6 [write denyoom movablekeys] 1 1 1 Conn(georadius)             geo "3.2.0"  "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.";
    "georadius_ro"         -6 [readonly]                  1 1 1 Shard(georadius_ro)         geo "3.2.10" "Returns members from a geospatial index that are within a distance from a coordinate.";
    "georadiusbymember"    -5 [write denyoom movablekeys] 1 1 1 Conn(georadiusbymember)     geo "3.2.0"  "Queries a geospatial index for members within a distance from a member, optionally stores the result.";
    "georadiusbymember_ro" -5 [readonly]                  1 1 1 Shard(georadiusbymember_ro) geo "3.2.10" "Returns members from a geospatial index that are within a distance from a member.";
    "geosearch"            -7 [readonly]                  1 1 1 Shard(geosearch)            geo "6.2.0"  "Queries a geospatial index for members inside an area of a box or a circle.";
    "geosearchstore"       -8 [write denyoom]             1 2 1 Conn(geosearchstore)        geo "6.2.0"  "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.";
};

const BAD_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
const NO_MEMBER: &str = "ERR could not decode requested zset member";

fn err(msg: &'static str) -> CmdError {
    CmdError::new(msg)
}

fn float(arg: &[u8], msg: Option<&'static str>) -> CmdResult<f64> {
    parse_f64(arg).ok_or(match msg {
        Some(m) => err(m),
        None => NOT_FLOAT,
    })
}

/// A longitude and a latitude, inside the indexable range.
fn lon_lat(lon: &[u8], lat: &[u8]) -> CmdResult<(f64, f64)> {
    let (x, y) = (float(lon, None)?, float(lat, None)?);
    if !(geo::LON_MIN..=geo::LON_MAX).contains(&x) || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&y) {
        return Err(CmdError::new(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok((x, y))
}

/// A unit's meters.
fn unit(arg: &[u8]) -> CmdResult<f64> {
    Ok(match &arg.to_ascii_lowercase()[..] {
        b"m" => 1.0,
        b"km" => 1000.0,
        b"ft" => 0.3048,
        b"mi" => 1609.34,
        _ => return Err(err(BAD_UNIT)),
    })
}

/// `<radius> <unit>`: the radius and the unit's meters.
fn radius(r: &[u8], u: &[u8]) -> CmdResult<(f64, f64)> {
    let d = float(r, Some("ERR need numeric radius"))?;
    if d < 0.0 {
        return Err(err("ERR radius cannot be negative"));
    }
    Ok((d, unit(u)?))
}

fn view(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<Option<View>> {
    coll::view(ks, db, key, KeyType::ZSet, now)
}

/// GEOADD key [NX|XX] [CH] longitude latitude member ...: ZADD of the
/// points' scores, as Redis runs it.
pub fn geoadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (mut at, mut nx, mut xx) = (2, false, false);
    while at < argv.len() {
        let a = &argv[at];
        if is(a, "nx") {
            nx = true;
        } else if is(a, "xx") {
            xx = true;
        } else if !is(a, "ch") {
            break;
        }
        at += 1;
    }
    if !(argv.len() - at).is_multiple_of(3) || (nx && xx) {
        return Err(SYNTAX);
    }
    let mut zargs: Vec<Bytes> = Vec::with_capacity(at + (argv.len() - at) / 3 * 2);
    zargs.push(Bytes::from_static(b"zadd"));
    zargs.extend_from_slice(&argv[1..at]);
    for p in argv[at..].chunks(3) {
        let (lon, lat) = lon_lat(&p[0], &p[1])?;
        let score = geo::score_of(lon, lat).ok_or(NOT_FLOAT)?;
        zargs.push(Bytes::from(score.to_string()));
        zargs.push(p[2].clone());
    }
    zadd(ctx, &zargs, r)
}

/// Each member's score (None: missing), the key read once.
fn scores(ctx: &Ctx, key: &[u8], members: &[Bytes]) -> CmdResult<Vec<Option<f64>>> {
    let Some(v) = view(ctx.ks(), ctx.db, key, ctx.now_ms)? else {
        return Ok(vec![None; members.len()]);
    };
    members.iter().map(|m| zset::score(ctx.ks(), ctx.db, key, &v.c, m)).collect()
}

pub fn geopos(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let found = scores(ctx, &argv[1], &argv[2..])?;
    r.array(found.len());
    for s in found {
        match s {
            None => r.null_array(),
            Some(s) => {
                let (lon, lat) = geo::decode(s);
                r.array(2);
                r.double_text(&geo::human(lon));
                r.double_text(&geo::human(lat));
            }
        }
    }
    Ok(())
}

pub fn geohash(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let found = scores(ctx, &argv[1], &argv[2..])?;
    r.array(found.len());
    for s in found {
        match s {
            None => r.null(),
            Some(s) => r.bulk(&geo::geohash(s)),
        }
    }
    Ok(())
}

pub fn geodist(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let to_meters = match argv.len() {
        4 => 1.0,
        5 => unit(&argv[4])?,
        _ => return Err(SYNTAX),
    };
    match scores(ctx, &argv[1], &argv[2..4])?[..] {
        [Some(a), Some(b)] => {
            let ((x1, y1), (x2, y2)) = (geo::decode(a), geo::decode(b));
            r.bulk(geo::fixed4(geo::distance(x1, y1, x2, y2) / to_meters).as_bytes());
        }
        _ => r.null(),
    }
    Ok(())
}

/// Which search command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS (`ro`: the _RO form, no STORE).
    Coords {
        ro: bool,
    },
    /// GEORADIUSBYMEMBER.
    Member {
        ro: bool,
    },
    Search,
    SearchStore,
}

/// How results are ordered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A point found: member, distance from the center (in the unit), score,
/// longitude, latitude.
type Point = (Vec<u8>, f64, f64, f64, f64);

/// A search's outcome: the points to reply or store, in order, and how.
struct Found {
    points: Vec<Point>,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    /// STORE / STOREDIST's key, and whether the distance is the score.
    store: Option<(Bytes, bool)>,
}

/// Reads a search's arguments as Redis's `georadiusGeneric` does (the key
/// looked up first, then each option in turn) and runs it on this shard.
fn search(ks: &Keyspace, db: u8, now: u64, argv: &[Bytes], kind: Kind) -> CmdResult<Found> {
    let src = &argv[if kind == Kind::SearchStore { 2 } else { 1 }][..];
    let z = view(ks, db, src, now)?;
    let member_pos = |v: &View, m: &[u8]| -> CmdResult<(f64, f64)> {
        let s = zset::score(ks, db, src, &v.c, m)?.ok_or(err(NO_MEMBER))?;
        Ok(geo::decode(s))
    };
    let mut shape = Shape {
        lon: 0.0,
        lat: 0.0,
        form: Form::Radius(0.0),
        unit: 1.0,
    };
    let mut store = None;
    let base = match kind {
        Kind::Coords { .. } => {
            (shape.lon, shape.lat) = lon_lat(&argv[2], &argv[3])?;
            let (d, u) = radius(&argv[4], &argv[5])?;
            (shape.form, shape.unit) = (Form::Radius(d), u);
            6
        }
        Kind::Member { .. } => {
            if let Some(v) = &z {
                (shape.lon, shape.lat) = member_pos(v, &argv[2])?;
                let (d, u) = radius(&argv[3], &argv[4])?;
                (shape.form, shape.unit) = (Form::Radius(d), u);
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            store = Some((argv[1].clone(), false));
            3
        }
    };
    let searching = matches!(kind, Kind::Search | Kind::SearchStore);
    let may_store = matches!(kind, Kind::Coords { ro: false } | Kind::Member { ro: false });
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut from_member, mut from_loc, mut by_radius, mut by_box) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut count = 0i64;
    let opts = &argv[base..];
    let mut i = 0;
    while i < opts.len() {
        let a = &opts[i];
        let left = opts.len() - i - 1;
        if is(a, "withdist") {
            withdist = true;
        } else if is(a, "withhash") {
            withhash = true;
        } else if is(a, "withcoord") {
            withcoord = true;
        } else if is(a, "any") {
            any = true;
        } else if is(a, "asc") {
            sort = Sort::Asc;
        } else if is(a, "desc") {
            sort = Sort::Desc;
        } else if is(a, "count") && left >= 1 {
            count = parse_i64(&opts[i + 1]).ok_or(NOT_INT)?;
            if count <= 0 {
                return Err(err("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (is(a, "store") || is(a, "storedist")) && left >= 1 && may_store {
            store = Some((opts[i + 1].clone(), is(a, "storedist")));
            i += 1;
        } else if is(a, "storedist") && kind == Kind::SearchStore {
            store = Some((argv[1].clone(), true));
        } else if is(a, "frommember") && left >= 1 && searching && !from_loc {
            if let Some(v) = &z {
                (shape.lon, shape.lat) = member_pos(v, &opts[i + 1])?;
            }
            from_member = true;
            i += 1;
        } else if is(a, "fromlonlat") && left >= 2 && searching && !from_member {
            (shape.lon, shape.lat) = lon_lat(&opts[i + 1], &opts[i + 2])?;
            from_loc = true;
            i += 2;
        } else if is(a, "byradius") && left >= 2 && searching && !by_box {
            let (d, u) = radius(&opts[i + 1], &opts[i + 2])?;
            (shape.form, shape.unit) = (Form::Radius(d), u);
            by_radius = true;
            i += 2;
        } else if is(a, "bybox") && left >= 3 && searching && !by_radius {
            let w = float(&opts[i + 1], Some("ERR need numeric width"))?;
            let h = float(&opts[i + 2], Some("ERR need numeric height"))?;
            if w < 0.0 || h < 0.0 {
                return Err(err("ERR height or width cannot be negative"));
            }
            (shape.form, shape.unit) = (Form::Box(w, h), unit(&opts[i + 3])?);
            by_box = true;
            i += 3;
        } else {
            return Err(SYNTAX);
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        let who = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(CmdError::new(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&argv[0]);
    if searching && !(from_member || from_loc) {
        return Err(CmdError::new(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if searching && !(by_radius || by_box) {
        return Err(CmdError::new(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if any && count == 0 {
        return Err(err("ERR the ANY argument requires COUNT argument"));
    }
    let mut found = Found {
        points: Vec::new(),
        withdist,
        withhash,
        withcoord,
        store,
    };
    let Some(v) = z else { return Ok(found) };
    if count != 0 && sort == Sort::None && !any {
        sort = Sort::Asc;
    }
    let limit = if any { count as usize } else { usize::MAX };
    let points = &mut found.points;
    for (min, max) in shape.ranges() {
        if points.len() >= limit {
            break;
        }
        let (min, max) = (min as f64, max as f64);
        let z = At { ks, db, key: src, c: &v.c };
        zblock::visit(z, Some(&sort_key(min)), false, |score, m| {
            if score >= max {
                return false;
            }
            let (lon, lat) = geo::decode(score);
            if let Some(d) = shape.contains(lon, lat) {
                points.push((m.to_vec(), d, score, lon, lat));
            }
            points.len() < limit
        })?;
    }
    match sort {
        Sort::None => {}
        Sort::Asc => points.sort_by(|a, b| a.1.total_cmp(&b.1)),
        Sort::Desc => points.sort_by(|a, b| b.1.total_cmp(&a.1)),
    }
    if count > 0 {
        points.truncate(count as usize);
    }
    for p in points.iter_mut() {
        p.1 /= shape.unit;
    }
    Ok(found)
}

fn reply(found: &Found, r: &mut Reply) {
    let extra = found.withdist as usize + found.withhash as usize + found.withcoord as usize;
    r.array(found.points.len());
    for (m, dist, score, lon, lat) in &found.points {
        if extra > 0 {
            r.array(extra + 1);
        }
        r.bulk(m);
        if found.withdist {
            r.bulk(geo::fixed4(*dist).as_bytes());
        }
        if found.withhash {
            r.int(*score as i64);
        }
        if found.withcoord {
            r.array(2);
            r.double_text(&geo::human(*lon));
            r.double_text(&geo::human(*lat));
        }
    }
}

fn search_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, kind: Kind) -> CmdResult {
    let found = search(ctx.ks(), ctx.db, ctx.now_ms, argv, kind)?;
    reply(&found, r);
    Ok(())
}

pub fn georadius_ro(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_here(ctx, argv, r, Kind::Coords { ro: true })
}

pub fn georadiusbymember_ro(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_here(ctx, argv, r, Kind::Member { ro: true })
}

pub fn geosearch(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_here(ctx, argv, r, Kind::Search)
}

/// A search that may store: run on the source's owner, then the result
/// replied or stored on the destination's owner (scores: the points' own,
/// or their distances with STOREDIST).
async fn search_conn(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, kind: Kind) -> CmdResult {
    let src = argv[if kind == Kind::SearchStore { 2 } else { 1 }].clone();
    let (shard, db, args) = (c.shard, c.db(), argv.to_vec());
    let found = shard
        .invoke_on(owner(&src, shard.count()), move |st: &ShardState| {
            search(&st.ks, db, now_ms(), &args, kind)
        })
        .await?;
    let Some((dst, dist)) = found.store.clone() else {
        reply(&found, r);
        return Ok(());
    };
    let items = found
        .points
        .into_iter()
        .map(|(m, d, score, _, _)| (m, if dist { d } else { score }))
        .collect();
    let event = if kind == Kind::SearchStore {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    r.int(across::store_scored(shard, db, &dst, items, event).await?);
    Ok(())
}

pub async fn georadius(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_conn(c, argv, r, Kind::Coords { ro: false }).await
}

pub async fn georadiusbymember(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_conn(c, argv, r, Kind::Member { ro: false }).await
}

pub async fn geosearchstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    search_conn(c, argv, r, Kind::SearchStore).await
}
