//! The Julia side: what the package's `.jl` files declare and call, from tree-sitter-julia.

use crate::header::parse_int;
use crate::ts::{has_error, line_of, named_children, text};
use anyhow::{Context, Result};
use std::fmt;
use tree_sitter::{Node, Parser, Tree};

#[derive(Clone, Debug)]
pub struct Loc {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

pub struct Source {
    pub name: String,
    pub text: String,
}

/// One `ccall(...)` or `@ccall ...` site.
#[derive(Debug)]
pub struct Ccall {
    pub loc: Loc,
    pub form: &'static str,
    pub symbol: Option<String>,
    pub lib: Option<String>,
    pub ret: String,
    pub arg_types: Vec<String>,
    pub n_values: usize,
    /// Something that makes the site uncheckable (reported as a failure).
    pub problem: Option<String>,
    /// A call through a function pointer (`ccall(on_key, Cvoid, (...), ...)`): the variable.
    pub fnptr: Option<String>,
    /// The function definition the call is in (its name), and the position of `fnptr` among
    /// its positional parameters, when it is one of them.
    pub enclosing: Option<(String, Option<usize>)>,
}

#[derive(Debug)]
pub struct CFunction {
    pub loc: Loc,
    pub callee: Option<String>,
    /// Root identifier of the assignment target (`CB_READ` in `CB_READ[] = @cfunction(...)`).
    pub target: Option<String>,
    pub ret: String,
    pub arg_types: Vec<String>,
    pub problem: Option<String>,
}

#[derive(Debug)]
pub struct PointerUse {
    pub loc: Loc,
    pub text: String,
    /// Root identifier of the first argument (`A` in `pointer(A)`, `s` in `pointer(s.buf)`).
    pub root: Option<String>,
    /// Variables preserved by the enclosing `GC.@preserve` blocks (the call is in their body).
    pub preserved: Vec<Vec<String>>,
}

#[derive(Debug)]
pub struct StructDef {
    pub loc: Loc,
    pub name: String,
    pub mutable: bool,
    pub fields: Vec<(String, Option<String>)>,
}

#[derive(Debug)]
pub struct EnumDef {
    pub loc: Loc,
    pub name: String,
    pub base: Option<String>,
    pub members: Vec<(String, Option<i64>)>,
}

#[derive(Debug)]
pub struct ConstDef {
    pub loc: Loc,
    pub name: String,
    pub value_text: String,
    pub value: Option<i64>,
}

#[derive(Debug)]
pub struct FuncDef {
    pub loc: Loc,
    pub name: String,
    /// Positional parameters: their type annotation, if any.
    pub params: Vec<Option<String>>,
    pub ret: Option<String>,
    /// Ok when the whole body is one `try ... catch` whose catch clause does not throw.
    pub catches_all: Result<(), String>,
    /// The functions the body calls (last name segment, e.g. `close` for `Base.close(x)`),
    /// with the text of each call, in order.
    pub calls: Vec<(String, String)>,
}

/// A `finalizer(f, x)` registration.
#[derive(Debug)]
pub struct FinalizerUse {
    pub loc: Loc,
    /// The function registered, when it is named (`_close_handle!`); None for a lambda or
    /// anything else the checker cannot follow.
    pub func: Option<String>,
    pub text: String,
}

/// A call into the raw layer: `L.name(...)` / `LibZarrShard.name(...)`.
#[derive(Debug)]
pub struct RawCall {
    pub loc: Loc,
    pub name: String,
    pub n_args: usize,
    /// The text of each argument, in order.
    pub args: Vec<String>,
    pub splat: bool,
    /// The syntactic context: `None` when the call's value is used (assigned, compared,
    /// returned, passed on, checked by a macro such as `@check`), else the statement kind.
    pub discarded_in: Option<String>,
}

#[derive(Debug)]
pub struct CtorCall {
    pub loc: Loc,
    /// The callback table constructed (`shard_io_callbacks`, `shard_store_callbacks`).
    pub table: String,
    pub args: Vec<String>,
}

#[derive(Default, Debug)]
pub struct Facts {
    pub ccalls: Vec<Ccall>,
    pub cfunctions: Vec<CFunction>,
    pub pointers: Vec<PointerUse>,
    pub structs: Vec<StructDef>,
    pub enums: Vec<EnumDef>,
    pub consts: Vec<ConstDef>,
    pub funcs: Vec<FuncDef>,
    pub ctor_calls: Vec<CtorCall>,
    pub raw_calls: Vec<RawCall>,
    pub finalizers: Vec<FinalizerUse>,
}

pub fn parser() -> Result<Parser> {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_julia::LANGUAGE.into())?;
    Ok(p)
}

