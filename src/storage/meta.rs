//! The meta value: one record per Redis key telling its type, expiry and,
//! for a string, its payload (see docs/encoding.md).
//!
//! ```text
//! format(1)=1 type(1) expire_ms(8,BE, 0 = none) body
//! string body:      the payload bytes
//! collection body:  version(8,BE) size(8,BE) type-specific fields
//! big string body:  version(8,BE) len(8,BE) (chunks in sub records)
//! ```
//! The leading format byte lets a later layout read this one. Reading a key's
//! type never needs more than this one record.

/// The layout version written today.
pub const FORMAT: u8 = 1;
const HEADER: usize = 10;

/// The Redis type of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum KeyType {
    String = 0,
    Hash = 1,
    Set = 2,
    List = 3,
    ZSet = 4,
    Stream = 5,
    /// A string longer than `types::bigstr::INLINE_MAX`: the body is a
    /// collection body (`version len`), the bytes are in chunk records.
    /// TYPE says "string"; every string command accepts it.
    BigString = 6,
}

impl KeyType {
    fn from_byte(b: u8) -> Option<KeyType> {
        Some(match b {
            0 => KeyType::String,
            1 => KeyType::Hash,
            2 => KeyType::Set,
            3 => KeyType::List,
            4 => KeyType::ZSet,
            5 => KeyType::Stream,
            6 => KeyType::BigString,
            _ => return None,
        })
    }

    /// The name TYPE replies with.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String | KeyType::BigString => "string",
            KeyType::Hash => "hash",
            KeyType::Set => "set",
            KeyType::List => "list",
            KeyType::ZSet => "zset",
            KeyType::Stream => "stream",
        }
    }
}

/// A decoded view of a meta value; borrows the stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta<'a> {
    pub ty: KeyType,
    /// Absolute Unix time in ms; 0 means no expiry.
    pub expire_ms: u64,
    /// For strings: the payload. For collections: version, size, specifics.
    pub body: &'a [u8],
}

impl<'a> Meta<'a> {
    /// Decodes a stored value; `None` if it is not a layout we know
    /// (treated as corruption by callers, never as a panic).
    pub fn decode(raw: &'a [u8]) -> Option<Meta<'a>> {
        if raw.len() < HEADER || raw[0] != FORMAT {
            return None;
        }
        let ty = KeyType::from_byte(raw[1])?;
        let mut ms = [0u8; 8];
        ms.copy_from_slice(&raw[2..10]);
        Some(Meta {
            ty,
            expire_ms: u64::from_be_bytes(ms),
            body: &raw[HEADER..],
        })
    }

    /// True when the key has an expiry at or before `now_ms`.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_ms != 0 && self.expire_ms <= now_ms
    }
}

/// Encodes a string key's meta value.
pub fn encode_string(expire_ms: u64, payload: &[u8]) -> Vec<u8> {
    encode(KeyType::String, expire_ms, payload)
}

/// A meta value held inline up to this many bytes.
pub type MetaBuf = smallvec::SmallVec<[u8; 128]>;

