//! rust-analyzer's "tidy" checks as an ordinary test, so plain `cargo test` catches
//! them: every Rust source file starts with a `//!` doc, no test is ignored or expects a
//! panic, no trailing whitespace, no debugging or unfinished-work markers.

use std::path::{Path, PathBuf};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository root")
        .to_path_buf()
}

/// Every `.rs` file we own: crates, tests and xtask, skipping build output.
fn rust_files() -> Vec<PathBuf> {
    let root = repository_root();
    let mut files = Vec::new();
    let mut pending: Vec<PathBuf> = ["crates", "tests", "xtask"]
        .iter()
        .map(|dir| root.join(dir))
        .collect();
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target"
                    && name != "snapshots"
                    && !name.to_string_lossy().starts_with('.')
                {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() > 10,
        "found only {} Rust files under {}",
        files.len(),
        root.display()
    );
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repository_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let missing: Vec<String> = rust_files()
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let first = text
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("");
            // `#!` attributes may precede nothing; the doc must be the first line.
            !first.starts_with("//!")
        })
        .map(|path| relative(&path))
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading //! doc: {missing:#?}"
    );
}

#[test]
fn no_ignored_or_should_panic_tests_and_no_unfinished_markers() {
    // Spelled in pieces so that this file does not match itself.
    let banned = [
        concat!("#[", "ignore"),
        concat!("#[", "should_panic"),
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
        concat!("dbg", "!("),
    ];
    let mut found = Vec::new();
    for path in rust_files() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            for pattern in banned {
                if line.contains(pattern) {
                    found.push(format!(
                        "{}:{}: {}",
                        relative(&path),
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "banned markers: {found:#?}");
}

#[test]
fn no_trailing_whitespace_in_sources_and_docs() {
    let root = repository_root();
    let mut files = rust_files();
    for doc in ["README.md", "docs"] {
        let path = root.join(doc);
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                files.push(entry.path());
            }
        } else {
            files.push(path);
        }
    }
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if line.ends_with(' ') || line.ends_with('\t') {
                found.push(format!("{}:{}", relative(&path), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "trailing whitespace: {found:#?}");
}
