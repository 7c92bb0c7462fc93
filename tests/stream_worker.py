"""A consumer-group worker as an application writes one with redis-py:
XAUTOCLAIM what a previous run left pending, XREADGROUP new entries,
"process" them (append their IDs to a file, flushed), XACK them. It rides
out the server going away (kill -9 and a restart by tests/stream_worker.rs)
by reconnecting, and stops once the group has nothing left: no lag, nothing
pending. Usage: stream_worker.py PORT STREAM OUTFILE."""

import sys
import time

import redis

port, stream, outfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
GROUP, ME = "workers", "w1"
r = redis.Redis(port=port, decode_responses=True, socket_timeout=5)
out = open(outfile, "a")


def process(entries):
    ids = []
    for eid, fields in entries:
        if fields is None:
            continue
        out.write(f"{eid} {fields.get('n')}\n")
        ids.append(eid)
    out.flush()
    if ids:
        r.xack(stream, GROUP, *ids)


deadline = time.time() + 240
while time.time() < deadline:
    try:
        # Whatever was delivered but not acknowledged (the server died
        # between XREADGROUP and XACK) comes back through XAUTOCLAIM.
        start = "0-0"
        while True:
            start, claimed, _deleted = r.xautoclaim(stream, GROUP, ME, 0, start, count=100)
            process(claimed)
            if start == "0-0":
                break
        got = r.xreadgroup(GROUP, ME, {stream: ">"}, count=100, block=100)
        for _key, entries in got:
            process(entries)
        if not got:
            info = r.xinfo_groups(stream)[0]
            if info["pending"] == 0 and info["lag"] == 0:
                print("ok")
                sys.exit(0)
    except (redis.ConnectionError, redis.TimeoutError, ConnectionResetError):
        time.sleep(0.05)
print("gave up")
sys.exit(1)
