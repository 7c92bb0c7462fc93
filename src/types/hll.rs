//! HyperLogLog strings as Redis lays them out (issue 36, item 2), written
//! from the algorithm's description: a 16-byte header (`HYLL`, the
//! encoding, three unused bytes, the cached cardinality little-endian with
//! its top bit set when stale), then 16384 six-bit registers, either dense
//! (12288 bytes, register i at bit 6i, low bits first) or sparse (run-length
//! opcodes: ZERO `00xxxxxx` = 1-64 zero registers, XZERO `01xxxxxx
//! yyyyyyyy` = 1-16384 zero registers, VAL `1vvvvvxx` = 1-4 registers of
//! value 1-32). The same inputs give the same bytes as redis-server, so
//! strings move between the two with GET/SET. The commands are not wired
//! yet: this is the representation, its updates and the estimator.

/// Registers: 2^14.
pub const REGISTERS: usize = 1 << P;
const P: u32 = 14;
/// Hash bits left after the index.
const Q: u32 = 64 - P;
const BITS: usize = 6;
pub const HEADER: usize = 16;
/// The dense string's length.
pub const DENSE_LEN: usize = HEADER + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// MurmurHash64A, the hash Redis's HyperLogLog uses (seed 0xadc83b19).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let words = key.chunks_exact(8);
    let tail = words.remainder();
    for w in words {
        let mut k = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element lands in and the run length it offers there:
/// 1 + the trailing zeros of the hash above the index bits.
pub fn register_of(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Register `i` of dense registers `r` (the bytes after the header).
fn dense_get(r: &[u8], i: usize) -> u8 {
    let (byte, shift) = (i * BITS / 8, (i * BITS) & 7);
    let lo = r[byte] as u16 >> shift;
    let hi = r.get(byte + 1).map_or(0, |&b| (b as u16) << (8 - shift));
    ((lo | hi) & 63) as u8
}

fn dense_set(r: &mut [u8], i: usize, v: u8) {
    let (byte, shift) = (i * BITS / 8, (i * BITS) & 7);
    r[byte] &= !(63u8 << shift);
    r[byte] |= v << shift;
    if let Some(b) = r.get_mut(byte + 1) {
        let spill = 8 - shift;
        if spill < BITS {
            *b &= !(63u8 >> spill);
            *b |= v >> spill;
        }
    }
}

/// A sparse string's opcodes, decoded: (run length, value).
fn sparse_runs(ops: &[u8]) -> Option<Vec<(usize, u8)>> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut total = 0;
    while i < ops.len() {
        let op = ops[i];
        let run = if op & 0xc0 == 0 {
            i += 1;
            ((op & 0x3f) as usize + 1, 0)
        } else if op & 0xc0 == 0x40 {
            // A last XZERO missing its second byte reads 0 there, as
            // redis-server reads the string's terminating NUL.
            let lo = ops.get(i + 1).copied().unwrap_or(0) as usize;
            i += 2;
            ((((op & 0x3f) as usize) << 8 | lo) + 1, 0)
        } else {
            i += 1;
            ((op & 0x3) as usize + 1, ((op >> 2) & 0x1f) + 1)
        };
        total += run.0;
        if total > REGISTERS {
            return None;
        }
        out.push(run);
    }
    (total == REGISTERS).then_some(out)
}

fn push_zeros(out: &mut Vec<u8>, mut len: usize) {
    while len > 0 {
        let n = len.min(XZERO_MAX_LEN);
        if n > ZERO_MAX_LEN {
            out.push(0x40 | ((n - 1) >> 8) as u8);
            out.push(((n - 1) & 0xff) as u8);
        } else {
            out.push((n - 1) as u8);
        }
        len -= n;
    }
}

fn push_val(out: &mut Vec<u8>, v: u8, len: usize) {
    out.push(0x80 | ((v - 1) << 2) | (len - 1) as u8);
}

/// A HyperLogLog string, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hll(pub Vec<u8>);

/// Why a string is not a usable HyperLogLog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Not an HLL at all (Redis: WRONGTYPE ... not a valid HyperLogLog).
    NotHll,
    /// An HLL header over a broken body (Redis: INVALIDOBJ).
    Corrupt,
}

