//! The `cjson` library of Redis's Lua (lua-cjson 2.1.0's behaviour, written
//! here): `cjson.encode`, `cjson.decode`, `cjson.null` and the settings.
//!
//! Encoding: numbers as `%.14g` (NaN and infinities refused); strings with
//! `"`, `\`, `/`, control bytes and DEL escaped, other bytes as they are; a
//! table whose keys are all positive integers is an array (holes become
//! `null`; refused as excessively sparse when its largest index is over 10
//! and over twice its element count), any other table an object in Lua's
//! iteration order (number keys as `%.14g` strings), the empty table `{}`;
//! nesting stops at 1000. Decoding: JSON to Lua, `null` as `cjson.null`, with
//! lua-cjson's error texts ("Expected value but found T_END at character 1").

use std::cell::Cell;
use std::rc::Rc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::api::raise_plain;
use super::convert::format_g;
use super::Run;

/// The settings `cjson.encode_*` and `cjson.decode_*` change.
struct Settings {
    sparse_convert: Cell<bool>,
    sparse_ratio: Cell<i64>,
    sparse_safe: Cell<i64>,
    encode_depth: Cell<i64>,
    decode_depth: Cell<i64>,
    precision: Cell<i64>,
    encode_invalid: Cell<bool>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sparse_convert: Cell::new(false),
            sparse_ratio: Cell::new(2),
            sparse_safe: Cell::new(10),
            encode_depth: Cell::new(1000),
            decode_depth: Cell::new(1000),
            precision: Cell::new(14),
            encode_invalid: Cell::new(false),
        }
    }
}

/// `cjson.null`: a NULL light userdata, as Redis's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Registers the `cjson` table in `globals`.
pub(super) fn install(lua: &Lua, run: &Rc<Run>, globals: &Table) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    let set = Rc::new(Settings::default());
    let (r, s) = (run.clone(), set.clone());
    cjson.set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return raise_plain(lua, &r, "bad argument #1 to 'encode' (expected 1 argument)");
            }
            let mut out = Vec::new();
            match encode(&args[0], &s, 0, &mut out) {
                Ok(()) => lua.create_string(&out),
                Err(msg) => raise_plain(lua, &r, &msg),
            }
        })?,
    )?;
    let (r, s) = (run.clone(), set.clone());
    cjson.set(
        "decode",
        lua.create_function(move |lua, args: MultiValue| {
            let text = match (args.len(), args.front()) {
                (1, Some(Value::String(t))) => t.as_bytes().to_vec(),
                (1, Some(Value::Integer(n))) => n.to_string().into_bytes(),
                (1, Some(Value::Number(n))) => format_g(*n, 14).into_bytes(),
                (1, Some(v)) => {
                    let msg = format!("bad argument #1 to 'decode' (string expected, got {})", v.type_name());
                    return raise_plain(lua, &r, &msg);
                }
                _ => return raise_plain(lua, &r, "bad argument #1 to 'decode' (expected 1 argument)"),
            };
            let mut d = Decoder {
                lua,
                s: &text,
                at: 0,
                depth: 0,
                max_depth: s.decode_depth.get(),
            };
            match d.document() {
                Ok(v) => Ok(v),
                Err(msg) => raise_plain(lua, &r, &msg),
            }
        })?,
    )?;
    cjson.set("null", null())?;
    cjson.set("_NAME", "cjson")?;
    cjson.set("_VERSION", "2.1.0")?;
    settings(lua, &cjson, &set)?;
    globals.set("cjson", cjson)
}

