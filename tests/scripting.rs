//! Scripting (issue 33) against redis-server: EVAL and its forms, SCRIPT,
//! the Lua environment (the `redis` table, conversions both ways, errors
//! with their script and line, read-only globals, `math.random`), shebang
//! flags and the read-only forms, on 1 and 4 shards and in RESP3. Every
//! reply must be byte-for-byte redis-server's.
//!
//! The format is `common::run_script`'s; inside an argument, `\n` stands
//! for a newline (a shebang line ends with one). On 4 shards every key a
//! script touches carries the hash tag `{k}`, so that all of them are on
//! the shard of its KEYS.

mod common;

use common::run_lua_script as run;

/// The language itself: conversions, errors, globals.
const LUA: &str = r##"
EVAL "return 1" 0
EVAL "return 'hello'" 0
EVAL "return 100.5" 0
EVAL "return -3.7" 0
EVAL "return 1e20" 0
EVAL "return 0/0" 0
EVAL "return true" 0
EVAL "return false" 0
EVAL "return nil" 0
EVAL "return {}" 0
EVAL "return {1,2,3,'ciao',{1,2}}" 0
EVAL "return {1,2,nil,4}" 0
EVAL "return {1,true,false,3.7}" 0
EVAL "return {foo='bar'}" 0
EVAL "return {err='My Error'}" 0
EVAL "return {err='-bar'}" 0
EVAL "return {ok='fine'}" 0
EVAL "return {ok='a\nb'}" 0
EVAL "return {err='a\nb'}" 0
EVAL "return {1,{err='x'},{ok='y'}}" 0
EVAL "return {double=3.5}" 0
EVAL "return {map={a=1}}" 0
EVAL "return {set={a=true}}" 0
EVAL "return {big_number='123'}" 0
EVAL "return {verbatim_string={format='txt',string='hi'}}" 0
EVAL "return redis.error_reply('FOO bar')" 0
EVAL "return redis.error_reply('bar')" 0
EVAL "return redis.error_reply('-bar')" 0
EVAL "return redis.error_reply()" 0
EVAL "return redis.error_reply(1)" 0
EVAL "return redis.status_reply('bar')" 0
EVAL "return redis.status_reply()" 0
EVAL "return redis.sha1hex('')" 0
EVAL "return redis.sha1hex('Pizza & Mandolino')" 0
EVAL "return redis.sha1hex(12)" 0
EVAL "return redis.sha1hex()" 0
EVAL "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}" 2 {k}a {k}b c d
EVAL "return #ARGV" 0 a b c
EVAL "error('boom')" 0
EVAL "error(nil)" 0
EVAL "error(12)" 0
EVAL "error({err='MYERR boo'})" 0
EVAL "\n\nerror('third line')" 0
EVAL "local ok, e = pcall(function() error('xx') end); return {tostring(ok), e}" 0
EVAL "return pcall(function() error({err='x'}) end)" 0
EVAL "return {pcall(function() return 1, 2 end)}" 0
EVAL "a=5" 0
EVAL "return a" 0
EVAL "redis = nil" 0
EVAL "string.foo = 1" 0
EVAL "setmetatable(_G, {})" 0
EVAL "rawset(_G, 'x', 1)" 0
EVAL "_G.x = 1" 0
EVAL "return print" 0
EVAL "return dofile" 0
EVAL "return loadstring('return 5')()" 0
EVAL "local f = loadstring('y = 1'); f()" 0
EVAL "local t = {}; t.x = 1; return t.x" 0
EVAL "local function f(n) if n < 2 then return n end return f(n-1) + f(n-2) end return f(20)" 0
EVAL "return string.format('%d-%s', 5, 'x')" 0
EVAL "return table.concat({'a','b'}, ',')" 0
EVAL "return math.floor(3.7)" 0
EVAL "return tostring(1/3)" 0
EVAL "return type(unpack)" 0
EVAL "return coroutine.wrap(function() coroutine.yield(7) end)()" 0
EVAL "return redis.REDIS_VERSION_NUM > 0" 0
EVAL "return 'hello' --trailing comment" 0
EVAL "syntax error here" 0
EVAL "return 1 +" 0
EVAL "return 1" -1
EVAL "return 1" 2 a
EVAL "return 1" abc
EVAL "return 1"
EVALSHA ffffffffffffffffffffffffffffffffffffffff 0
EVALSHA NotValidShaSUM 0
EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
EVALSHA E0E1F9FABFC9D4800C877A703B823AC0578FF8DB 0
EVAL "return redis.log(redis.LOG_WARNING, 'from a script')" 0
EVAL "return redis.log(redis.LOG_DEBUG, 'quiet', 1, {}, 'x')" 0
EVAL "return redis.log(7, 'hi')" 0
EVAL "return redis.log('x', 'hi')" 0
EVAL "return redis.log(1)" 0
EVAL "return redis.set_repl(redis.REPL_ALL)" 0
EVAL "return redis.set_repl(99)" 0
EVAL "return redis.set_repl()" 0
EVAL "return redis.replicate_commands()" 0
EVAL "return redis.breakpoint()" 0
EVAL "return redis.debug('x')" 0
EVAL "return redis.setresp(4)" 0
EVAL "return redis.setresp()" 0
EVAL "return redis.acl_check_cmd('get','x')" 0
EVAL "return redis.acl_check_cmd('nosuch')" 0
EVAL "return redis.acl_check_cmd()" 0
EVAL "return tostring(math.random())" 0
EVAL "return tostring(math.random())" 0
EVAL "return {math.random(10), math.random(5,100)}" 0
EVAL "math.randomseed(42); return tostring(math.random())" 0
EVAL "return math.random(0)" 0
EVAL "return math.random(5, 1)" 0
EVAL "return math.random(1, 2, 3)" 0
EVAL "return math.random('x')" 0
EVAL "return pcall(math.random, 0)" 0
EVAL "return {bit.tobit(1), bit.band(1), bit.bxor(1,2), bit.bor(1,2,4,8,16,32,64,128), bit.tobit(4294967295)}" 0
EVAL "return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.bswap(0x12345678), bit.bnot(0)}" 0
EVAL "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(65535, 2), bit.tohex(1.5)}" 0
EVAL "return bit.band()" 0
EVAL "return bit.bor(1, 'x')" 0
EVAL "return cjson.encode({1,2,3,'a',true,false})" 0
EVAL "return cjson.encode({a=1,b={c=2}})" 0
EVAL "return cjson.encode({})" 0
EVAL "return cjson.encode({[1]=1,[3]=3})" 0
EVAL "return cjson.encode({[1]=1,[20]=3})" 0
EVAL "return cjson.encode({[1]=1,a=2})" 0
EVAL "return cjson.encode({[10]=1})" 0
EVAL "return cjson.encode({[11]=1})" 0
EVAL "return cjson.encode({[0]=1})" 0
EVAL "return cjson.encode({[1.5]=1})" 0
EVAL "return cjson.encode({0.1, 1e20, 123456789012345678, -0.5, 100})" 0
EVAL "return cjson.encode(1/0)" 0
EVAL "return cjson.encode('a/b' .. string.char(0, 1, 31, 127, 200, 92, 34, 8, 9, 10, 12, 13))" 0
EVAL "return cjson.encode(cjson.null)" 0
EVAL "return cjson.encode(nil)" 0
EVAL "return cjson.encode()" 0
EVAL "return cjson.encode(1, 2)" 0
EVAL "return cjson.encode({[true]=1})" 0
EVAL "return cjson.encode(function() end)" 0
EVAL "local t = {} t[1] = t return cjson.encode(t)" 0
EVAL "return cjson.decode('[1,2,3]')[2]" 0
EVAL "return type(cjson.decode('null'))" 0
EVAL "return cjson.decode('null') == cjson.null" 0
EVAL "local j = string.gsub('{~a~:[1,{~b~:null}],~c~:~x\\u00e9y~}', '~', string.char(34)); local t = cjson.decode(j); return {t.a[2].b == cjson.null, t.c}" 0
EVAL "local j = string.gsub('{~a~:1,~b~:[true,false,null,1.5,-2e3]}', '~', string.char(34)); return cjson.encode(cjson.decode(j))" 0
EVAL "return cjson.decode('')" 0
EVAL "return cjson.decode('[1,2')" 0
EVAL "return cjson.decode('{1:2}')" 0
EVAL "return cjson.decode('[1 2]')" 0
EVAL "return cjson.decode('tru')" 0
EVAL "return cjson.decode('[1,]')" 0
EVAL "return cjson.decode('1 2')" 0
EVAL "return cjson.decode()" 0
EVAL "return cjson.decode(12)" 0
EVAL "return {tostring(cjson.decode('1e400')), tostring(cjson.decode('0x10')), tostring(cjson.decode('-0.5e-3')), tostring(cjson.decode(' 7 '))}" 0
EVAL "return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))" 0
EVAL "return {cjson.encode_sparse_array()}" 0
EVAL "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}" 0
EVAL "return cjson._NAME .. cjson._VERSION" 0
EVAL "cjson.encode = nil" 0
EVAL "local h = '' for _, b in ipairs({cmsgpack.pack(0.1), cmsgpack.pack(-1099511627776), cmsgpack.pack({1,2,'a'}, true, nil, 1.5, -33, 200, 70000, 5000000000, -129, -40000, -3000000000)}) do for i = 1, #b do h = h .. string.format('%02x', string.byte(b, i)) end h = h .. '|' end return h" 0
EVAL "local h = '' local b = cmsgpack.pack(string.rep('x', 40), string.rep('y', 300), {a=1}) for i = 1, 12 do h = h .. string.format('%02x', string.byte(b, i)) end return {h, #b}" 0
EVAL "local a = {x=nil,y=5} local b = {x=a} a['x'] = b local e = cmsgpack.pack(a) local h = '' for i = 1, #e do h = h .. string.format('%02x', string.byte(e, i)) end return h" 0
EVAL "local t = cmsgpack.unpack(cmsgpack.pack({a={1,2},b=-3,c='s',d=true})) return {t.a[2], t.b, t.c, t.d}" 0
EVAL "return {cmsgpack.unpack(cmsgpack.pack(1, 'two', 3.5, false))}" 0
EVAL "return {cmsgpack.unpack_one(cmsgpack.pack(7, 8, 9))}" 0
EVAL "return {cmsgpack.unpack_one(cmsgpack.pack(7, 8, 9), 1)}" 0
EVAL "return {cmsgpack.unpack_limit(cmsgpack.pack(7, 8, 9), 2)}" 0
EVAL "return {cmsgpack.unpack_one(cmsgpack.pack(7))}" 0
EVAL "return cmsgpack.pack()" 0
EVAL "return cmsgpack.unpack(string.char(0x92, 1))" 0
EVAL "return cmsgpack.unpack(string.char(0xc1))" 0
EVAL "return {cmsgpack.unpack('')}" 0
EVAL "local h = '' for _, b in ipairs({struct.pack('>I2', 258), struct.pack('<i4', -2), struct.pack('bBs', -1, 255, 'ab'), struct.pack('!4 b i', 1, 2), struct.pack('>d', 1.5), struct.pack('<f', -2.25), struct.pack('c3', 'abcdef'), struct.pack('c0', 'xy'), struct.pack('>l', -3)}) do for i = 1, #b do h = h .. string.format('%02x', string.byte(b, i)) end h = h .. '|' end return h" 0
EVAL "return {struct.unpack('>h i c3', struct.pack('>h i c3', -5, 70000, 'xyz'))}" 0
EVAL "return {struct.unpack('<H', string.char(1, 2, 3), 2)}" 0
EVAL "return {struct.unpack('b c0', string.char(2) .. 'hey')}" 0
EVAL "return {struct.unpack('s', 'ab' .. string.char(0) .. 'c')}" 0
EVAL "return {struct.size('>!4 b i d'), struct.size('i8 c5')}" 0
EVAL "return struct.unpack('i4', 'ab')" 0
EVAL "return struct.pack('y', 1)" 0
EVAL "return struct.pack('i', 'x')" 0
"##;