impl Hll {
    /// A new, empty HLL: sparse, one XZERO over every register, a valid
    /// cached cardinality of 0.
    pub fn new() -> Hll {
        let mut v = b"HYLL".to_vec();
        v.push(SPARSE);
        v.extend_from_slice(&[0; 11]);
        push_zeros(&mut v, REGISTERS);
        Hll(v)
    }

    /// Checks a stored string's header (and a dense one's length).
    pub fn check(v: &[u8]) -> Result<(), Bad> {
        if v.len() < HEADER || &v[..4] != b"HYLL" || v[4] > SPARSE {
            return Err(Bad::NotHll);
        }
        if v[4] == DENSE && v.len() != DENSE_LEN {
            return Err(Bad::NotHll);
        }
        Ok(())
    }

    fn is_sparse(&self) -> bool {
        self.0[4] == SPARSE
    }

    /// The cached cardinality, if valid.
    pub fn cached(&self) -> Option<u64> {
        let c = u64::from_le_bytes(self.0[8..16].try_into().ok()?);
        (c >> 63 == 0).then_some(c)
    }

    pub fn set_cached(&mut self, n: u64) {
        self.0[8..16].copy_from_slice(&n.to_le_bytes());
    }

    /// Marks the cached cardinality stale.
    pub fn invalidate(&mut self) {
        self.0[15] |= 0x80;
    }

    /// Every register's value.
    pub fn registers(&self) -> Result<Vec<u8>, Bad> {
        if self.is_sparse() {
            let runs = sparse_runs(&self.0[HEADER..]).ok_or(Bad::Corrupt)?;
            let mut out = Vec::with_capacity(REGISTERS);
            for (n, v) in runs {
                out.extend(std::iter::repeat_n(v, n));
            }
            Ok(out)
        } else {
            let r = &self.0[HEADER..];
            Ok((0..REGISTERS).map(|i| dense_get(r, i)).collect())
        }
    }

    /// Adds `ele`: true when a register grew (the cache is then stale).
    /// A sparse HLL turns dense when a value passes 32 or its opcodes
    /// would pass `sparse_max` bytes, as Redis's `hll-sparse-max-bytes`.
    pub fn add(&mut self, ele: &[u8], sparse_max: usize) -> Result<bool, Bad> {
        let (index, count) = register_of(ele);
        self.raise(index, count, sparse_max)
    }

    /// Register `index` to at least `count`; true when it grew.
    pub fn raise(&mut self, index: usize, count: u8, sparse_max: usize) -> Result<bool, Bad> {
        if !self.is_sparse() {
            let r = &mut self.0[HEADER..];
            if dense_get(r, index) >= count {
                return Ok(false);
            }
            dense_set(r, index, count);
            self.invalidate();
            return Ok(true);
        }
        if count > VAL_MAX_VALUE {
            self.to_dense()?;
            return self.raise(index, count, sparse_max);
        }
        match self.sparse_raise(index, count, sparse_max)? {
            Raised::Already => Ok(false),
            Raised::Full => {
                self.to_dense()?;
                self.raise(index, count, sparse_max)
            }
            Raised::To(ops) => {
                self.0.truncate(HEADER);
                self.0.extend_from_slice(&ops);
                self.invalidate();
                Ok(true)
            }
        }
    }

