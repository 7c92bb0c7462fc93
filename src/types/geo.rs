//! Geospatial indexes on sorted sets, computed as redis-server computes
//! them (issue 36, item 3), so scores, coordinates, distances, hashes and
//! the order of results are the same bytes: a point is a 52-bit score, the
//! latitude and longitude each cut in 2^26 steps (latitude over Web
//! Mercator's ±85.05112878) and their bits interleaved (latitude in the
//! even bits); a search looks at the cell of the center and its eight
//! neighbours at a step fitting the radius (each cell one score range),
//! then keeps the points inside the shape by the haversine distance on
//! Redis's Earth radius.

use std::f64::consts::PI;

pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.051_128_78;
pub const LAT_MAX: f64 = 85.051_128_78;
/// Bits per coordinate in a score.
const STEP_MAX: u8 = 26;
const EARTH_RADIUS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;
const D_R: f64 = PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// The low bits of `x` in the even positions, of `y` in the odd ones.
fn interleave(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = v as u64;
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

/// [`interleave`] undone: the even bits in the low half, the odd ones in
/// the high half.
fn deinterleave(v: u64) -> u64 {
    fn squeeze(mut v: u64) -> u64 {
        v &= 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF
    }
    squeeze(v) | (squeeze(v >> 1) << 32)
}

/// A cell: `step` bits per coordinate, interleaved. Step 0 is "no cell".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    min: f64,
    max: f64,
}

const LON: Span = Span {
    min: LON_MIN,
    max: LON_MAX,
};
const LAT: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A cell's extent.
#[derive(Clone, Copy, Debug)]
struct Area {
    lon: Span,
    lat: Span,
}

/// The cell of `step` holding (`lon`, `lat`) over the given spans; None
/// outside the indexable range.
fn encode_in(lon_span: Span, lat_span: Span, lon: f64, lat: f64, step: u8) -> Option<Hash> {
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_span.min || lat > lat_span.max || lon < lon_span.min || lon > lon_span.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_span.min) / (lat_span.max - lat_span.min) * scale;
    let lon_off = (lon - lon_span.min) / (lon_span.max - lon_span.min) * scale;
    Some(Hash {
        bits: interleave(lat_off as u32, lon_off as u32),
        step,
    })
}

fn decode_in(lon_span: Span, lat_span: Span, h: Hash) -> Option<Area> {
    if h.is_zero() {
        return None;
    }
    let sep = deinterleave(h.bits);
    let (ilat, ilon) = (sep as u32, (sep >> 32) as u32);
    let cells = (1u64 << h.step) as f64;
    let (lat_scale, lon_scale) = (lat_span.max - lat_span.min, lon_span.max - lon_span.min);
    Some(Area {
        lat: Span {
            min: lat_span.min + (ilat as f64 / cells) * lat_scale,
            max: lat_span.min + (ilat.wrapping_add(1) as f64 / cells) * lat_scale,
        },
        lon: Span {
            min: lon_span.min + (ilon as f64 / cells) * lon_scale,
            max: lon_span.min + (ilon.wrapping_add(1) as f64 / cells) * lon_scale,
        },
    })
}

/// The score of a point: its cell at step 26, as GEOADD stores it; None
/// outside longitude ±180 and latitude ±85.05112878.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode_in(LON, LAT, lon, lat, STEP_MAX).map(align52)
}

/// A cell's bits moved to the top of the 52 bits of a score.
fn align52(h: Hash) -> u64 {
    h.bits << (52 - h.step as u32 * 2)
}

