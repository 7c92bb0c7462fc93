#!/usr/bin/env bash
# N keys SET PX ttl (loaded first); from the moment the first is due: time until DBSIZE==0, PING latency meanwhile.
# EXTRA, NICE, NICEPAT as in 2026-11-25-sustained-set.sh.
BIN=$1; SH=$2; N=$3; CORES=${4:-0}; TTL=${5:-20000}; PORT=16452
d=$(mktemp -d -p /var/tmp)
if [ "$BIN" = redis ]; then exec_cmd="taskset -c $CORES redis-server --port $PORT --save \"\" --appendonly no"; fi
if [ "$BIN" = redis ]; then taskset -c $CORES redis-server --port $PORT --save "" --appendonly no >/dev/null 2>&1 & P=$!
else taskset -c $CORES "$BIN" --port $PORT --dir "$d" --shards $SH --loglevel warning $EXTRA >/dev/null 2>&1 & P=$!; fi
for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
if [ -n "$NICE" ]; then for t in /proc/$P/task/*; do case "$(cat $t/comm)" in ${NICEPAT:-rocksdb:*}) renice -n $NICE -p $(basename $t) >/dev/null;; esac; done; fi
tl=$(date +%s.%N)
at=$(python3 -c "import time; print(int(time.time()*1000) + $TTL)")
python3 - "$N" "$at" <<'PY' | taskset -c 1 redis-cli -p $PORT --pipe >/dev/null
import sys
n=int(sys.argv[1]); at=sys.argv[2]; w=sys.stdout.write
for i in range(n):
    k=f"ttl:{i}"
    w(f"*5\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$1\r\nv\r\n$4\r\nPXAT\r\n${len(at)}\r\n{at}\r\n")
PY
t1=$(date +%s.%N); echo "loaded $(redis-cli -p $PORT dbsize) in $(echo "$t1 - $tl" | bc) s"
due=$(echo "$tl + $TTL/1000" | bc)
sleep $(echo "$due - $(date +%s.%N) - 0.5" | bc)
taskset -c 1 /usr/bin/python3 - $PORT <<'PY' &
import socket, time, sys
s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); lat=[]
end=time.time()+14
while time.time()<end:
    t=time.perf_counter(); s.sendall(b"PING\r\n"); s.recv(64); lat.append((time.perf_counter()-t)*1000); time.sleep(0.002)
lat.sort(); print(f"PING n={len(lat)} p50={lat[len(lat)//2]:.3f}ms p99={lat[int(len(lat)*0.99)]:.3f}ms max={lat[-1]:.3f}ms")
PY
L=$!
for _ in $(seq 150); do n=$(redis-cli -p $PORT dbsize); [ "$n" = "0" ] && break; sleep 0.1; done
echo "DBSIZE $n at $(echo "$(date +%s.%N) - $due" | bc) s after all $N were due together"
wait $L; kill $P; wait $P 2>/dev/null; rm -rf "$d"
