//! Redis Cluster's hash slots and which shard owns each: the key-to-shard
//! routing every layer uses (storage prefixes records with the slot,
//! dispatch and coord route by it, SCAN's cursor is one). Depends on
//! nothing else in the crate.

/// Redis Cluster's hash slot count.
pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM), as Redis Cluster uses for slots. Every command
/// hashes its key (twice for a write: its lookup and its meta record), so
/// sixteen bytes at a time (the `crc` crate's slice-by-16 tables, 8 KiB):
/// Redis's crc16.c walks one byte at a time, a chain of dependent table
/// loads that was 4% of a shard's CPU under SET -P16.
pub fn crc16(data: &[u8]) -> u16 {
    static CRC16: crc::Crc<u16, crc::Table<16>> = crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_XMODEM);
    CRC16.checksum(data)
}

/// The hash slot of a key, honouring `{hash tags}` exactly as Redis Cluster.
pub fn slot_of(key: &[u8]) -> u16 {
    let hashed = match memchr::memchr(b'{', key) {
        Some(open) => match memchr::memchr(b'}', &key[open + 1..]) {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) & (SLOTS - 1)
}

thread_local! {
    /// The key a running command was routed by: its address, length and
    /// slot ([`Hint`]).
    static HINT: std::cell::Cell<(usize, usize, u16)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// The slot of the key a command was routed by, resolved once by dispatch
/// (`cmd::Req`) and kept for this thread while the command runs, so that
/// the encodings of that key's records (its meta key, its members' keys:
/// `storage::keys`) do not hash it again: a SET hashed its key three
/// times, an HSET five. The key is known by its address and length: the
/// command's arguments are borrowed and unchanged while it runs, so the
/// same address is the same bytes. Dropping it puts back the hint before.
pub struct Hint {
    prev: (usize, usize, u16),
}

impl Hint {
    #[inline]
    pub fn set(key: &[u8], slot: u16) -> Hint {
        Hint {
            prev: HINT.with(|h| h.replace((key.as_ptr() as usize, key.len(), slot))),
        }
    }
}

impl Drop for Hint {
    #[inline]
    fn drop(&mut self) {
        HINT.with(|h| h.set(self.prev));
    }
}

/// [`slot_of`], from the [`Hint`] when `key` is the hinted key itself.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let (at, len, slot) = HINT.with(|h| h.get());
    if key.as_ptr() as usize == at && key.len() == len {
        return slot;
    }
    slot_of(key)
}

/// Which shard owns `slot` when there are `shards` shards: contiguous ranges.
#[inline]
pub fn shard_of_slot(slot: u16, shards: usize) -> usize {
    (slot as usize * shards) / SLOTS as usize
}

/// The shard that owns `key` when there are `shards` shards.
#[inline]
pub fn owner(key: &[u8], shards: usize) -> usize {
    // One shard owns every slot: no CRC16 of the key (routing asked for
    // it once per command, and the key's meta record computes it again).
    if shards == 1 {
        return 0;
    }
    shard_of_slot(slot_of(key), shards)
}

/// The first slot shard `i` of `shards` owns; `first_slot_of(shards, shards)` is `SLOTS`.
pub fn first_slot_of(i: usize, shards: usize) -> u16 {
    (i * SLOTS as usize).div_ceil(shards) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster() {
        // Values from CLUSTER KEYSLOT on a real Redis.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!((owner(b"foo", 1), owner(b"foo", 2), owner(b"bar", 2)), (0, 1, 0));
        assert_eq!(slot_of(b"bar"), 5061);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(slot_of(b"foo{{bar}}zap"), crc16(b"{bar") & 16383);
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn a_hint_answers_for_its_own_key_only_while_it_lives() {
        let key = b"somekey".to_vec();
        let copy = key.clone();
        let real = slot_of(&key);
        {
            // A wrong slot on purpose, to see where answers come from.
            let _outer = Hint::set(&key, real ^ 1);
            assert_eq!(key_slot(&key), real ^ 1);
            // The same bytes elsewhere, or a part of them, are hashed.
            assert_eq!(key_slot(&copy), real);
            assert_eq!(key_slot(&key[..3]), slot_of(b"som"));
            {
                let other = b"other".to_vec();
                let _inner = Hint::set(&other, 7);
                assert_eq!(key_slot(&other), 7);
                assert_eq!(key_slot(&key), real);
            }
            assert_eq!(key_slot(&key), real ^ 1);
        }
        assert_eq!(key_slot(&key), real);
    }

    #[test]
    fn table_crc16_agrees_with_the_bitwise_definition() {
        fn bitwise(data: &[u8]) -> u16 {
            let mut crc: u16 = 0;
            for &b in data {
                crc ^= (b as u16) << 8;
                for _ in 0..8 {
                    crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
                }
            }
            crc
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 0..200usize {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            assert_eq!(crc16(&data), bitwise(&data), "{data:?}");
        }
    }

    #[test]
    fn slot_ranges_are_contiguous_and_cover_all() {
        for shards in 1..=7 {
            let mut last = 0;
            for slot in 0..SLOTS {
                let s = shard_of_slot(slot, shards);
                assert!(s == last || s == last + 1);
                if s != last {
                    assert_eq!(first_slot_of(s, shards), slot);
                }
                last = s;
            }
            assert_eq!(last, shards - 1);
        }
    }
}
