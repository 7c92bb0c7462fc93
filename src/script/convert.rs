//! Conversions between Redis replies and Lua values, as Redis's
//! `redisProtocolToLuaType` and `luaReplyToRedisReply` do them.
//!
//! A command's reply (RESP2, or RESP3 after `redis.setresp(3)`) becomes:
//! integer -> number; bulk -> string; null bulk or null array -> false;
//! RESP3 null -> nil; array -> table; status -> `{ok=}`; error -> `{err=}`;
//! boolean -> boolean; double -> `{double=}`; big number -> `{big_number=}`;
//! verbatim -> `{verbatim_string={format=, string=}}`; map -> `{map={}}`;
//! set -> `{set={member=true}}`; attributes are skipped.
//!
//! A script's result goes back the other way: a number is truncated to an
//! integer (as C's cast: out of range or NaN is i64::MIN), a table stops at
//! its first nil, `{err=}` and `{ok=}` are an error and a status, `true` is 1
//! and `false` a null in RESP2 (RESP3 booleans after `setresp(3)`).

use mlua::{Lua, Table, Value};

use crate::resp::Reply;

/// A reply this module could not read (a bug in a handler, not a client's
/// doing): the script sees an error.
const BAD_REPLY: &str = "ERR Basalt could not read a command's reply";

/// Converts one reply at the start of `buf` into a Lua value; the second
/// value is whether the reply is an error.
pub fn reply_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<(Value, bool)> {
    let mut p = Parser { buf, at: 0 };
    let is_err = buf.first() == Some(&b'-');
    match p.value(lua, true)? {
        Some(v) => Ok((v, is_err)),
        None => Ok((error_table(lua, BAD_REPLY.as_bytes())?, true)),
    }
}

/// Redis's `luaPushErrorBuff`: `{err="CODE msg"}`, where a message without
/// a leading `-` gets the code ERR, and one with `-` but no space too.
pub fn error_table(lua: &Lua, msg: &[u8]) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set("err", lua.create_string(error_text(msg))?)?;
    Ok(Value::Table(t))
}

/// The `err` text of [`error_table`].
pub fn error_text(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 4);
    match msg.strip_prefix(b"-") {
        Some(rest) => match memchr::memchr(b' ', rest) {
            Some(sp) => {
                out.extend_from_slice(&rest[..sp]);
                out.push(b' ');
                out.extend_from_slice(trim_newlines(&rest[sp + 1..]));
            }
            None => {
                out.extend_from_slice(b"ERR ");
                out.extend_from_slice(trim_newlines(rest));
            }
        },
        None => {
            out.extend_from_slice(b"ERR ");
            out.extend_from_slice(trim_newlines(msg));
        }
    }
    out
}

