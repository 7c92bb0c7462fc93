//! The `struct` library of Redis's Lua (Roberto Ierusalimschy's struct
//! library's behaviour, written here): `struct.pack(fmt, ...)`,
//! `struct.unpack(fmt, s [, pos])` and `struct.size(fmt)`.
//!
//! Format: `<` little-endian, `>` big-endian, `!n` alignment (`!` alone:
//! 8), `x` a zero byte, `b`/`B` 1-byte, `h`/`H` 2-byte, `l`/`L` and `T`
//! 8-byte, `i`/`I` with an optional size (default 4) signed/unsigned
//! integers, `f` float, `d` double, `s` zero-terminated string, `cN` N
//! bytes (`c0`: pack the whole string; unpack as many as the number read
//! just before), spaces ignored. Little-endian and no alignment unless
//! told, as on x86-64.

use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

use super::api::raise_plain;
use super::Run;

/// The largest integer size a format may ask for.
const MAX_INT: usize = 32;

/// One item of a format.
enum Item {
    Pad,
    Int { size: usize, signed: bool },
    Float,
    Double,
    Zstr,
    Chars(usize),
}

/// Parses `fmt` into items, each with the alignment in force; endianness
/// changes are applied as found.
struct Format<'a> {
    f: &'a [u8],
    at: usize,
    little: bool,
    align: usize,
    /// The library function reading it, for argument errors.
    func: &'static str,
}

impl Format<'_> {
    fn number(&mut self) -> Option<usize> {
        let from = self.at;
        while self.f.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        std::str::from_utf8(&self.f[from..self.at]).ok()?.parse().ok()
    }

    /// The next item, None at the end.
    fn next(&mut self) -> Result<Option<Item>, String> {
        loop {
            let Some(&c) = self.f.get(self.at) else { return Ok(None) };
            self.at += 1;
            let item = match c {
                b' ' => continue,
                b'<' => {
                    self.little = true;
                    continue;
                }
                b'>' => {
                    self.little = false;
                    continue;
                }
                b'!' => {
                    self.align = self.number().unwrap_or(8).max(1);
                    continue;
                }
                b'x' => Item::Pad,
                b'b' | b'B' => Item::Int {
                    size: 1,
                    signed: c == b'b',
                },
                b'h' | b'H' => Item::Int {
                    size: 2,
                    signed: c == b'h',
                },
                b'l' | b'L' => Item::Int {
                    size: 8,
                    signed: c == b'l',
                },
                b'T' => Item::Int { size: 8, signed: false },
                b'i' | b'I' => {
                    let size = self.number().unwrap_or(4);
                    if size > MAX_INT {
                        return Err(format!("integral size {size} is larger than limit of {MAX_INT}"));
                    }
                    Item::Int { size, signed: c == b'i' }
                }
                b'f' => Item::Float,
                b'd' => Item::Double,
                b's' => Item::Zstr,
                b'c' => Item::Chars(self.number().unwrap_or(1)),
                other => {
                    return Err(format!(
                        "bad argument #1 to '{}' (invalid format option '{}')",
                        self.func, other as char
                    ))
                }
            };
            return Ok(Some(item));
        }
    }

    /// Padding before an item of `size` bytes at offset `len`.
    fn pad(&self, size: usize, len: usize) -> usize {
        let a = size.min(self.align);
        if a <= 1 || !a.is_power_of_two() {
            return 0;
        }
        (a - (len & (a - 1))) & (a - 1)
    }
}

fn size_of(item: &Item) -> usize {
    match item {
        Item::Pad => 1,
        Item::Int { size, .. } => *size,
        Item::Float => 4,
        Item::Double => 8,
        Item::Zstr => 0,
        Item::Chars(n) => *n,
    }
}

