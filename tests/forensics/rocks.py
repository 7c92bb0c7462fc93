#!/usr/bin/env python3
"""Reads what a Basalt data directory holds on disk, for a crash test's
failure: the write tier's log segments, RocksDB's WAL files and SST files.
Each prints the records whose key contains a hex pattern.

  rocks.py tierlog <db dir>/tier-log/shard-<i> <hex>
  rocks.py wal <db dir> <hex>          (its *.log files)
  rocks.py sst <file.sst> [<hex>]

SST files: block-based table format 7 (RocksDB 11), partitioned index,
LZ4 or ZSTD blocks (pip install lz4 zstandard). Checksums are not checked.
"""
import glob, os, struct, sys

TYPES = {0: "DEL0", 1: "PUT0", 4: "DEL", 5: "PUT", 8: "SDEL", 0xE: "RANGEDEL", 0xF: "RANGEDEL0", 7: "SDEL0"}


def varint(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def batch_ops(rep):
    """(tag, cf, key, value) of a WriteBatch representation."""
    i = 12
    while i < len(rep):
        t = rep[i]
        i += 1
        cf = 0
        if t in (4, 5, 8, 0xE):
            cf, i = varint(rep, i)
        kl, i = varint(rep, i)
        k = rep[i : i + kl]
        i += kl
        v = None
        if t in (1, 5, 0xE, 0xF):
            vl, i = varint(rep, i)
            v = rep[i : i + vl]
            i += vl
        yield t, cf, k, v


def tier_records(path):
    """(pos, kind, body) of a tier log segment: len u32 | crc u32 | kind u8 | pos u64 | body."""
    buf = open(path, "rb").read()
    i = 0
    while len(buf) - i >= 17:
        ln, _crc = struct.unpack_from("<II", buf, i)
        kind = buf[i + 8]
        pos = struct.unpack_from("<Q", buf, i + 9)[0]
        end = i + 17 + ln
        if end > len(buf):
            break
        yield pos, kind, buf[i + 17 : end]
        i = end


def wal_batches(path):
    """The WriteBatch representations in a RocksDB WAL file (32 KiB blocks of fragments)."""
    b = open(path, "rb").read()
    i, frag = 0, b""
    while i + 7 <= len(b):
        left = 32768 - (i % 32768)
        if left < 7:
            i += left
            continue
        _crc, ln, t = struct.unpack_from("<IHB", b, i)
        if t == 0 and ln == 0:
            i += left
            continue
        hdr = 11 if t >= 5 else 7
        data = b[i + hdr : i + hdr + ln]
        i += hdr + ln
        if t in (1, 5):
            yield data
        elif t in (2, 6):
            frag = data
        elif t in (3, 7):
            frag += data
        elif t in (4, 8):
            yield frag + data
            frag = b""


def block(f, off, size):
    raw, ctype = f[off : off + size], f[off + size]
    if ctype == 0:
        return raw
    n, i = varint(raw, 0)
    if ctype == 4:
        import lz4.block

        return lz4.block.decompress(raw[i:], uncompressed_size=n)
    if ctype == 7:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(raw[i:], max_output_size=n)
    raise ValueError("compression type %d" % ctype)


def entries(b):
    nr = struct.unpack_from("<I", b, len(b) - 4)[0] & 0x7FFFFFFF
    end, i, key = len(b) - 4 - 4 * nr, 0, b""
    while i < end:
        sh, i = varint(b, i)
        ns, i = varint(b, i)
        vl, i = varint(b, i)
        key = key[:sh] + b[i : i + ns]
        i += ns
        yield key, b[i : i + vl]
        i += vl


def handles(b):
    """Block handles of an index block (values delta-encoded, restart interval 1)."""
    nr = struct.unpack_from("<I", b, len(b) - 4)[0] & 0x7FFFFFFF
    end, i, out = len(b) - 4 - 4 * nr, 0, []
    while i < end:
        _sh, i = varint(b, i)
        ns, i = varint(b, i)
        i += ns
        o, i = varint(b, i)
        s, i = varint(b, i)
        out.append((o, s))
    return out


def sst_records(path):
    """(user key, seq, type, value) of an SST file."""
    f = open(path, "rb").read()
    msize = struct.unpack_from("<I", f, len(f) - 53 + 13)[0]
    meta = dict(entries(block(f, len(f) - 53 - msize - 5, msize)))
    o, i = varint(meta[b"rocksdb.index"], 0)
    s, _ = varint(meta[b"rocksdb.index"], i)
    for po, ps in handles(block(f, o, s)):
        for do, ds in handles(block(f, po, ps)):
            for k, v in entries(block(f, do, ds)):
                tail = struct.unpack("<Q", k[-8:])[0]
                yield k[:-8], tail >> 8, tail & 0xFF, v


def main():
    what, where = sys.argv[1], sys.argv[2]
    pat = bytes.fromhex(sys.argv[3]) if len(sys.argv) > 3 else b""
    if what == "tierlog":
        for seg in sorted(glob.glob(where + "/*.log")):
            for pos, kind, body in tier_records(seg):
                for t, cf, k, v in batch_ops(body):
                    if pat in k:
                        print(os.path.basename(seg), "pos", pos, TYPES.get(t, t), "cf", cf, k.hex(), v.hex() if v is not None else "")
    elif what == "wal":
        for f in sorted(glob.glob(where + "/*.log")):
            for wb in wal_batches(f):
                seq = struct.unpack_from("<Q", wb, 0)[0]
                for t, cf, k, v in batch_ops(wb):
                    if pat in k or (v is not None and pat and pat in v):
                        print(os.path.basename(f), "seq", seq, TYPES.get(t, t), "cf", cf, k.hex(), (v or b"").hex()[:80])
    elif what == "sst":
        for k, seq, t, v in sst_records(where):
            if pat in k:
                print("seq", seq, {1: "PUT", 0: "DEL", 15: "RANGEDEL"}.get(t, t), k.hex(), v.hex()[:80])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