/// Commands from scripts.
const CALLS: &str = r##"
SET {k}x 5
EVAL "return redis.call('get',KEYS[1])" 1 {k}x
EVAL "return redis.call('GET',KEYS[1])" 1 {k}x
EVAL "return redis.call('incr',KEYS[1])" 1 {k}x
EVAL "local v = redis.pcall('incr',KEYS[1]); return {type(v), v}" 1 {k}x
EVAL "return redis.call('get',KEYS[1])" 1 {k}nokey
EVAL "return type(redis.call('get',KEYS[1]))" 1 {k}nokey
EVAL "return redis.call('set',KEYS[1],'v')" 1 {k}y
EVAL "local r = redis.call('set',KEYS[1],'v'); return r['ok']" 1 {k}y
EVAL "return redis.call('set',KEYS[1],1.5)" 1 {k}y
EVAL "return redis.call('get',KEYS[1])" 1 {k}y
EVAL "return redis.call('set',KEYS[1],10)" 1 {k}y
EVAL "return redis.call('set',KEYS[1],0.1)" 1 {k}y
EVAL "return redis.call('get',KEYS[1])" 1 {k}y
EVAL "return redis.call('set',KEYS[1],123456789012345678)" 1 {k}y
EVAL "return redis.call('get',KEYS[1])" 1 {k}y
EVAL "return redis.call('incr',KEYS[1])" 1 {k}y
EVAL "return redis.pcall('incr',KEYS[1])" 1 {k}y
EVAL "return {redis.pcall('incr',KEYS[1])}" 1 {k}y
EVAL "local t = redis.pcall('incr',KEYS[1]); return t['err']" 1 {k}y
EVAL "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {tostring(ok), e}" 1 {k}y
EVAL "return redis.call('lpush',KEYS[1],'val')" 1 {k}y
EVAL "return redis.call('nosuch')" 0
EVAL "return redis.pcall('nosuch')" 0
EVAL "return redis.call('get')" 0
EVAL "return redis.call()" 0
EVAL "return redis.call('get', {})" 1 {k}x
EVAL "return redis.call('get', nil)" 1 {k}x
EVAL "return redis.call('blpop', KEYS[1], 0)" 1 {k}l
EVAL "return redis.pcall('brpop', KEYS[1], 0)" 1 {k}l
EVAL "return redis.call('blmove', KEYS[1], KEYS[2], 'LEFT', 'LEFT', 0)" 2 {k}l {k}m
EVAL "return redis.call('multi')" 0
EVAL "return redis.call('exec')" 0
EVAL "return redis.call('watch', KEYS[1])" 1 {k}x
EVAL "return redis.call('eval', 'return 1', 0)" 0
EVAL "return redis.call('subscribe', 'c')" 0
EVAL "return redis.call('client', 'list')" 0
EVAL "return redis.call('script', 'load', 'return 1')" 0
EVAL "return redis.call('debug', 'sleep', 0)" 0
EVAL "return redis.call('save')" 0
EVAL "return redis.call('shutdown')" 0
EVAL "return redis.call('ping')" 0
EVAL "return redis.call('echo', 'x')" 0
RPUSH {k}l a b c
EVAL "local foo = redis.pcall('lrange',KEYS[1],0,-1); return {type(foo),foo[1],foo[2],foo[3],# foo}" 1 {k}l
HSET {k}h f1 v1 f2 v2
EVAL "return redis.call('hgetall',KEYS[1])" 1 {k}h
EVAL "return redis.call('hget',KEYS[1],'f1')" 1 {k}h
EVAL "return redis.call('hset',KEYS[1],'f3','v3')" 1 {k}h
SADD {k}s m1
EVAL "return redis.call('smembers',KEYS[1])" 1 {k}s
ZADD {k}z 1.5 a 2 b
EVAL "return redis.call('zrange',KEYS[1],0,-1,'withscores')" 1 {k}z
EVAL "return redis.call('zscore',KEYS[1],'a')" 1 {k}z
EVAL "return redis.call('zincrby',KEYS[1],1,'a')" 1 {k}z
EVAL "return redis.call('del',KEYS[1],KEYS[2])" 2 {k}s {k}nokey
EVAL "return redis.call('exists',KEYS[1],KEYS[2])" 2 {k}h {k}s
EVAL "return redis.call('mset',KEYS[1],'1',KEYS[2],'2')" 2 {k}m1 {k}m2
EVAL "return redis.call('mget',KEYS[1],KEYS[2],KEYS[3])" 3 {k}m1 {k}m2 {k}m3
EVAL "return redis.call('type',KEYS[1])" 1 {k}h
EVAL "return redis.call('ttl',KEYS[1])" 1 {k}h
EVAL "redis.call('set',KEYS[1],'a'); redis.call('expire',KEYS[1],100); return redis.call('ttl',KEYS[1])" 1 {k}e
EVAL "redis.call('set',KEYS[1],'1'); redis.call('incr',KEYS[1]); error('after writes')" 1 {k}w
GET {k}w
EVAL "redis.call('set',KEYS[1],'1'); return redis.call('nosuch')" 1 {k}w2
GET {k}w2
EVAL "local t = {}; for i = 1, 100 do t[i] = redis.call('incr', KEYS[1]) end; return t[100]" 1 {k}n
EVAL "redis.call('select', 1); redis.call('set', KEYS[1], 'in1'); return redis.call('get', KEYS[1])" 1 {k}sel
GET {k}sel
SELECT 1
GET {k}sel
SELECT 0
EVAL "return redis.call('select', 100)" 0
EVAL "return redis.call('select', 'x')" 0
SCRIPT LOAD "return redis.call('get', KEYS[1])"
EVALSHA 4e6d8fc8bb01276962cce5371fa795a7763657ae 1 {k}x
EVALSHA_RO 4e6d8fc8bb01276962cce5371fa795a7763657ae 1 {k}x
EVAL_RO "return redis.call('get', KEYS[1])" 1 {k}x
EVAL_RO "return redis.call('set', KEYS[1], '1')" 1 {k}x
EVAL_RO "return redis.pcall('set', KEYS[1], '1')" 1 {k}x
EVAL_RO "return redis.call('publish', 'c', 'm')" 0
EVAL_RO "return redis.call('del', KEYS[1])" 1 {k}x
GET {k}x
"##;