pub fn parse(p: &mut Parser, src: &str) -> Result<Tree> {
    p.parse(src, None).context("tree-sitter-julia returned no tree")
}

/// The first parse error of a file, as (line, snippet).
pub fn parse_error(tree: &Tree, src: &str) -> Option<(usize, String)> {
    has_error(tree.root_node()).map(|n| {
        let t: String = text(n, src).chars().take(40).collect();
        let what = if n.is_missing() { format!("missing {}", n.kind()) } else { format!("near {t:?}") };
        (line_of(n), what)
    })
}

/// Last segment of a dotted name: `Base.GC` -> `GC`.
fn last_segment(s: &str) -> &str {
    s.rsplit('.').next().unwrap_or(s)
}

/// The leftmost identifier of `a`, `a.b.c`, `a[i]`, `a.b[i].c`.
fn root_identifier(n: Node, src: &str) -> Option<String> {
    match n.kind() {
        "identifier" => Some(text(n, src).to_string()),
        "field_expression" | "index_expression" => root_identifier(n.named_child(0)?, src),
        _ => None,
    }
}

fn macro_name(n: Node, src: &str) -> Option<String> {
    let mut c = n.walk();
    let m = n.children(&mut c).find(|k| k.kind() == "macro_identifier")?;
    Some(text(m, src).to_string())
}

/// `GC.@preserve` (or `Base.GC.@preserve`).
fn is_preserve(n: Node, src: &str) -> bool {
    n.kind() == "macrocall_expression" && {
        let t = text(n, src);
        t.starts_with("GC.@preserve") || t.starts_with("Base.GC.@preserve")
    }
}

/// The arguments of a macro call, either form (`@m(a, b)` or `@m a b`).
fn macro_args(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    let list = n.children(&mut c).find(|k| k.kind() == "macro_argument_list" || k.kind() == "argument_list");
    list.map(named_children).unwrap_or_default()
}

fn call_args(n: Node) -> Vec<Node> {
    n.child_by_field_name("arguments")
        .or_else(|| {
            let mut c = n.walk();
            let found = n.children(&mut c).find(|k| k.kind() == "argument_list");
            found
        })
        .map(named_children)
        .unwrap_or_default()
}

fn callee(n: Node) -> Option<Node> {
    n.named_child(0)
}

pub fn collect(tree: &Tree, file: &str, src: &str, facts: &mut Facts) {
    walk(tree.root_node(), file, src, facts);
}

fn loc(n: Node, file: &str) -> Loc {
    Loc { file: file.to_string(), line: line_of(n) }
}