    /// The sparse opcodes with register `index` raised to `count`: the
    /// opcode holding it split in up to three, then equal VAL neighbours
    /// merged from the opcode before it, as redis-server rewrites them.
    /// `Full` when the split would grow the string (header included) past
    /// `sparse_max` bytes, checked before merging, as Redis does.
    fn sparse_raise(&self, index: usize, count: u8, sparse_max: usize) -> Result<Raised, Bad> {
        let ops = &self.0[HEADER..];
        let (mut i, mut first) = (0usize, 0usize);
        let mut prev: Option<usize> = None;
        loop {
            let op = *ops.get(i).ok_or(Bad::Corrupt)?;
            let (span, size, val) = if op & 0xc0 == 0 {
                ((op & 0x3f) as usize + 1, 1, 0)
            } else if op & 0xc0 == 0x40 {
                let lo = ops.get(i + 1).copied().unwrap_or(0) as usize;
                ((((op & 0x3f) as usize) << 8 | lo) + 1, 2, 0)
            } else {
                ((op & 0x3) as usize + 1, 1, ((op >> 2) & 0x1f) + 1)
            };
            if index < first + span {
                if val >= count && op & 0x80 != 0 {
                    return Ok(Raised::Already);
                }
                let last = first + span - 1;
                let mut mid = Vec::with_capacity(5);
                if op & 0x80 == 0 {
                    push_zeros(&mut mid, index - first);
                    push_val(&mut mid, count, 1);
                    push_zeros(&mut mid, last - index);
                } else {
                    if index > first {
                        push_val(&mut mid, val, index - first);
                    }
                    push_val(&mut mid, count, 1);
                    if last > index {
                        push_val(&mut mid, val, last - index);
                    }
                }
                if mid.len() > size && self.0.len() + mid.len() - size > sparse_max {
                    return Ok(Raised::Full);
                }
                let mut out = Vec::with_capacity(ops.len() + 4);
                out.extend_from_slice(&ops[..i]);
                out.extend_from_slice(&mid);
                out.extend_from_slice(ops.get(i + size..).unwrap_or(&[]));
                merge_vals(&mut out, prev.unwrap_or(0));
                return Ok(Raised::To(out));
            }
            first += span;
            prev = Some(i);
            i += size;
            if first >= REGISTERS {
                return Err(Bad::Corrupt);
            }
        }
    }

    /// Turns a sparse HLL dense (same registers, stale cache kept as is).
    pub fn to_dense(&mut self) -> Result<(), Bad> {
        if !self.is_sparse() {
            return Ok(());
        }
        let regs = self.registers()?;
        let mut v = self.0[..HEADER].to_vec();
        v[4] = DENSE;
        v.resize(DENSE_LEN, 0);
        for (i, &r) in regs.iter().enumerate() {
            if r != 0 {
                dense_set(&mut v[HEADER..], i, r);
            }
        }
        self.0 = v;
        Ok(())
    }

    /// The estimate of distinct elements (Ertl's estimator over the
    /// registers' histogram, as redis-server computes it).
    pub fn count(&self) -> Result<u64, Bad> {
        Ok(estimate(&self.registers()?))
    }
}

impl Hll {
    /// PFMERGE's write into this HLL: every register raised to `max`'s
    /// (16384 bytes), in register order (a sparse HLL may turn dense on
    /// the way, as redis-server's does); the cache is then stale.
    pub fn merge_max(&mut self, max: &[u8], sparse_max: usize) -> Result<(), Bad> {
        for (i, &m) in max.iter().enumerate().take(REGISTERS) {
            if m == 0 {
                continue;
            }
            if self.is_sparse() {
                self.raise(i, m, sparse_max)?;
            } else if dense_get(&self.0[HEADER..], i) < m {
                dense_set(&mut self.0[HEADER..], i, m);
            }
        }
        self.invalidate();
        Ok(())
    }
}

/// Whether the checked HLL string `v` is sparse.
pub fn is_sparse(v: &[u8]) -> bool {
    v[4] == SPARSE
}

/// The cached cardinality of the checked HLL string `v`, if valid.
pub fn cached_of(v: &[u8]) -> Option<u64> {
    let c = u64::from_le_bytes(v.get(8..16)?.try_into().ok()?);
    (c >> 63 == 0).then_some(c)
}

/// Whether adding `adds` (register, run length) would raise a register of
/// the checked dense HLL string `v`: PFADD's test before it copies.
pub fn dense_grows(v: &[u8], adds: &[(usize, u8)]) -> bool {
    let r = &v[HEADER..];
    adds.iter().any(|&(i, c)| dense_get(r, i) < c)
}

