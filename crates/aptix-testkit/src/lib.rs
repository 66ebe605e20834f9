//! Test support shared by the Aptix crates: where the recorded fixtures live and how to
//! read them.
//!
//! The fixtures are recorded real `/v1/responses` traffic kept in the `shared/` folder
//! beside the repository (`../shared/fixtures/responses/` from the repository root).
//! `APTIX_SHARED_DIR` overrides the location. A missing fixture is a test failure with
//! a message saying where it was looked for, never a silent skip.

use std::path::{Path, PathBuf};

/// The `shared/` folder: `$APTIX_SHARED_DIR`, or `../shared` beside the repository root.
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("APTIX_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    repository_root().join("..").join("shared")
}

/// The repository root (the folder holding the workspace `Cargo.toml`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// The folder of recorded `/v1/responses` traffic.
pub fn fixtures_dir() -> PathBuf {
    shared_dir().join("fixtures").join("responses")
}

/// Reads one fixture by file name, panicking with the path looked at when it is missing.
pub fn read_fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "fixture {name} is required and could not be read at {}: {error}; \
             set APTIX_SHARED_DIR to the shared/ folder",
            path.display()
        )
    })
}

/// Reads one fixture as UTF-8 text.
pub fn read_fixture_text(name: &str) -> String {
    String::from_utf8(read_fixture(name))
        .unwrap_or_else(|error| panic!("fixture {name} is not UTF-8: {error}"))
}

/// The names of every fixture whose file name ends with `suffix`, sorted. Panics when
/// the folder is missing or holds none, so that a test over "every fixture" cannot pass
/// vacuously.
pub fn fixture_names(suffix: &str) -> Vec<String> {
    let dir = fixtures_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| {
        panic!(
            "fixture folder {} is required: {error}; set APTIX_SHARED_DIR",
            dir.display()
        )
    });
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(suffix))
        .collect();
    names.sort();
    assert!(
        !names.is_empty(),
        "no fixtures ending in {suffix} in {}",
        dir.display()
    );
    names
}
