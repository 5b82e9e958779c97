//! Static checker for the ZarrShard.jl binding (no Julia runtime needed).
//!
//!     zarrshard-julia-check [--verbose] --header include/zarrshard.h bindings/julia/ZarrShard
//!     zarrshard-julia-check --self-test bindings/julia/check/tests --header ... PACKAGE_DIR
//!
//! Parses every `.jl` file of the package with tree-sitter-julia and the header with
//! tree-sitter-c, then checks (one finding per check): every file parses; every
//! ccall/@ccall names a header function of `libzarrshard` with the right argument count and
//! ABI-compatible argument and return types; every header function is wrapped; the Julia
//! mirrors of the header's structs, enums, opaque types and integer #defines match; every
//! `pointer(...)`/`pointer_from_objref(...)` is inside a `GC.@preserve` of its object; every
//! `@cfunction` matches its callback table field (or function pointer type, `shard_sink_fn`)
//! and the Julia method it is made from; every callback catches all exceptions; every
//! callback field and function pointer type the host makes has one; each table constructor
//! puts each callback in its own field; a raw call passes `CB_<NAME>[]` for a
//! `shard_<name>_fn`; and a `ccall` through a function pointer a callback received
//! (`ccall(on_key, ...)`, a `shard_key_fn`) matches that parameter's type, which such a
//! ccall must cover.
//!
//! Failures are printed always, passes with --verbose; the last line is `N passed, M failed`.
//! Exit status 1 when anything failed.
//!
//! --self-test: every `tests/*.jl` is a mutation of the real package (directives in its
//! leading comments: `# drop: NAME` removes the definitions named NAME, `# sub: FILE | OLD |
//! NEW` replaces text once, `\n` in OLD/NEW meaning a line break, and the file itself is added
//! as one more source). The checker
//! must then report exactly the failures the `# expect: RULE: TEXT` lines name — no fewer
//! (it catches the error) and no others (it is precise).

mod checks;
mod compat;
mod header;
mod julia;
mod ts;

use anyhow::{bail, Context, Result};
use julia::Source;
use std::path::{Path, PathBuf};

fn jl_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<Vec<_>>>()?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            jl_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "jl") {
            out.push(p);
        }
    }
    Ok(())
}

fn load_package(dir: &Path) -> Result<Vec<Source>> {
    let mut files = Vec::new();
    jl_files(dir, &mut files)?;
    if files.is_empty() {
        bail!("no .jl files under {}", dir.display());
    }
    let base = dir.parent().unwrap_or(dir);
    files
        .iter()
        .map(|p| {
            Ok(Source {
                name: p.strip_prefix(base).unwrap_or(p).display().to_string(),
                text: std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            })
        })
        .collect()
}

fn summary(findings: &[checks::Finding]) -> (usize, usize) {
    let failed = findings.iter().filter(|f| !f.ok).count();
    (findings.len() - failed, failed)
}

struct Test {
    expect: Vec<(String, String)>,
    drop: Vec<String>,
    subs: Vec<(String, String, String)>,
}

fn directives(text: &str) -> Result<Test> {
    let mut t = Test { expect: vec![], drop: vec![], subs: vec![] };
    for line in text.lines() {
        let Some(d) = line.strip_prefix("# ") else { continue };
        if let Some(e) = d.strip_prefix("expect:") {
            let (rule, what) = e.split_once(':').context("`# expect: RULE: TEXT`")?;
            t.expect.push((rule.trim().to_string(), what.trim().to_string()));
        } else if let Some(n) = d.strip_prefix("drop:") {
            t.drop.push(n.trim().to_string());
        } else if let Some(s) = d.strip_prefix("sub:") {
            let parts: Vec<&str> = s.split(" | ").collect();
            if parts.len() != 3 {
                bail!("`# sub: FILE | OLD | NEW`, got {s:?}");
            }
            // `\n` in OLD or NEW stands for a line break (to pin a line by its neighbour).
            let unescape = |t: &str| t.replace("\\n", "\n");
            t.subs.push((parts[0].trim().to_string(), unescape(parts[1]), unescape(parts[2])));
        }
    }
    if t.expect.is_empty() {
        bail!("no `# expect:` line");
    }
    Ok(t)
}

fn mutate(pkg: &[Source], t: &Test) -> Result<Vec<Source>> {
    let mut out: Vec<Source> = pkg.iter().map(|s| Source { name: s.name.clone(), text: s.text.clone() }).collect();
    let mut parser = julia::parser()?;
    for name in &t.drop {
        let mut removed = 0;
        for s in out.iter_mut() {
            let tree = julia::parse(&mut parser, &s.text)?;
            let mut ranges = julia::definition_ranges(&tree, &s.text, name);
            ranges.sort_by_key(|r| std::cmp::Reverse(r.start));
            for r in ranges {
                let lines = s.text[r.clone()].matches('\n').count();
                s.text.replace_range(r, &"\n".repeat(lines));
                removed += 1;
            }
        }
        if removed == 0 {
            bail!("drop: nothing named {name} in the package");
        }
    }
    for (file, old, new) in &t.subs {
        let s = out.iter_mut().find(|s| s.name.ends_with(file.as_str())).with_context(|| format!("sub: no file {file}"))?;
        if s.text.matches(old.as_str()).count() != 1 {
            bail!("sub: {old:?} does not occur exactly once in {file}");
        }
        s.text = s.text.replacen(old.as_str(), new, 1);
    }
    Ok(out)
}

