//! The rules. Each check yields one `Finding`, passed or failed.

use crate::compat::{compat, parse_jtype, JType, JuliaTypes, Pos};
use crate::header::{CType, FieldType, Header, Param, Struct};
use crate::julia::{self, CFunction, Ccall, Facts, Source};
use anyhow::Result;

/// The library the ccalls must name, and the constant that must hold it.
pub const LIB: &str = "libzarrshard";

#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: &'static str,
    pub at: String,
    pub ok: bool,
    pub msg: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}] {}: {}", if self.ok { "ok  " } else { "FAIL" }, self.rule, self.at, self.msg)
    }
}

fn finding(rule: &'static str, at: impl ToString, r: Result<String, String>) -> Finding {
    match r {
        Ok(msg) => Finding { rule, at: at.to_string(), ok: true, msg },
        Err(msg) => Finding { rule, at: at.to_string(), ok: false, msg },
    }
}

/// Parse every source and run every rule against the header.
pub fn run(h: &Header, header_name: &str, sources: &[Source]) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    out.push(Finding {
        rule: "header",
        at: header_name.to_string(),
        ok: true,
        msg: format!(
            "{} functions, {} structs, {} enums, {} opaque types, {} function pointer types, {} integer #defines",
            h.functions.len(),
            h.structs.len(),
            h.enums.len(),
            h.opaque.len(),
            h.fn_types.len(),
            h.defines.len()
        ),
    });
    let mut parser = julia::parser()?;
    let mut facts = Facts::default();
    for s in sources {
        let tree = julia::parse(&mut parser, &s.text)?;
        let r = match julia::parse_error(&tree, &s.text) {
            Some((line, what)) => Err(format!("parse error at line {line} {what}")),
            None => Ok("parses without error".to_string()),
        };
        out.push(finding("parse", &s.name, r));
        julia::collect(&tree, &s.name, &s.text, &mut facts);
    }

    let mut jt = JuliaTypes::default();
    for s in &facts.structs {
        jt.structs.insert(s.name.clone(), s.mutable);
    }
    for e in &facts.enums {
        if let Some(b) = &e.base {
            jt.enums.insert(e.name.clone(), b.clone());
        }
    }
    let lib_defined = facts.consts.iter().any(|c| c.name == LIB);

    // Function pointer types some ccall calls through (the library's `shard_key_fn`).
    let mut called_through: Vec<String> = Vec::new();
    for cc in &facts.ccalls {
        let r = if cc.fnptr.is_some() {
            check_fnptr_ccall(cc, h, &jt, &facts).map(|(t, msg)| {
                called_through.push(t);
                msg
            })
        } else {
            check_ccall(cc, h, &jt, lib_defined)
        };
        out.push(finding("ccall", &cc.loc, r));
    }
    for f in &h.functions {
        let sites: Vec<String> =
            facts.ccalls.iter().filter(|c| c.symbol.as_deref() == Some(&f.name)).map(|c| c.loc.to_string()).collect();
        let r = if sites.is_empty() {
            Err(format!("{} is not wrapped by any ccall", f.name))
        } else {
            Ok(format!("{} wrapped at {}", f.name, sites.join(", ")))
        };
        out.push(finding("coverage", format!("{header_name}:{}", f.line), r));
    }
    for s in &h.structs {
        check_struct(s, h, &jt, &facts, &mut out);
    }
    for o in &h.opaque {
        let r = match facts.structs.iter().find(|s| &s.name == o) {
            Some(s) => Ok(format!("opaque {o} is the Julia type {o} ({})", s.loc)),
            None => Err(format!("no Julia type `{o}` for the opaque handle (declare `mutable struct {o} end`)")),
        };
        out.push(finding("opaque", header_name, r));
    }
    for e in &h.enums {
        out.push(check_enum(e, &facts, header_name));
    }
    for (name, v) in &h.defines {
        let r = match facts.consts.iter().find(|c| &c.name == name) {
            None => Err(format!("#define {name} {v} has no Julia const")),
            Some(c) if c.value == Some(*v) => Ok(format!("{name} = {} ({})", c.value_text, c.loc)),
            Some(c) => Err(format!("{name} is {v} in C, {} in Julia ({})", c.value_text, c.loc)),
        };
        out.push(finding("const", header_name, r));
    }
    for p in &facts.pointers {
        let r = if p.preserved.is_empty() {
            Err(format!("`{}` is not inside a GC.@preserve block", p.text))
        } else {
            match &p.root {
                None => Err(format!("`{}`: cannot tell which object it points into; preserve a variable", p.text)),
                Some(r) if p.preserved.iter().any(|v| v.contains(r)) => {
                    Ok(format!("`{}` inside GC.@preserve {r}", p.text))
                }
                Some(r) => Err(format!(
                    "`{}`: `{r}` is not among the preserved variables ({})",
                    p.text,
                    p.preserved.concat().join(", ")
                )),
            }
        };
        out.push(finding("preserve", &p.loc, r));
    }
    check_callbacks(h, &jt, &facts, header_name, &called_through, &mut out);
    for rc in &facts.raw_calls {
        out.push(finding("raw-call", &rc.loc, check_raw_call(rc, h, &facts)));
    }
    for fz in &facts.finalizers {
        out.push(finding("finalizer", &fz.loc, check_finalizer(fz, &facts)));
    }
    Ok(out)
}