fn walk(n: Node, file: &str, src: &str, f: &mut Facts) {
    match n.kind() {
        "call_expression" => {
            if let Some(c) = callee(n) {
                let name = text(c, src);
                match name {
                    "ccall" => f.ccalls.push(ccall(n, file, src)),
                    "finalizer" | "Base.finalizer" => {
                        let args = call_args(n);
                        let func = args
                            .first()
                            .filter(|a| matches!(a.kind(), "identifier" | "field_expression"))
                            .map(|a| last_segment(text(*a, src)).to_string());
                        f.finalizers.push(FinalizerUse { loc: loc(n, file), func, text: text(n, src).to_string() });
                    }
                    "pointer" | "pointer_from_objref" | "Base.pointer" | "Base.pointer_from_objref" => {
                        f.pointers.push(pointer_use(n, file, src))
                    }
                    _ => {}
                }
                if c.kind() == "field_expression"
                    && (name.starts_with("L.") || name.starts_with("LibZarrShard.") || name.starts_with("ZarrShard.LibZarrShard."))
                {
                    f.raw_calls.push(raw_call(n, last_segment(name), file, src));
                }
                let table = last_segment(name);
                if table.starts_with("shard_") && table.ends_with("_callbacks") && c.kind() != "parametrized_type_expression" {
                    f.ctor_calls.push(CtorCall {
                        loc: loc(n, file),
                        table: table.to_string(),
                        args: call_args(n).iter().map(|a| text(*a, src).to_string()).collect(),
                    });
                }
            }
        }
        "macrocall_expression" => match macro_name(n, src).as_deref() {
            Some("@ccall") => f.ccalls.push(at_ccall(n, file, src)),
            Some("@cfunction") => f.cfunctions.push(cfunction(n, file, src)),
            Some("@enum") => f.enums.push(enum_def(n, file, src)),
            _ => {}
        },
        "struct_definition" => f.structs.push(struct_def(n, file, src)),
        "const_statement" => {
            if let Some(c) = const_def(n, file, src) {
                f.consts.push(c);
            }
        }
        "function_definition" => {
            if let Some(d) = long_function(n, file, src) {
                f.funcs.push(d);
            }
        }
        "assignment" => {
            if let Some(d) = short_function(n, file, src) {
                f.funcs.push(d);
            }
        }
        _ => {}
    }
    let mut c = n.walk();
    for child in n.named_children(&mut c) {
        walk(child, file, src, f);
    }
}

/// Statement positions: a call whose parent is one of these throws its value away.
const STATEMENT_PARENTS: &[&str] = &[
    "source_file",
    "module_definition",
    "function_definition",
    "compound_statement",
    "if_statement",
    "elseif_clause",
    "else_clause",
    "for_statement",
    "while_statement",
    "try_statement",
    "catch_clause",
    "finally_clause",
    "do_clause",
    "let_statement",
];

fn raw_call(n: Node, name: &str, file: &str, src: &str) -> RawCall {
    let args = call_args(n);
    let parent = n.parent().map(|p| p.kind()).unwrap_or("source_file");
    RawCall {
        loc: loc(n, file),
        name: name.to_string(),
        n_args: args.len(),
        args: args.iter().map(|a| text(*a, src).to_string()).collect(),
        splat: args.iter().any(|a| a.kind() == "splat_expression"),
        discarded_in: STATEMENT_PARENTS.contains(&parent).then(|| parent.to_string()),
    }
}

fn ccall(n: Node, file: &str, src: &str) -> Ccall {
    let args = call_args(n);
    let mut cc = Ccall {
        loc: loc(n, file),
        form: "ccall",
        symbol: None,
        lib: None,
        ret: String::new(),
        arg_types: vec![],
        n_values: 0,
        problem: None,
        fnptr: None,
        enclosing: None,
    };
    if args.len() < 3 {
        cc.problem = Some(format!("ccall needs (symbol, library), return type, argument types; got {} arguments", args.len()));
        return cc;
    }
    let sym_of = |q: Node| -> Option<String> {
        match q.kind() {
            "quote_expression" => q.named_child(0).filter(|i| i.kind() == "identifier").map(|i| text(i, src).to_string()),
            "string_literal" => Some(text(q, src).trim_matches('"').to_string()),
            _ => None,
        }
    };
    let target = args[0];
    match target.kind() {
        "tuple_expression" => {
            let parts = named_children(target);
            if parts.len() == 2 {
                cc.symbol = sym_of(parts[0]);
                cc.lib = Some(text(parts[1], src).to_string());
            }
        }
        // A function pointer held by a variable: checked against the C type of the callback
        // parameter it is (e.g. the `shard_key_fn on_key` a store's `list` receives).
        "identifier" => {
            let name = text(target, src).to_string();
            cc.enclosing = enclosing_function(n, src).map(|(f, params)| {
                let at = params.iter().position(|p| p.as_deref() == Some(name.as_str()));
                (f, at)
            });
            cc.fnptr = Some(name);
        }
        _ => cc.symbol = sym_of(target),
    }
    if cc.symbol.is_none() && cc.fnptr.is_none() {
        cc.problem = Some(format!("cannot read the target {:?}: use (:symbol, libzarrshard)", text(target, src)));
    }
    cc.ret = text(args[1], src).to_string();
    if args[2].kind() == "tuple_expression" {
        cc.arg_types = named_children(args[2]).iter().map(|t| text(*t, src).to_string()).collect();
    } else {
        cc.problem = Some(format!("argument types {:?} are not a literal tuple", text(args[2], src)));
    }
    let values = &args[3..];
    if values.iter().any(|v| v.kind() == "splat_expression") {
        cc.problem = Some("splatted ccall arguments cannot be counted".into());
    }
    cc.n_values = values.len();
    cc
}

