//! The documentation against the repository: every relative link in README.md, docs/*.md and
//! bindings/*/README.md resolves (the file exists; a `#anchor` is a heading of the target by
//! GitHub's slug rules, or an explicit `<a id>`/`<a name>`), every command README.md shows
//! (```sh / ```console blocks, inline code) names something that exists (a file of the
//! repository, a `zarrshard` subcommand, a make target, a pip-installable directory, a cargo
//! feature, a stage of scripts/test.sh), and the pages keep to the sizes issue 38 set. Links
//! and code inside code blocks and code spans are not links; http(s) and mailto links are not
//! followed. The checkers are unit-tested below on small strings, so each can be seen failing.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose links are checked, relative to the repository root.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    for (dir, name) in [("docs", None), ("bindings", Some("README.md"))] {
        let Ok(entries) = std::fs::read_dir(repo().join(dir)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let p = e.path();
                match name {
                    None => (p.extension().is_some_and(|x| x == "md") && p.is_file())
                        .then(|| Path::new(dir).join(e.file_name())),
                    Some(n) => p
                        .join(n)
                        .is_file()
                        .then(|| Path::new(dir).join(e.file_name()).join(n)),
                }
            })
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

// ---- markdown: code blocks, code spans, headings, links -----------------------------------

/// A fenced code block: its info string (`sh`, `rust`, ...), its first line (1-based, the
/// opening fence) and its lines.
#[derive(Debug)]
struct Fence {
    info: String,
    line: usize,
    body: Vec<String>,
}

/// The text with every fenced code block's lines (fences included) blanked, and the blocks.
fn split_fences(text: &str) -> (Vec<String>, Vec<Fence>) {
    let mut out = Vec::new();
    let mut fences = Vec::new();
    let mut open: Option<(char, usize, Fence)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        match &mut open {
            None => {
                let (c, n) = if run('`') >= 3 {
                    ('`', run('`'))
                } else {
                    ('~', run('~'))
                };
                if n >= 3 && !(c == '`' && t[n..].contains('`')) {
                    let info = t[n..]
                        .trim()
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_string();
                    open = Some((
                        c,
                        n,
                        Fence {
                            info,
                            line: i + 1,
                            body: Vec::new(),
                        },
                    ));
                    out.push(String::new());
                } else {
                    out.push(line.to_string());
                }
            }
            Some((c, n, fence)) => {
                out.push(String::new());
                if run(*c) >= *n && t[run(*c)..].trim().is_empty() {
                    fences.push(std::mem::replace(
                        fence,
                        Fence {
                            info: String::new(),
                            line: 0,
                            body: Vec::new(),
                        },
                    ));
                    open = None;
                } else {
                    fence.body.push(line.to_string());
                }
            }
        }
    }
    if let Some((_, _, fence)) = open {
        fences.push(fence); // unclosed: runs to the end, as CommonMark says
    }
    (out, fences)
}

/// A code span: the byte range of the whole span (backticks included) and its content.
struct Span {
    start: usize,
    end: usize,
    content: String,
}

/// The code spans of `text` (outside code blocks). A span does not cross a blank line; a
/// backtick run without a closing run of the same length is literal.
fn code_spans(text: &str) -> Vec<Span> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        let start = i + n;
        let mut j = start;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else if b[j..].starts_with(b"\n\n") || b[j..].starts_with(b"\n \n") {
                break;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                let content = text[start..end].replace('\n', " ").trim().to_string();
                spans.push(Span {
                    start: i,
                    end: end + n,
                    content,
                });
                i = end + n;
            }
            None => i = start,
        }
    }
    spans
}

