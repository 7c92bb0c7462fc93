#!/bin/bash
# Sorted sets, redis-server vs Basalt (1 shard), each alone on core 0, redis-benchmark on core 1.
# One key "lb" of 1000 members (scores random), -c 50, random members over 1000.
BIN=$HOME/.cache/basalt-target/release/basalt
PORT=7795
run() { # name server-cmd
  local name=$1; shift
  rm -rf /tmp/zb; mkdir -p /tmp/zb
  taskset -c 0 "$@" > /tmp/zb/log 2>&1 &
  local P=$!
  for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
  taskset -c 1 redis-benchmark -p $PORT -c 50 -n 200000 -r 1000 -q ZADD lb __rand_int__ m:__rand_int__ >/dev/null
  for P16 in 1 16; do
    n=$((P16 == 1 ? 200000 : 1000000))
    for cmd in "ZADD lb __rand_int__ m:__rand_int__" "ZINCRBY lb 1 m:__rand_int__" "ZSCORE lb m:__rand_int__" "ZRANK lb m:__rand_int__" "ZRANGE lb 0 9 WITHSCORES" "ZRANGEBYSCORE lb 0 500 LIMIT 0 10"; do
      out=$(taskset -c 1 redis-benchmark -p $PORT -c 50 -n $n -r 1000 -P $P16 -q $cmd 2>/dev/null | tr '\r' '\n' | grep -E "requests per second" | tail -1)
      echo "$name P$P16 | ${cmd%% *} ${cmd#* } | $out"
    done
  done
  redis-cli -p $PORT shutdown nosave >/dev/null 2>&1; wait $P 2>/dev/null
}
run redis redis-server --port $PORT --save "" --appendonly no
run basalt $BIN --port $PORT --dir /tmp/zb --shards 1