/// What a finalizer must not call. `close`: another Julia object (a field of the finalized
/// one) may still be referenced elsewhere and in use, on this or another thread, and has a
/// finalizer of its own; only the object's own C handle is the finalizer's to release (the raw
/// `L.shard_*_close`/`_free`). The rest may switch tasks, which a finalizer must not do
/// (Julia manual, "Safe use of Finalizers"; `Base.finalizer`).
const FINALIZER_FORBIDDEN: &[&str] =
    &["close", "lock", "wait", "yield", "sleep", "fetch", "take!", "put!", "println", "print", "flush"];

/// A registered finalizer is a named function of the package whose methods call none of
/// `FINALIZER_FORBIDDEN`.
fn check_finalizer(fz: &julia::FinalizerUse, facts: &Facts) -> Result<String, String> {
    let Some(name) = &fz.func else {
        return Err(format!("`{}`: register a named function of the package, so that it can be checked", fz.text));
    };
    let methods: Vec<_> = facts.funcs.iter().filter(|f| &f.name == name).collect();
    if methods.is_empty() {
        return Err(format!("`{}`: {name} is not defined in the package", fz.text));
    }
    let mut bad = Vec::new();
    for m in &methods {
        for (callee, call) in &m.calls {
            if FINALIZER_FORBIDDEN.contains(&callee.as_str()) {
                bad.push(format!("{name} ({}) calls `{call}`", m.loc));
            }
        }
    }
    if bad.is_empty() {
        Ok(format!("{name}: releases only its own handle, never switches tasks"))
    } else {
        Err(format!(
            "`{}`: {}; a finalizer releases only its object's own C handle (other objects may still be in use and have finalizers of their own) and must not switch tasks",
            fz.text,
            bad.join("; ")
        ))
    }
}

fn jtype(s: &str) -> Result<JType, String> {
    parse_jtype(s).ok_or_else(|| format!("cannot read the Julia type {s:?}"))
}

