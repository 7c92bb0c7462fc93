#!/bin/bash
# Sustained SET -P16 against a 1-shard Basalt on core 0 (client on core 1):
# ops/s and RocksDB stall indicators every 10 s.
# EXTRA: more server flags (e.g. "--background-priority normal"); NICE, NICEPAT:
# renice the RocksDB threads matching NICEPAT (default rocksdb:*) to NICE after start.
# Usage: [EXTRA=..] [NICE=19 NICEPAT="rocksdb:high*"] sustained-set.sh [requests]
BIN=$HOME/.cache/basalt-target/release/basalt
PORT=7790; DIR=/tmp/sustain; rm -rf $DIR; mkdir -p $DIR
taskset -c 0 $BIN --port $PORT --dir $DIR --shards 1 $EXTRA > $DIR/log 2>&1 &
SPID=$!
sleep 1
if [ -n "$NICE" ]; then for t in /proc/$SPID/task/*; do case "$(cat $t/comm)" in ${NICEPAT:-rocksdb:*}) renice -n $NICE -p $(basename $t) >/dev/null;; esac; done; fi
redis-cli -p $PORT config set latency-monitor-threshold 1 >/dev/null
N=${1:-15000000}
taskset -c 1 redis-benchmark -p $PORT -t set -P 16 -c 50 -r 100000000 -d 100 -n $N -q > $DIR/bench.out 2>&1 &
BPID=$!
t=0
while kill -0 $BPID 2>/dev/null; do
  sleep 10; t=$((t+10))
  redis-cli -p $PORT info all | tr -d '\r' | awk -F: -v t=$t '/^instantaneous_ops_per_sec|^rocksdb_delayed_write_rate|^rocksdb_write_stopped|^rocksdb_pending_compaction_bytes|^rocksdb_live_sst_bytes|^rocksdb_memtables:|^used_memory_rss:/{printf "%s=%s ", $1, $2} END{print " t=" t}'
done
cat $DIR/bench.out | tr '\r' '\n' | tail -2
redis-cli -p $PORT latency latest
redis-cli -p $PORT latency history write-stall | head -20
kill $SPID; wait $SPID 2>/dev/null