/// [`encode`] on the stack for bodies of up to 118 bytes: a write of a
/// short string (INCR's, SET's) allocates nothing for its record.
#[inline]
pub fn encode_buf(ty: KeyType, expire_ms: u64, body: &[u8]) -> MetaBuf {
    let mut v = MetaBuf::new();
    v.reserve_exact(HEADER + body.len());
    v.push(FORMAT);
    v.push(ty as u8);
    v.extend_from_slice(&expire_ms.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// What a collection's meta value is encoded into: a `Vec`, or a
/// [`MetaBuf`] on the stack ([`Coll::encode_buf`]).
pub trait Out {
    fn put(&mut self, b: u8);
    fn put_slice(&mut self, s: &[u8]);
}

macro_rules! out_for {
    ($($t:ty),*) => {$(
        impl Out for $t {
            #[inline]
            fn put(&mut self, b: u8) {
                self.push(b);
            }
            #[inline]
            fn put_slice(&mut self, s: &[u8]) {
                self.extend_from_slice(s);
            }
        }
    )*};
}

out_for!(Vec<u8>, MetaBuf);

/// Encodes a meta value of any type with the given body.
pub fn encode(ty: KeyType, expire_ms: u64, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + body.len());
    v.push(FORMAT);
    v.push(ty as u8);
    v.extend_from_slice(&expire_ms.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// The same value with another expiry, without decoding the body.
pub fn with_expire(raw: &[u8], expire_ms: u64) -> Vec<u8> {
    let mut v = raw.to_vec();
    if v.len() >= HEADER {
        v[2..10].copy_from_slice(&expire_ms.to_be_bytes());
    }
    v
}

/// Hash field expiration bookkeeping (seed 002): `persist` counts physical
/// fields without a TTL; `lower..=upper` is a conservative hint of where the
/// TTLs of the other `size - persist` fields (the TTL candidates) lie.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hfe {
    pub persist: u64,
    pub lower: u64,
    pub upper: u64,
    /// A sliced pass of active field expiration over a big hash, under
    /// way (boxed, as `Coll::stream`).
    pub sweep: Option<Box<Sweep>>,
}

/// The longest sweep cursor kept: a longer field name is kept as its first
/// `SWEEP_CURSOR_MAX` bytes, and the next slice starts there (it revisits
/// the fields sharing that prefix, which is harmless).
pub const SWEEP_CURSOR_MAX: usize = 48;

/// The state of a sweep (`types::hash::sweep`): where the next slice starts,
/// and the TTL bounds of every live field it visited or that a write gave a
/// TTL since it began (writes widen `lower..=upper` as they widen the
/// hash's). When it reaches the end these become the hash's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    pub lower: u64,
    pub upper: u64,
    /// When a slice last ran (Unix ms).
    pub touched_ms: u64,
    /// Whether `cursor` is a whole field name (the next slice starts after
    /// it) or a prefix (the next slice starts at it).
    pub exact: bool,
    len: u8,
    cur: [u8; SWEEP_CURSOR_MAX],
}

impl Sweep {
    /// A sweep starting at the first field.
    pub fn start(now_ms: u64) -> Sweep {
        Sweep {
            lower: 0,
            upper: 0,
            touched_ms: now_ms,
            exact: false,
            len: 0,
            cur: [0; SWEEP_CURSOR_MAX],
        }
    }

    pub fn cursor(&self) -> &[u8] {
        &self.cur[..self.len as usize]
    }

    /// Moves the cursor past field `name`.
    pub fn set_cursor(&mut self, name: &[u8]) {
        let n = name.len().min(SWEEP_CURSOR_MAX);
        self.cur[..n].copy_from_slice(&name[..n]);
        self.len = n as u8;
        self.exact = name.len() <= SWEEP_CURSOR_MAX;
    }
}

/// The body of a collection's meta value.
///
/// ```text
/// version(8) size(8)                                        every collection; hash mode 0
/// version(8) size(8) mode(1)=1 persist(8) lower(8) upper(8) hash in field-expiration mode
///   ... slower(8) supper(8) touched(8) exact(1) cursor(0-48)   the same, with a sweep under way
/// version(8) size(8) mode(1)=2 head(8) [shift(1)]           list (packed by shift: `types::lchunk`)
/// version(8) size(8) mode(1)=3                              sorted set with count blocks
/// version(8) size(8) mode(1)=4 last first floor max_deleted tail_last (16 each) added groups nodes tail_node tail_total tail_bytes tail_valid head_node (8 each)
///   ... [head_known(8) head_valid(8) head_last(16)]           stream (the bracket: a copy of the first closed node's record; older metas lack it)
/// ```
/// `size` counts physical members (for a mode-1 hash it may include TTL
/// fields already expired or removed by compaction, see `types::hash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coll {
    pub version: u64,
    pub size: u64,
    /// Some: a hash in field-expiration mode (mode 1); values carry an
    /// 8-byte expire prefix. None: plain members (sets, mode-0 hashes).
    pub hfe: Option<Hfe>,
    /// Some: a list; the index of its first element (elements are at
    /// `head .. head + size`, see `types::list`).
    pub list_head: Option<u64>,
    /// A sorted set that keeps count blocks (mode 3, `types::zblock`).
    pub zblocks: bool,
    /// A stream's own fields (mode 4, `types::stream`), boxed: every
    /// collection command moves a `Coll` around (`a_coll_stays_small`).
    pub stream: Option<Box<StreamMeta>>,
    /// A big string's chunk size as a power of two (mode 5); 0: the
    /// default 64 KiB chunks (`types::bigstr`). A list's positions a
    /// record, as a power of two (0: one element a record, unpacked;
    /// `types::lchunk`).
    pub chunk_shift: u8,
}

/// A stream ID: milliseconds and sequence.
pub type RawId = (u64, u64);