/// `text` with its code spans (backticks included) replaced by spaces, newlines kept.
fn blank_code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in code_spans(text) {
        out.push_str(&text[at..span.start]);
        out.extend(
            text[span.start..span.end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// GitHub's heading slug: lowercase; characters other than letters, digits, spaces, `-` and
/// `_` dropped; each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A heading's text as GitHub renders it: links and images by their text, HTML tags and
/// emphasis markers gone (code spans keep their content; slug() drops the backticks).
fn heading_text(raw: &str) -> String {
    let mut s = String::new();
    let mut rest = raw;
    while let Some(open) = rest.find('[') {
        s.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|c| after[c..].find(')').map(|e| (c, c + e)))
        {
            Some((c, e)) => {
                s.push_str(&after[..c]);
                rest = &after[e + 1..];
            }
            None => {
                s.push('[');
                rest = after;
            }
        }
    }
    s.push_str(rest);
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            '*' => {}
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The anchors a page defines: its headings' slugs (`-1`, `-2`, ... for repeats) and explicit
/// `<a id="...">` / `<a name="...">` anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let (lines, _) = split_fences(text);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut add = |s: String, out: &mut BTreeSet<String>| {
        let n = seen.entry(s.clone()).or_insert(0);
        out.insert(if *n == 0 {
            s.clone()
        } else {
            format!("{s}-{n}")
        });
        *n += 1;
    };
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if indent <= 3
            && (1..=6).contains(&hashes)
            && (t.len() == hashes || t[hashes..].starts_with(' '))
        {
            let text = t[hashes..].trim().trim_end_matches('#').trim_end();
            add(slug(&heading_text(text)), &mut out);
        } else if i > 0
            && indent <= 3
            && !t.is_empty()
            && (t.trim_end().chars().all(|c| c == '=') || t.trim_end().chars().all(|c| c == '-'))
            && !lines[i - 1].trim().is_empty()
            && !lines[i - 1].trim_start().starts_with('#')
            && !lines[i - 1].trim_start().starts_with('|')
            && !lines[i - 1].trim_start().starts_with("- ")
        {
            // A setext heading (the line above, underlined with = or -).
            add(slug(&heading_text(lines[i - 1].trim())), &mut out);
        }
        for key in ["id=", "name="] {
            let mut rest = line.as_str();
            while let Some(a) = rest.find("<a ") {
                let tag_end = rest[a..].find('>').map_or(rest.len(), |e| a + e);
                let tag = &rest[a..tag_end];
                if let Some(k) = tag.find(key) {
                    let v = tag[k + key.len()..].trim_start_matches(['"', '\'']);
                    let v: String = v
                        .chars()
                        .take_while(|c| !matches!(c, '"' | '\'' | ' ' | '>'))
                        .collect();
                    out.insert(v);
                }
                rest = &rest[tag_end..];
            }
        }
    }
    out
}

