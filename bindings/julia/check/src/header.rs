//! The C side: functions, structs, enums, opaque types and integer #defines of
//! `include/zarrshard.h`, parsed with tree-sitter-c.

use crate::ts::{has_error, line_of, text};
use anyhow::{bail, Context, Result};
use std::fmt;
use tree_sitter::{Node, Parser};

/// A C type as far as the ABI cares: base name, pointer depth, and whether the outermost
/// pointee is `const` (informational: Julia has no const).
#[derive(Clone, Debug, PartialEq)]
pub struct CType {
    pub base: String,
    pub ptr: usize,
    pub is_const: bool,
}

impl CType {
    pub fn pointee(&self) -> CType {
        CType { base: self.base.clone(), ptr: self.ptr.saturating_sub(1), is_const: self.is_const }
    }
}

impl fmt::Display for CType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_const {
            write!(f, "const ")?;
        }
        write!(f, "{}", self.base)?;
        if self.ptr > 0 {
            write!(f, " {}", "*".repeat(self.ptr))?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: CType,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub ret: CType,
    pub params: Vec<Param>,
    pub line: usize,
}

#[derive(Clone, Debug)]
pub enum FieldType {
    Value(CType),
    FnPtr { ret: CType, params: Vec<Param> },
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldType::Value(t) => write!(f, "{t}"),
            FieldType::FnPtr { ret, params } => {
                let ps: Vec<String> = params.iter().map(|p| p.ty.to_string()).collect();
                write!(f, "{ret} (*)({})", ps.join(", "))
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
}

#[derive(Clone, Debug)]
pub struct Struct {
    pub name: String,
    pub fields: Vec<Field>,
}

/// `typedef ret (*name)(params);`: a function pointer type the host passes to a function
/// (`shard_sink_fn`), as opposed to a callback field of a struct.
#[derive(Clone, Debug)]
pub struct FnType {
    pub name: String,
    pub ret: CType,
    pub params: Vec<Param>,
    pub line: usize,
}

impl fmt::Display for FnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps: Vec<String> = self.params.iter().map(|p| p.ty.to_string()).collect();
        write!(f, "{} (*{})({})", self.ret, self.name, ps.join(", "))
    }
}

#[derive(Clone, Debug)]
pub struct Enum {
    pub name: String,
    pub members: Vec<(String, i64)>,
}

#[derive(Clone, Debug, Default)]
pub struct Header {
    pub functions: Vec<Function>,
    pub structs: Vec<Struct>,
    pub enums: Vec<Enum>,
    /// `typedef struct X X;` with no body.
    pub opaque: Vec<String>,
    /// `#define NAME <integer>`.
    pub defines: Vec<(String, i64)>,
    /// `typedef ret (*name)(params);`
    pub fn_types: Vec<FnType>,
}

impl Header {
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
    pub fn is_enum(&self, name: &str) -> bool {
        self.enums.iter().any(|e| e.name == name)
    }
    pub fn is_struct(&self, name: &str) -> bool {
        self.structs.iter().any(|s| s.name == name)
    }
    pub fn is_opaque(&self, name: &str) -> bool {
        self.opaque.iter().any(|s| s == name)
    }
    pub fn fn_type(&self, name: &str) -> Option<&FnType> {
        self.fn_types.iter().find(|t| t.name == name)
    }
}

