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