/// The link targets of a page outside code: inline links and images `[..](target "title")`,
/// reference definitions `[label]: target`, and HTML `href="..."` / `src="..."`; each with its
/// line (1-based).
fn links(text: &str) -> Vec<(usize, String)> {
    let (lines, _) = split_fences(text);
    let text = blank_code_spans(&lines.join("\n"));
    let line_of = |pos: usize| text[..pos].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("](") {
        let start = from + p + 2;
        let mut depth = 0usize;
        let mut end = None;
        for (k, c) in text[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(start + k);
                    break;
                }
                ')' => depth -= 1,
                '\n' if text[start + k + 1..].starts_with('\n') => break,
                _ => {}
            }
        }
        if let Some(end) = end {
            let raw = text[start..end].trim();
            let target = match raw.strip_prefix('<') {
                Some(r) => r.split('>').next().unwrap_or(""),
                None => raw.split_whitespace().next().unwrap_or(""),
            };
            out.push((line_of(start), target.to_string()));
            from = end;
        } else {
            from = start;
        }
    }
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if line.len() - t.len() <= 3 && t.starts_with('[') {
            if let Some(c) = t.find("]:") {
                if !t[1..c].contains(']') {
                    if let Some(target) = t[c + 2..].split_whitespace().next() {
                        let target = target.trim_start_matches('<').trim_end_matches('>');
                        out.push((i + 1, target.to_string()));
                    }
                }
            }
        }
        for key in ["href=\"", "src=\""] {
            let mut rest = line;
            while let Some(k) = rest.find(key) {
                let v = &rest[k + key.len()..];
                let e = v.find('"').unwrap_or(v.len());
                out.push((i + 1, v[..e].to_string()));
                rest = &v[e..];
            }
        }
    }
    out.sort();
    out
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base` joined with `rel`, `.` and `..` resolved; None when it leaves the root.
fn normalize(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let joined = if let Some(abs) = rel.strip_prefix('/') {
        PathBuf::from(abs)
    } else {
        base.join(rel)
    };
    for c in joined.components() {
        match c {
            Component::Normal(x) => out.push(x),
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// The problems with the links of `page` (its path relative to `root`, its text): each
/// `page:line: ...`. `read` gives the text of another page of the tree (relative path).
fn check_links(root: &Path, page: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let dir = page.parent().unwrap_or(Path::new(""));
    let mut cache: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    for (line, target) in links(text) {
        let lower = target.to_ascii_lowercase();
        if target.is_empty()
            || lower.starts_with("http://")
            || lower.starts_with("https://")
            || lower.starts_with("mailto:")
            || lower.contains("://")
        {
            continue;
        }
        let (path_part, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let path_part = path_part.split('?').next().unwrap_or("");
        let same_page = path_part.is_empty();
        let file = if same_page {
            page.to_path_buf()
        } else {
            match normalize(dir, &percent_decode(path_part)) {
                Some(p) => p,
                None => {
                    problems.push(format!(
                        "{}:{line}: link `{target}` leaves the repository",
                        page.display()
                    ));
                    continue;
                }
            }
        };
        let full = root.join(&file);
        if !same_page && !full.exists() {
            problems.push(format!(
                "{}:{line}: link `{target}`: {} does not exist",
                page.display(),
                file.display()
            ));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if !same_page && (!full.is_file() || file.extension().map_or(true, |e| e != "md")) {
            continue; // an anchor into a source file (#L10) or a directory: not checked
        }
        let defined = cache.entry(file.clone()).or_insert_with(|| {
            let t = if file == page {
                text.to_string()
            } else {
                std::fs::read_to_string(&full).unwrap_or_default()
            };
            anchors(&t)
        });
        let anchor = percent_decode(anchor);
        if !defined.contains(&anchor) && !defined.contains(&anchor.to_lowercase()) {
            problems.push(format!(
                "{}:{line}: link `{target}`: {} has no heading with the anchor #{anchor}",
                page.display(),
                file.display()
            ));
        }
    }
    problems
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(repo().join(&page)).unwrap();
        problems.extend(check_links(repo(), &page, &text));
    }
    assert!(
        problems.is_empty(),
        "{} broken links:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

// ---- README's commands ---------------------------------------------------------------------

/// A command README shows: where (line), its words (shell-split, comments removed), and
/// whether it stands in a code block (else in a code span of the text).
#[derive(Debug, PartialEq)]
struct Cmd {
    line: usize,
    words: Vec<String>,
    block: bool,
}

/// Shell-like word splitting of one command line (quotes removed; no expansion). Chains
/// (`&&`, `||`, `;`, `|`) are split into separate commands; `#` starts a comment.
fn split_commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, cmds: &mut Vec<Vec<String>>| {
        if *in_word {
            cmds.last_mut().unwrap().push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, '#') if !in_word => break,
            (None, ' ' | '\t') => end_word(&mut word, &mut in_word, &mut cmds),
            (None, ';' | '|' | '&') => {
                end_word(&mut word, &mut in_word, &mut cmds);
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                if c == '&'
                    && cmds
                        .last()
                        .is_some_and(|w| w.last().is_some_and(|w| w.ends_with('>')))
                {
                    continue; // 2>&1
                }
                cmds.push(Vec::new());
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut cmds);
    cmds.into_iter().filter(|w| !w.is_empty()).collect()
}

/// The commands of README's ```sh / ```console blocks (in console blocks only the lines after
/// a `$ ` prompt; a trailing `\` continues a line) and of its inline code spans (the first
/// command of each).
fn readme_commands(text: &str) -> Vec<Cmd> {
    let (lines, fences) = split_fences(text);
    let mut out = Vec::new();
    for f in &fences {
        let console = f.info == "console";
        if !matches!(f.info.as_str(), "sh" | "bash" | "shell" | "console") {
            continue;
        }
        let mut pending: Option<(usize, String)> = None;
        for (k, raw) in f.body.iter().enumerate() {
            let line_no = f.line + 1 + k;
            let (start, mut s) = match pending.take() {
                Some((start, acc)) => (start, format!("{acc} {}", raw.trim())),
                None => {
                    let t = raw.trim();
                    let t = if console {
                        match t.strip_prefix("$ ") {
                            Some(c) => c,
                            None => continue,
                        }
                    } else {
                        t
                    };
                    (line_no, t.to_string())
                }
            };
            if s.ends_with('\\') {
                s.pop();
                pending = Some((start, s));
                continue;
            }
            for words in split_commands(&s) {
                out.push(Cmd {
                    line: start,
                    words,
                    block: true,
                });
            }
        }
    }
    let body = lines.join("\n");
    for span in code_spans(&body) {
        let line = body[..span.start].matches('\n').count() + 1;
        // A span is one command (a chain in a span is rather a quoted message).
        if let Some(words) = split_commands(&span.content).into_iter().next() {
            out.push(Cmd {
                line,
                words,
                block: false,
            });
        }
    }
    out
}