fn at_ccall(n: Node, file: &str, src: &str) -> Ccall {
    let mut cc = Ccall {
        loc: loc(n, file),
        form: "@ccall",
        symbol: None,
        lib: None,
        ret: String::new(),
        arg_types: vec![],
        n_values: 0,
        problem: None,
        fnptr: None,
        enclosing: None,
    };
    let args = macro_args(n);
    let Some(typed) = args.first().filter(|a| a.kind() == "typed_expression") else {
        cc.problem = Some("@ccall needs `lib.f(args...)::Ret`".into());
        return cc;
    };
    let parts = named_children(*typed);
    let (call, ret) = (parts[0], parts.last().copied().unwrap_or(parts[0]));
    cc.ret = text(ret, src).to_string();
    if call.kind() != "call_expression" {
        cc.problem = Some("@ccall needs `lib.f(args...)::Ret`".into());
        return cc;
    }
    let f = callee(call).unwrap_or(call);
    match f.kind() {
        "field_expression" => {
            let p = named_children(f);
            cc.lib = Some(text(p[0], src).to_string());
            cc.symbol = Some(text(*p.last().unwrap(), src).to_string());
        }
        "identifier" => cc.symbol = Some(text(f, src).to_string()),
        _ => cc.problem = Some(format!("cannot read the @ccall target {:?}", text(f, src))),
    }
    let mut c = call.walk();
    let list = call.children(&mut c).find(|k| k.kind() == "argument_list");
    if let Some(list) = list {
        let mut c2 = list.walk();
        if list.children(&mut c2).any(|k| k.kind() == ";") {
            cc.problem = Some("varargs @ccall is not checked".into());
        }
        for a in named_children(list) {
            if a.kind() == "typed_expression" {
                let p = named_children(a);
                cc.arg_types.push(text(*p.last().unwrap(), src).to_string());
            } else {
                cc.problem = Some(format!("@ccall argument {:?} has no ::Type", text(a, src)));
            }
        }
    }
    cc.n_values = cc.arg_types.len();
    cc
}

fn cfunction(n: Node, file: &str, src: &str) -> CFunction {
    let args = macro_args(n);
    let mut cf = CFunction {
        loc: loc(n, file),
        callee: None,
        target: None,
        ret: String::new(),
        arg_types: vec![],
        problem: None,
    };
    if let Some(p) = n.parent() {
        if p.kind() == "assignment" && p.named_child(0).map(|l| l.id()) != Some(n.id()) {
            cf.target = p.named_child(0).and_then(|l| root_identifier(l, src));
        }
    }
    if args.len() != 3 {
        cf.problem = Some(format!("@cfunction needs (f, Ret, (Args...,)); got {} arguments", args.len()));
        return cf;
    }
    match args[0].kind() {
        "identifier" => cf.callee = Some(text(args[0], src).to_string()),
        _ => cf.problem = Some(format!("callback {:?} is not a named function (a closure cannot be checked)", text(args[0], src))),
    }
    cf.ret = text(args[1], src).to_string();
    if args[2].kind() == "tuple_expression" {
        cf.arg_types = named_children(args[2]).iter().map(|t| text(*t, src).to_string()).collect();
    } else {
        cf.problem = Some(format!("argument types {:?} are not a literal tuple", text(args[2], src)));
    }
    cf
}

