//! Julia type expressions and the strict C <-> Julia mapping table.

use crate::header::{CType, Header};
use std::collections::HashMap;
use std::fmt;

/// A Julia type expression: `Name` or `Name{Args...}`, with module prefixes dropped
/// (`LibZarrShard.shard_codec` is `shard_codec`).
#[derive(Clone, Debug, PartialEq)]
pub enum JType {
    Name(String),
    Apply(String, Vec<JType>),
}

impl fmt::Display for JType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JType::Name(n) => write!(f, "{n}"),
            JType::Apply(n, args) => {
                let a: Vec<String> = args.iter().map(|x| x.to_string()).collect();
                write!(f, "{n}{{{}}}", a.join(","))
            }
        }
    }
}

/// Parse a type expression's text; `None` for anything that is not `Name` / `Name{...}`.
pub fn parse_jtype(s: &str) -> Option<JType> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = TypeParser { s: s.as_bytes(), i: 0 };
    let t = p.ty()?;
    (p.i == p.s.len()).then_some(t)
}

struct TypeParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl TypeParser<'_> {
    fn name(&mut self) -> Option<String> {
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"_.!".contains(&self.s[self.i])) {
            self.i += 1;
        }
        let full = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        let last = full.rsplit('.').next()?;
        (!last.is_empty() && !last.as_bytes()[0].is_ascii_digit()).then(|| last.to_string())
    }
    fn ty(&mut self) -> Option<JType> {
        let n = self.name()?;
        if self.i < self.s.len() && self.s[self.i] == b'{' {
            self.i += 1;
            let mut args = vec![self.ty()?];
            while self.i < self.s.len() && self.s[self.i] == b',' {
                self.i += 1;
                args.push(self.ty()?);
            }
            if self.i >= self.s.len() || self.s[self.i] != b'}' {
                return None;
            }
            self.i += 1;
            return Some(JType::Apply(n, args));
        }
        Some(JType::Name(n))
    }
}

/// Where a Julia type stands, which decides what is allowed.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Pos {
    /// a `ccall` argument: `Ref{T}` allowed for pointers.
    Arg,
    /// a `ccall` return type.
    Ret,
    /// a struct field.
    Field,
    /// an `@cfunction` argument (the C library calls Julia): pointers must be `Ptr`.
    CbArg,
    /// an `@cfunction` return type.
    CbRet,
}

/// What the Julia code declares, for the names the mapping accepts.
#[derive(Default)]
pub struct JuliaTypes {
    /// struct name -> mutable?
    pub structs: HashMap<String, bool>,
    /// @enum name -> base type
    pub enums: HashMap<String, String>,
}

/// Julia spellings accepted for a C scalar (strict: same size and signedness on every
/// platform Julia supports, so `size_t` is `Csize_t`/`UInt`, never `UInt64`).
fn scalar_names(c: &str) -> Option<&'static [&'static str]> {
    Some(match c {
        "uint8_t" => &["UInt8", "Cuchar"],
        "int8_t" => &["Int8"],
        "uint16_t" => &["UInt16", "Cushort"],
        "int16_t" => &["Int16", "Cshort"],
        "uint32_t" => &["UInt32", "Cuint"],
        "int32_t" => &["Int32", "Cint"],
        "uint64_t" => &["UInt64", "Culonglong"],
        "int64_t" => &["Int64", "Clonglong"],
        "size_t" => &["Csize_t", "UInt"],
        "ssize_t" => &["Cssize_t", "Int"],
        "int" => &["Cint", "Int32"],
        "unsigned int" => &["Cuint", "UInt32"],
        "bool" => &["Bool"],
        "float" => &["Cfloat", "Float32"],
        "double" => &["Cdouble", "Float64"],
        _ => return None,
    })
}

const VOID: &[&str] = &["Cvoid", "Nothing"];
const CHAR: &[&str] = &["UInt8", "Cchar", "Int8", "Cuchar"];
const INT32: &[&str] = &["Cint", "Int32", "Cuint", "UInt32"];

fn is_name(j: &JType, names: &[&str]) -> bool {
    matches!(j, JType::Name(n) if names.contains(&n.as_str()))
}

fn one_of(names: &[&str]) -> String {
    names.join("/")
}

