//! The `bit` library of Redis's Lua (LuaBitOp's API): 32-bit operations on
//! Lua numbers. A number becomes a 32-bit integer as LuaBitOp makes it:
//! adding 2^52 + 2^51 and keeping the low 32 bits of the double, which
//! wraps modulo 2^32 and rounds a fraction to the nearest even integer;
//! results are signed.

use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

use super::api::raise_plain;
use super::Run;

/// LuaBitOp's `tobit`: a Lua number to a 32-bit signed integer.
pub fn tobit(n: f64) -> i32 {
    let t = n + 6_755_399_441_055_744.0;
    t.to_bits() as u32 as i32
}

/// Argument `i` of `name` as a number, or Lua's argument error.
fn arg(lua: &Lua, run: &Run, args: &MultiValue, i: usize, name: &str) -> mlua::Result<i32> {
    let n = match args.get(i) {
        Some(Value::Integer(n)) => Some(*n as f64),
        Some(Value::Number(n)) => Some(*n),
        Some(Value::String(s)) => std::str::from_utf8(&s.as_bytes()).ok().and_then(|s| s.trim().parse().ok()),
        _ => None,
    };
    match n {
        Some(n) => Ok(tobit(n)),
        None => {
            let got = args.get(i).map_or("no value", |v| v.type_name());
            raise_plain(
                lua,
                run,
                &format!("bad argument #{} to '{name}' (number expected, got {got})", i + 1),
            )
        }
    }
}

/// An operation on one 32-bit integer, on two, and a shift by a count.
type Unary = fn(i32) -> i32;
type Binary = fn(i32, i32) -> i32;
type Shift = fn(i32, u32) -> i32;

/// Registers the `bit` table in `globals`.
pub(super) fn install(lua: &Lua, run: &Rc<Run>, globals: &Table) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    let unary: [(&str, Unary); 3] = [("tobit", |x| x), ("bnot", |x| !x), ("bswap", |x| x.swap_bytes())];
    for (name, f) in unary {
        let r = run.clone();
        bit.set(
            name,
            lua.create_function(move |lua, args: MultiValue| Ok(f(arg(lua, &r, &args, 0, name)?) as f64))?,
        )?;
    }
    let folds: [(&str, Binary); 3] = [("band", |a, b| a & b), ("bor", |a, b| a | b), ("bxor", |a, b| a ^ b)];
    for (name, f) in folds {
        let r = run.clone();
        bit.set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let mut acc = arg(lua, &r, &args, 0, name)?;
                for i in 1..args.len() {
                    acc = f(acc, arg(lua, &r, &args, i, name)?);
                }
                Ok(acc as f64)
            })?,
        )?;
    }
    let shifts: [(&str, Shift); 5] = [
        ("lshift", |x, n| ((x as u32) << n) as i32),
        ("rshift", |x, n| ((x as u32) >> n) as i32),
        ("arshift", |x, n| x >> n),
        ("rol", |x, n| (x as u32).rotate_left(n) as i32),
        ("ror", |x, n| (x as u32).rotate_right(n) as i32),
    ];
    for (name, f) in shifts {
        let r = run.clone();
        bit.set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let x = arg(lua, &r, &args, 0, name)?;
                let n = arg(lua, &r, &args, 1, name)? as u32 & 31;
                Ok(f(x, n) as f64)
            })?,
        )?;
    }
    let r = run.clone();
    bit.set(
        "tohex",
        lua.create_function(move |lua, args: MultiValue| {
            let x = arg(lua, &r, &args, 0, "tohex")? as u32;
            let mut n = if args.len() > 1 && !args[1].is_nil() {
                arg(lua, &r, &args, 1, "tohex")?
            } else {
                8
            };
            let digits: &[u8] = if n < 0 {
                n = -n;
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.min(8) as usize;
            let out: String = (0..n).rev().map(|i| digits[((x >> (4 * i)) & 15) as usize] as char).collect();
            Ok(out)
        })?,
    )?;
    globals.set("bit", bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_wrap_and_round_as_luabitop() {
        assert_eq!(tobit(1.0), 1);
        assert_eq!(tobit(4294967295.0), -1);
        assert_eq!(tobit(4294967296.0), 0);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(2147483648.0), i32::MIN);
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
    }

    #[test]
    fn the_library_answers() {
        let lua = Lua::new();
        install(&lua, &Rc::new(Run::default()), &lua.globals()).unwrap();
        let eval = |s: &str| lua.load(s).eval::<String>().unwrap();
        assert_eq!(eval("return tostring(bit.band(0xff, 0x0f, 0x3))"), "3");
        assert_eq!(eval("return tostring(bit.bor(1,2,4,8,16,32,64,128))"), "255");
        assert_eq!(eval("return tostring(bit.lshift(1, 31))"), "-2147483648");
        assert_eq!(eval("return tostring(bit.rshift(-1, 28))"), "15");
        assert_eq!(eval("return tostring(bit.arshift(-256, 4))"), "-16");
        assert_eq!(eval("return bit.tohex(255)"), "000000ff");
        assert_eq!(eval("return bit.tohex(-1, -4)"), "FFFF");
        assert_eq!(eval("return tostring(bit.bswap(0x12345678))"), "2018915346");
        assert_eq!(eval("return tostring(bit.rol(0x12345678, 12))"), "1164411171");
    }
}