/// The setting functions: each returns the setting (after changing it
/// when given a value).
fn settings(lua: &Lua, cjson: &Table, set: &Rc<Settings>) -> mlua::Result<()> {
    let s = set.clone();
    cjson.set(
        "encode_sparse_array",
        lua.create_function(move |_, (convert, ratio, safe): (Option<bool>, Option<i64>, Option<i64>)| {
            if let Some(c) = convert {
                s.sparse_convert.set(c);
            }
            if let Some(r) = ratio {
                s.sparse_ratio.set(r);
            }
            if let Some(v) = safe {
                s.sparse_safe.set(v);
            }
            Ok((s.sparse_convert.get(), s.sparse_ratio.get(), s.sparse_safe.get()))
        })?,
    )?;
    type Field = fn(&Settings) -> &Cell<i64>;
    let ints: [(&str, Field); 3] = [
        ("encode_max_depth", |s| &s.encode_depth),
        ("decode_max_depth", |s| &s.decode_depth),
        ("encode_number_precision", |s| &s.precision),
    ];
    for (name, field) in ints {
        let s = set.clone();
        cjson.set(
            name,
            lua.create_function(move |_, v: Option<i64>| {
                if let Some(v) = v.filter(|v| *v > 0) {
                    field(&s).set(v);
                }
                Ok(field(&s).get())
            })?,
        )?;
    }
    let s = set.clone();
    cjson.set(
        "encode_invalid_numbers",
        lua.create_function(move |_, v: Option<bool>| {
            if let Some(v) = v {
                s.encode_invalid.set(v);
            }
            Ok(s.encode_invalid.get())
        })?,
    )?;
    cjson.set("encode_keep_buffer", lua.create_function(|_, _: MultiValue| Ok(true))?)?;
    cjson.set("decode_invalid_numbers", lua.create_function(|_, _: MultiValue| Ok(true))?)?;
    Ok(())
}

/// lua-cjson's escape of byte `b` inside a string, if it has one.
fn escape(b: u8) -> Option<&'static str> {
    const SHORT: [(u8, &str); 8] = [
        (b'"', "\\\""),
        (b'\\', "\\\\"),
        (b'/', "\\/"),
        (8, "\\b"),
        (9, "\\t"),
        (10, "\\n"),
        (12, "\\f"),
        (13, "\\r"),
    ];
    SHORT.iter().find(|(c, _)| *c == b).map(|(_, e)| *e)
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        if let Some(e) = escape(b) {
            out.extend_from_slice(e.as_bytes());
        } else if b < 0x20 || b == 0x7f {
            out.extend_from_slice(format!("\\u{:04x}", b).as_bytes());
        } else {
            out.push(b);
        }
    }
    out.push(b'"');
}

fn encode_number(n: f64, s: &Settings, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() && !s.encode_invalid.get() {
        return Err("Cannot serialise number: must not be NaN or Inf".into());
    }
    out.extend_from_slice(format_g(n, s.precision.get().clamp(1, 17) as usize).as_bytes());
    Ok(())
}

fn encode(v: &Value, s: &Settings, depth: i64, out: &mut Vec<u8>) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(u) if u.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => encode_number(*n as f64, s, out)?,
        Value::Number(n) => encode_number(*n, s, out)?,
        Value::String(st) => encode_string(&st.as_bytes(), out),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > s.encode_depth.get() {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match array_length(t, s)? {
                Some(n) if n > 0 => {
                    out.push(b'[');
                    for i in 1..=n {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                        encode(&item, s, depth, out)?;
                    }
                    out.push(b']');
                }
                _ => encode_object(t, s, depth, out)?,
            }
        }
        other => return Err(format!("Cannot serialise {}: type not supported", other.type_name())),
    }
    Ok(())
}

