//! Test support shared by the Aptix crates: where the recorded fixtures live and how to
//! read them.
//!
//! The fixtures are recorded real `/v1/responses` traffic, vendored in the repository
//! under `tests/fixtures/responses/` (their sources are in `SOURCES.md` there), and the
//! part of OpenAI's OpenAPI description the request tests validate against, under
//! `tests/fixtures/spec/` (made by `scripts/trim-spec.py`). A clone needs nothing beside
//! it. A missing fixture is a test failure with a message saying where it was looked
//! for, never a silent skip. [`spec`] validates request bodies against that description,
//! and [`openapi`] validates values against the component schemas of any OpenAPI 3.1
//! document (Aptix's own `docs/openapi.json`).
//! With the `fault-server` feature, `fault_server` is a loopback HTTP server scripted
//! per request (statuses, headers, resets, cut and stalled streams) for the client,
//! orchestrator and CLI tests. With the `postgres` feature, `postgres` gives each test
//! a fresh database on a real PostgreSQL server started by `scripts/test-postgres.sh`.

use std::path::{Path, PathBuf};

pub mod openapi;
pub mod spec;

#[cfg(feature = "fault-server")]
pub mod fault_server;
#[cfg(feature = "postgres")]
pub mod postgres;

/// The lease holder id a process of this host, boot and PID namespace would have had
/// as pid 4999999, which never exists (the kernel's maximum is 4194304): what a holder
/// killed with `kill -9` leaves behind, in the form `aptix:<host>@<space>:<pid>:...` the
/// orchestrator writes. `None` where there is no `/proc` to tell a gone process by.
pub fn dead_holder_id() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()?
        .trim()
        .replace(':', "_");
    let boot: String = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()?
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    let namespace: String = std::fs::read_link("/proc/self/ns/pid")
        .ok()?
        .to_string_lossy()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    Some(format!("aptix:{name}@{boot}-{namespace}:4999999:1:0-0"))
}

/// The repository root (the folder holding the workspace `Cargo.toml`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// The folder of vendored test data: `tests/fixtures/` at the repository root.
pub fn fixtures_root() -> PathBuf {
    repository_root().join("tests").join("fixtures")
}

/// The folder of recorded `/v1/responses` traffic.
pub fn fixtures_dir() -> PathBuf {
    fixtures_root().join("responses")
}

/// The trimmed OpenAPI description of the Responses API, as JSON.
pub fn spec_path() -> PathBuf {
    fixtures_root().join("spec").join("responses-openapi.json")
}

/// Reads one fixture by file name, panicking with the path looked at when it is missing.
pub fn read_fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "fixture {name} is required and could not be read at {}: {error}",
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
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("fixture folder {} is required: {error}", dir.display()));
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