/// Raises `max` (16384 bytes, one per register) to the registers of the
/// checked HLL string `v`: PFCOUNT of several keys and PFMERGE.
pub fn merge_into(v: &[u8], max: &mut [u8]) -> Result<(), Bad> {
    if is_sparse(v) {
        let runs = sparse_runs(&v[HEADER..]).ok_or(Bad::Corrupt)?;
        let mut at = 0;
        for (n, val) in runs {
            if val > 0 {
                for m in &mut max[at..at + n] {
                    *m = (*m).max(val);
                }
            }
            at += n;
        }
    } else {
        let r = &v[HEADER..];
        for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
            *m = (*m).max(dense_get(r, i));
        }
    }
    Ok(())
}

/// The estimate of the checked HLL string `v`.
pub fn count_of(v: &[u8]) -> Result<u64, Bad> {
    let mut regs = vec![0u8; REGISTERS];
    merge_into(v, &mut regs)?;
    Ok(estimate(&regs))
}

/// PFDEBUG DECODE's text of a sparse HLL string's opcodes: `z:len`,
/// `Z:len`, `v:value,len`, space-separated (a last XZERO missing its
/// second byte reads 0 there, as redis-server's does).
pub fn decode(v: &[u8]) -> String {
    let ops = &v[HEADER..];
    let mut out = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        let op = ops[i];
        if op & 0xc0 == 0 {
            out.push(format!("z:{}", (op & 0x3f) as usize + 1));
            i += 1;
        } else if op & 0xc0 == 0x40 {
            let lo = ops.get(i + 1).copied().unwrap_or(0) as usize;
            out.push(format!("Z:{}", (((op & 0x3f) as usize) << 8 | lo) + 1));
            i += 2;
        } else {
            out.push(format!("v:{},{}", ((op >> 2) & 0x1f) + 1, (op & 3) + 1));
            i += 1;
        }
    }
    out.join(" ")
}