fn check_ccall(cc: &Ccall, h: &Header, jt: &JuliaTypes, lib_defined: bool) -> Result<String, String> {
    if let Some(p) = &cc.problem {
        return Err(p.clone());
    }
    let sym = cc.symbol.as_deref().unwrap_or("?");
    match cc.lib.as_deref() {
        Some(LIB) if lib_defined => {}
        Some(LIB) => return Err(format!("{sym}: no `const {LIB} = ...` is defined")),
        Some(other) => return Err(format!("{sym}: calls into `{other}`, not `{LIB}`")),
        None => return Err(format!("{sym}: no library given; use ({sym}, {LIB})")),
    }
    let Some(f) = h.function(sym) else {
        return Err(format!("`{sym}` is not declared in zarrshard.h"));
    };
    let mut errs = Vec::new();
    if cc.arg_types.len() != f.params.len() {
        errs.push(format!("{} argument types, the C function takes {}", cc.arg_types.len(), f.params.len()));
    } else if cc.n_values != cc.arg_types.len() {
        errs.push(format!("{} argument types but {} values", cc.arg_types.len(), cc.n_values));
    }
    match jtype(&cc.ret) {
        Ok(j) => {
            if let Err(e) = compat(&f.ret, &j, Pos::Ret, h, jt) {
                errs.push(format!("return type: {e}"));
            }
        }
        Err(e) => errs.push(e),
    }
    for (i, (t, p)) in cc.arg_types.iter().zip(&f.params).enumerate() {
        match jtype(t) {
            Ok(j) => {
                if let Err(e) = compat(&p.ty, &j, Pos::Arg, h, jt) {
                    errs.push(format!("argument {} ({}): {e}", i + 1, p.name));
                }
            }
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        Ok(format!("{} {sym}({}) -> {}", cc.form, cc.arg_types.join(", "), cc.ret))
    } else {
        Err(format!("{sym}: {}", errs.join("; ")))
    }
}

/// The callback tables of the header: its structs with a function pointer field.
fn callback_tables(h: &Header) -> Vec<&Struct> {
    h.structs.iter().filter(|s| s.fields.iter().any(|f| matches!(f.ty, FieldType::FnPtr { .. }))).collect()
}

/// Function pointer types the library hands to the host (a parameter of a callback field or of
/// another function pointer type, as `shard_key_fn on_key` of `shard_store_callbacks.list`):
/// the host calls them (`ccall` through the pointer) instead of making an `@cfunction`.
fn library_made(h: &Header, name: &str) -> bool {
    let in_params = |ps: &[Param]| ps.iter().any(|p| p.ty.ptr == 0 && p.ty.base == name);
    h.structs.iter().any(|s| s.fields.iter().any(|f| matches!(&f.ty, FieldType::FnPtr { params, .. } if in_params(params))))
        || h.fn_types.iter().any(|t| in_params(&t.params))
}

/// `ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), ...)` inside a callback: `on_key`
/// must be a parameter of the enclosing method, which an `@cfunction` makes as a callback
/// whose C parameter at that position is a function pointer type; the ccall's return and
/// argument types are checked against that type as a header function's would be. Returns
/// the type's name (for coverage) and the message.
fn check_fnptr_ccall(cc: &Ccall, h: &Header, jt: &JuliaTypes, facts: &Facts) -> Result<(String, String), String> {
    if let Some(p) = &cc.problem {
        return Err(p.clone());
    }
    let var = cc.fnptr.as_deref().unwrap_or("?");
    let Some((func, at)) = &cc.enclosing else {
        return Err(format!("ccall through `{var}` outside a function: cannot tell its C type"));
    };
    let Some(i) = *at else {
        return Err(format!(
            "ccall through `{var}`, which is not a parameter of {func}: call only a function pointer the library passed to a callback"
        ));
    };
    let tables = callback_tables(h);
    let slots: Vec<Slot> = facts
        .cfunctions
        .iter()
        .filter(|cf| cf.callee.as_deref() == Some(func.as_str()))
        .filter_map(|cf| cfunction_field(cf).ok().and_then(|n| resolve_slot(h, &tables, &n).ok()))
        .collect();
    let Some(slot) = slots.first() else {
        return Err(format!(
            "ccall through `{var}` (parameter {} of {func}): {func} is made into no @cfunction of a callback field or function pointer type, so the C type of `{var}` is unknown",
            i + 1
        ));
    };
    let Some(param) = slot.params.get(i) else {
        return Err(format!("ccall through `{var}`: {} has no parameter {}", slot.label, i + 1));
    };
    let Some(t) = (param.ty.ptr == 0).then(|| h.fn_type(&param.ty.base)).flatten() else {
        return Err(format!(
            "ccall through `{var}`: parameter {} ({}) of {} is `{}`, not a function pointer type",
            i + 1,
            param.name,
            slot.label,
            param.ty
        ));
    };
    let mut errs = Vec::new();
    if cc.arg_types.len() != t.params.len() {
        errs.push(format!("{} argument types, {} takes {}", cc.arg_types.len(), t.name, t.params.len()));
    } else if cc.n_values != cc.arg_types.len() {
        errs.push(format!("{} argument types but {} values", cc.arg_types.len(), cc.n_values));
    }
    match jtype(&cc.ret) {
        Ok(j) => {
            if let Err(e) = compat(&t.ret, &j, Pos::Ret, h, jt) {
                errs.push(format!("return type: {e}"));
            }
        }
        Err(e) => errs.push(e),
    }
    for (k, (ty, p)) in cc.arg_types.iter().zip(&t.params).enumerate() {
        match jtype(ty) {
            Ok(j) => {
                if let Err(e) = compat(&p.ty, &j, Pos::Arg, h, jt) {
                    errs.push(format!("argument {} ({}): {e}", k + 1, p.name));
                }
            }
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        Ok((
            t.name.clone(),
            format!(
                "ccall through {var} ({func}'s parameter {}, {}'s `{}`: {}) ({}) -> {}",
                i + 1,
                slot.label,
                param.name,
                t,
                cc.arg_types.join(", "),
                cc.ret
            ),
        ))
    } else {
        Err(format!("ccall through {var} (a {}): {}", t.name, errs.join("; ")))
    }
}

/// A call into the raw layer has the wrapper's arity, and a status it returns is not dropped.
fn check_raw_call(rc: &julia::RawCall, h: &Header, facts: &Facts) -> Result<String, String> {
    let methods: Vec<_> = facts.funcs.iter().filter(|f| f.name == rc.name).collect();
    if methods.is_empty() {
        // Not a function: a type, constant or enum value of the raw layer.
        let known = facts.structs.iter().any(|s| s.name == rc.name) || facts.consts.iter().any(|c| c.name == rc.name);
        return if known { Ok(format!("{} (a type)", rc.name)) } else { Err(format!("the raw layer defines no `{}`", rc.name)) };
    }
    if !rc.splat && !methods.iter().any(|m| m.params.len() == rc.n_args) {
        let arities: Vec<String> = methods.iter().map(|m| m.params.len().to_string()).collect();
        return Err(format!("{}: called with {} arguments, defined with {}", rc.name, rc.n_args, arities.join(" or ")));
    }
    let returns_status = h.function(&rc.name).is_some_and(|f| h.is_enum(&f.ret.base) && f.ret.ptr == 0);
    if returns_status {
        if let Some(ctx) = &rc.discarded_in {
            return Err(format!("{}: the shard_status it returns is thrown away (a statement in {ctx}); use @check", rc.name));
        }
    }
    Ok(format!("{}: {} arguments{}", rc.name, rc.n_args, if returns_status { ", status used" } else { "" }))
}

fn check_struct(s: &Struct, h: &Header, jt: &JuliaTypes, facts: &Facts, out: &mut Vec<Finding>) {
    let defs: Vec<_> = facts.structs.iter().filter(|d| d.name == s.name).collect();
    if defs.is_empty() {
        out.push(finding("struct", "-", Err(format!("no Julia struct `{}` mirrors the C struct", s.name))));
        return;
    }
    for d in defs {
        let mut errs = Vec::new();
        if d.mutable {
            errs.push("is a mutable struct (the C layout needs an immutable one)".to_string());
        }
        let names: Vec<&str> = d.fields.iter().map(|f| f.0.as_str()).collect();
        let want: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        if names != want {
            errs.push(format!("fields are ({}), the C struct has ({})", names.join(", "), want.join(", ")));
        } else {
            for (cf, (name, ty)) in s.fields.iter().zip(&d.fields) {
                let Some(ty) = ty else {
                    errs.push(format!("field {name} has no type"));
                    continue;
                };
                let r = jtype(ty).and_then(|j| match &cf.ty {
                    FieldType::Value(c) => compat(c, &j, Pos::Field, h, jt),
                    FieldType::FnPtr { .. } => match &j {
                        JType::Apply(w, a) if w == "Ptr" && a.len() == 1 && matches!(&a[0], JType::Name(n) if n == "Cvoid" || n == "Nothing") => Ok(()),
                        _ => Err(format!("a function pointer is Ptr{{Cvoid}}, not {j}")),
                    },
                });
                if let Err(e) = r {
                    errs.push(format!("field {name} (`{}`): {e}", cf.ty));
                }
            }
        }
        let r = if errs.is_empty() {
            Ok(format!("{}: {} fields match in order and type", s.name, s.fields.len()))
        } else {
            Err(format!("{}: {}", s.name, errs.join("; ")))
        };
        out.push(finding("struct", &d.loc, r));
    }
}

fn check_enum(e: &crate::header::Enum, facts: &Facts, header_name: &str) -> Finding {
    let Some(d) = facts.enums.iter().find(|d| d.name == e.name) else {
        return finding("enum", header_name, Err(format!("no Julia @enum {}", e.name)));
    };
    let mut errs = Vec::new();
    match d.base.as_deref() {
        Some("Cint" | "Int32" | "Cuint" | "UInt32") => {}
        other => errs.push(format!("base type {} is not 32-bit", other.unwrap_or("(none: Int32 by default, name it)"))),
    }
    let want: Vec<(String, Option<i64>)> = e.members.iter().map(|(n, v)| (n.clone(), Some(*v))).collect();
    if d.members != want {
        let show = |m: &[(String, Option<i64>)]| {
            m.iter().map(|(n, v)| format!("{n}={}", v.map_or("?".into(), |v| v.to_string()))).collect::<Vec<_>>().join(" ")
        };
        errs.push(format!("members are [{}], C has [{}]", show(&d.members), show(&want)));
    }
    let r = if errs.is_empty() {
        Ok(format!("@enum {}: {} members with the C values", e.name, e.members.len()))
    } else {
        Err(format!("@enum {}: {}", e.name, errs.join("; ")))
    };
    finding("enum", &d.loc, r)
}

/// Aliases Julia resolves to one type (for comparing a method's annotations with the
/// `@cfunction` signature; platform-dependent ones like `Cchar`, `UInt` stay as written).
fn canonical(j: &JType) -> JType {
    match j {
        JType::Name(n) => JType::Name(
            match n.as_str() {
                "Cint" => "Int32",
                "Cuint" => "UInt32",
                "Cvoid" => "Nothing",
                "Clonglong" => "Int64",
                "Culonglong" => "UInt64",
                "Cuchar" => "UInt8",
                "Cshort" => "Int16",
                "Cushort" => "UInt16",
                "Cfloat" => "Float32",
                "Cdouble" => "Float64",
                "Csize_t" => "UInt",
                "Cssize_t" => "Int",
                other => other,
            }
            .to_string(),
        ),
        JType::Apply(n, a) => JType::Apply(n.clone(), a.iter().map(canonical).collect()),
    }
}

/// `CB_READ_SUFFIX` -> `read_suffix`; `cb_read_suffix` / `_cb_read_suffix` -> `read_suffix`.
fn field_from_target(t: &str) -> Option<String> {
    t.strip_prefix("CB_").map(|s| s.to_ascii_lowercase())
}
fn field_from_callee(c: &str) -> Option<String> {
    c.trim_start_matches('_').strip_prefix("cb_").map(|s| s.to_string())
}

fn cfunction_field(cf: &CFunction) -> Result<String, String> {
    let a = cf.target.as_deref().and_then(field_from_target);
    let b = cf.callee.as_deref().and_then(field_from_callee);
    match (a, b) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "stored in {} (field {a}) but the callback is {} (field {b})",
            cf.target.as_deref().unwrap_or("?"),
            cf.callee.as_deref().unwrap_or("?")
        )),
        (Some(a), _) => Ok(a),
        (None, Some(b)) => Ok(b),
        (None, None) => Err("cannot tell which callback field this is: store it in CB_<FIELD> or name the function cb_<field>".into()),
    }
}