/// What a stream keeps in its meta record besides version and size
/// (`size` counts live entries). IDs are (ms, seq).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamMeta {
    /// The last ID generated (`last-generated-id`).
    pub last: RawId,
    /// The first live entry (0-0 when empty): Redis's `first_id`.
    pub first: RawId,
    /// Entries below this ID are garbage (trimmed lazily: the compaction
    /// filter drops them); every live entry is at or above it.
    pub floor: RawId,
    pub max_deleted: RawId,
    /// `entries-added`: every entry ever added.
    pub added: u64,
    /// Consumer groups.
    pub groups: u64,
    /// Emulated listpack nodes alive (`radix-tree-keys`).
    pub nodes: u64,
    /// The tail node: its number, entries appended to it (deleted ones
    /// too), their estimated bytes, live entries, and its last entry's ID.
    pub tail_node: u64,
    pub tail_total: u64,
    pub tail_bytes: u64,
    pub tail_valid: u64,
    pub tail_last: RawId,
    /// No node below this number is left: node scans start here, not
    /// among the deleted records of trimmed nodes.
    pub head_node: u64,
    /// The first closed node as its record says, (node, live entries,
    /// last ID), when known: a trim at the cap reads it here, not with a
    /// scan of the node records per XADD.
    pub head: Option<(u64, u64, RawId)>,
}

/// The encoded length of a [`StreamMeta`] (the head node's copy included),
/// and that of one written before the copy existed.
const STREAM_LEN: usize = STREAM_LEN_V1 + 32;
const STREAM_LEN_V1: usize = 16 * 5 + 8 * 8;

const MODE_HFE: u8 = 1;
const MODE_LIST: u8 = 2;
const MODE_ZBLOCKS: u8 = 3;
const MODE_STREAM: u8 = 4;
const MODE_CHUNKS: u8 = 5;

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

impl Coll {
    pub fn new(version: u64, hfe: bool) -> Coll {
        Coll {
            version,
            size: 0,
            hfe: hfe.then(Hfe::default),
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        }
    }

    /// An empty list's body: its first push lands at `head` or `head - 1`.
    pub fn new_list(version: u64, head: u64) -> Coll {
        Coll {
            version,
            size: 0,
            hfe: None,
            list_head: Some(head),
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        }
    }

    /// Decodes a collection body; None for a body too short or of an unknown mode.
    pub fn decode(body: &[u8]) -> Option<Coll> {
        if body.len() < 16 {
            return None;
        }
        let (version, size) = (be64(body), be64(&body[8..]));
        if body.get(16) == Some(&MODE_STREAM) {
            return StreamMeta::decode(&body[17..]).map(|s| Coll {
                version,
                size,
                hfe: None,
                list_head: None,
                zblocks: false,
                chunk_shift: 0,
                stream: Some(Box::new(s)),
            });
        }
        if body.len() == 18 && body[16] == MODE_CHUNKS {
            // 1 KiB .. 64 KiB chunks.
            return (10..=16).contains(&body[17]).then_some(Coll {
                version,
                size,
                hfe: None,
                list_head: None,
                zblocks: false,
                chunk_shift: body[17],
                stream: None,
            });
        }
        if body.len() == 17 && body[16] == MODE_ZBLOCKS {
            return Some(Coll {
                version,
                size,
                hfe: None,
                list_head: None,
                zblocks: true,
                chunk_shift: 0,
                stream: None,
            });
        }
        let (hfe, list_head) = match body.get(16) {
            None => (None, None),
            Some(&MODE_HFE) if body.len() >= 41 => (
                Some(Hfe {
                    persist: be64(&body[17..]),
                    lower: be64(&body[25..]),
                    upper: be64(&body[33..]),
                    sweep: match body.len() {
                        41 => None,
                        n if (66..=66 + SWEEP_CURSOR_MAX).contains(&n) && body[65] <= 1 => {
                            let mut s = Sweep::start(be64(&body[57..]));
                            s.lower = be64(&body[41..]);
                            s.upper = be64(&body[49..]);
                            s.exact = body[65] == 1;
                            s.len = (n - 66) as u8;
                            s.cur[..n - 66].copy_from_slice(&body[66..]);
                            Some(Box::new(s))
                        }
                        _ => return None,
                    },
                }),
                None,
            ),
            Some(&MODE_LIST) if body.len() == 25 || body.len() == 26 => (None, Some(be64(&body[17..]))),
            Some(_) => return None,
        };
        Some(Coll {
            version,
            size,
            hfe,
            list_head,
            zblocks: false,
            // A packed list's positions a record (`types::lchunk`).
            chunk_shift: if list_head.is_some() {
                body.get(25).copied().unwrap_or(0)
            } else {
                0
            },
            stream: None,
        })
    }