/// Shebangs and flags, SCRIPT.
const FLAGS: &str = r##"
SET {k}x 1
EVAL "#!lua\nreturn 1" 0
EVAL "#!lua\nreturn {1,2,3}\n" 0
EVAL "#!lua flags=no-writes\nreturn redis.call('set',KEYS[1],'1')" 1 {k}x
EVAL "#!lua flags=no-writes\nreturn redis.pcall('set',KEYS[1],'1')" 1 {k}x
EVAL "#!lua flags=no-writes,allow-oom\nreturn redis.call('get',KEYS[1])" 1 {k}x
EVAL "#!lua flags=no-writes\nreturn redis.call('publish','c','m')" 0
EVAL "#!lua flags=bad\nreturn 1" 0
EVAL "#!lua x=y\nreturn 1" 0
EVAL "#!js\nreturn 1" 0
EVAL "#!lua" 0
EVAL "#!lua name=foo\nreturn 1" 0
EVAL "#!lua flags=no-writes flags=allow-oom\nreturn 1" 0
EVAL "#!lua flags=\nreturn 1" 0
EVAL "#!lua flags=no-cluster\nreturn 1" 0
EVAL "#!lua flags=allow-stale,allow-cross-slot-keys\nreturn 1" 0
EVAL "#!lua  flags=no-writes  \nreturn 1" 0
EVAL "#!lua flags=no-writes,,allow-oom\nreturn 1" 0
EVAL "#!lua flags=no-writes\n" 0
EVAL "#!lua\nerror('x')" 0
EVAL "#!lua\nreturn redis.call('set',KEYS[1],'2')" 1 {k}x
EVAL "return 1\n#!lua" 0
EVAL "  #!lua\nreturn 1" 0
EVAL_RO "#!lua\nreturn redis.call('get',KEYS[1])" 1 {k}x
EVAL_RO "#!lua flags=no-writes\nreturn redis.call('get',KEYS[1])" 1 {k}x
EVALSHA_RO a 0
SCRIPT LOAD "return 'loaded'"
EVALSHA b534286061d4b9e4026607613b95c06c06015ae8 0
SCRIPT LOAD "return 1 +"
SCRIPT LOAD "#!lua flags=bad\nreturn 1"
SCRIPT LOAD "#!lua flags=no-writes\nreturn 1"
SCRIPT EXISTS b534286061d4b9e4026607613b95c06c06015ae8 x ffffffffffffffffffffffffffffffffffffffff
EVAL "return 1+1" 0
SCRIPT EXISTS a27e7e8a43702b7046d4f6a7ccf5b60cef6b9bd9 a27e7e8a43702b7046d4f6a7ccf5b60cef6b9bda
SCRIPT EXISTS
SCRIPT FLUSH foo
SCRIPT FLUSH SYNC extra
SCRIPT FLUSH
SCRIPT EXISTS b534286061d4b9e4026607613b95c06c06015ae8
EVALSHA b534286061d4b9e4026607613b95c06c06015ae8 0
SCRIPT LOAD "return 'loaded'"
SCRIPT FLUSH ASYNC
EVALSHA b534286061d4b9e4026607613b95c06c06015ae8 0
SCRIPT LOAD "return 'loaded'"
SCRIPT FLUSH sync
SCRIPT KILL
SCRIPT KILL x
SCRIPT LOAD
SCRIPT FOO
SCRIPT HELP
SCRIPT DEBUG NO
SCRIPT DEBUG maybe
"##;

