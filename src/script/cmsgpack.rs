//! The `cmsgpack` library of Redis's Lua (lua-cmsgpack's behaviour, written
//! here): `pack(...)`, `unpack(s)`, `unpack_one(s [, offset])` and
//! `unpack_limit(s, limit [, offset])`.
//!
//! Packing: nil, booleans; a number that is an integer in range as the
//! smallest MessagePack integer, else a float32 when that keeps it exactly,
//! else a float64; strings as str (fixstr, str8, str16, str32); a table
//! whose keys are exactly 1..n as an array, any other as a map (Lua's
//! iteration order); tables nest at most 16 deep (deeper: nil), and other
//! types pack as nil. Unpacking reads every MessagePack type but ext.

use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

use super::api::raise_plain;
use super::Run;

/// lua-cmsgpack's LUACMSGPACK_MAX_NESTING.
const MAX_NESTING: usize = 16;

/// Registers the `cmsgpack` table in `globals`.
pub(super) fn install(lua: &Lua, run: &Rc<Run>, globals: &Table) -> mlua::Result<()> {
    let m = lua.create_table()?;
    let r = run.clone();
    m.set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            if args.is_empty() {
                return raise_plain(lua, &r, "bad argument #0 to 'pack' (MessagePack pack needs input.)");
            }
            let mut out = Vec::new();
            for v in args.iter() {
                pack(v, 0, &mut out).map_err(mlua::Error::RuntimeError)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    let r = run.clone();
    m.set(
        "unpack",
        lua.create_function(move |lua, s: mlua::LuaString| {
            let s = s.as_bytes();
            let mut d = Reader { s: &s, at: 0 };
            let mut out = Vec::new();
            while d.at < s.len() {
                match d.value(lua) {
                    Ok(v) => out.push(v),
                    Err(e) => return raise_plain(lua, &r, e),
                }
            }
            Ok(MultiValue::from_iter(out))
        })?,
    )?;
    for (name, limited) in [("unpack_one", false), ("unpack_limit", true)] {
        let r = run.clone();
        m.set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let Some(Value::String(s)) = args.front() else {
                    return raise_plain(lua, &r, &format!("bad argument #1 to '{name}' (string expected, got no value)"));
                };
                let s = s.as_bytes();
                let int = |i: usize| match args.get(i) {
                    Some(Value::Integer(n)) => *n,
                    Some(Value::Number(n)) => *n as i64,
                    _ => 0,
                };
                let (limit, offset) = if limited { (int(1), int(2)) } else { (1, int(1)) };
                if offset < 0 || limit < 0 {
                    return raise_plain(lua, &r, "Invalid request to unpack with offset of 0 and limit of 0.");
                }
                let mut d = Reader {
                    s: &s,
                    at: (offset as usize).min(s.len()),
                };
                let mut out = vec![Value::Nil];
                while d.at < s.len() && (limit == 0 || (out.len() as i64) <= limit) {
                    match d.value(lua) {
                        Ok(v) => out.push(v),
                        Err(e) => return raise_plain(lua, &r, e),
                    }
                }
                // The offset of what is left, or -1 at the end.
                out[0] = Value::Integer(if d.at < s.len() { d.at as i64 } else { -1 });
                Ok(MultiValue::from_iter(out))
            })?,
        )?;
    }
    m.set("_NAME", "cmsgpack")?;
    m.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    m.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    m.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    globals.set("cmsgpack", m)
}