/// Is Julia type `j` the ABI equivalent of C type `c` in position `pos`?
pub fn compat(c: &CType, j: &JType, pos: Pos, h: &Header, jt: &JuliaTypes) -> Result<(), String> {
    if c.ptr == 0 {
        return value_compat(c, j, pos, h, jt);
    }
    // Pointers.
    if c.ptr == 1 && c.base == "char" && matches!(pos, Pos::Arg | Pos::Ret) && is_name(j, &["Cstring"]) {
        return Ok(());
    }
    let (wrapper, inner) = match j {
        JType::Apply(w, args) if args.len() == 1 && (w == "Ptr" || w == "Ref") => (w.as_str(), &args[0]),
        _ => return Err(format!("`{c}` needs Ptr{{...}}{}, not {j}", if pos == Pos::Arg { " or Ref{...}" } else { "" })),
    };
    if wrapper == "Ref" && pos != Pos::Arg {
        return Err(format!("Ref{{...}} is only for ccall arguments; `{c}` here needs Ptr{{...}}, not {j}"));
    }
    let pointee = c.pointee();
    if pointee.ptr == 0 {
        if pointee.base == "void" {
            return if is_name(inner, VOID) { Ok(()) } else { Err(format!("`{c}` is {wrapper}{{Cvoid}}, not {j}")) };
        }
        if pointee.base == "char" {
            return if is_name(inner, CHAR) {
                Ok(())
            } else {
                Err(format!("`{c}` is Cstring or {wrapper}{{{}}}, not {j}", one_of(CHAR)))
            };
        }
        if is_name(inner, VOID) {
            return Err(format!("{j} hides the pointee of `{c}`: name it ({wrapper}{{{}}})", pointee.base));
        }
    }
    // The pointee, as a value (opaque structs allowed: they are only ever pointed to).
    pointee_compat(&pointee, inner, h, jt).map_err(|e| format!("{j} for `{c}`: {e}"))
}

fn pointee_compat(c: &CType, j: &JType, h: &Header, jt: &JuliaTypes) -> Result<(), String> {
    if c.ptr > 0 {
        // T** and deeper: only Ptr{...} inside.
        return match j {
            JType::Apply(w, args) if w == "Ptr" && args.len() == 1 => {
                let inner = c.pointee();
                if inner.ptr == 0 && inner.base == "void" {
                    return if is_name(&args[0], VOID) { Ok(()) } else { Err(format!("expected Ptr{{Cvoid}}, got {j}")) };
                }
                // A string inside a pointer (`const char *const *dimension_names`): bytes.
                if inner.ptr == 0 && inner.base == "char" {
                    return if is_name(&args[0], CHAR) {
                        Ok(())
                    } else {
                        Err(format!("`{c}` is Ptr{{{}}}, not {j}", one_of(CHAR)))
                    };
                }
                pointee_compat(&inner, &args[0], h, jt)
            }
            _ => Err(format!("`{c}` inside a pointer must be Ptr{{...}}, got {j}")),
        };
    }
    if h.is_opaque(&c.base) {
        return match j {
            JType::Name(n) if n == &c.base && jt.structs.contains_key(n) => Ok(()),
            JType::Name(n) if n == &c.base => Err(format!("no Julia type `{n}` is declared (opaque handle)")),
            _ => Err(format!("opaque `{}` must be the Julia type of the same name, not {j}", c.base)),
        };
    }
    value_compat(c, j, Pos::Field, h, jt)
}