    pub fn encode_body(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.body_room());
        self.encode_body_into(&mut v);
        v
    }

    /// Room for the encoded body: a stream's fields, or a hash's sweep
    /// cursor, are past 41 bytes (two reallocations a XADD, ~600
    /// instructions of its ~12250).
    fn body_room(&self) -> usize {
        let sweep = self
            .hfe
            .as_ref()
            .and_then(|h| h.sweep.as_ref())
            .map_or(0, |s| 25 + s.cursor().len());
        match self.stream {
            Some(_) => 17 + STREAM_LEN,
            None => 41 + sweep,
        }
    }

    fn encode_body_into(&self, v: &mut impl Out) {
        v.put_slice(&self.version.to_be_bytes());
        v.put_slice(&self.size.to_be_bytes());
        if let Some(h) = &self.hfe {
            v.put(MODE_HFE);
            v.put_slice(&h.persist.to_be_bytes());
            v.put_slice(&h.lower.to_be_bytes());
            v.put_slice(&h.upper.to_be_bytes());
            if let Some(s) = &h.sweep {
                v.put_slice(&s.lower.to_be_bytes());
                v.put_slice(&s.upper.to_be_bytes());
                v.put_slice(&s.touched_ms.to_be_bytes());
                v.put(s.exact as u8);
                v.put_slice(s.cursor());
            }
        } else if let Some(head) = self.list_head {
            v.put(MODE_LIST);
            v.put_slice(&head.to_be_bytes());
            if self.chunk_shift != 0 {
                v.put(self.chunk_shift);
            }
        } else if self.zblocks {
            v.put(MODE_ZBLOCKS);
        } else if let Some(s) = &self.stream {
            v.put(MODE_STREAM);
            s.encode_into(v);
        } else if self.chunk_shift != 0 {
            v.put(MODE_CHUNKS);
            v.put(self.chunk_shift);
        }
    }

    /// The full meta value of a collection of type `ty` (one allocation).
    pub fn encode(&self, ty: KeyType, expire_ms: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER + self.body_room());
        self.encode_into(ty, expire_ms, &mut v);
        v
    }

    /// [`Coll::encode`] on the stack up to 128 bytes (a list's, a set's, a
    /// hash's without a sweep cursor): a write that changes a
    /// collection's size allocates nothing for its meta record.
    pub fn encode_buf(&self, ty: KeyType, expire_ms: u64) -> MetaBuf {
        let mut v = MetaBuf::new();
        v.reserve_exact(HEADER + self.body_room());
        self.encode_into(ty, expire_ms, &mut v);
        v
    }

    fn encode_into(&self, ty: KeyType, expire_ms: u64, v: &mut impl Out) {
        v.put(FORMAT);
        v.put(ty as u8);
        v.put_slice(&expire_ms.to_be_bytes());
        self.encode_body_into(v);
    }
}

impl StreamMeta {
    fn decode(b: &[u8]) -> Option<StreamMeta> {
        if b.len() != STREAM_LEN && b.len() != STREAM_LEN_V1 {
            return None;
        }
        let id = |i: usize| (be64(&b[i..]), be64(&b[i + 8..]));
        let head = match b.len() == STREAM_LEN && be64(&b[144..]) != 0 {
            true => Some((be64(&b[144..]) - 1, be64(&b[152..]), id(160))),
            false => None,
        };
        Some(StreamMeta {
            last: id(0),
            first: id(16),
            floor: id(32),
            max_deleted: id(48),
            tail_last: id(64),
            added: be64(&b[80..]),
            groups: be64(&b[88..]),
            nodes: be64(&b[96..]),
            tail_node: be64(&b[104..]),
            tail_total: be64(&b[112..]),
            tail_bytes: be64(&b[120..]),
            tail_valid: be64(&b[128..]),
            head_node: be64(&b[136..]),
            head,
        })
    }

    fn encode_into(&self, v: &mut impl Out) {
        for (a, b) in [self.last, self.first, self.floor, self.max_deleted, self.tail_last] {
            v.put_slice(&a.to_be_bytes());
            v.put_slice(&b.to_be_bytes());
        }
        for n in [
            self.added,
            self.groups,
            self.nodes,
            self.tail_node,
            self.tail_total,
            self.tail_bytes,
            self.tail_valid,
            self.head_node,
        ] {
            v.put_slice(&n.to_be_bytes());
        }
        let (known, valid, (ms, seq)) = match self.head {
            Some((n, valid, last)) => (n.wrapping_add(1), valid, last),
            None => (0, 0, (0, 0)),
        };
        for n in [known, valid, ms, seq] {
            v.put_slice(&n.to_be_bytes());
        }
    }
}