fn pointer_use(n: Node, file: &str, src: &str) -> PointerUse {
    let root = call_args(n).first().and_then(|a| root_identifier(*a, src));
    let mut preserved = Vec::new();
    let mut cur = n.parent();
    while let Some(a) = cur {
        if is_preserve(a, src) {
            let args = macro_args(a);
            if let Some(body) = args.last() {
                let inside = body.start_byte() <= n.start_byte() && n.end_byte() <= body.end_byte();
                if inside {
                    let vars = args[..args.len() - 1]
                        .iter()
                        .filter(|v| v.kind() == "identifier")
                        .map(|v| text(*v, src).to_string())
                        .collect();
                    preserved.push(vars);
                }
            }
        }
        cur = a.parent();
    }
    PointerUse { loc: loc(n, file), text: text(n, src).to_string(), root, preserved }
}

fn struct_def(n: Node, file: &str, src: &str) -> StructDef {
    let mut c = n.walk();
    let mutable = n.children(&mut c).any(|k| k.kind() == "mutable");
    let mut name = String::new();
    let mut fields = Vec::new();
    for k in named_children(n) {
        match k.kind() {
            "type_head" => {
                let head = text(k, src);
                name = head
                    .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                    .find(|s| !s.is_empty())
                    .unwrap_or("")
                    .to_string();
            }
            "typed_expression" => {
                let p = named_children(k);
                fields.push((text(p[0], src).to_string(), Some(text(*p.last().unwrap(), src).to_string())));
            }
            "identifier" => fields.push((text(k, src).to_string(), None)),
            _ => {}
        }
    }
    StructDef { loc: loc(n, file), name, mutable, fields }
}

fn int_value(n: Node, src: &str) -> Option<i64> {
    match n.kind() {
        "integer_literal" => parse_int(text(n, src)),
        "call_expression" => {
            let a = call_args(n);
            (a.len() == 1).then(|| int_value(a[0], src)).flatten()
        }
        "unary_expression" => {
            let t = text(n, src);
            t.strip_prefix('-').and_then(parse_int).map(|v| -v)
        }
        _ => None,
    }
}

fn enum_def(n: Node, file: &str, src: &str) -> EnumDef {
    let args = macro_args(n);
    let mut e = EnumDef { loc: loc(n, file), name: String::new(), base: None, members: vec![] };
    let Some(first) = args.first() else { return e };
    if first.kind() == "typed_expression" {
        let p = named_children(*first);
        e.name = text(p[0], src).to_string();
        e.base = Some(text(*p.last().unwrap(), src).to_string());
    } else {
        e.name = text(*first, src).to_string();
    }
    let mut items = Vec::new();
    for a in &args[1..] {
        if a.kind() == "compound_statement" {
            items.extend(named_children(*a));
        } else {
            items.push(*a);
        }
    }
    let mut next = 0i64;
    for it in items {
        match it.kind() {
            "assignment" => {
                let p = named_children(it);
                let v = int_value(*p.last().unwrap(), src);
                next = v.map_or(next, |v| v + 1);
                e.members.push((text(p[0], src).to_string(), v));
            }
            "identifier" => {
                e.members.push((text(it, src).to_string(), Some(next)));
                next += 1;
            }
            _ => {}
        }
    }
    e
}

fn const_def(n: Node, file: &str, src: &str) -> Option<ConstDef> {
    let a = named_children(n).into_iter().find(|k| k.kind() == "assignment")?;
    let p = named_children(a);
    if p.len() < 2 || p[0].kind() != "identifier" {
        return None;
    }
    let rhs = *p.last().unwrap();
    Some(ConstDef {
        loc: loc(n, file),
        name: text(p[0], src).to_string(),
        value_text: text(rhs, src).to_string(),
        value: int_value(rhs, src),
    })
}

