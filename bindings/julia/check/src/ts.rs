//! Small tree-sitter helpers.

use tree_sitter::Node;

pub fn text<'a>(n: Node, src: &'a str) -> &'a str {
    &src[n.byte_range()]
}

/// 1-based line.
pub fn line_of(n: Node) -> usize {
    n.start_position().row + 1
}

/// The first ERROR or MISSING node, if any.
pub fn has_error(n: Node) -> Option<Node> {
    if n.is_error() || n.is_missing() {
        return Some(n);
    }
    if !n.has_error() {
        return None;
    }
    let mut c = n.walk();
    for child in n.children(&mut c) {
        if let Some(e) = has_error(child) {
            return Some(e);
        }
    }
    None
}

pub fn named_children(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|k| !matches!(k.kind(), "line_comment" | "block_comment" | "comment"))
        .collect()
}