/// PFSELFTEST, as redis-server's tests itself (random values from
/// `seed`): every dense register holds what is written to it without
/// touching its neighbours (1000 rounds of all 16384), then 10M distinct
/// elements go into a dense and a sparse HLL at once and, at 1, 10, 100
/// ... 10M, the sparse one is still sparse while small, both estimate the
/// same, and the error is under six standard errors. Err: the failure's
/// text (`TESTFAILED ...`).
pub fn selftest(sparse_max: usize, seed: u64) -> Result<(), String> {
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut dense = vec![0u8; DENSE_LEN - HEADER];
    let mut want = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, w) in want.iter_mut().enumerate() {
            *w = (next() & 63) as u8;
            dense_set(&mut dense, i, *w);
        }
        for (i, &w) in want.iter().enumerate() {
            let got = dense_get(&dense, i);
            if got != w {
                return Err(format!("TESTFAILED Register error, counter {i} should be {w} but is {got}"));
            }
        }
    }
    let mut d = Hll::new();
    d.to_dense().map_err(|_| "TESTFAILED dense conversion".to_string())?;
    let mut s = Hll::new();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let base = next();
    let mut checkpoint = 1u64;
    for j in 1..=10_000_000u64 {
        let ele = (j ^ base).to_le_bytes();
        let (index, count) = register_of(&ele);
        let broken = |_| "TESTFAILED Corrupted HLL".to_string();
        d.raise(index, count, sparse_max).map_err(broken)?;
        s.raise(index, count, sparse_max).map_err(broken)?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max / 2 && !s.is_sparse() {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let (a, b) = (d.count().map_err(broken)?, s.count().map_err(broken)?);
        if a != b {
            return Err(format!("TESTFAILED dense/sparse disagree: {a} vs {b}"));
        }
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        let abserr = checkpoint.abs_diff(a);
        if abserr > maxerr {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// What raising a sparse register comes to.
enum Raised {
    /// The register already holds at least the value.
    Already,
    /// The opcodes would pass `hll-sparse-max-bytes`: turn dense.
    Full,
    /// The new opcodes.
    To(Vec<u8>),
}

impl Default for Hll {
    fn default() -> Self {
        Hll::new()
    }
}

/// Merges adjacent VAL opcodes of equal value whose lengths fit one
/// opcode, looking at up to five opcodes from byte `from`.
fn merge_vals(ops: &mut Vec<u8>, from: usize) {
    let mut p = from;
    let mut scan = 5;
    while p < ops.len() && scan > 0 {
        scan -= 1;
        let op = ops[p];
        if op & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if op & 0xc0 == 0 {
            p += 1;
            continue;
        }
        if let Some(&next) = ops.get(p + 1) {
            if next & 0x80 != 0 && (op >> 2) & 0x1f == (next >> 2) & 0x1f {
                let len = (op & 3) as usize + (next & 3) as usize + 2;
                if len <= VAL_MAX_LEN {
                    ops[p + 1] = 0x80 | (((op >> 2) & 0x1f) << 2) | (len - 1) as u8;
                    ops.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
}

/// The estimate from register values.
pub fn estimate(regs: &[u8]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs {
        histo[(r as usize).min(63)] += 1;
    }
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What redis-server 7.0 stores after `PFADD k <ele>` on a missing key
    /// (GET k), from the header's 16th byte: the stale-cache flag, then
    /// the opcodes.
    #[test]
    fn one_element_matches_redis_bytes() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"a", b"\x80q\xa6\x84NW"),
            (b"b", b"\x80}\xa3\x80BZ"),
            (b"hello", b"\x80c\xff\x80[\xfe"),
            (b"foo", b"\x80\\\xb3\x90cJ"),
            (b"", b"\x80W1\x84h\xcc"),
            (b"12345", b"\x80yo\x80F\x8e"),
        ];
        for (ele, tail) in cases {
            let mut h = Hll::new();
            assert!(h.add(ele, 3000).unwrap());
            let mut want = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
            want.extend_from_slice(tail);
            assert_eq!(h.0, want, "{:?}", String::from_utf8_lossy(ele));
            assert!(!h.add(ele, 3000).unwrap(), "a second add changes nothing");
        }
    }

    #[test]
    fn seven_elements_merge_as_redis_does() {
        let mut h = Hll::new();
        for e in [b"a", b"b", b"c", b"d", b"e", b"f", b"g"] {
            h.add(e, 3000).unwrap();
        }
        let mut want = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
        want.extend_from_slice(b"Fm\x80V\x0c\x80D<\x848\x80P\xb1\x84I\x8c\x80Bm\x80BZ");
        assert_eq!(h.0, want);
        assert_eq!(h.cached(), None);
        assert_eq!(h.count().unwrap(), 7);
        h.set_cached(7);
        assert_eq!(&h.0[8..16], b"\x07\x00\x00\x00\x00\x00\x00\x00");
    }

    /// A checksum redis-server can compute too (EVAL over GET):
    /// h = (h * 31 + byte) mod 2^31-1 over the whole string.
    fn checksum(v: &[u8]) -> u64 {
        v.iter().fold(0u64, |h, &b| (h * 31 + b as u64) % 2_147_483_647)
    }

    /// PFCOUNT and the string's checksum on redis-server 7.0 after the
    /// same adds: 1000 elements stay sparse (1906 bytes), 20000 go dense,
    /// 200000; with hll-sparse-max-bytes 100, 20 stay sparse (76 bytes)
    /// and 60 go dense.
    #[test]
    fn strings_and_counts_match_redis() {
        let mut h = Hll::new();
        for i in 1..=1000 {
            h.add(format!("e{i}").as_bytes(), 3000).unwrap();
        }
        assert_eq!((h.count().unwrap(), h.0.len(), h.is_sparse()), (1008, 1906, true));
        assert_eq!(checksum(&h.0), 1_149_223_825);
        for i in 1001..=20000 {
            h.add(format!("e{i}").as_bytes(), 3000).unwrap();
        }
        assert_eq!((h.count().unwrap(), h.0.len(), h.is_sparse()), (19899, DENSE_LEN, false));
        assert_eq!(checksum(&h.0), 1_661_415_629);
        let mut h = Hll::new();
        for i in 1..=200_000 {
            h.add(format!("x{i}").as_bytes(), 3000).unwrap();
        }
        assert_eq!((h.count().unwrap(), checksum(&h.0)), (200_965, 910_343_520));
        let mut h = Hll::new();
        for i in 1..=20 {
            h.add(format!("s{i}").as_bytes(), 100).unwrap();
        }
        assert_eq!((h.0.len(), h.is_sparse(), checksum(&h.0)), (76, true, 1_272_622_408));
        for i in 21..=60 {
            h.add(format!("s{i}").as_bytes(), 100).unwrap();
        }
        assert_eq!((h.is_sparse(), h.count().unwrap(), checksum(&h.0)), (false, 60, 426_001_557));
    }

    #[test]
    fn dense_and_sparse_hold_the_same_registers() {
        let mut h = Hll::new();
        for i in 0..500 {
            h.add(format!("k{i}").as_bytes(), 3000).unwrap();
        }
        let regs = h.registers().unwrap();
        let mut d = h.clone();
        d.to_dense().unwrap();
        assert_eq!(d.0.len(), DENSE_LEN);
        assert_eq!(d.registers().unwrap(), regs);
        assert_eq!(d.count().unwrap(), h.count().unwrap());
        // Register edges: the last register's bits end the array.
        let mut r = vec![0u8; DENSE_LEN - HEADER];
        for (i, v) in [(0usize, 63u8), (1, 1), (REGISTERS - 1, 63), (REGISTERS - 2, 5)] {
            dense_set(&mut r, i, v);
        }
        assert_eq!(
            [
                dense_get(&r, 0),
                dense_get(&r, 1),
                dense_get(&r, REGISTERS - 2),
                dense_get(&r, REGISTERS - 1)
            ],
            [63, 1, 5, 63]
        );
    }

    #[test]
    fn broken_strings_are_refused() {
        assert_eq!(Hll::check(b"HYLL"), Err(Bad::NotHll));
        assert_eq!(Hll::check(b"HYLX\x01\0\0\0\0\0\0\0\0\0\0\0"), Err(Bad::NotHll));
        assert_eq!(Hll::check(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"), Err(Bad::NotHll));
        assert_eq!(Hll::check(b"HYLL\x00\0\0\0\0\0\0\0\0\0\0\0"), Err(Bad::NotHll), "dense, short");
        // Sparse opcodes that do not cover the registers exactly.
        let mut h = Hll::new();
        h.0.push(0x00);
        assert_eq!(h.registers(), Err(Bad::Corrupt));
        assert_eq!(h.count(), Err(Bad::Corrupt));
        let mut h = Hll::new();
        h.0.truncate(HEADER + 1);
        assert_eq!(h.registers(), Err(Bad::Corrupt));
        assert!(h.add(b"x", 3000).is_err());
    }

    #[test]
    fn decode_merge_and_selftest() {
        let mut h = Hll::new();
        assert_eq!(decode(&h.0), "Z:16384");
        h.raise(3, 2, 3000).unwrap();
        h.raise(100, 40, 3000).unwrap();
        assert!(!is_sparse(&h.0), "a value past 32 turns it dense");
        let mut s = Hll::new();
        s.raise(3, 1, 3000).unwrap();
        s.raise(5, 7, 3000).unwrap();
        assert_eq!(decode(&s.0), "z:3 v:1,1 z:1 v:7,1 Z:16378");
        let mut max = vec![0u8; REGISTERS];
        merge_into(&h.0, &mut max).unwrap();
        merge_into(&s.0, &mut max).unwrap();
        assert_eq!((max[3], max[5], max[100], max[4]), (2, 7, 40, 0));
        let mut m = Hll::new();
        m.merge_max(&max, 3000).unwrap();
        assert_eq!(m.registers().unwrap(), max);
        assert_eq!(cached_of(&m.0), None);
        assert!(dense_grows(&h.0, &[(7, 1)]) && !dense_grows(&h.0, &[(3, 2), (100, 1)]));
        // A last XZERO cut after its first byte reads 0 as its second.
        let mut cut = Hll::new().0;
        cut.truncate(HEADER + 1);
        assert_eq!(decode(&cut), "Z:16129");
        assert_eq!(count_of(&cut), Err(Bad::Corrupt));
        selftest(3000, 42).unwrap();
    }
}