/// The point a score stands for: the center of its cell, kept inside the
/// indexable range (longitude, latitude).
pub fn decode(score: f64) -> (f64, f64) {
    let h = Hash {
        bits: score as u64,
        step: STEP_MAX,
    };
    let Some(a) = decode_in(LON, LAT, h) else {
        return (0.0, 0.0);
    };
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// GEOHASH's 11 characters: the point re-encoded over latitude ±90, as
/// the standard geohash is, its 52 bits in base 32 and a last `0`.
pub fn geohash(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode(score);
    let std_lat = Span { min: -90.0, max: 90.0 };
    let bits = encode_in(LON, std_lat, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters between two points, as Redis computes
/// it (the same operations in the same order).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (deg_rad(lon1), deg_rad(lon2));
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// What a search looks for around its center.
#[derive(Clone, Copy, Debug)]
pub enum Form {
    Radius(f64),
    /// Width and height.
    Box(f64, f64),
}

/// A search: its center (longitude, latitude), form, and the unit's
/// meters (the form is in that unit).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub form: Form,
    pub unit: f64,
}

impl Shape {
    /// [min lon, min lat, max lon, max lat] around the shape.
    fn bounds(&self) -> [f64; 4] {
        let (h, w) = match self.form {
            Form::Radius(r) => (r, r),
            Form::Box(w, h) => (h / 2.0, w / 2.0),
        };
        let (height, width) = (self.unit * h, self.unit * w);
        let lat_delta = rad_deg(height / EARTH_RADIUS);
        let lon_top = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat + lat_delta).cos());
        let lon_bottom = rad_deg(width / EARTH_RADIUS / deg_rad(self.lat - lat_delta).cos());
        let d = if self.lat < 0.0 { lon_bottom } else { lon_top };
        [self.lon - d, self.lat - lat_delta, self.lon + d, self.lat + lat_delta]
    }

    /// The distance from the center to a point inside the shape, in
    /// meters; None outside.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.form {
            Form::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.unit).then_some(d)
            }
            Form::Box(w, h) => {
                if lat_distance(lat, self.lat) > h * self.unit / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > w * self.unit / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// The score ranges [min, max) to read, in Redis's order: the center's
    /// cell, then north, south, east, west, north-east, north-west,
    /// south-east, south-west, the useless ones left out.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        let cells = self.cells();
        let mut out = Vec::with_capacity(9);
        // As Redis: a cell equal to the last one read is skipped, unless
        // that one was the center's.
        let mut last = 0;
        for (i, &h) in cells.iter().enumerate() {
            if h.is_zero() || (last > 0 && cells[last] == h) {
                continue;
            }
            out.push((
                align52(h),
                align52(Hash {
                    bits: h.bits + 1,
                    step: h.step,
                }),
            ));
            last = i;
        }
        out
    }

    /// The center's cell and its neighbours (`geohashCalculateAreasByShape`).
    fn cells(&self) -> [Hash; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let radius = match self.form {
            Form::Radius(r) => r,
            Form::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
        } * self.unit;
        let mut step = steps_for(radius, self.lat);
        let at = |step| {
            let h = encode_in(LON, LAT, self.lon, self.lat, step).unwrap_or_default();
            let h = Hash { step, ..h };
            (h, neighbours(h))
        };
        let (mut h, mut n) = at(step);
        let area = |h: Hash| decode_in(LON, LAT, h);
        let too_coarse = area(n[0]).is_some_and(|a| a.lat.max < max_lat)
            || area(n[1]).is_some_and(|a| a.lat.min > min_lat)
            || area(n[2]).is_some_and(|a| a.lon.max < max_lon)
            || area(n[3]).is_some_and(|a| a.lon.min > min_lon);
        if step > 1 && too_coarse {
            step -= 1;
            (h, n) = at(step);
        }
        // n: north, south, east, west, NE, NW, SE, SW.
        if step >= 2 {
            if let Some(a) = area(h) {
                let zero = |n: &mut [Hash; 8], which: [usize; 3]| which.iter().for_each(|&i| n[i] = Hash::default());
                if a.lat.min < min_lat {
                    zero(&mut n, [1, 7, 6]);
                }
                if a.lat.max > max_lat {
                    zero(&mut n, [0, 4, 5]);
                }
                if a.lon.min < min_lon {
                    zero(&mut n, [3, 7, 5]);
                }
                if a.lon.max > max_lon {
                    zero(&mut n, [2, 6, 4]);
                }
            }
        }
        [h, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]
    }
}

/// The step whose cells fit a search of `meters` at latitude `lat`.
fn steps_for(mut meters: f64, lat: f64) -> u8 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while meters < MERCATOR_MAX {
        meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u8
}

