#!/bin/bash
# 1M DELs of small hashes (one range tombstone each over its members): HGET
# on 1M other small hashes before, after the DELs, and after COMPACT.
# Basalt 1 shard on core 0, clients on core 1.
BIN=$HOME/.cache/basalt-target/release/basalt
d=$(mktemp -d); PORT=16440
taskset -c 0 $BIN --port $PORT --dir $d --shards 1 --loglevel warning >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
gen() { awk -v p="$1" -v c="$2" 'BEGIN { for (i = 0; i < 1000000; i++) { k = p i; if (c == "HSET") printf "*4\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n$1\r\nf\r\n$5\r\nvalue\r\n", length(k), k; else printf "*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", length(k), k } }'; }
gen h: HSET | taskset -c 1 redis-cli -p $PORT --pipe | tail -1
gen k: HSET | taskset -c 1 redis-cli -p $PORT --pipe | tail -1
redis-cli -p $PORT compact >/dev/null
bench() {
  for P in 1 16; do
  taskset -c 1 redis-benchmark -p $PORT -c 50 -P $P -n 1000000 -r 1000000 HGET k:__rand_int__ f 2>/dev/null | tr '\r' '\n' | awk -v l="$1 P$P" '/throughput summary/ {t=$3} /avg +min +p50/ {h=1; next} h==1 {print l, "ops", t, "p50", $3, "p99", $5, "max", $6; exit}'
  done
  taskset -c 1 redis-benchmark -p $PORT -c 50 -P 1 -n 200000 -r 1000000 HGETALL k:__rand_int__ 2>/dev/null | tr '\r' '\n' | awk -v l="$1 HGETALL" '/throughput summary/ {t=$3} /avg +min +p50/ {h=1; next} h==1 {print l, "ops", t, "p50", $3, "p99", $5, "max", $6; exit}'
}
bench before
c0=$(redis-cli -p $PORT info persistence | tr -d '\r' | grep compaction_written | cut -d: -f2)
s=$(date +%s.%N)
gen h: DEL | taskset -c 1 redis-cli -p $PORT --pipe | tail -1
e=$(date +%s.%N)
echo "1M DEL: $(awk -v s=$s -v e=$e 'BEGIN{print e-s}') s"
bench after-del
c1=$(redis-cli -p $PORT info persistence | tr -d '\r' | grep compaction_written | cut -d: -f2)
sleep 20
bench after-20s
c2=$(redis-cli -p $PORT info persistence | tr -d '\r' | grep -E "compaction_written|live_sst" | tr '\n' ' ')
s=$(date +%s.%N); redis-cli -p $PORT compact >/dev/null; e=$(date +%s.%N)
echo "COMPACT: $(awk -v s=$s -v e=$e 'BEGIN{print e-s}') s"
bench after-compact
echo "compaction bytes: before DEL $c0, after DEL $c1, 20s later $c2; after COMPACT $(redis-cli -p $PORT info persistence | tr -d '\r' | grep -E "compaction_written|live_sst" | tr '\n' ' ')"
kill $pid; wait $pid 2>/dev/null; rm -rf $d