fn self_test(h: &header::Header, hname: &str, pkg: &[Source], tests_dir: &Path) -> Result<bool> {
    let (mut passed, mut failed) = (0, 0);
    let base = checks::run(h, hname, pkg)?;
    let bad: Vec<_> = base.iter().filter(|f| !f.ok).collect();
    if bad.is_empty() {
        println!("PASS baseline: the unmodified package has no finding ({} checks)", base.len());
        passed += 1;
    } else {
        println!("FAIL baseline: the unmodified package has {} failing checks; self-tests need a clean baseline", bad.len());
        for f in bad {
            println!("    {f}");
        }
        failed += 1;
    }
    let mut tests = Vec::new();
    jl_files(tests_dir, &mut tests)?;
    for path in tests {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path)?;
        let result = (|| -> Result<Result<String, Vec<String>>> {
            let t = directives(&text)?;
            let mut sources = mutate(pkg, &t)?;
            sources.push(Source { name: format!("tests/{name}"), text: text.clone() });
            let findings = checks::run(h, hname, &sources)?;
            let fails: Vec<&checks::Finding> = findings.iter().filter(|f| !f.ok).collect();
            let mut problems = Vec::new();
            for (rule, what) in &t.expect {
                if !fails.iter().any(|f| f.rule == rule && (f.msg.contains(what.as_str()) || f.at.contains(what.as_str()))) {
                    problems.push(format!("not flagged: [{rule}] …{what}…"));
                }
            }
            for f in &fails {
                let expected = t.expect.iter().any(|(rule, what)| f.rule == rule && (f.msg.contains(what.as_str()) || f.at.contains(what.as_str())));
                if !expected {
                    problems.push(format!("unexpected: {f}"));
                }
            }
            Ok(if problems.is_empty() {
                let shown: Vec<String> = fails.iter().map(|f| format!("[{}] {}", f.rule, f.msg)).collect();
                Ok(shown.join(" | "))
            } else {
                Err(problems)
            })
        })();
        match result {
            Ok(Ok(what)) => {
                println!("PASS {name}: flagged {what}");
                passed += 1;
            }
            Ok(Err(problems)) => {
                println!("FAIL {name}");
                for p in problems {
                    println!("    {p}");
                }
                failed += 1;
            }
            Err(e) => {
                println!("FAIL {name}: {e:#}");
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(failed == 0)
}

fn main() {
    match real_main() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("zarrshard-julia-check: {e:#}");
            std::process::exit(2);
        }
    }
}

fn real_main() -> Result<bool> {
    let mut args = std::env::args().skip(1);
    let (mut verbose, mut header_path, mut tests, mut pkg) = (false, None, None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--verbose" | "-v" => verbose = true,
            "--header" => header_path = Some(args.next().context("--header needs a path")?),
            "--self-test" => tests = Some(args.next().context("--self-test needs a directory")?),
            "-h" | "--help" => {
                println!("usage: zarrshard-julia-check [--verbose] [--self-test TESTS_DIR] --header zarrshard.h PACKAGE_DIR");
                return Ok(true);
            }
            _ if pkg.is_none() && !a.starts_with('-') => pkg = Some(a),
            _ => bail!("unexpected argument {a:?} (see --help)"),
        }
    }
    let header_path = header_path.context("--header is required")?;
    let pkg = PathBuf::from(pkg.context("PACKAGE_DIR is required")?);
    let h = header::parse(&header_path)?;
    let hname = Path::new(&header_path).file_name().unwrap().to_string_lossy().to_string();
    let sources = load_package(&pkg)?;
    if let Some(t) = tests {
        return self_test(&h, &hname, &sources, Path::new(&t));
    }
    let findings = checks::run(&h, &hname, &sources)?;
    for f in &findings {
        if verbose || !f.ok {
            println!("{f}");
        }
    }
    let mut rules: Vec<&str> = findings.iter().map(|f| f.rule).collect();
    rules.dedup();
    let mut seen = Vec::new();
    for r in rules {
        if seen.contains(&r) {
            continue;
        }
        seen.push(r);
        let n = findings.iter().filter(|f| f.rule == r).count();
        let bad = findings.iter().filter(|f| f.rule == r && !f.ok).count();
        println!("  {r:<18} {:>3} checks, {bad} failed", n);
    }
    let (p, f) = summary(&findings);
    println!("{p} passed, {f} failed");
    Ok(f == 0)
}