fn trim_newlines(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(s.len());
    let end = s.iter().rposition(|&b| b != b'\r' && b != b'\n').map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// A reader of replies that Basalt itself wrote.
struct Parser<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    /// The line after the type byte, without CRLF.
    fn line(&mut self) -> Option<&[u8]> {
        let rest = self.buf.get(self.at..)?;
        let end = memchr::memmem::find(rest, b"\r\n")?;
        self.at += end + 2;
        Some(&rest[..end])
    }

    fn int(&mut self) -> Option<i64> {
        std::str::from_utf8(self.line()?).ok()?.parse().ok()
    }

    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.buf.get(self.at..self.at + n)?;
        self.at += n + 2;
        Some(s)
    }

    /// The next value; None when the bytes are not a reply. `keep`: false
    /// reads past the value (an attribute) without building it.
    fn value(&mut self, lua: &Lua, keep: bool) -> mlua::Result<Option<Value>> {
        let Some(&tag) = self.buf.get(self.at) else { return Ok(None) };
        self.at += 1;
        let v = match tag {
            b'+' => {
                let Some(s) = self.line() else { return Ok(None) };
                let t = lua.create_table_with_capacity(0, 1)?;
                t.raw_set("ok", lua.create_string(s)?)?;
                Value::Table(t)
            }
            b'-' => {
                let Some(s) = self.line() else { return Ok(None) };
                let mut msg = Vec::with_capacity(s.len() + 1);
                msg.push(b'-');
                msg.extend_from_slice(s);
                error_table(lua, &msg)?
            }
            b':' => match self.int() {
                Some(n) => Value::Number(n as f64),
                None => return Ok(None),
            },
            b'$' => match self.int() {
                Some(n) if n < 0 => Value::Boolean(false),
                Some(n) => match self.bytes(n as usize) {
                    Some(s) => Value::String(lua.create_string(s)?),
                    None => return Ok(None),
                },
                None => return Ok(None),
            },
            b'*' | b'>' => match self.int() {
                Some(n) if n < 0 => Value::Boolean(false),
                Some(n) => {
                    let t = lua.create_table_with_capacity(n as usize, 0)?;
                    for i in 1..=n {
                        let Some(v) = self.value(lua, keep)? else { return Ok(None) };
                        t.raw_set(i, v)?;
                    }
                    Value::Table(t)
                }
                None => return Ok(None),
            },
            b'_' => {
                self.line();
                Value::Nil
            }
            b'#' => Value::Boolean(self.line() == Some(b"t")),
            b',' => {
                let Some(s) = self.line() else { return Ok(None) };
                let d = parse_double(s);
                wrap(lua, "double", Value::Number(d))?
            }
            b'(' => {
                let Some(s) = self.line() else { return Ok(None) };
                let s = lua.create_string(s)?;
                wrap(lua, "big_number", Value::String(s))?
            }
            b'=' => {
                let Some(n) = self.int() else { return Ok(None) };
                let Some(s) = self.bytes(n.max(0) as usize) else { return Ok(None) };
                let (format, text) = if s.len() >= 4 { (&s[..3], &s[4..]) } else { (&b"txt"[..], s) };
                let inner = lua.create_table_with_capacity(0, 2)?;
                inner.raw_set("string", lua.create_string(text)?)?;
                inner.raw_set("format", lua.create_string(format)?)?;
                wrap(lua, "verbatim_string", Value::Table(inner))?
            }
            b'%' | b'~' => {
                let Some(n) = self.int() else { return Ok(None) };
                let inner = lua.create_table_with_capacity(0, n.max(0) as usize)?;
                for _ in 0..n {
                    let Some(k) = self.value(lua, keep)? else { return Ok(None) };
                    let v = if tag == b'%' {
                        let Some(v) = self.value(lua, keep)? else { return Ok(None) };
                        v
                    } else {
                        Value::Boolean(true)
                    };
                    if !k.is_nil() {
                        inner.raw_set(k, v)?;
                    }
                }
                wrap(lua, if tag == b'%' { "map" } else { "set" }, Value::Table(inner))?
            }
            b'|' => {
                let Some(n) = self.int() else { return Ok(None) };
                for _ in 0..n * 2 {
                    if self.value(lua, false)?.is_none() {
                        return Ok(None);
                    }
                }
                return self.value(lua, keep);
            }
            _ => return Ok(None),
        };
        Ok(Some(if keep { v } else { Value::Nil }))
    }
}

fn parse_double(s: &[u8]) -> f64 {
    match s {
        b"inf" => f64::INFINITY,
        b"-inf" => f64::NEG_INFINITY,
        b"nan" | b"-nan" => f64::NAN,
        _ => std::str::from_utf8(s).ok().and_then(|s| s.parse().ok()).unwrap_or(0.0),
    }
}

/// `{name=v}`.
fn wrap(lua: &Lua, name: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set(name, v)?;
    Ok(Value::Table(t))
}

/// C's `(long long)` of a double on x86-64: out of range and NaN give
/// i64::MIN.
pub fn truncate(n: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

/// CR and LF to spaces, as Redis writes status and error lines.
fn one_line(s: &[u8]) -> String {
    let mapped: Vec<u8> = s.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect();
    crate::resp::reply::raw_text(&mapped)
}

/// Writes a script's result (or a value inside it) as a reply. `resp3`:
/// whether the script chose RESP3 (`redis.setresp(3)`); `out.resp3` is the
/// client's protocol. Tables nest at most [`MAX_DEPTH`] deep.
pub fn lua_to_reply(v: &Value, resp3: bool, out: &mut Reply) {
    write_value(v, resp3, out, 0);
}

/// Nesting past this answers an error in place (Redis's Lua stack limit).
const MAX_DEPTH: usize = 200;

fn write_value(v: &Value, resp3: bool, out: &mut Reply, depth: usize) {
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if !resp3 {
                if *b {
                    out.int(1)
                } else {
                    out.null()
                }
            } else if out.resp3 {
                out.buf.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.int(*b as i64)
            }
        }
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(truncate(*n)),
        Value::Table(t) if depth >= MAX_DEPTH => {
            let _ = t;
            out.error("ERR reached lua stack limit");
        }
        Value::Table(t) => write_table(t, resp3, out, depth),
        _ => out.null(),
    }
}

