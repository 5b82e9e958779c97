//! The crate's features as a dependent sees them: the library, with its default features or
//! none, compiles neither clap nor indicatif (the command-line tool's dependencies, behind the
//! `cli` feature); `cli` brings them and Parquet. Asked of `cargo tree`, offline, from the
//! lock file.

use std::process::Command;

/// The packages (`name vX.Y.Z`) the library's normal dependency tree holds with `features`.
fn packages(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .args(features)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo tree {features:?}: {stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(" (").next().unwrap().to_string())
        .collect()
}

fn has(packages: &[String], name: &str) -> bool {
    packages.iter().any(|p| p.split(' ').next() == Some(name))
}

#[test]
fn the_library_does_not_compile_the_cli_dependencies() {
    let default = packages(&[]);
    assert!(
        has(&default, "zarrshard") && has(&default, "zstd"),
        "{default:?}"
    );
    for cli_only in ["clap", "indicatif"] {
        assert!(!has(&default, cli_only), "default features pull {cli_only}");
    }
    // Parquet is a library feature, on by default (the C API's Parquet entry points).
    assert!(has(&default, "parquet"), "{default:?}");

    let none = packages(&["--no-default-features"]);
    for absent in ["clap", "indicatif", "parquet"] {
        assert!(!has(&none, absent), "--no-default-features pulls {absent}");
    }

    let cli = packages(&["--features", "cli"]);
    for present in ["clap", "indicatif", "parquet"] {
        assert!(
            has(&cli, present),
            "--features cli lacks {present}: {cli:?}"
        );
    }
}

/// The binary and the tests that run it whole are built only with `cli`, so that a plain
/// `cargo build` / `cargo test` of the library compiles no clap.
#[test]
fn the_binary_and_its_tests_require_the_cli_feature() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets = meta["packages"][0]["targets"].as_array().unwrap();
    let required = |kind: &str, name: &str| {
        let t = targets
            .iter()
            .find(|t| t["name"] == name && t["kind"][0] == kind)
            .unwrap_or_else(|| panic!("no {kind} target {name}"));
        t["required-features"].clone()
    };
    assert_eq!(required("bin", "zarrshard"), serde_json::json!(["cli"]));
    for test in ["cli", "cli_errors", "cli_fswrite", "cli_repack"] {
        assert_eq!(required("test", test), serde_json::json!(["cli"]), "{test}");
    }
    assert_eq!(required("rlib", "zarrshard"), serde_json::Value::Null);
}