/// The kind of a callback table: `shard_store_callbacks` -> `store`.
fn table_kind(name: &str) -> &str {
    name.trim_start_matches("shard_").trim_end_matches("_callbacks")
}

/// The prefix of a table's `CB_<PREFIX><FIELD>` / `cb_<prefix><field>` names: none for the
/// shard I/O table (`CB_READ`), the kind otherwise (`CB_STORE_OPEN_OBJECT`).
fn table_prefix(name: &str) -> String {
    match table_kind(name) {
        "io" => String::new(),
        kind => format!("{kind}_"),
    }
}

/// The table and field a callback name (`store_open_object`, `read`) belongs to: the tables
/// with a prefix first, so `store_destroy` is never taken for an I/O field.
fn resolve_field<'a>(tables: &[&'a Struct], name: &str) -> Option<(&'a Struct, String)> {
    let mut ordered: Vec<&&Struct> = tables.iter().collect();
    ordered.sort_by_key(|t| table_prefix(&t.name).is_empty());
    ordered.into_iter().find_map(|t| {
        let field = name.strip_prefix(table_prefix(&t.name).as_str())?;
        t.fields.iter().any(|f| f.name == field).then(|| (*t, field.to_string()))
    })
}

/// What an `@cfunction` is made as: a callback field of a table (`shard_io_callbacks.write`) or
/// a function pointer type the host passes to a function (`shard_sink_fn`).
struct Slot<'a> {
    /// `shard_io_callbacks.write` / `shard_sink_fn`: what coverage is counted by.
    label: String,
    /// The C type, for messages: `int32_t (*)(void *, ...)`.
    shown: String,
    ret: &'a CType,
    params: &'a [Param],
}

