-- Basalt's Lua environment for scripts (src/script/mod.rs runs this once
-- per interpreter). Receives the Rust primitives and returns the runner.
local prim, G, dbg = ...
local pending, stopped = prim.pending, prim.stopped

local error, type, rawget, rawset, tostring = error, type, rawget, rawset, tostring
local setmetatable, getmetatable, xpcall, pcall = setmetatable, getmetatable, xpcall, pcall
local loadstring, setfenv, ipairs = loadstring, setfenv, ipairs
local redis = rawget(G, "redis")

-- Tables scripts may read but not change (Redis's read-only tables).
local readonly = setmetatable({}, { __mode = "k" })
local function refuse() error("Attempt to modify a readonly table", 2) end

local function protect(t)
  local p = {}
  readonly[p] = true
  setmetatable(p, { __index = t, __newindex = refuse, __metatable = false })
  return p
end

-- The globals: a read-only face over the real table, whose misses are
-- Redis's error.
local env = {}
readonly[env] = true
readonly[G] = true
setmetatable(G, {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
  __newindex = refuse,
  __metatable = false,
})
setmetatable(env, { __index = G, __newindex = refuse, __metatable = false })
rawset(G, "_G", env)

-- Errors become {err=, source=, line=}: the line of the first frame that is
-- the script's own (not a C function, not this file).
local function handler(err)
  local level, info = 2, nil
  while true do
    info = dbg.getinfo(level, "Sl")
    if not info or (info.what ~= "C" and info.what ~= "tail" and info.source ~= "=basalt") then break end
    level = level + 1
  end
  if type(err) == "userdata" then
    local text, is_table = pending()
    if text then
      err = { err = is_table and text or "ERR " .. text }
    else
      err = { err = "ERR " .. tostring(err) }
    end
  elseif type(err) ~= "table" then
    err = { err = "ERR " .. tostring(err) }
  end
  if info then
    rawset(err, "source", info.source)
    rawset(err, "line", info.currentline)
  end
  return err
end

-- pcall gives an error reply's text, as Redis's pcall does; a stopped
-- script (SCRIPT KILL, or a rerun elsewhere) cannot be caught.
local function caught(ok, ...)
  if ok then return ok, ... end
  if stopped() then error((...), 0) end
  local e = ...
  if type(e) == "userdata" then
    local text = pending()
    if text then e = text end
  elseif type(e) == "table" then
    local m = e.err
    if type(m) == "string" or type(m) == "number" then e = m end
  end
  return false, e
end
rawset(G, "pcall", function(f, ...) return caught(pcall(f, ...)) end)
local function rethrown(ok, ...)
  if not ok and stopped() then error((...), 0) end
  return ok, ...
end
rawset(G, "xpcall", function(f, h)
  return rethrown(xpcall(f, function(e)
    if stopped() then return e end
    return h(e)
  end))
end)
local co = rawget(G, "coroutine")
local resume = co.resume
rawset(co, "resume", function(c, ...) return rethrown(resume(c, ...)) end)

-- Neither the globals nor a library can be changed through these.
rawset(G, "setmetatable", function(t, mt)
  if readonly[t] then error("Attempt to modify a readonly table", 0) end
  return setmetatable(t, mt)
end)
rawset(G, "rawset", function(t, k, v)
  if readonly[t] then error("Attempt to modify a readonly table", 0) end
  return rawset(t, k, v)
end)
-- Code loaded by a script sees the script's globals.
rawset(G, "loadstring", function(s, name)
  local f, e = loadstring(s, name)
  if f then setfenv(f, env) end
  return f, e
end)
local load = load
rawset(G, "load", function(chunk, name)
  local f, e = load(chunk, name)
  if f then setfenv(f, env) end
  return f, e
end)

for _, name in ipairs({ "redis", "string", "math", "table", "os", "coroutine", "cjson", "bit", "struct", "cmsgpack" }) do
  local lib = rawget(G, name)
  if lib then rawset(G, name, protect(lib)) end
end

-- A function library's globals: while its code loads, only the loading
-- `redis` table (register_function, log, the versions); afterwards the
-- scripts' globals. Returns the table and what switches it.
local function missing(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local load_redis = {
  register_function = prim.register_function,
  log = rawget(redis, "log"),
  REDIS_VERSION = rawget(redis, "REDIS_VERSION"),
  REDIS_VERSION_NUM = rawget(redis, "REDIS_VERSION_NUM"),
}
for _, l in ipairs({ "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING" }) do
  load_redis[l] = rawget(redis, l)
end
local load_face = {}
readonly[load_face] = true
setmetatable(load_face, { __index = setmetatable(load_redis, { __index = missing }), __newindex = refuse, __metatable = false })
local loading = setmetatable({ redis = load_face }, { __index = missing, __newindex = refuse, __metatable = false })
local function library_env()
  local mt = { __index = loading, __newindex = refuse, __metatable = false }
  local e = setmetatable({}, mt)
  readonly[e] = true
  return e, function() mt.__index = env end
end

-- Runs a compiled script (`eval`: with KEYS and ARGV as globals) or a
-- function (given them as arguments).
-- A function's call goes through `current` (no closure made per call).
local cur_f, cur_keys, cur_args
local function current()
  local f, k, a = cur_f, cur_keys, cur_args
  cur_f, cur_keys, cur_args = nil, nil, nil
  return f(k, a)
end
return function(f, eval, keys, args)
  if eval then
    rawset(G, "KEYS", keys)
    rawset(G, "ARGV", args)
    return xpcall(f, handler)
  end
  cur_f, cur_keys, cur_args = f, keys, args
  return xpcall(current, handler)
end, env, library_env