/// Keys anywhere: declared on several shards, undeclared, and commands
/// that reach every shard (on 4 shards these run behind the gate).
const CROSS: &str = r##"
MSET a 1 b 2 c 3 d 4
EVAL "return redis.call('mget', KEYS[1], KEYS[2], KEYS[3], KEYS[4])" 4 a b c d
EVAL "return {redis.call('get','a'), redis.call('get','b'), redis.call('get','c')}" 0
EVAL "for i, k in ipairs(KEYS) do redis.call('incrby', k, 10) end; return redis.call('mget', unpack(KEYS))" 4 a b c d
EVAL "redis.call('set', 'new1', 'x'); redis.call('rpush', 'list1', 'a', 'b'); return redis.call('exists', 'new1', 'list1', 'nope')" 0
EVAL "local v = redis.call('get', KEYS[1]); redis.call('set', 'copy-of-a', v); return redis.call('get', 'copy-of-a')" 1 a
EVAL "return redis.call('dbsize')" 0
~EVAL "return redis.call('keys', '*')" 0
EVAL "return redis.call('ping')" 0
EVAL "return redis.call('ping', 'hi')" 0
EVAL "return redis.call('echo', 'x')" 0
EVAL "return #redis.call('time')" 0
EVAL "return redis.call('lmpop', 2, 'nol', 'list1', 'left')" 0
EVAL "return redis.call('blmpop', 0, 1, 'nol', 'left')" 0
EVAL "return redis.call('rename', 'a', 'renamed')" 0
EVAL "return {redis.call('get', 'a'), redis.call('get', 'renamed')}" 0
EVAL "redis.call('sadd', 's1', 'x', 'y'); redis.call('sadd', 's2', 'y', 'z'); return redis.call('sinter', 's1', 's2')" 0
EVAL "redis.call('set', 'w1', '1'); redis.call('set', 'w2', '2'); error('after two writes')" 0
MGET w1 w2
EVAL "redis.call('select', 2); redis.call('set', 'in2', 'x'); return redis.call('dbsize')" 0
SELECT 2
GET in2
SELECT 0
EVAL "return redis.call('flushall')" 0
DBSIZE
MULTI
SET m1 1
EVAL "return redis.call('incr', 'm1')" 0
EVAL "return redis.call('get', KEYS[1])" 1 m1
EXEC
MULTI
EVAL "return redis.call('incr', KEYS[1])" 1 {k}x
EVAL "return redis.call('incr', KEYS[1])" 1 b
EXEC
GET b
"##;