/// A number argument as Lua reads one.
fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes()).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn pack(fmt: &[u8], args: &MultiValue) -> Result<Vec<u8>, String> {
    let mut f = Format {
        f: fmt,
        at: 0,
        little: true,
        align: 1,
        func: "pack",
    };
    let mut out = Vec::new();
    let mut arg = 1;
    let bad = |arg: usize, what: &str, got: Option<&Value>| {
        let got = got.map_or("no value", |v| v.type_name());
        format!("bad argument #{} to 'pack' ({what} expected, got {got})", arg + 1)
    };
    while let Some(item) = f.next()? {
        let size = size_of(&item);
        out.resize(out.len() + f.pad(size, out.len()), 0);
        match item {
            Item::Pad => out.push(0),
            Item::Int { size, .. } => {
                let n = number(args.get(arg)).ok_or_else(|| bad(arg, "number", args.get(arg)))?;
                arg += 1;
                let v = n as i64 as u64;
                let bytes: Vec<u8> = (0..size)
                    .map(|i| {
                        if i < 8 {
                            (v >> (8 * i)) as u8
                        } else if (v as i64) < 0 {
                            0xff
                        } else {
                            0
                        }
                    })
                    .collect();
                if f.little {
                    out.extend(bytes);
                } else {
                    out.extend(bytes.into_iter().rev());
                }
            }
            Item::Float | Item::Double => {
                let n = number(args.get(arg)).ok_or_else(|| bad(arg, "number", args.get(arg)))?;
                arg += 1;
                let bytes = if matches!(item, Item::Float) {
                    (n as f32).to_le_bytes().to_vec()
                } else {
                    n.to_le_bytes().to_vec()
                };
                if f.little {
                    out.extend(bytes);
                } else {
                    out.extend(bytes.into_iter().rev());
                }
            }
            Item::Zstr | Item::Chars(_) => {
                let s = match args.get(arg) {
                    Some(Value::String(s)) => s.as_bytes().to_vec(),
                    Some(Value::Integer(n)) => n.to_string().into_bytes(),
                    Some(Value::Number(n)) => super::convert::format_g(*n, 14).into_bytes(),
                    other => return Err(bad(arg, "string", other)),
                };
                arg += 1;
                match item {
                    Item::Zstr => {
                        if s.contains(&0) {
                            return Err("string contains zeros".into());
                        }
                        out.extend_from_slice(&s);
                        out.push(0);
                    }
                    Item::Chars(n) => {
                        let n = if n == 0 { s.len() } else { n };
                        if s.len() < n {
                            return Err(format!("bad argument #{} to 'pack' (string too short)", arg));
                        }
                        out.extend_from_slice(&s[..n]);
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(out)
}

fn unpack(lua: &Lua, fmt: &[u8], data: &[u8], pos: usize) -> Result<MultiValue, String> {
    let mut f = Format {
        f: fmt,
        at: 0,
        little: true,
        align: 1,
        func: "unpack",
    };
    let mut at = pos;
    let mut out = Vec::new();
    let short = || "bad argument #2 to 'unpack' (data string too short)".to_string();
    let mut last: Option<f64> = None;
    while let Some(item) = f.next()? {
        let size = size_of(&item);
        at += f.pad(size, at);
        match item {
            Item::Pad => at += 1,
            Item::Int { size, signed } => {
                let b = data.get(at..at + size).ok_or_else(short)?;
                let mut v: u64 = 0;
                for i in 0..size.min(8) {
                    let byte = if f.little { b[i] } else { b[size - 1 - i] };
                    v |= (byte as u64) << (8 * i);
                }
                let n = if signed && size < 8 && size > 0 && v & (1 << (8 * size - 1)) != 0 {
                    (v | !((1u64 << (8 * size)) - 1)) as i64 as f64
                } else if signed {
                    v as i64 as f64
                } else {
                    v as f64
                };
                last = Some(n);
                out.push(Value::Number(n));
                at += size;
            }
            Item::Float | Item::Double => {
                let b = data.get(at..at + size).ok_or_else(short)?;
                let mut bytes = b.to_vec();
                if !f.little {
                    bytes.reverse();
                }
                let n = if size == 4 {
                    f32::from_le_bytes(bytes.try_into().map_err(|_| short())?) as f64
                } else {
                    f64::from_le_bytes(bytes.try_into().map_err(|_| short())?)
                };
                out.push(Value::Number(n));
                last = None;
                at += size;
            }
            Item::Zstr => {
                let rest = data.get(at..).ok_or_else(short)?;
                let end = memchr::memchr(0, rest).ok_or("unfinished string in data")?;
                out.push(Value::String(lua.create_string(&rest[..end]).map_err(|e| e.to_string())?));
                at += end + 1;
                last = None;
            }
            Item::Chars(n) => {
                // `c0` takes its size from the number just read, which it
                // consumes.
                let n = match (n, last.take()) {
                    (0, Some(l)) if matches!(out.last(), Some(Value::Number(_))) => {
                        out.pop();
                        l.max(0.0) as usize
                    }
                    (0, _) => return Err("format 'c0' needs a previous size".into()),
                    (n, _) => n,
                };
                let b = data.get(at..at + n).ok_or_else(short)?;
                out.push(Value::String(lua.create_string(b).map_err(|e| e.to_string())?));
                at += n;
            }
        }
    }
    out.push(Value::Integer(at as i64 + 1));
    Ok(MultiValue::from_iter(out))
}

/// Registers the `struct` table in `globals`.
pub(super) fn install(lua: &Lua, run: &Rc<Run>, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let r = run.clone();
    t.set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            let Some(Value::String(fmt)) = args.front() else {
                return raise_plain(lua, &r, "bad argument #1 to 'pack' (string expected, got no value)");
            };
            match pack(&fmt.as_bytes(), &args) {
                Ok(b) => lua.create_string(&b),
                Err(e) => raise_plain(lua, &r, &e),
            }
        })?,
    )?;
    let r = run.clone();
    t.set(
        "unpack",
        lua.create_function(move |lua, args: MultiValue| {
            let (Some(Value::String(fmt)), Some(Value::String(data))) = (args.front(), args.get(1)) else {
                return raise_plain(lua, &r, "bad argument #2 to 'unpack' (string expected, got no value)");
            };
            let pos = number(args.get(2)).unwrap_or(1.0);
            if pos < 1.0 {
                return raise_plain(lua, &r, "bad argument #3 to 'unpack' (offset must be 1 or greater)");
            }
            match unpack(lua, &fmt.as_bytes(), &data.as_bytes(), pos as usize - 1) {
                Ok(v) => Ok(v),
                Err(e) => raise_plain(lua, &r, &e),
            }
        })?,
    )?;
    let r = run.clone();
    t.set(
        "size",
        lua.create_function(move |lua, fmt: mlua::LuaString| {
            let fmt = fmt.as_bytes();
            let mut f = Format {
                f: &fmt,
                at: 0,
                little: true,
                align: 1,
                func: "size",
            };
            let mut len = 0;
            loop {
                match f.next() {
                    Ok(Some(Item::Zstr)) => return raise_plain(lua, &r, "options 's' has no fixed size"),
                    Ok(Some(item)) => {
                        let size = size_of(&item);
                        len += f.pad(size, len) + size;
                    }
                    Ok(None) => return Ok(len as i64),
                    Err(e) => return raise_plain(lua, &r, &e),
                }
            }
        })?,
    )?;
    globals.set("struct", t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks() {
        let lua = Lua::new();
        install(&lua, &Rc::new(Run::default()), &lua.globals()).unwrap();
        let hex = |code: &str| -> String {
            let s: mlua::LuaString = lua.load(code).eval().unwrap();
            s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(hex("return struct.pack('>I2', 258)"), "0102");
        assert_eq!(hex("return struct.pack('<i4', -2)"), "feffffff");
        assert_eq!(hex("return struct.pack('bBs', -1, 255, 'ab')"), "ffff616200");
        assert_eq!(hex("return struct.pack('!4 b i', 1, 2)"), "0100000002000000");
        let back = "local a, b, c, n = struct.unpack('>h i c3', struct.pack('>h i c3', -5, 70000, 'xyz')) return a .. ' ' .. b .. ' ' .. c .. ' ' .. n";
        assert_eq!(lua.load(back).eval::<String>().unwrap(), "-5 70000 xyz 10");
        assert_eq!(lua.load("return struct.size('>!4 b i d')").eval::<i64>().unwrap(), 16);
    }
}