/// Blank out `#ifdef __cplusplus ... #endif` blocks (keeping line numbers): their
/// `extern "C" {` and `}` are split across blocks, which no C parser sees as one declaration.
fn strip_cplusplus(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut depth = 0usize; // >0: inside a __cplusplus block (counting nested #if)
    for line in src.lines() {
        let t = line.trim_start();
        if depth == 0 && t.starts_with("#ifdef __cplusplus") {
            depth = 1;
        } else if depth > 0 {
            if t.starts_with("#if") {
                depth += 1;
            } else if t.starts_with("#endif") {
                depth -= 1;
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

pub fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    let s = s.trim_start_matches('(').trim_end_matches(')');
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(&h.replace('_', ""), 16).ok()
    } else if let Some(n) = s.strip_prefix('-') {
        parse_int(n).map(|v| -v)
    } else {
        s.replace('_', "").parse().ok()
    }
}

pub fn parse(path: &str) -> Result<Header> {
    let raw = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    parse_source(&raw, path)
}

/// [`parse`] of header text (`path` names it in messages).
pub fn parse_source(raw: &str, path: &str) -> Result<Header> {
    let src = strip_cplusplus(raw);
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_c::LANGUAGE.into())?;
    let tree = parser.parse(&src, None).context("tree-sitter-c returned no tree")?;
    let root = tree.root_node();
    if let Some(bad) = has_error(root) {
        bail!("{path}:{}: C parse error near {:?}", line_of(bad), text(bad, &src));
    }
    let mut h = Header::default();
    collect(root, &src, &mut h)?;
    if h.functions.is_empty() {
        bail!("{path}: no function declarations found");
    }
    Ok(h)
}

fn collect(node: Node, src: &str, h: &mut Header) -> Result<()> {
    match node.kind() {
        "declaration" => {
            if let Some(f) = function_decl(node, src)? {
                h.functions.push(f);
            }
            return Ok(());
        }
        "type_definition" => {
            typedef(node, src, h)?;
            return Ok(());
        }
        "preproc_def" => {
            if let (Some(n), Some(v)) = (node.child_by_field_name("name"), node.child_by_field_name("value")) {
                if let Some(v) = parse_int(text(v, src)) {
                    h.defines.push((text(n, src).to_string(), v));
                }
            }
            return Ok(());
        }
        _ => {}
    }
    let mut c = node.walk();
    for child in node.named_children(&mut c) {
        collect(child, src, h)?;
    }
    Ok(())
}

/// The base type of a declaration (its `type` field) and whether `const` qualifies it.
fn base_type(decl: Node, src: &str) -> Result<(String, bool)> {
    let ty = decl.child_by_field_name("type").context("declaration without a type")?;
    let base = match ty.kind() {
        "primitive_type" | "type_identifier" | "sized_type_specifier" => text(ty, src).to_string(),
        "struct_specifier" | "enum_specifier" => text(ty, src).split_whitespace().collect::<Vec<_>>().join(" "),
        k => bail!("line {}: unsupported C type node {k}", line_of(ty)),
    };
    let mut c = decl.walk();
    let is_const = decl
        .children(&mut c)
        .any(|n| n.kind() == "type_qualifier" && text(n, src) == "const");
    Ok((base, is_const))
}

/// Peel pointer declarators: returns (pointer depth, inner declarator).
fn peel(mut d: Node) -> (usize, Node) {
    let mut ptr = 0;
    loop {
        match d.kind() {
            "pointer_declarator" | "abstract_pointer_declarator" => {
                ptr += 1;
                match d.child_by_field_name("declarator") {
                    Some(inner) => d = inner,
                    None => return (ptr, d),
                }
            }
            "parenthesized_declarator" => match d.named_child(0) {
                Some(inner) => d = inner,
                None => return (ptr, d),
            },
            _ => return (ptr, d),
        }
    }
}

fn params(list: Node, src: &str) -> Result<Vec<Param>> {
    let mut out = Vec::new();
    let mut c = list.walk();
    for p in list.named_children(&mut c) {
        match p.kind() {
            "parameter_declaration" => {}
            "comment" => continue,
            k => bail!("line {}: unsupported parameter node {k}", line_of(p)),
        }
        let (base, is_const) = base_type(p, src)?;
        let (ptr, name) = match p.child_by_field_name("declarator") {
            Some(d) => {
                let (ptr, inner) = peel(d);
                let name = if inner.kind() == "identifier" { text(inner, src).to_string() } else { String::new() };
                (ptr, name)
            }
            None => (0, String::new()),
        };
        if base == "void" && ptr == 0 {
            continue; // (void)
        }
        out.push(Param { name, ty: CType { base, ptr, is_const } });
    }
    Ok(out)
}

fn function_decl(decl: Node, src: &str) -> Result<Option<Function>> {
    let Some(d) = decl.child_by_field_name("declarator") else { return Ok(None) };
    let (ptr, inner) = peel(d);
    if inner.kind() != "function_declarator" {
        return Ok(None);
    }
    let name_node = inner.child_by_field_name("declarator").context("function without a name")?;
    if name_node.kind() != "identifier" {
        return Ok(None); // a function pointer variable, not a function
    }
    let (base, is_const) = base_type(decl, src)?;
    let list = inner.child_by_field_name("parameters").context("function without parameters")?;
    Ok(Some(Function {
        name: text(name_node, src).to_string(),
        ret: CType { base, ptr, is_const },
        params: params(list, src)?,
        line: line_of(decl),
    }))
}

fn typedef(node: Node, src: &str, h: &mut Header) -> Result<()> {
    let ty = node.child_by_field_name("type").context("typedef without a type")?;
    let name_node = node.child_by_field_name("declarator").context("typedef without a name")?;
    let (ret_ptr, inner) = peel(name_node);
    if inner.kind() == "function_declarator" {
        // ret (*name)(params): the pointer belongs to the type, not to the return value.
        let (fp, fname) = peel(inner.child_by_field_name("declarator").context("fn ptr typedef name")?);
        if fp != 1 || fname.kind() != "type_identifier" {
            bail!("line {}: unsupported function typedef (only `ret (*name)(params)`)", line_of(node));
        }
        let (base, is_const) = base_type(node, src)?;
        let list = inner.child_by_field_name("parameters").context("fn ptr typedef params")?;
        h.fn_types.push(FnType {
            name: text(fname, src).to_string(),
            ret: CType { base, ptr: ret_ptr, is_const },
            params: params(list, src)?,
            line: line_of(node),
        });
        return Ok(());
    }
    let name = text(name_node, src).to_string();
    match ty.kind() {
        "struct_specifier" => match ty.child_by_field_name("body") {
            None => h.opaque.push(name),
            Some(body) => {
                let mut fields = Vec::new();
                let mut c = body.walk();
                for f in body.named_children(&mut c) {
                    if f.kind() != "field_declaration" {
                        continue;
                    }
                    let (base, is_const) = base_type(f, src)?;
                    let d = f.child_by_field_name("declarator").context("field without a declarator")?;
                    let (ptr, inner) = peel(d);
                    if inner.kind() == "function_declarator" {
                        // ret (*name)(params): the pointer belongs to the field, not the return.
                        let (fp, fname) = peel(inner.child_by_field_name("declarator").context("fn ptr name")?);
                        if fp != 1 || fname.kind() != "field_identifier" {
                            bail!("line {}: unsupported function pointer field", line_of(f));
                        }
                        let list = inner.child_by_field_name("parameters").context("fn ptr params")?;
                        fields.push(Field {
                            name: text(fname, src).to_string(),
                            ty: FieldType::FnPtr { ret: CType { base, ptr, is_const }, params: params(list, src)? },
                        });
                    } else {
                        fields.push(Field {
                            name: text(inner, src).to_string(),
                            ty: FieldType::Value(CType { base, ptr, is_const }),
                        });
                    }
                }
                h.structs.push(Struct { name, fields });
            }
        },
        "enum_specifier" => {
            let body = ty.child_by_field_name("body").context("enum without a body")?;
            let mut members = Vec::new();
            let mut next = 0i64;
            let mut c = body.walk();
            for e in body.named_children(&mut c) {
                if e.kind() != "enumerator" {
                    continue;
                }
                let n = text(e.child_by_field_name("name").context("enumerator name")?, src).to_string();
                let v = match e.child_by_field_name("value") {
                    Some(v) => parse_int(text(v, src)).with_context(|| format!("enumerator {n}: value"))?,
                    None => next,
                };
                next = v + 1;
                members.push((n, v));
            }
            h.enums.push(Enum { name, members });
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function pointer typedef over several lines, with an enum argument by value, `const`
    /// pointers and a `size_t` between them (`shard_problem_fn`): every parameter, in order.
    #[test]
    fn multi_argument_fn_typedef_with_enum() {
        let src = "typedef enum { SHARD_OK = 0, SHARD_ERR_CORRUPT = 5 } shard_status;\n\
                   typedef int32_t (*shard_problem_fn)(void *userdata,\n\
                                                       const char *key,\n\
                                                       const uint64_t *chunk,\n\
                                                       size_t chunk_rank,\n\
                                                       shard_status status,\n\
                                                       const char *message);\n\
                   typedef struct shard_array shard_array;\n\
                   shard_status shard_array_verify(const shard_array *array, shard_problem_fn on_problem,\n\
                                                   void *userdata, uint64_t *problems_out);\n";
        let h = parse_source(src, "test.h").unwrap();
        let t = h.fn_type("shard_problem_fn").expect("typedef parsed");
        assert_eq!(t.line, 2);
        assert_eq!((t.ret.base.as_str(), t.ret.ptr), ("int32_t", 0));
        let got: Vec<(&str, &str, usize, bool)> =
            t.params.iter().map(|p| (p.name.as_str(), p.ty.base.as_str(), p.ty.ptr, p.ty.is_const)).collect();
        assert_eq!(
            got,
            [
                ("userdata", "void", 1, false),
                ("key", "char", 1, true),
                ("chunk", "uint64_t", 1, true),
                ("chunk_rank", "size_t", 0, false),
                ("status", "shard_status", 0, false),
                ("message", "char", 1, true),
            ]
        );
        assert!(h.is_enum("shard_status"), "the enum argument's type is known as an enum");
        assert_eq!(
            t.to_string(),
            "int32_t (*shard_problem_fn)(void *, const char *, const uint64_t *, size_t, shard_status, const char *)"
        );
        // The function taking it: the typedef by value, not a pointer.
        let f = h.function("shard_array_verify").expect("function parsed");
        assert_eq!((f.params[1].ty.base.as_str(), f.params[1].ty.ptr), ("shard_problem_fn", 0));
    }

    /// A `void` function pointer typedef (`shard_key_fn`) taken by value by a callback field of
    /// a struct (`shard_store_callbacks.list`), the field appended after `destroy`.
    #[test]
    fn fn_typedef_as_a_callback_field_parameter() {
        let src = "typedef void (*shard_key_fn)(void *list_state, const char *key, size_t key_len);\n\
                   typedef struct {\n\
                     uint32_t version;\n\
                     void (*destroy)(void *userdata);\n\
                     int32_t (*list)(void *userdata, const char *prefix, shard_key_fn on_key, void *list_state);\n\
                   } shard_store_callbacks;\n\
                   int shard_version(void);\n";
        let h = parse_source(src, "test.h").unwrap();
        let t = h.fn_type("shard_key_fn").expect("typedef parsed");
        assert_eq!((t.ret.base.as_str(), t.ret.ptr), ("void", 0));
        assert_eq!(t.to_string(), "void (*shard_key_fn)(void *, const char *, size_t)");
        let s = h.structs.iter().find(|s| s.name == "shard_store_callbacks").expect("struct parsed");
        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["version", "destroy", "list"]);
        let FieldType::FnPtr { ret, params } = &s.fields[2].ty else { panic!("list is a function pointer") };
        assert_eq!(ret.base, "int32_t");
        let got: Vec<(&str, &str, usize)> = params.iter().map(|p| (p.name.as_str(), p.ty.base.as_str(), p.ty.ptr)).collect();
        assert_eq!(got, [("userdata", "void", 1), ("prefix", "char", 1), ("on_key", "shard_key_fn", 0), ("list_state", "void", 1)]);
    }
}