fn value_compat(c: &CType, j: &JType, pos: Pos, h: &Header, jt: &JuliaTypes) -> Result<(), String> {
    let b = c.base.as_str();
    if b == "void" {
        return if matches!(pos, Pos::Ret | Pos::CbRet) && is_name(j, VOID) {
            Ok(())
        } else {
            Err(format!("`void` is Cvoid (return only), not {j}"))
        };
    }
    if let Some(names) = scalar_names(b) {
        return if is_name(j, names) { Ok(()) } else { Err(format!("`{b}` is {}, not {j}", one_of(names))) };
    }
    if h.is_enum(b) {
        if is_name(j, INT32) {
            return Ok(());
        }
        if let JType::Name(n) = j {
            if n == b {
                return match jt.enums.get(n) {
                    Some(base) if INT32.contains(&base.as_str()) => Ok(()),
                    Some(base) => Err(format!("@enum {n} is based on {base}; a C enum is 32-bit")),
                    None => Err(format!("no Julia @enum `{n}` is declared")),
                };
            }
        }
        return Err(format!("enum `{b}` is {} or its Julia @enum, not {j}", one_of(INT32)));
    }
    if h.is_struct(b) {
        return match j {
            JType::Name(n) if n == b => match jt.structs.get(n) {
                Some(false) => Ok(()),
                Some(true) => Err(format!("Julia `{n}` is a mutable struct; the C struct needs an immutable one")),
                None => Err(format!("no Julia struct `{n}` is declared")),
            },
            _ => Err(format!("struct `{b}` is the Julia struct `{b}`, not {j}")),
        };
    }
    if h.is_opaque(b) {
        return Err(format!("opaque `{b}` can only be passed by pointer"));
    }
    if h.fn_type(b).is_some() {
        // A function pointer type (`shard_sink_fn`): an `@cfunction`'s `Ptr{Cvoid}`.
        return match j {
            JType::Apply(w, a) if w == "Ptr" && a.len() == 1 && is_name(&a[0], VOID) => Ok(()),
            _ => Err(format!("`{b}` is a function pointer: Ptr{{Cvoid}} (an @cfunction), not {j}")),
        };
    }
    Err(format!("no Julia mapping is known for C type `{b}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> Header {
        let mut h = Header::default();
        h.opaque.push("shard_codec".into());
        h.enums.push(crate::header::Enum { name: "shard_status".into(), members: vec![] });
        h.fn_types.push(crate::header::FnType {
            name: "shard_sink_fn".into(),
            ret: ct("int32_t", 0),
            params: vec![],
            line: 1,
        });
        h
    }
    fn ct(base: &str, ptr: usize) -> CType {
        CType { base: base.into(), ptr, is_const: false }
    }
    fn j(s: &str) -> JType {
        parse_jtype(s).unwrap()
    }

    #[test]
    fn mapping() {
        let h = hdr();
        let mut jt = JuliaTypes::default();
        jt.structs.insert("shard_codec".into(), true);
        jt.enums.insert("shard_status".into(), "Cint".into());
        let ok = |c: CType, t: &str, p: Pos| compat(&c, &j(t), p, &h, &jt).is_ok();
        assert!(ok(ct("size_t", 0), "Csize_t", Pos::Arg));
        assert!(!ok(ct("size_t", 0), "UInt64", Pos::Arg));
        assert!(ok(ct("size_t", 1), "Ref{Csize_t}", Pos::Arg));
        assert!(!ok(ct("size_t", 1), "Ref{Csize_t}", Pos::CbArg));
        assert!(ok(ct("char", 1), "Cstring", Pos::Ret));
        assert!(ok(ct("char", 1), "Ptr{UInt8}", Pos::Arg));
        assert!(!ok(ct("uint8_t", 1), "Ptr{Cvoid}", Pos::Arg));
        assert!(ok(ct("shard_codec", 2), "Ref{Ptr{LibZarrShard.shard_codec}}", Pos::Arg));
        assert!(!ok(ct("shard_codec", 1), "Ptr{Cvoid}", Pos::Arg));
        assert!(ok(ct("shard_status", 0), "shard_status", Pos::Ret));
        assert!(ok(ct("shard_status", 0), "Cint", Pos::Ret));
        assert!(!ok(ct("shard_status", 0), "Int64", Pos::Ret));
        assert!(ok(ct("void", 0), "Cvoid", Pos::Ret));
        assert!(!ok(ct("void", 0), "Cvoid", Pos::Arg));
        // A function pointer typedef: Ptr{Cvoid}, never Ref or a typed pointer.
        assert!(ok(ct("shard_sink_fn", 0), "Ptr{Cvoid}", Pos::Arg));
        assert!(!ok(ct("shard_sink_fn", 0), "Ref{Cvoid}", Pos::Arg));
        assert!(!ok(ct("shard_sink_fn", 0), "Ptr{UInt8}", Pos::Arg));
        assert!(!ok(ct("shard_sink_fn", 0), "Csize_t", Pos::Arg));
        // An enum argument of a callback (shard_problem_fn's status): 32 bits or its @enum.
        assert!(ok(ct("shard_status", 0), "Cint", Pos::CbArg));
        assert!(ok(ct("shard_status", 0), "shard_status", Pos::CbArg));
        assert!(!ok(ct("shard_status", 0), "UInt64", Pos::CbArg));
        assert!(!ok(ct("shard_status", 0), "Csize_t", Pos::CbArg));
        // An array of strings (`const char *const *`, a struct field): Ptr{Ptr{UInt8}}.
        assert!(ok(ct("char", 2), "Ptr{Ptr{UInt8}}", Pos::Field));
        assert!(ok(ct("char", 2), "Ref{Ptr{UInt8}}", Pos::Arg));
        assert!(!ok(ct("char", 2), "Ptr{Ptr{UInt64}}", Pos::Field));
        assert!(!ok(ct("char", 2), "Ptr{UInt8}", Pos::Field));
        assert!(!ok(ct("char", 2), "Ptr{Cstring}", Pos::Field));
    }
}