fn write_table(t: &Table, resp3: bool, out: &mut Reply, depth: usize) {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        out.error(&one_line(&e.as_bytes()));
        return;
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        out.simple(&one_line(&s.as_bytes()));
        return;
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return out.double(d),
        Ok(Value::Integer(d)) => return out.double(d as f64),
        _ => {}
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        return out.big_number(one_line(&s.as_bytes()).as_bytes());
    }
    if let Ok(Value::Table(vs)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(f)), Ok(Value::String(s))) = (vs.raw_get::<Value>("format"), vs.raw_get::<Value>("string")) {
            return out.verbatim_as(&f.as_bytes(), &s.as_bytes());
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_value(k, resp3, out, depth + 1);
            write_value(v, resp3, out, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> = s.pairs::<Value, Value>().filter_map(|kv| kv.ok().map(|(k, _)| k)).collect();
        out.set(keys.len());
        for k in &keys {
            write_value(k, resp3, out, depth + 1);
        }
        return;
    }
    // An array up to the first nil.
    let mut items = Vec::new();
    let mut i = 1;
    while let Ok(v) = t.raw_get::<Value>(i) {
        if v.is_nil() {
            break;
        }
        items.push(v);
        i += 1;
    }
    out.array(items.len());
    for v in &items {
        write_value(v, resp3, out, depth + 1);
    }
}

/// C's `%.17g`: how Redis turns a Lua number argument of `redis.call`
/// into a string (Lua's own `%.14g` loses precision).
pub fn format_g17(v: f64) -> String {
    format_g(v, 17)
}

/// C's `%.<precision>g`.
pub fn format_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = precision.max(1);
    // `p` significant digits in exponent form: d.ddde±x.
    let e = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = trim_fraction(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    let decimals = (p as i32 - 1 - exp).max(0) as usize;
    trim_fraction(&format!("{:.*}", decimals, v)).to_string()
}

/// Drops trailing zeros of a fraction, and the point if nothing is left.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_matches_c() {
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(format_g17(10.0), "10");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(format_g17(0.0001), "0.0001");
        assert_eq!(format_g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(format_g17(-3.0), "-3");
        assert_eq!(format_g17(f64::INFINITY), "inf");
        assert_eq!(format_g(1.0 / 3.0, 14), "0.33333333333333");
        assert_eq!(format_g(1e15, 14), "1e+15");
    }

    #[test]
    fn truncation_is_cs() {
        assert_eq!(truncate(3.99), 3);
        assert_eq!(truncate(-3.7), -3);
        assert_eq!(truncate(1e20), i64::MIN);
        assert_eq!(truncate(f64::NAN), i64::MIN);
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = Lua::new();
        let (v, err) = reply_to_lua(&lua, b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n").unwrap();
        assert!(!err);
        let t = v.as_table().unwrap();
        assert_eq!(t.raw_get::<f64>(1).unwrap(), 1.0);
        assert!(!t.raw_get::<bool>(2).unwrap());
        assert_eq!(t.raw_get::<String>(3).unwrap(), "ab");
        let (v, err) = reply_to_lua(&lua, b"-WRONGTYPE Operation\r\n").unwrap();
        assert!(err);
        assert_eq!(v.as_table().unwrap().raw_get::<String>("err").unwrap(), "WRONGTYPE Operation");
        let (v, _) = reply_to_lua(&lua, b"%1\r\n$1\r\na\r\n,1.5\r\n").unwrap();
        let m = v.as_table().unwrap().raw_get::<Table>("map").unwrap();
        assert_eq!(m.raw_get::<Table>("a").unwrap().raw_get::<f64>("double").unwrap(), 1.5);
    }

    #[test]
    fn errors_get_a_code() {
        let lua = Lua::new();
        let t = error_table(&lua, b"-NOCODE").unwrap();
        assert_eq!(t.as_table().unwrap().raw_get::<String>("err").unwrap(), "ERR NOCODE");
        let t = error_table(&lua, b"plain words\r\n").unwrap();
        assert_eq!(t.as_table().unwrap().raw_get::<String>("err").unwrap(), "ERR plain words");
    }
}