fn encode_object(t: &Table, s: &Settings, depth: i64, out: &mut Vec<u8>) -> Result<(), String> {
    out.push(b'{');
    let mut first = true;
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        if !first {
            out.push(b',');
        }
        first = false;
        match &k {
            Value::String(ks) => encode_string(&ks.as_bytes(), out),
            Value::Integer(n) => encode_string(format_g(*n as f64, s.precision.get().clamp(1, 17) as usize).as_bytes(), out),
            Value::Number(n) => encode_string(format_g(*n, s.precision.get().clamp(1, 17) as usize).as_bytes(), out),
            other => {
                return Err(format!(
                    "Cannot serialise {}: table key must be a number or string",
                    other.type_name()
                ))
            }
        }
        out.push(b':');
        encode(&v, s, depth, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// lua-cjson's `lua_array_length`: the array's length when every key is a
/// positive integer (0 for an empty table), None for an object.
fn array_length(t: &Table, s: &Settings) -> Result<Option<usize>, String> {
    let (mut max, mut items) = (0i64, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        let n = match k {
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if n < 1.0 || n.fract() != 0.0 {
            return Ok(None);
        }
        max = max.max(n as i64);
        items += 1;
    }
    let ratio = s.sparse_ratio.get();
    if ratio > 0 && max > items.saturating_mul(ratio) && max > s.sparse_safe.get() {
        if !s.sparse_convert.get() {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        return Ok(None);
    }
    Ok(Some(max as usize))
}

/// A JSON token's kind, by lua-cjson's names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num,
    Bool,
    Null,
    Colon,
    Comma,
    End,
    Invalid,
    Unterminated,
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num => "T_NUMBER",
            Tok::Bool => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Invalid => "invalid token",
            Tok::Unterminated => "unexpected end of string",
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    at: usize,
    depth: i64,
    max_depth: i64,
}

impl Decoder<'_> {
    fn document(&mut self) -> Result<Value, String> {
        let (tok, start, v) = self.token()?;
        let v = self.value(tok, start, v)?;
        let (tok, start, _) = self.token()?;
        if tok != Tok::End {
            return Err(format!("Expected the end but found {} at character {}", tok.name(), start + 1));
        }
        Ok(v)
    }

    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The next token, where it starts, and its value (strings, numbers,
    /// booleans, null).
    fn token(&mut self) -> Result<(Tok, usize, Value), String> {
        self.skip_space();
        let start = self.at;
        let Some(&b) = self.s.get(self.at) else {
            return Ok((Tok::End, start, Value::Nil));
        };
        let simple = |t| Ok((t, start, Value::Nil));
        match b {
            b'{' => {
                self.at += 1;
                simple(Tok::ObjBegin)
            }
            b'}' => {
                self.at += 1;
                simple(Tok::ObjEnd)
            }
            b'[' => {
                self.at += 1;
                simple(Tok::ArrBegin)
            }
            b']' => {
                self.at += 1;
                simple(Tok::ArrEnd)
            }
            b':' => {
                self.at += 1;
                simple(Tok::Colon)
            }
            b',' => {
                self.at += 1;
                simple(Tok::Comma)
            }
            b'"' => self.string(start),
            b't' if self.s[self.at..].starts_with(b"true") => {
                self.at += 4;
                Ok((Tok::Bool, start, Value::Boolean(true)))
            }
            b'f' if self.s[self.at..].starts_with(b"false") => {
                self.at += 5;
                Ok((Tok::Bool, start, Value::Boolean(false)))
            }
            b'n' if self.s[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok((Tok::Null, start, null()))
            }
            _ => match strtod(&self.s[self.at..]) {
                Some((n, used)) if b == b'-' || b.is_ascii_digit() || b.is_ascii_alphabetic() => {
                    self.at += used;
                    Ok((Tok::Num, start, Value::Number(n)))
                }
                _ => simple(Tok::Invalid),
            },
        }
    }

    fn string(&mut self, start: usize) -> Result<(Tok, usize, Value), String> {
        let mut out = Vec::new();
        self.at += 1;
        loop {
            let Some(&b) = self.s.get(self.at) else {
                return Ok((Tok::Unterminated, start, Value::Nil));
            };
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.at) else {
                        return Ok((Tok::Unterminated, start, Value::Nil));
                    };
                    self.at += 1;
                    match e {
                        b'b' => out.push(8),
                        b't' => out.push(9),
                        b'n' => out.push(10),
                        b'f' => out.push(12),
                        b'r' => out.push(13),
                        b'u' => match self.unicode() {
                            Some(c) => {
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            }
                            None => {
                                return Err(format!(
                                    "Expected value but found invalid unicode escape code at character {}",
                                    start + 1
                                ))
                            }
                        },
                        other => out.push(other),
                    }
                }
                other => out.push(other),
            }
        }
        let s = self.lua.create_string(&out).map_err(|e| e.to_string())?;
        Ok((Tok::Str, start, Value::String(s)))
    }

    /// `\uXXXX` (after the `u`), with a surrogate pair's second half.
    fn unicode(&mut self) -> Option<char> {
        let hex = |d: &Self, at: usize| -> Option<u32> {
            let h = d.s.get(at..at + 4)?;
            u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
        };
        let first = hex(self, self.at)?;
        self.at += 4;
        if (0xD800..0xDC00).contains(&first) {
            if self.s.get(self.at..self.at + 2) != Some(b"\\u") {
                return None;
            }
            let second = hex(self, self.at + 2)?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            self.at += 6;
            return char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
        }
        char::from_u32(first)
    }

    fn value(&mut self, tok: Tok, start: usize, v: Value) -> Result<Value, String> {
        match tok {
            Tok::Str | Tok::Num | Tok::Bool | Tok::Null => Ok(v),
            Tok::ObjBegin => self.object(start),
            Tok::ArrBegin => self.array(start),
            other => Err(format!("Expected value but found {} at character {}", other.name(), start + 1)),
        }
    }

    fn nest(&mut self, start: usize) -> Result<Table, String> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth,
                start + 1
            ));
        }
        self.lua.create_table().map_err(|e| e.to_string())
    }

    fn array(&mut self, start: usize) -> Result<Value, String> {
        let t = self.nest(start)?;
        let (mut tok, mut at, mut v) = self.token()?;
        if tok != Tok::ArrEnd {
            let mut i = 1;
            loop {
                let item = self.value(tok, at, v)?;
                t.raw_set(i, item).map_err(|e| e.to_string())?;
                i += 1;
                let (sep, sep_at, _) = self.token()?;
                match sep {
                    Tok::ArrEnd => break,
                    Tok::Comma => (tok, at, v) = self.token()?,
                    other => {
                        return Err(format!(
                            "Expected comma or array end but found {} at character {}",
                            other.name(),
                            sep_at + 1
                        ))
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn object(&mut self, start: usize) -> Result<Value, String> {
        let t = self.nest(start)?;
        let (mut tok, mut at, mut key) = self.token()?;
        if tok != Tok::ObjEnd {
            loop {
                if tok != Tok::Str {
                    return Err(format!(
                        "Expected object key string but found {} at character {}",
                        tok.name(),
                        at + 1
                    ));
                }
                let (colon, colon_at, _) = self.token()?;
                if colon != Tok::Colon {
                    return Err(format!("Expected colon but found {} at character {}", colon.name(), colon_at + 1));
                }
                let (vt, vat, vv) = self.token()?;
                let value = self.value(vt, vat, vv)?;
                t.raw_set(key, value).map_err(|e| e.to_string())?;
                let (sep, sep_at, _) = self.token()?;
                match sep {
                    Tok::ObjEnd => break,
                    Tok::Comma => (tok, at, key) = self.token()?,
                    other => {
                        return Err(format!(
                            "Expected comma or object end but found {} at character {}",
                            other.name(),
                            sep_at + 1
                        ))
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }
}

/// C's `strtod` on a prefix of `s`: the number and the bytes it used.
/// Decimal (with exponent), hexadecimal, `inf`/`infinity`/`nan`, signed.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let neg = match s.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = &s[i..];
    let lower: Vec<u8> = rest.iter().take(8).map(|b| b.to_ascii_lowercase()).collect();
    let sign = |v: f64| if neg { -v } else { v };
    if lower.starts_with(b"infinity") {
        return Some((sign(f64::INFINITY), i + 8));
    }
    if lower.starts_with(b"inf") {
        return Some((sign(f64::INFINITY), i + 3));
    }
    if lower.starts_with(b"nan") {
        return Some((f64::NAN, i + 3));
    }
    if lower.starts_with(b"0x") {
        let digits = rest[2..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits > 0 {
            let v = rest[2..2 + digits]
                .iter()
                .fold(0f64, |a, b| a * 16.0 + (*b as char).to_digit(16).unwrap_or(0) as f64);
            return Some((sign(v), i + 2 + digits));
        }
    }
    let mut j = 0;
    let digits = |j: &mut usize| {
        let from = *j;
        while rest.get(*j).is_some_and(u8::is_ascii_digit) {
            *j += 1;
        }
        *j - from
    };
    let mut n = digits(&mut j);
    if rest.get(j) == Some(&b'.') {
        j += 1;
        n += digits(&mut j);
    }
    if n == 0 {
        return None;
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if digits(&mut k) > 0 {
            j = k;
        }
    }
    let text = std::str::from_utf8(&rest[..j]).ok()?;
    let text = text.strip_suffix('.').unwrap_or(text);
    let v: f64 = text.parse().ok().or_else(|| format!("{text}0").parse().ok())?;
    Some((sign(v), i + j))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(lua: &Lua, code: &str) -> String {
        lua.load(code).eval::<String>().unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn encodes_as_lua_cjson() {
        let lua = Lua::new();
        install(&lua, &Rc::new(Run::default()), &lua.globals()).unwrap();
        assert_eq!(
            eval(&lua, "return cjson.encode({1,2,3,'a',true,false})"),
            r#"[1,2,3,"a",true,false]"#
        );
        assert_eq!(eval(&lua, "return cjson.encode({[1]=1,[3]=3})"), "[1,null,3]");
        assert_eq!(eval(&lua, "return cjson.encode({})"), "{}");
        assert_eq!(eval(&lua, "return cjson.encode(0.1)"), "0.1");
        assert_eq!(eval(&lua, "return cjson.encode(123456789012345678)"), "1.2345678901235e+17");
        assert_eq!(eval(&lua, r#"return cjson.encode('a/b"\0')"#), r#""a\/b\"\u0000""#);
        assert_eq!(
            eval(&lua, "return cjson.encode({[10]=1})"),
            "[null,null,null,null,null,null,null,null,null,1]"
        );
        assert_eq!(eval(&lua, "return cjson.encode({[1.5]=1})"), r#"{"1.5":1}"#);
    }

    #[test]
    fn decodes_as_lua_cjson() {
        let lua = Lua::new();
        install(&lua, &Rc::new(Run::default()), &lua.globals()).unwrap();
        assert_eq!(
            eval(&lua, r#"return cjson.encode(cjson.decode('{"b":[true,false,null]}'))"#),
            r#"{"b":[true,false,null]}"#
        );
        assert_eq!(eval(&lua, r#"return cjson.decode('"\\u00e9\\ud83d\\ude00"')"#), "é😀");
        assert_eq!(eval(&lua, "return tostring(cjson.decode('0x10'))"), "16");
        assert_eq!(eval(&lua, "return tostring(cjson.decode('-0.5e-3'))"), "-0.0005");
        assert_eq!(eval(&lua, "return tostring(cjson.decode('1e400'))"), "inf");
        let mut d = Decoder {
            lua: &lua,
            s: b"[1,2",
            at: 0,
            depth: 0,
            max_depth: 1000,
        };
        assert_eq!(
            d.document().unwrap_err(),
            "Expected comma or array end but found T_END at character 5"
        );
        let mut d = Decoder {
            lua: &lua,
            s: b"{\"a\" 1}",
            at: 0,
            depth: 0,
            max_depth: 1000,
        };
        assert_eq!(d.document().unwrap_err(), "Expected colon but found T_NUMBER at character 6");
    }
}