/// The cell `dx` east and `dy` north of `h` (each -1, 0 or 1), wrapping:
/// each coordinate's interleaved bits are stepped with the other's bits
/// filled with ones, so the carry runs through them.
fn moved(h: Hash, dx: i8, dy: i8) -> Hash {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    let width = 64 - h.step as u32 * 2;
    // `part` (bits under `mine`) moved by `d`; `other` masks the rest.
    let step = |part: u64, mine: u64, other: u64, d: i8| -> u64 {
        if d == 0 {
            return part;
        }
        let zz = other >> width;
        let v = if d > 0 {
            part.wrapping_add(zz + 1)
        } else {
            (part | zz).wrapping_sub(zz + 1)
        };
        v & (mine >> width)
    };
    // Longitude in the odd bits, latitude in the even ones.
    let x = step(h.bits & ODD, ODD, EVEN, dx);
    let y = step(h.bits & EVEN, EVEN, ODD, dy);
    Hash { bits: x | y, step: h.step }
}

/// North, south, east, west, NE, NW, SE, SW of `h`.
fn neighbours(h: Hash) -> [Hash; 8] {
    [
        moved(h, 0, 1),
        moved(h, 0, -1),
        moved(h, 1, 0),
        moved(h, -1, 0),
        moved(h, 1, 1),
        moved(h, -1, 1),
        moved(h, 1, -1),
        moved(h, -1, -1),
    ]
}

extern "C" {
    fn basalt_human_double(v: f64, out: *mut u8, out_cap: usize) -> usize;
}

/// A coordinate as Redis replies it (`%.17Lf` of the value as a long
/// double, trailing zeros trimmed).
pub fn human(v: f64) -> String {
    let mut buf = [0u8; 512];
    // SAFETY: `buf` is writable for its whole length, given as the cap.
    let n = unsafe { basalt_human_double(v, buf.as_mut_ptr(), buf.len()) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A distance as Redis 7.2+ replies it: four decimals, the value times
/// 10^4 rounded to the nearest integer (ties to even), as
/// `fixedpoint_d2string`.
pub fn fixed4(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let v = (d * 10_000.0).round_ties_even() as i64;
    let (sign, v) = if v < 0 { ("-", v.unsigned_abs()) } else { ("", v as u64) };
    format!("{sign}{}.{:04}", v / 10_000, v % 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        for (x, y) in [(0u32, 0u32), (1, 0), (0, 1), (0x3ff_ffff, 0x155_5555), (u32::MAX, 7)] {
            assert_eq!(deinterleave(interleave(x, y)), x as u64 | (y as u64) << 32);
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
    }

    /// Values from redis-server 7.0.15: GEOADD Sicily 13.361389 38.115556
    /// "Palermo" 15.087269 37.502669 "Catania", then ZSCORE, GEOPOS,
    /// GEODIST, GEOHASH.
    #[test]
    fn matches_redis_on_the_docs_example() {
        let palermo = score_of(13.361389, 38.115556).unwrap();
        let catania = score_of(15.087269, 37.502669).unwrap();
        assert_eq!((palermo, catania), (3479099956230698, 3479447370796909));
        let (lon, lat) = decode(palermo as f64);
        assert_eq!(
            (human(lon).as_str(), human(lat).as_str()),
            ("13.36138933897018433", "38.11555639549629859")
        );
        let (lon2, lat2) = decode(catania as f64);
        assert_eq!(fixed4(distance(lon, lat, lon2, lat2)), "166274.1516");
        assert_eq!(fixed4(distance(lon, lat, lon2, lat2) / 1000.0), "166.2742");
        assert_eq!(&geohash(palermo as f64), b"sqc8b49rny0");
        assert_eq!(&geohash(catania as f64), b"sqdtr74hyu0");
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn neighbours_move_one_cell() {
        let h = Hash { bits: 0b1001, step: 2 };
        let n = neighbours(h);
        // Each neighbour of a neighbour in the other direction is home.
        assert_eq!(moved(n[0], 0, -1), h);
        assert_eq!(moved(n[2], -1, 0), h);
        assert_eq!(moved(n[7], 1, 1), h);
    }

    #[test]
    fn fixed4_rounds_as_redis_7_2() {
        assert_eq!(fixed4(0.0), "0.0000");
        assert_eq!(fixed4(1.23456), "1.2346");
        assert_eq!(fixed4(190.44242586), "190.4424");
        assert_eq!(fixed4(0.00004), "0.0000");
    }
}