/// RESP3: conversions both ways, with and without `redis.setresp(3)`.
const RESP3: &str = r##"
HSET {k}h a 1
EVAL "return {1,true,false,3.7,-3.7}" 0
EVAL "return nil" 0
EVAL "return false" 0
EVAL "return {double=3.5}" 0
EVAL "return {map={a=1}}" 0
EVAL "return {set={a=true}}" 0
EVAL "return {big_number='123'}" 0
EVAL "return {verbatim_string={format='txt',string='hi'}}" 0
EVAL "return redis.call('hgetall',KEYS[1])" 1 {k}h
EVAL "redis.setresp(3); return redis.call('hgetall',KEYS[1])" 1 {k}h
EVAL "redis.setresp(3); local m = redis.call('hgetall',KEYS[1]); return m['map']['a']" 1 {k}h
EVAL "redis.setresp(3); return redis.call('get',KEYS[1])" 1 {k}nokey
EVAL "redis.setresp(3); return type(redis.call('get',KEYS[1]))" 1 {k}nokey
EVAL "redis.setresp(3); return {redis.call('get',KEYS[1]), 5}" 1 {k}nokey
EVAL "redis.setresp(3); return true" 0
EVAL "redis.setresp(3); return false" 0
EVAL "redis.setresp(3); return redis.call('exists',KEYS[1])" 1 {k}h
ZADD {k}z 1.5 a
EVAL "redis.setresp(3); return redis.call('zscore',KEYS[1],'a')" 1 {k}z
EVAL "redis.setresp(3); return redis.call('zscore',KEYS[1],'a')['double']" 1 {k}z
EVAL "redis.setresp(3); return redis.call('zrange',KEYS[1],0,-1,'withscores')" 1 {k}z
"##;

