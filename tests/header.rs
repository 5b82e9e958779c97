//! The committed header must be exactly what cbindgen generates from the sources now.

#[test]
fn committed_header_matches_a_fresh_generation() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/zarrshard.h"));
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/zarrshard.h"))
            .unwrap();
    assert!(
        fresh == committed,
        "include/zarrshard.h is stale: run scripts/update-header.sh and commit it"
    );
}

/// What the brief asks of every function in the header: a doc comment that says what it does,
/// its thread-safety ("thread" or "exclusive use") and, for a `shard_status` result, the
/// statuses it returns (`SHARD_OK` and the rest, or "Returns what `shard_…` returns").
#[test]
fn every_header_function_documents_thread_safety_and_statuses() {
    let header = include_str!("../include/zarrshard.h");
    let mut functions = 0;
    let mut problems = Vec::new();
    for (at, line) in header
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .filter_map(|i| {
            let line = header[i..].lines().next()?;
            Some((i, line))
        })
    {
        // A prototype: `<type> shard_name(` at the start of a line.
        let Some(paren) = line.find('(') else {
            continue;
        };
        let head = &line[..paren];
        let Some(name) = head.split_whitespace().last() else {
            continue;
        };
        let name = name.trim_start_matches('*');
        if !name.starts_with("shard_") || line.starts_with([' ', '*', '/', '#']) {
            continue;
        }
        functions += 1;
        let before = header[..at].trim_end();
        let Some(doc) = before
            .strip_suffix("*/")
            .and_then(|b| b.rfind("/**").map(|i| &b[i..]))
        else {
            problems.push(format!("{name}: no doc comment"));
            continue;
        };
        // One line of words, without the comment's leading `*`s.
        let doc = doc
            .split_whitespace()
            .filter(|w| *w != "*")
            .collect::<Vec<_>>()
            .join(" ");
        let lower = doc.to_lowercase();
        if !(lower.contains("thread") || lower.contains("exclusive use")) {
            problems.push(format!("{name}: no word on threads"));
        }
        if head.trim_start().starts_with("shard_status")
            && !(doc.contains("SHARD_OK") || doc.contains("Returns what `shard_"))
        {
            problems.push(format!("{name}: statuses not listed"));
        }
    }
    assert!(
        functions >= 45,
        "only {functions} functions found: the parser is broken"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