/// (name, params, return annotation) from a signature's call (possibly `::Ret` / `where`).
fn signature(sig: Node, src: &str) -> Option<(String, Vec<Option<String>>, Option<String>)> {
    let mut s = sig;
    if s.kind() == "signature" {
        s = s.named_child(0)?;
    }
    if s.kind() == "where_expression" {
        s = s.named_child(0)?;
    }
    let mut ret = None;
    if s.kind() == "typed_expression" {
        let p = named_children(s);
        ret = Some(text(*p.last()?, src).to_string());
        s = p[0];
    }
    if s.kind() != "call_expression" {
        return None;
    }
    let f = callee(s)?;
    if !matches!(f.kind(), "identifier" | "field_expression") {
        return None;
    }
    let name = last_segment(text(f, src)).to_string();
    let mut params = Vec::new();
    let mut c = s.walk();
    let list = s.children(&mut c).find(|k| k.kind() == "argument_list")?;
    let mut c2 = list.walk();
    for k in list.children(&mut c2) {
        match k.kind() {
            ";" => break,
            "typed_expression" => {
                let p = named_children(k);
                params.push(Some(text(*p.last()?, src).to_string()));
            }
            "identifier" => params.push(None),
            "(" | ")" | "," | "line_comment" | "block_comment" => {}
            _ => params.push(None),
        }
    }
    Some((name, params, ret))
}

/// The names of a signature's positional parameters (`None` where it has none: `::T`).
fn param_names(sig: Node, src: &str) -> Vec<Option<String>> {
    let mut s = sig;
    loop {
        match s.kind() {
            "signature" | "where_expression" | "typed_expression" => match s.named_child(0) {
                Some(c) => s = c,
                None => return vec![],
            },
            _ => break,
        }
    }
    if s.kind() != "call_expression" {
        return vec![];
    }
    let mut c = s.walk();
    let Some(list) = s.children(&mut c).find(|k| k.kind() == "argument_list") else { return vec![] };
    let mut out = Vec::new();
    let mut c2 = list.walk();
    for k in list.children(&mut c2) {
        match k.kind() {
            ";" => break,
            "identifier" => out.push(Some(text(k, src).to_string())),
            "typed_expression" => {
                let p = named_children(k);
                out.push((p.len() == 2 && p[0].kind() == "identifier").then(|| text(p[0], src).to_string()));
            }
            "(" | ")" | "," | "line_comment" | "block_comment" => {}
            _ => out.push(None),
        }
    }
    out
}

/// The innermost `function name(...) ... end` around `n`: its name and parameter names.
fn enclosing_function(n: Node, src: &str) -> Option<(String, Vec<Option<String>>)> {
    let mut cur = n.parent();
    while let Some(a) = cur {
        if a.kind() == "function_definition" {
            let sig = *named_children(a).first().filter(|k| k.kind() == "signature")?;
            let (name, _, _) = signature(sig, src)?;
            return Some((name, param_names(sig, src)));
        }
        cur = a.parent();
    }
    None
}

fn long_function(n: Node, file: &str, src: &str) -> Option<FuncDef> {
    let kids = named_children(n);
    let sig = *kids.first().filter(|k| k.kind() == "signature")?;
    let (name, params, ret) = signature(sig, src)?;
    let body: Vec<Node> = kids[1..].to_vec();
    let mut calls = Vec::new();
    for b in &body {
        calls_in(*b, src, &mut calls);
    }
    Some(FuncDef { loc: loc(n, file), name, params, ret, catches_all: catches_all(&body, src), calls })
}