#[test]
fn scripts_reply_like_redis_one_shard() {
    for (name, script) in [("lua", LUA), ("calls", CALLS), ("flags", FLAGS), ("cross", CROSS)] {
        run(name, script, 1, false);
    }
}

#[test]
fn scripts_reply_like_redis_four_shards() {
    for (name, script) in [("lua", LUA), ("calls", CALLS), ("flags", FLAGS), ("cross", CROSS)] {
        run(name, script, 4, false);
    }
}

#[test]
fn scripts_reply_like_redis_in_resp3() {
    run("resp3", RESP3, 1, true);
    run("resp3", RESP3, 4, true);
    run("calls-resp3", CALLS, 4, true);
    run("cross-resp3", CROSS, 4, true);
}

/// Scripts and the rest of the server, against redis-server with several
/// connections: a script's write spoils another client's WATCH, its
/// commands' keyspace events reach subscribers, CLIENT KILL and blocked
/// clients are untouched.
const WITH_CLIENTS: &str = r##"
!A: CONFIG SET notify-keyspace-events KEA
A: SET {k}w 1
A: WATCH {k}w
B: EVAL "return redis.call('set', KEYS[1], '2')" 1 {k}w
A: MULTI
A: GET {k}w
A: EXEC
C: SUBSCRIBE __keyevent@0__:set __keyevent@0__:lpush
B: EVAL "redis.call('set', KEYS[1], 'v') return redis.call('lpush', KEYS[2], 'x')" 2 {k}ev {k}evl
C<
C<
D> BLPOP {k}bl 5
SLEEP 100
B: EVAL "return redis.call('lpush', KEYS[1], 'item')" 1 {k}bl
D<
B: EVAL "return redis.call('llen', KEYS[1])" 1 {k}bl
"##;

