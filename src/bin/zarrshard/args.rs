//! Parsing of the comma-separated lists the commands take (`3,5`, `64,64`).

/// `"3,5"` → `[3, 5]`; the empty string is the empty list (a rank-0 array).
pub fn uint_list(text: &str) -> Result<Vec<u64>, String> {
    if text.trim().is_empty() {
        return Ok(vec![]);
    }
    text.split(',')
        .map(|part| {
            part.trim().parse::<u64>().map_err(|_| {
                format!("`{text}` is not a comma-separated list of non-negative integers")
            })
        })
        .collect()
}