/// The slot a callback name (`write`, `store_open_object`, `sink`) stands for: a table's
/// field first, else the function pointer type `shard_<name>_fn`.
fn resolve_slot<'a>(h: &'a Header, tables: &[&'a Struct], name: &str) -> Result<Slot<'a>, String> {
    if let Some((table, field)) = resolve_field(tables, name) {
        let fd = table.fields.iter().find(|f| f.name == field).expect("resolved");
        let FieldType::FnPtr { ret, params } = &fd.ty else {
            return Err(format!("{}.{field} is not a function pointer", table.name));
        };
        return Ok(Slot { label: format!("{}.{field}", table.name), shown: fd.ty.to_string(), ret, params });
    }
    let typedef = format!("shard_{name}_fn");
    if let Some(t) = h.fn_type(&typedef) {
        return Ok(Slot { label: t.name.clone(), shown: t.to_string(), ret: &t.ret, params: &t.params });
    }
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    Err(format!("{} has no field `{name}` and the header no function pointer type `{typedef}`", names.join(" / ")))
}

fn check_callbacks(
    h: &Header,
    jt: &JuliaTypes,
    facts: &Facts,
    header_name: &str,
    called_through: &[String],
    out: &mut Vec<Finding>,
) {
    let tables = callback_tables(h);
    if tables.is_empty() && h.fn_types.is_empty() {
        return;
    }
    let mut covered: Vec<String> = Vec::new();
    for cf in &facts.cfunctions {
        // Signature against the C field or function pointer type.
        let sig = (|| -> Result<(String, String), String> {
            if let Some(p) = &cf.problem {
                return Err(p.clone());
            }
            let name = cfunction_field(cf)?;
            let slot = resolve_slot(h, &tables, &name)?;
            let mut errs = Vec::new();
            if cf.arg_types.len() != slot.params.len() {
                errs.push(format!("{} argument types, `{}` takes {}", cf.arg_types.len(), slot.shown, slot.params.len()));
            } else {
                for (i, (t, p)) in cf.arg_types.iter().zip(slot.params).enumerate() {
                    if let Err(e) = jtype(t).and_then(|j| compat(&p.ty, &j, Pos::CbArg, h, jt)) {
                        errs.push(format!("argument {} ({}): {e}", i + 1, p.name));
                    }
                }
            }
            if let Err(e) = jtype(&cf.ret).and_then(|j| compat(slot.ret, &j, Pos::CbRet, h, jt)) {
                errs.push(format!("return type: {e}"));
            }
            // The Julia method the pointer is made from must take exactly these types.
            let callee = cf.callee.clone().unwrap_or_default();
            let methods: Vec<_> = facts.funcs.iter().filter(|f| f.name == callee && f.params.len() == cf.arg_types.len()).collect();
            if methods.is_empty() {
                errs.push(format!("no method {callee} with {} arguments is defined", cf.arg_types.len()));
            }
            for m in &methods {
                for (i, (pt, ct)) in m.params.iter().zip(&cf.arg_types).enumerate() {
                    if let (Some(pt), Ok(cj)) = (pt, jtype(ct)) {
                        if jtype(pt).map(|j| canonical(&j)) != Ok(canonical(&cj)) {
                            errs.push(format!("{callee} ({}) declares argument {} as {pt}, the @cfunction says {ct}", m.loc, i + 1));
                        }
                    }
                }
                if let (Some(r), Ok(cr)) = (&m.ret, jtype(&cf.ret)) {
                    if jtype(r).map(|j| canonical(&j)) != Ok(canonical(&cr)) {
                        errs.push(format!("{callee} ({}) returns {r}, the @cfunction says {}", m.loc, cf.ret));
                    }
                }
            }
            if errs.is_empty() {
                Ok((slot.label.clone(), format!("{callee} as {}: {}", slot.label, slot.shown)))
            } else {
                Err(format!("{callee} as {}: {}", slot.label, errs.join("; ")))
            }
        })();
        match sig {
            Ok((label, msg)) => {
                covered.push(label);
                out.push(finding("cfunction", &cf.loc, Ok(msg)));
            }
            Err(e) => out.push(finding("cfunction", &cf.loc, Err(e))),
        }
        // The callback must catch every exception.
        if let Some(callee) = &cf.callee {
            let methods: Vec<_> = facts.funcs.iter().filter(|f| &f.name == callee).collect();
            let r = if methods.is_empty() {
                Err(format!("{callee} is not defined in the package"))
            } else {
                let bad: Vec<String> = methods
                    .iter()
                    .filter_map(|m| m.catches_all.as_ref().err().map(|e| format!("{} ({}): {e}", callee, m.loc)))
                    .collect();
                if bad.is_empty() {
                    Ok(format!("{callee}: the whole body is try/catch and the catch does not throw"))
                } else {
                    Err(bad.join("; "))
                }
            };
            out.push(finding("callback", &cf.loc, r));
        }
    }
    for table in &tables {
        for f in &table.fields {
            if let FieldType::FnPtr { .. } = f.ty {
                let label = format!("{}.{}", table.name, f.name);
                let r = if covered.contains(&label) {
                    Ok(format!("{label} has a matching @cfunction"))
                } else {
                    Err(format!("{label} has no matching @cfunction"))
                };
                out.push(finding("callback-coverage", header_name, r));
            }
        }
        if !facts.ctor_calls.iter().any(|c| c.table == table.name) {
            out.push(finding("wiring", "-", Err(format!("{} is never constructed", table.name))));
        }
    }
    for t in &h.fn_types {
        // The library makes `shard_key_fn` and the host calls it: some ccall must call through
        // one (checked against its type above). The host makes the others (`@cfunction`).
        let r = if library_made(h, &t.name) {
            if called_through.contains(&t.name) {
                Ok(format!("{} (the library's, passed to a callback) is called through by a checked ccall", t.name))
            } else {
                Err(format!("{} (the library's, passed to a callback) is called by no ccall through the pointer", t.name))
            }
        } else if covered.contains(&t.name) {
            Ok(format!("{} has a matching @cfunction", t.name))
        } else {
            Err(format!("{} has no matching @cfunction", t.name))
        };
        out.push(finding("callback-coverage", format!("{header_name}:{}", t.line), r));
    }
    check_fn_arguments(h, facts, header_name, out);
    // Wiring: each constructor argument goes to the right field.
    for c in &facts.ctor_calls {
        let r = (|| {
            let Some(table) = tables.iter().find(|t| t.name == c.table) else {
                return Err(format!("{} is not a callback table of the header", c.table));
            };
            if c.args.len() != table.fields.len() {
                return Err(format!("{} arguments, {} has {} fields", c.args.len(), table.name, table.fields.len()));
            }
            let prefix = table_prefix(&table.name).to_ascii_uppercase();
            let version = format!("SHARD_{}_VERSION", table_kind(&table.name).to_ascii_uppercase());
            let mut errs = Vec::new();
            for (f, a) in table.fields.iter().zip(&c.args) {
                let tokens: Vec<&str> =
                    a.split(|ch: char| !(ch.is_alphanumeric() || ch == '_')).filter(|t| !t.is_empty()).collect();
                match f.ty {
                    FieldType::FnPtr { .. } => {
                        let want = format!("CB_{prefix}{}", f.name.to_ascii_uppercase());
                        let cbs: Vec<&&str> = tokens.iter().filter(|t| t.starts_with("CB_")).collect();
                        let ok = a.trim() == "C_NULL" || (cbs.iter().all(|t| **t == want) && !cbs.is_empty());
                        if !ok {
                            errs.push(format!("field {} gets `{a}`, expected {want} (or C_NULL)", f.name));
                        }
                    }
                    FieldType::Value(_) if f.name == "version" => {
                        if !tokens.contains(&version.as_str()) {
                            errs.push(format!("field version gets `{a}`, expected {version}"));
                        }
                    }
                    FieldType::Value(_) => {}
                }
            }
            if errs.is_empty() {
                Ok(format!("{}(...): every callback goes to its own field", table.name))
            } else {
                Err(errs.join("; "))
            }
        })();
        out.push(finding("wiring", &c.loc, r));
    }
}

/// The `@cfunction` a raw call passes for a function pointer type: `CB_<NAME>[]` for
/// `shard_<name>_fn` (`CB_SINK[]` for `shard_sink_fn`), whose signature the cfunction rule
/// checked against that type. Another table's callback there (say `CB_WRITE[]`) would be
/// called with the wrong arguments. Every function pointer type must be passed somewhere.
fn check_fn_arguments(h: &Header, facts: &Facts, header_name: &str, out: &mut Vec<Finding>) {
    let mut passed: Vec<&str> = Vec::new();
    for rc in &facts.raw_calls {
        let Some(f) = h.function(&rc.name) else { continue };
        if rc.splat || rc.args.len() != f.params.len() {
            continue; // the raw-call rule reports the arity
        }
        for (i, (p, a)) in f.params.iter().zip(&rc.args).enumerate() {
            let Some(t) = (p.ty.ptr == 0).then(|| h.fn_type(&p.ty.base)).flatten() else { continue };
            let name = t.name.trim_start_matches("shard_").trim_end_matches("_fn");
            let want = format!("CB_{}", name.to_ascii_uppercase());
            let tokens: Vec<&str> =
                a.split(|ch: char| !(ch.is_alphanumeric() || ch == '_')).filter(|t| !t.is_empty()).collect();
            let cbs: Vec<&&str> = tokens.iter().filter(|t| t.starts_with("CB_")).collect();
            let r = if !cbs.is_empty() && cbs.iter().all(|t| **t == want) {
                passed.push(&t.name);
                Ok(format!("{}: argument {} ({}) is {want}[] ({})", rc.name, i + 1, p.name, t.name))
            } else {
                Err(format!(
                    "{}: argument {} ({}) gets `{a}`, expected {want}[] (the @cfunction made as {})",
                    rc.name,
                    i + 1,
                    p.name,
                    t.name
                ))
            };
            out.push(finding("wiring", &rc.loc, r));
        }
    }
    for t in &h.fn_types {
        if !passed.contains(&t.name.as_str()) && h.functions.iter().any(|f| f.params.iter().any(|p| p.ty.base == t.name)) {
            let r = Err(format!("no call of the raw layer passes a {} (CB_…[])", t.name));
            out.push(finding("wiring", format!("{header_name}:{}", t.line), r));
        }
    }
}