impl Meta<'_> {
    /// The collection body of a non-string key.
    pub fn coll(&self) -> Option<Coll> {
        if self.ty == KeyType::String {
            None
        } else {
            Coll::decode(self.body)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let raw = encode_string(1234, b"hello");
        let m = Meta::decode(&raw).unwrap();
        assert_eq!(
            m,
            Meta {
                ty: KeyType::String,
                expire_ms: 1234,
                body: b"hello"
            }
        );
        assert!(m.is_expired(1234));
        assert!(!m.is_expired(1233));
        let raw2 = with_expire(&raw, 0);
        assert!(!Meta::decode(&raw2).unwrap().is_expired(u64::MAX));
    }

    #[test]
    fn collection_bodies_round_trip() {
        let plain = Coll {
            version: 9,
            size: 3,
            hfe: None,
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        };
        assert_eq!(plain.encode_body().len(), 16);
        let hfe = Coll {
            version: 9,
            size: 3,
            hfe: Some(Hfe {
                persist: 1,
                lower: 5,
                upper: 10,
                sweep: None,
            }),
            list_head: None,
            zblocks: false,
            chunk_shift: 0,
            stream: None,
        };
        let list = Coll::new_list(9, 1 << 63);
        assert_eq!(list.encode_body().len(), 25);
        let mut swept = hfe.clone();
        let mut s = Sweep::start(77);
        s.lower = 6;
        s.set_cursor(b"field-7");
        swept.hfe.as_mut().unwrap().sweep = Some(Box::new(s));
        assert_eq!(swept.encode_body().len(), 66 + 7);
        let mut long = swept.clone();
        let mut s = Sweep::start(78);
        s.set_cursor(&[b'x'; 100]);
        assert!(!s.exact && s.cursor().len() == SWEEP_CURSOR_MAX);
        long.hfe.as_mut().unwrap().sweep = Some(Box::new(s));
        let stream = Coll {
            stream: Some(Box::new(StreamMeta {
                last: (5, 6),
                floor: (1, 0),
                added: 9,
                tail_valid: 3,
                ..Default::default()
            })),
            ..plain.clone()
        };
        assert_eq!(stream.encode_body().len(), 17 + STREAM_LEN);
        let mut headed = stream.clone();
        headed.stream.as_mut().unwrap().head = Some((4, 100, (7, 1)));
        // A meta written before the head node's copy: the same fields, no copy.
        let old = Coll::decode(&headed.encode_body()[..17 + STREAM_LEN_V1]).unwrap();
        assert_eq!(old, stream);
        let chunked = Coll {
            chunk_shift: 12,
            ..plain.clone()
        };
        assert_eq!(chunked.encode_body().len(), 18);
        let mut bad = chunked.encode_body();
        bad[17] = 9;
        assert_eq!(Coll::decode(&bad), None, "chunks under 1 KiB");
        for c in [&plain, &hfe, &list, &swept, &long, &stream, &headed, &chunked] {
            let raw = c.encode(KeyType::Hash, 0);
            assert_eq!(Meta::decode(&raw).unwrap().coll().as_ref(), Some(c));
            // Encoded in the room made for it, without growing.
            assert!(raw.len() <= HEADER + c.body_room(), "{c:?}");
            assert!(c.encode_body().len() <= c.body_room(), "{c:?}");
        }
        assert_eq!(Coll::decode(&[0; 15]), None);
        let mut bad = hfe.encode_body();
        bad[16] = 7;
        assert_eq!(Coll::decode(&bad), None);
        let mut bad = swept.encode_body();
        bad[65] = 2;
        assert_eq!(Coll::decode(&bad), None, "an unknown cursor flag");
        assert_eq!(Coll::decode(&swept.encode_body()[..60]), None, "a cut sweep");
        assert_eq!(Meta::decode(&encode_string(0, b"0123456789abcdefgh")).unwrap().coll(), None);
    }

    /// A `Coll` is moved through every collection command's read and
    /// write (and returned from every SET's read of the old meta): a
    /// stream's fields and a sweep's cursor live boxed, so it stays small
    /// (270 bytes unboxed: 4% of SET -P16 went to memmove, tuning.md
    /// session 37).
    #[test]
    fn a_coll_stays_small() {
        assert!(std::mem::size_of::<Coll>() <= 96, "{}", std::mem::size_of::<Coll>());
    }

    #[test]
    fn rejects_unknown_layouts() {
        assert!(Meta::decode(b"").is_none());
        assert!(Meta::decode(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(Meta::decode(&[1, 9, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
    }
}