/// The root entries .gitignore names (`/target`, `/.venv`, ...): made by builds, not in the
/// repository, so a path under them is not looked for.
fn ignored_roots(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join(".gitignore"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix('/'))
        .map(|l| l.trim_end_matches('/').to_string())
        .collect()
}

/// Whether `word` names a path of the repository, not a placeholder, URL or option: it holds
/// a `/` and, unless `any_root`, its first component is an entry of the root (so that in the
/// text a shard key like `c/0/0` is not taken for a path) or it starts with `./`.
fn repo_path_like(root: &Path, word: &str, any_root: bool) -> bool {
    if word.starts_with('-')
        || word.contains("://")
        || word.starts_with('/')
        || word.starts_with('~')
    {
        return false;
    }
    if word
        .chars()
        .any(|c| matches!(c, '<' | '>' | '$' | '…' | '=' | ':' | '`'))
        || word.contains("...")
    {
        return false;
    }
    let w = word.strip_prefix("./").unwrap_or(word);
    let first = w.split('/').next().unwrap_or("");
    (word.starts_with("./") || w.contains('/'))
        && !first.is_empty()
        && (any_root || root.join(first).exists())
}

/// The patterns `{a,b}` alternatives make of `pattern` (`x/{a,b}/y` -> `x/a/y`, `x/b/y`).
fn alternatives(pattern: &str) -> Vec<String> {
    if let (Some(o), Some(c)) = (pattern.find('{'), pattern.find('}')) {
        if o < c {
            return pattern[o + 1..c]
                .split(',')
                .flat_map(|alt| {
                    alternatives(&format!("{}{alt}{}", &pattern[..o], &pattern[c + 1..]))
                })
                .collect();
        }
    }
    vec![pattern.to_string()]
}

/// The paths `pattern` matches in `root` (`*` within one component).
fn glob(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    for comp in pattern.split('/').filter(|c| !c.is_empty() && *c != ".") {
        let mut next = Vec::new();
        for base in &found {
            if comp.contains('*') {
                let (pre, post) = comp.split_once('*').unwrap();
                if let Ok(rd) = std::fs::read_dir(root.join(base)) {
                    for e in rd.flatten() {
                        let n = e.file_name().to_string_lossy().into_owned();
                        if n.starts_with(pre)
                            && n.ends_with(post)
                            && n.len() >= pre.len() + post.len()
                        {
                            next.push(base.join(n));
                        }
                    }
                }
            } else if root.join(base).join(comp).exists() {
                next.push(base.join(comp));
            }
        }
        found = next;
    }
    found
}

/// Makefile targets: the names before `:` at the start of a rule line (not `:=` assignments).
fn make_targets(makefile: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in makefile.lines() {
        if line.starts_with(['\t', ' ', '#']) {
            continue;
        }
        if let Some(c) = line.find(':') {
            if line[c..].starts_with(":=") || line[..c].contains('=') {
                continue;
            }
            out.extend(line[..c].split_whitespace().map(str::to_string));
        }
    }
    out
}

/// The features a Cargo.toml declares (its `[features]` table; optional dependencies are
/// features only where no feature names them as `dep:`, which this crate does).
fn cargo_features(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(['[', ']']).to_string();
            continue;
        }
        let Some((key, value)) = t.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let _ = value;
        if section == "features" {
            out.insert(key.to_string());
        }
    }
    out
}

/// What a check of README's commands needs to know of the tree and the tools.
struct Known<'a> {
    root: &'a Path,
    ignored: Vec<String>,
    stages: BTreeSet<String>,
    /// Whether `zarrshard SUB` is a subcommand (None: the tool is not built, not checked).
    subcommand: &'a dyn Fn(&str) -> Option<bool>,
}