#[test]
fn scripts_and_other_clients_as_redis() {
    common::run_clients("with-clients", WITH_CLIENTS, 1, false);
    common::run_clients("with-clients", WITH_CLIENTS, 4, false);
    common::run_clients("with-clients-resp3", WITH_CLIENTS, 4, true);
}

/// INFO's script fields, commandstats for EVAL and FCALL (and the
/// commands they ran), and CLIENT LIST showing the EVAL.
#[test]
fn info_and_stats_count_scripts() {
    let b = common::Basalt::start(2);
    let mut c = b.raw();
    c.cmd(&["EVAL", "return redis.call('set', KEYS[1], '1')", "1", "a"]);
    c.cmd(&["EVAL", "return redis.call('ping')", "0"]);
    c.cmd(&["SCRIPT", "LOAD", "return 2"]);
    c.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=l\nredis.register_function('f', function() return 1 end)",
    ]);
    c.cmd(&["FCALL", "f", "0"]);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).to_string();
    for field in [
        "number_of_cached_scripts:3",
        "number_of_functions:1",
        "used_memory_lua:",
        "used_memory_scripts_eval:",
        "used_memory_vm_total:",
    ] {
        assert!(info.contains(field), "INFO memory lacks {field}:\n{info}");
    }
    let lua: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(lua > 10_000, "used_memory_lua {lua}");
    let stats = String::from_utf8_lossy(&c.cmd(&["INFO", "commandstats"])).to_string();
    for field in [
        "cmdstat_eval:calls=2",
        "cmdstat_fcall:calls=1",
        "cmdstat_set:calls=1",
        "cmdstat_ping:calls=",
    ] {
        assert!(stats.contains(field), "INFO commandstats lacks {field}:\n{stats}");
    }
    // The script's PING runs as this client's command (behind the gate),
    // yet CLIENT LIST shows the EVAL, as Redis.
    c.cmd(&["EVAL", "return redis.call('ping')", "0"]);
    let mut d = b.raw();
    let list = String::from_utf8_lossy(&d.cmd(&["CLIENT", "LIST"])).to_string();
    assert!(
        list.contains("cmd=eval "),
        "CLIENT LIST shows the script's command instead of EVAL:\n{list}"
    );
}