fn pack(v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), String> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => pack_int(*n, out),
        Value::Number(n) => pack_number(*n, out),
        Value::String(s) => pack_str(&s.as_bytes(), out),
        Value::Table(t) if depth < MAX_NESTING => pack_table(t, depth + 1, out)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn pack_number(n: f64, out: &mut Vec<u8>) {
    if n.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        return pack_int(n as i64, out);
    }
    let f = n as f32;
    if f as f64 == n {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        let u = n as u64;
        if u <= 127 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_str(s: &[u8], out: &mut Vec<u8>) {
    let n = s.len();
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A header with a 4-bit (fix), 16-bit or 32-bit count.
fn pack_count(n: usize, fix: u8, b16: u8, b32: u8, out: &mut Vec<u8>) {
    if n < 16 {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(b16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(b32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn pack_table(t: &Table, depth: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let pairs: Vec<(Value, Value)> = t.pairs::<Value, Value>().collect::<mlua::Result<_>>().map_err(|e| e.to_string())?;
    // lua-cmsgpack's table_is_an_array: keys exactly 1..n.
    let mut max = 0usize;
    let array = pairs.iter().all(|(k, _)| {
        let n = match k {
            Value::Integer(n) => *n as f64,
            Value::Number(n) => *n,
            _ => return false,
        };
        if n >= 1.0 && n.fract() == 0.0 {
            max = max.max(n as usize);
            true
        } else {
            false
        }
    }) && max == pairs.len();
    if array {
        pack_count(max, 0x90, 0xdc, 0xdd, out);
        for i in 1..=max {
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            pack(&v, depth, out)?;
        }
    } else {
        pack_count(pairs.len(), 0x80, 0xde, 0xdf, out);
        for (k, v) in &pairs {
            pack(k, depth, out)?;
            pack(v, depth, out)?;
        }
    }
    Ok(())
}

struct Reader<'a> {
    s: &'a [u8],
    at: usize,
}

const MISSING: &str = "Missing bytes in input.";
const BAD: &str = "Bad data format in input.";

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], &'static str> {
        let b = self.s.get(self.at..self.at.checked_add(n).ok_or(MISSING)?).ok_or(MISSING)?;
        self.at += n;
        Ok(b)
    }

    fn uint(&mut self, n: usize) -> Result<u64, &'static str> {
        Ok(self.take(n)?.iter().fold(0u64, |a, b| (a << 8) | *b as u64))
    }

    fn value(&mut self, lua: &Lua) -> Result<Value, &'static str> {
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Integer(tag as i64),
            0x80..=0x8f => self.map(lua, (tag & 0x0f) as usize)?,
            0x90..=0x9f => self.array(lua, (tag & 0x0f) as usize)?,
            0xa0..=0xbf => self.string(lua, (tag & 0x1f) as usize)?,
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(lua, n)?
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                self.string(lua, n)?
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                self.string(lua, n)?
            }
            0xca => Value::Number(f32::from_be_bytes(self.take(4)?.try_into().map_err(|_| MISSING)?) as f64),
            0xcb => Value::Number(f64::from_be_bytes(self.take(8)?.try_into().map_err(|_| MISSING)?)),
            0xcc => Value::Integer(self.uint(1)? as i64),
            0xcd => Value::Integer(self.uint(2)? as i64),
            0xce => Value::Integer(self.uint(4)? as i64),
            0xcf => Value::Number(self.uint(8)? as f64),
            0xd0 => Value::Integer(self.uint(1)? as u8 as i8 as i64),
            0xd1 => Value::Integer(self.uint(2)? as u16 as i16 as i64),
            0xd2 => Value::Integer(self.uint(4)? as u32 as i32 as i64),
            0xd3 => Value::Integer(self.uint(8)? as i64),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(lua, n)?
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(lua, n)?
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(lua, n)?
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(lua, n)?
            }
            0xe0..=0xff => Value::Integer(tag as i8 as i64),
            _ => return Err(BAD),
        })
    }

    fn string(&mut self, lua: &Lua, n: usize) -> Result<Value, &'static str> {
        let b = self.take(n)?;
        lua.create_string(b).map(Value::String).map_err(|_| BAD)
    }

    fn array(&mut self, lua: &Lua, n: usize) -> Result<Value, &'static str> {
        // Every element takes a byte at least.
        if n > self.s.len() - self.at {
            return Err(MISSING);
        }
        let t = lua.create_table_with_capacity(n, 0).map_err(|_| BAD)?;
        for i in 1..=n {
            let v = self.value(lua)?;
            t.raw_set(i, v).map_err(|_| BAD)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize) -> Result<Value, &'static str> {
        if n > self.s.len() - self.at {
            return Err(MISSING);
        }
        let t = lua.create_table_with_capacity(0, n).map_err(|_| BAD)?;
        for _ in 0..n {
            let k = self.value(lua)?;
            let v = self.value(lua)?;
            if !k.is_nil() {
                t.raw_set(k, v).map_err(|_| BAD)?;
            }
        }
        Ok(Value::Table(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(lua: &Lua, code: &str) -> String {
        let s: mlua::LuaString = lua.load(code).eval().unwrap();
        s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn packs_as_lua_cmsgpack() {
        let lua = Lua::new();
        install(&lua, &Rc::new(Run::default()), &lua.globals()).unwrap();
        assert_eq!(hex(&lua, "return cmsgpack.pack(0.1)"), "cb3fb999999999999a");
        assert_eq!(hex(&lua, "return cmsgpack.pack(-1099511627776)"), "d3ffffff0000000000");
        assert_eq!(
            hex(&lua, "return cmsgpack.pack({1,2,'a'}, true, nil, 1.5)"),
            "930102a161c3c0ca3fc00000"
        );
        let circular = "local a = {x=nil,y=5}; local b = {x=a}; a['x'] = b; return cmsgpack.pack(a)";
        let h = hex(&lua, circular);
        assert!(h.starts_with("82a17905a17881a17882") || h.starts_with("82a17881a178"), "{h}");
        assert!(h.ends_with("c0"));
        let back = "local t = cmsgpack.unpack(cmsgpack.pack({a={1,2},b=-3})); return tostring(t.a[2] + t.b)";
        assert_eq!(lua.load(back).eval::<String>().unwrap(), "-1");
        let one = "local o, v = cmsgpack.unpack_one(cmsgpack.pack(7, 8)); return o .. ':' .. v";
        assert_eq!(lua.load(one).eval::<String>().unwrap(), "1:7");
    }
}
