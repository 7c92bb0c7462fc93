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