fn short_function(n: Node, file: &str, src: &str) -> Option<FuncDef> {
    let lhs = n.named_child(0)?;
    if !matches!(lhs.kind(), "call_expression" | "typed_expression" | "where_expression") {
        return None;
    }
    // `x[i] = v` is an index_expression, `f(x) = v` a call: only the latter defines a method.
    let (name, params, ret) = signature(lhs, src)?;
    let mut calls = Vec::new();
    if let Some(rhs) = n.named_child(1) {
        calls_in(rhs, src, &mut calls);
    }
    Some(FuncDef {
        loc: loc(n, file),
        name,
        params,
        ret,
        catches_all: Err("a one-line definition cannot catch exceptions".into()),
        calls,
    })
}

/// Every call under `n`: (callee's last name segment, the call's text).
fn calls_in(n: Node, src: &str, out: &mut Vec<(String, String)>) {
    if n.kind() == "call_expression" {
        if let Some(c) = callee(n) {
            if matches!(c.kind(), "identifier" | "field_expression") {
                out.push((last_segment(text(c, src)).to_string(), text(n, src).to_string()));
            }
        }
    }
    let mut c = n.walk();
    for k in n.named_children(&mut c) {
        calls_in(k, src, out);
    }
}

fn is_trivial(n: Node, src: &str) -> bool {
    match n.kind() {
        "return_statement" => named_children(n).iter().all(|k| is_trivial(*k, src)),
        "identifier" => text(n, src) == "nothing",
        "integer_literal" | "boolean_literal" => true,
        _ => false,
    }
}

fn calls_named(n: Node, src: &str, names: &[&str]) -> Option<String> {
    if n.kind() == "call_expression" {
        if let Some(c) = callee(n) {
            let t = last_segment(text(c, src));
            if names.contains(&t) {
                return Some(t.to_string());
            }
        }
    }
    let mut c = n.walk();
    for k in n.named_children(&mut c) {
        if let Some(x) = calls_named(k, src, names) {
            return Some(x);
        }
    }
    None
}

fn catches_all(body: &[Node], src: &str) -> Result<(), String> {
    let Some(first) = body.first() else { return Err("empty body".into()) };
    if first.kind() != "try_statement" {
        return Err(format!("the body does not start with `try` (line {})", line_of(*first)));
    }
    if let Some(extra) = body[1..].iter().find(|k| !is_trivial(**k, src)) {
        return Err(format!("code after the try/catch (line {}) is not covered", line_of(*extra)));
    }
    let clauses = named_children(*first);
    let Some(catch) = clauses.iter().find(|k| k.kind() == "catch_clause") else {
        return Err("the try has no catch clause".into());
    };
    if let Some(t) = calls_named(*catch, src, &["throw", "rethrow", "error", "exit"]) {
        return Err(format!("the catch clause calls {t}(), which would unwind into C"));
    }
    if let Some(fin) = clauses.iter().find(|k| k.kind() == "finally_clause") {
        if let Some(t) = calls_named(*fin, src, &["throw", "rethrow", "error", "exit"]) {
            return Err(format!("the finally clause calls {t}()"));
        }
    }
    Ok(())
}

/// Byte ranges of the definitions (functions, one-line methods, structs) named `name`.
pub fn definition_ranges(tree: &Tree, src: &str, name: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    fn go(n: Node, src: &str, name: &str, out: &mut Vec<std::ops::Range<usize>>) {
        let hit = match n.kind() {
            "function_definition" => named_children(n)
                .first()
                .and_then(|s| signature(*s, src))
                .is_some_and(|(nm, _, _)| nm == name),
            "assignment" => n
                .named_child(0)
                .filter(|l| matches!(l.kind(), "call_expression" | "typed_expression" | "where_expression"))
                .and_then(|l| signature(l, src))
                .is_some_and(|(nm, _, _)| nm == name),
            "struct_definition" => struct_def(n, "", src).name == name,
            _ => false,
        };
        if hit {
            out.push(n.byte_range());
            return;
        }
        let mut c = n.walk();
        for k in n.named_children(&mut c) {
            go(k, src, name, out);
        }
    }
    go(tree.root_node(), src, name, &mut out);
    out
}