/// The problems with one command, each naming `file:line` and the command.
fn check_command(k: &Known, file: &str, cmd: &Cmd) -> Vec<String> {
    let mut w: Vec<&str> = cmd.words.iter().map(String::as_str).collect();
    while w
        .first()
        .is_some_and(|x| x.contains('=') && !x.starts_with('-') && !x.starts_with('='))
        || w.first() == Some(&"sudo")
    {
        w.remove(0); // FOO=bar cmd, sudo cmd
    }
    let Some(&first) = w.first() else {
        return Vec::new();
    };
    let shown = cmd.words.join(" ");
    let mut problems = Vec::new();
    let mut bad = |what: String| problems.push(format!("{file}:{}: `{shown}`: {what}", cmd.line));
    let ignored = |p: &str| {
        let p = p.strip_prefix("./").unwrap_or(p);
        k.ignored
            .iter()
            .any(|i| p == i || p.starts_with(&format!("{i}/")))
    };
    // Each `{a,b}` alternative must exist; a `*` must match something.
    let exists = |p: &str| alternatives(p).iter().all(|a| !glob(k.root, a).is_empty());
    let path_like = |p: &str| repo_path_like(k.root, p, cmd.block);
    let base = first.rsplit('/').next().unwrap_or(first);

    // In the text, `zarrshard` followed by plain words is a sentence or a message, not a
    // command: its arguments are options, their values, paths, numbers or PLACEHOLDERS.
    let plain = |x: &str| x.chars().all(|c| c.is_ascii_lowercase() || c == ',');
    let sentence = !cmd.block
        && w.iter()
            .enumerate()
            .skip(2)
            .any(|(i, x)| plain(x) && !w[i - 1].starts_with('-'));
    if base == "zarrshard" && !sentence {
        if let Some(sub) = w.get(1).filter(|s| {
            !s.starts_with('-') && s.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        }) {
            if (k.subcommand)(sub) == Some(false) {
                bad(format!("`zarrshard {sub}` is not a subcommand of the tool (`zarrshard {sub} --help` fails)"));
            }
        }
        return problems;
    }
    if path_like(first) && !ignored(first) && !exists(first) {
        bad(format!("{first} does not exist in the repository"));
        return problems;
    }
    match base {
        "test.sh" if first.ends_with("scripts/test.sh") => {
            // `STAGE...` and other capitals stand for what the reader fills in.
            let placeholder = |s: &str| {
                s.chars().any(|c| c.is_ascii_uppercase())
                    && !s.chars().any(|c| c.is_ascii_lowercase())
            };
            for s in w[1..]
                .iter()
                .filter(|s| !s.starts_with('-') && !placeholder(s))
            {
                if !k.stages.contains(*s) {
                    bad(format!(
                        "`{s}` is not a stage of scripts/test.sh (--list: {:?})",
                        k.stages
                    ));
                }
            }
        }
        "make" => {
            if let Some(i) = w.iter().position(|x| *x == "-C") {
                let Some(dir) = w.get(i + 1) else {
                    return problems;
                };
                let mf = k.root.join(dir).join("Makefile");
                match std::fs::read_to_string(&mf) {
                    Err(_) => bad(format!("{dir}/Makefile does not exist")),
                    Ok(text) => {
                        let targets = make_targets(&text);
                        // [a|b] and <target> are placeholders.
                        let named = |t: &&&str| {
                            !t.starts_with('-') && !t.contains(['=', '[', ']', '<', '>'])
                        };
                        for t in w[i + 2..].iter().filter(named) {
                            if !targets.contains(*t) {
                                bad(format!("`{t}` is not a target of {dir}/Makefile"));
                            }
                        }
                    }
                }
            }
        }
        "pip" | "pip3" | "python" | "python3" => {
            let at = if base.starts_with("pip") {
                1
            } else if w.get(1) == Some(&"-m") && w.get(2).is_some_and(|m| m.starts_with("pip")) {
                3
            } else {
                usize::MAX
            };
            if w.get(at) == Some(&"install") {
                for p in w[at + 1..].iter().filter(|p| {
                    !p.starts_with('-')
                        && (p.starts_with('.') || p.contains('/'))
                        && !p.contains("://")
                }) {
                    let d = k.root.join(p);
                    if !d.join("setup.py").is_file() && !d.join("pyproject.toml").is_file() {
                        bad(format!(
                            "{p} is not a directory with setup.py or pyproject.toml"
                        ));
                    }
                }
            } else if at == usize::MAX {
                if let Some(script) = w.get(1).filter(|s| path_like(s) && !ignored(s)) {
                    if !exists(script) {
                        bad(format!("{script} does not exist in the repository"));
                    }
                }
            }
        }
        "bash" | "sh" => {
            if let Some(script) = w.get(1).filter(|s| path_like(s) && !ignored(s)) {
                if !exists(script) {
                    bad(format!("{script} does not exist in the repository"));
                }
            }
        }
        "cargo" => {
            let manifest = w
                .iter()
                .position(|x| *x == "--manifest-path")
                .and_then(|i| w.get(i + 1))
                .map_or_else(|| "Cargo.toml".to_string(), |m| m.to_string());
            let wanted: Vec<&str> = w
                .iter()
                .enumerate()
                .filter_map(|(i, x)| {
                    if *x == "--features" || *x == "-F" {
                        w.get(i + 1).copied()
                    } else {
                        x.strip_prefix("--features=")
                    }
                })
                .flat_map(|f| f.split([',', ' ']))
                .filter(|f| !f.is_empty())
                .collect();
            if wanted.is_empty() {
                return problems;
            }
            match std::fs::read_to_string(k.root.join(&manifest)) {
                Err(_) => bad(format!("{manifest} does not exist")),
                Ok(text) => {
                    let have = cargo_features(&text);
                    for f in wanted.into_iter().filter(|f| !f.contains('/')) {
                        if !have.contains(f) {
                            bad(format!("feature `{f}` is not in {manifest} ({have:?})"));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    problems
}

/// The stages `scripts/test.sh --list` prints (the names at the start of its lines).
fn test_stages() -> BTreeSet<String> {
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/test.sh"))
        .arg("--list")
        .output()
        .expect("bash scripts/test.sh --list");
    assert!(out.status.success(), "scripts/test.sh --list failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with([' ', '\t']) && !l.is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Whether `zarrshard SUB --help` succeeds (the tool needs the `cli` feature; without it, None).
fn tool_has_subcommand(sub: &str) -> Option<bool> {
    #[cfg(feature = "cli")]
    {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .args([sub, "--help"])
            .output()
            .expect("run zarrshard");
        Some(out.status.success())
    }
    #[cfg(not(feature = "cli"))]
    {
        let _ = sub;
        None
    }
}

#[test]
fn every_command_the_readme_shows_exists() {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let memo: std::cell::RefCell<HashMap<String, Option<bool>>> = Default::default();
    let sub = |s: &str| {
        *memo
            .borrow_mut()
            .entry(s.to_string())
            .or_insert_with(|| tool_has_subcommand(s))
    };
    let known = Known {
        root: repo(),
        ignored: ignored_roots(repo()),
        stages: test_stages(),
        subcommand: &sub,
    };
    let mut problems = Vec::new();
    for cmd in readme_commands(&text) {
        problems.extend(check_command(&known, "README.md", &cmd));
    }
    assert!(
        problems.is_empty(),
        "{} commands name what does not exist:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

// ---- sizes ---------------------------------------------------------------------------------

/// Pages over their line limit (issue 38), or missing.
fn check_sizes(root: &Path, limits: &[(&str, usize)]) -> Vec<String> {
    let mut problems = Vec::new();
    for &(page, max) in limits {
        match std::fs::read_to_string(root.join(page)) {
            Err(e) => problems.push(format!("{page}: {e}")),
            Ok(t) => {
                let n = t.lines().count();
                if n > max {
                    problems.push(format!("{page}:{}: {n} lines, at most {max}", max + 1));
                }
            }
        }
    }
    problems
}

#[test]
fn pages_keep_to_their_sizes() {
    let problems = check_sizes(
        repo(),
        &[
            ("README.md", 250),
            ("docs/performance.md", 300),
            ("bindings/cpp/README.md", 150),
            ("bindings/java/README.md", 150),
            ("bindings/julia/README.md", 150),
            ("bindings/python/README.md", 150),
        ],
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---- the checkers on small strings -----------------------------------------------------------

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("Exit codes"), "exit-codes");
    assert_eq!(slug("C quick start"), "c-quick-start");
    assert_eq!(
        slug(&heading_text("Python (`bindings/python/`)")),
        "python-bindingspython"
    );
    assert_eq!(
        slug("Reading rules, and where we differ from peers"),
        "reading-rules-and-where-we-differ-from-peers"
    );
    assert_eq!(
        slug("Arrays in a hierarchy: create, append frames, resize, groups"),
        "arrays-in-a-hierarchy-create-append-frames-resize-groups"
    );
    assert_eq!(
        slug("snake_case and kebab-case"),
        "snake_case-and-kebab-case"
    );
    assert_eq!(slug("A  B"), "a--b"); // spaces are not collapsed
    assert_eq!(slug("64×64 shards"), "6464-shards");
    assert_eq!(
        slug(&heading_text("[Links](x.md) and *emphasis*")),
        "links-and-emphasis"
    );
    assert_eq!(slug("Ünïcode Wörds"), "ünïcode-wörds");
}

#[test]
fn anchors_count_repeats_and_skip_code() {
    let page = "# Title\n\n## Usage\n\n```sh\n# not a heading\n```\n\n## Usage\n\nSetext\n------\n\n<a id=\"custom\"></a>\n<a name=old-name>\n## Usage ##\n";
    let a = anchors(page);
    let want: BTreeSet<String> = [
        "title", "usage", "usage-1", "usage-2", "setext", "custom", "old-name",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(a, want);
    assert!(!a.contains("not-a-heading"));
}

#[test]
fn links_skip_code_and_span_lines() {
    let page = "See [the CLI](docs/cli.md#exit-codes) and [a\nwrapped link](docs/x.md).\n\n`[not](a-link.md)` and\n\n```md\n[nor](this.md)\n```\n\n[ref]: docs/ref.md \"title\"\n<img src=\"logo.png\"> ![img](pic.png \"t\") [paren](a_(b).md)\n";
    let got: Vec<(usize, String)> = links(page);
    assert_eq!(
        got,
        vec![
            (1, "docs/cli.md#exit-codes".to_string()),
            (2, "docs/x.md".to_string()),
            (10, "docs/ref.md".to_string()),
            (11, "a_(b).md".to_string()),
            (11, "logo.png".to_string()),
            (11, "pic.png".to_string()),
        ]
    );
}

/// A scratch tree: files with their contents.
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("docs-rs")
        .join(name);
    let _ = std::fs::remove_dir_all(&root);
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root
}

#[test]
fn broken_links_are_reported_with_file_and_line() {
    let root = tree(
        "links",
        &[
            ("docs/cli.md", "# CLI\n\n## Exit codes\n\n## Exit codes\n"),
            ("src/lib.rs", ""),
        ],
    );
    let readme = "# Top\n\n[ok](docs/cli.md#exit-codes) [ok](docs/cli.md#exit-codes-1) [ok](#top) [ok](src/lib.rs#L3)\n\
                  [web](https://example.com/x.md) [mail](mailto:a@b) [dir](docs/)\n\
                  [gone](docs/gone.md)\n[bad anchor](docs/cli.md#exit-code)\n[self](#nowhere)\n[up](../outside.md)\n";
    let problems = check_links(&root, Path::new("README.md"), readme);
    assert_eq!(
        problems,
        vec![
            "README.md:5: link `docs/gone.md`: docs/gone.md does not exist",
            "README.md:6: link `docs/cli.md#exit-code`: docs/cli.md has no heading with the anchor #exit-code",
            "README.md:7: link `#nowhere`: README.md has no heading with the anchor #nowhere",
            "README.md:8: link `../outside.md` leaves the repository",
        ]
    );
    // From a page in docs/, links are relative to docs/.
    let problems = check_links(
        &root,
        Path::new("docs/cli.md"),
        "# CLI\n[back](../src/lib.rs) [ok](cli.md#cli) [x](lib.rs)\n",
    );
    assert_eq!(
        problems,
        vec!["docs/cli.md:2: link `lib.rs`: docs/lib.rs does not exist"]
    );
}

#[test]
fn commands_are_found_in_blocks_and_spans() {
    let readme = "```sh\nscripts/demo.sh     # the demo\nFOO=1 make -C examples-c demo && \\\n  zarrshard info a.zarr\n```\n\n```console\n$ cargo build --features cli\nFinished\n```\n\n```rust\nlet x = `not`;\n```\n\nRun `scripts/test.sh rust c` then\n`pip install ./bindings/python`.\n";
    let cmds = readme_commands(readme);
    let words: Vec<(usize, String)> = cmds.iter().map(|c| (c.line, c.words.join(" "))).collect();
    assert_eq!(
        words,
        vec![
            (2, "scripts/demo.sh".to_string()),
            (3, "FOO=1 make -C examples-c demo".to_string()),
            (3, "zarrshard info a.zarr".to_string()),
            (8, "cargo build --features cli".to_string()),
            (16, "scripts/test.sh rust c".to_string()),
            (17, "pip install ./bindings/python".to_string()),
        ]
    );
    let words = |v: &[&[&str]]| -> Vec<Vec<String>> {
        v.iter()
            .map(|c| c.iter().map(|w| w.to_string()).collect())
            .collect()
    };
    assert_eq!(
        split_commands("a 2>&1 | tee 'x y' # c"),
        words(&[&["a", "2>", "1"], &["tee", "x y"]])
    );
    assert_eq!(
        split_commands("A=1 b \"c d\" && e; f || g"),
        words(&[&["A=1", "b", "c d"], &["e"], &["f"], &["g"]])
    );
}

#[test]
fn missing_commands_are_reported() {
    let root = tree(
        "commands",
        &[
            ("scripts/demo.sh", ""),
            ("scripts/test.sh", ""),
            ("bindings/cpp/run.sh", ""),
            ("bindings/python/pyproject.toml", ""),
            ("examples-c/Makefile", "OUT ?= build\nall: $(OUT)/a\ndemo: $(OUT)/a\n\t$(CC) x\n.PHONY: all demo\n"),
            ("Cargo.toml", "[package]\nname = \"x\"\n[dependencies]\nclap = { version = \"4\", optional = true }\n[features]\ndefault = []\ncli = [\"dep:clap\"]\n"),
            (".gitignore", "/target\n"),
        ],
    );
    let sub = |s: &str| Some(matches!(s, "export" | "info"));
    let known = Known {
        root: &root,
        ignored: ignored_roots(&root),
        stages: ["rust", "c"].into_iter().map(String::from).collect(),
        subcommand: &sub,
    };
    let readme = "```sh\nscripts/demo.sh\nscripts/nope.sh\nbindings/*/run.sh\nbindings/{cpp,java}/run.sh\n\
                  zarrshard export a b\nzarrshard frobnicate a\ntarget/release/zarrshard info x\n\
                  make -C examples-c demo\nmake -C examples-c install\npip install ./bindings/python ./bindings/cpp\n\
                  cargo test --release --features cli\ncargo build --features cli,gpu\n\
                  scripts/test.sh rust c\nscripts/test.sh rust lint\nscripts/test.sh STAGE...\n./target/debug/whatever\nbash tests/c/run.sh\n\
                  script/typo.sh --x\n```\n\nText `c/0/0`, `examples-c/gone.c`, `examples-c/Makefile` and `zarrshard nope`.\n\
                  `zarrshard reads only this` `make -C examples-c [demo|all]` `x; zarrshard nope`\n";
    let problems: Vec<String> = readme_commands(readme)
        .iter()
        .flat_map(|c| check_command(&known, "README.md", c))
        .collect();
    assert_eq!(
        problems,
        vec![
            "README.md:3: `scripts/nope.sh`: scripts/nope.sh does not exist in the repository".to_string(),
            "README.md:5: `bindings/{cpp,java}/run.sh`: bindings/{cpp,java}/run.sh does not exist in the repository".to_string(),
            "README.md:7: `zarrshard frobnicate a`: `zarrshard frobnicate` is not a subcommand of the tool (`zarrshard frobnicate --help` fails)".to_string(),
            "README.md:10: `make -C examples-c install`: `install` is not a target of examples-c/Makefile".to_string(),
            "README.md:11: `pip install ./bindings/python ./bindings/cpp`: ./bindings/cpp is not a directory with setup.py or pyproject.toml".to_string(),
            "README.md:13: `cargo build --features cli,gpu`: feature `gpu` is not in Cargo.toml ({\"cli\", \"default\"})".to_string(),
            "README.md:15: `scripts/test.sh rust lint`: `lint` is not a stage of scripts/test.sh (--list: {\"c\", \"rust\"})".to_string(),
            "README.md:18: `bash tests/c/run.sh`: tests/c/run.sh does not exist in the repository".to_string(),
            "README.md:19: `script/typo.sh --x`: script/typo.sh does not exist in the repository".to_string(),
            "README.md:22: `examples-c/gone.c`: examples-c/gone.c does not exist in the repository".to_string(),
            "README.md:22: `zarrshard nope`: `zarrshard nope` is not a subcommand of the tool (`zarrshard nope --help` fails)".to_string(),
        ]
    );
}

#[test]
fn sizes_over_the_limit_are_reported() {
    let root = tree("sizes", &[("a.md", "1\n2\n3\n"), ("b.md", "1\n2\n")]);
    assert_eq!(
        check_sizes(&root, &[("a.md", 2), ("b.md", 2), ("c.md", 5)])
            .iter()
            .map(|p| p.split(" (os error").next().unwrap().to_string())
            .collect::<Vec<_>>(),
        vec![
            "a.md:3: 3 lines, at most 2".to_string(),
            "c.md: No such file or directory".to_string()
        ]
    );
}
