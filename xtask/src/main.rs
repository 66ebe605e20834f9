//! Project automation. `cargo xtask ci` runs everything CI checks, in the order that
//! fails fastest: formatting, lints, layering, unused dependencies, tests, doc tests,
//! docs. `cargo xtask serve-bench` measures the HTTP service under load.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

#[cfg(feature = "serve-bench")]
mod serve_bench;

/// Load on the service is measured with the allocator the `aptix` binary ships with
/// (`crates/aptix-cli/src/main.rs`), client and fake included.
#[cfg(feature = "serve-bench")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(feature = "soak")]
mod soak;

/// Crates that must stay pure: no network stack and no async runtime underneath.
const CORE_CRATES: &[&str] = &[
    "aptix-sse",
    "aptix-model",
    "aptix-rag",
    "aptix-request",
    "aptix-mapping",
];
/// Packages that must never appear under a core crate.
const BANNED_UNDER_CORE: &[&str] = &["reqwest", "hyper", "tokio", "axum", "rusqlite", "tantivy"];
/// Packages that must not appear under `aptix-client` built without its `http` feature.
const BANNED_UNDER_CLIENT_TRAIT: &[&str] = &["reqwest", "hyper"];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("layering") => layering(),
        Some("serve-bench") => serve_bench(&args[1..]),
        #[cfg(feature = "serve-bench")]
        Some("serve-bench-run") => serve_bench::run(&args[1..]),
        Some("soak") => soak(&args[1..]),
        #[cfg(feature = "soak")]
        Some("soak-run") => soak::run(&args[1..]),
        Some("help" | "-h" | "--help") => {
            println!("{}", usage());
            Ok(())
        }
        _ => {
            eprintln!("{}", usage());
            bail!("unknown or missing task")
        }
    }
}

/// What `cargo xtask help` prints, and what a wrong task is answered with.
fn usage() -> String {
    [
        "usage: cargo xtask <ci|layering|serve-bench [seconds per run] [json|sse] [1|16|64]|soak [turns] [stateless|stateful] [seed] [window told]>",
        "  ci        formatting, clippy, layering, unused dependencies, tests, doc tests, rustdoc",
        "  layering  check that core crates pull in no network stack or runtime",
        "  serve-bench  load on the HTTP service beside a fake answering the same bytes (release build)",
        "  soak  one long session with cut streams and a small context window against a fake",
    ]
    .join("\n")
}

fn ci() -> Result<()> {
    let started = Instant::now();
    cargo(&["fmt", "--all", "--check"])?;
    clippy(&["--workspace", "--all-targets"])?;
    // The measuring tools (serve-bench, soak) are behind xtask features the workspace
    // build leaves off: lint them too, so they cannot rot unseen.
    clippy(&["--package", "xtask", "--all-features"])?;
    // No member depends on the facade, so the workspace build leaves its optional
    // features off: lint it, and run its doc examples, with all of them on, so a
    // re-export or a feature that reaches no further cannot rot unseen.
    clippy(&["--package", "aptix", "--all-features", "--all-targets"])?;
    // A provider of one's own depends on aptix-client without its HTTP providers: that
    // build must stay free of warnings too (the workspace build turns `http` on).
    clippy(&[
        "--package",
        "aptix-client",
        "--no-default-features",
        "--all-targets",
    ])?;
    layering()?;
    unused_dependencies()?;
    acp_test_env()?;
    // The PostgreSQL store's tests (conformance, replicas) run on a real server, started
    // here once for the whole suite and stopped when the suite ends, failed or not.
    let postgres = TestPostgres::start()?;
    let tests = |args: &[&str]| {
        run(Command::new(cargo_bin())
            .args(args)
            .env("APTIX_TEST_POSTGRES_URL", &postgres.url))
    };
    if has_nextest() {
        tests(&[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--no-fail-fast",
        ])?;
    } else {
        eprintln!("xtask: cargo-nextest is not installed; running the suite with cargo test");
        tests(&["test", "--workspace", "--locked", "--no-fail-fast"])?;
    }
    tests(&["test", "--workspace", "--locked", "--doc"])?;
    tests(&[
        "test",
        "--package",
        "aptix",
        "--all-features",
        "--locked",
        "--doc",
    ])?;
    drop(postgres);
    run(Command::new(cargo_bin())
        .args(["doc", "--workspace", "--no-deps", "--locked"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    eprintln!("xtask: ci passed in {:.0?}", started.elapsed());
    Ok(())
}

/// Re-runs xtask optimised, with the service built in, to measure it: a debug build's
/// figures would say nothing about the service.
fn serve_bench(args: &[String]) -> Result<()> {
    run(Command::new(cargo_bin())
        .args([
            "run",
            "--quiet",
            "--release",
            "--package",
            "xtask",
            "--features",
            "serve-bench",
            "--",
            "serve-bench-run",
        ])
        .args(args))
}

/// Re-runs xtask with the orchestrator and a fake server built in (a debug build: the
/// soak checks behaviour, not speed).
fn soak(args: &[String]) -> Result<()> {
    run(Command::new(cargo_bin())
        .args([
            "run",
            "--quiet",
            "--package",
            "xtask",
            "--features",
            "soak",
            "--",
            "soak-run",
        ])
        .args(args))
}

/// rust-analyzer's rule: CI fails when a banned dependency shows up under a crate.
fn layering() -> Result<()> {
    for krate in CORE_CRATES {
        check_tree(krate, &[], BANNED_UNDER_CORE)?;
    }
    // Seed 003 sends, but only through the provider trait: like a core crate, it pulls in
    // no network stack, runtime, database or index.
    check_tree("aptix-schema", &[], BANNED_UNDER_CORE)?;
    check_tree(
        "aptix-client",
        &["--no-default-features"],
        BANNED_UNDER_CLIENT_TRAIT,
    )?;
    eprintln!(
        "xtask: layering holds (core crates and aptix-schema are pure, the provider trait needs no HTTP)"
    );
    Ok(())
}

fn check_tree(krate: &str, extra: &[&str], banned: &[&str]) -> Result<()> {
    let mut command = Command::new(cargo_bin());
    command
        .current_dir(root())
        .args([
            "tree", "--locked", "-e", "normal", "--prefix", "none", "--format", "{p}",
        ])
        .args(["-p", krate])
        .args(extra);
    let output = command
        .output()
        .with_context(|| format!("running cargo tree for {krate}"))?;
    if !output.status.success() {
        bail!(
            "cargo tree for {krate} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let found: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| banned.contains(name))
        .collect();
    if !found.is_empty() {
        bail!(
            "{krate} must not depend on {found:?}; see docs/ARCHITECTURE.md (run `cargo tree -p {krate} -i {}` to see why it does)",
            found[0]
        );
    }
    Ok(())
}

/// Every dependency a manifest declares is used (`cargo machete`, which `.ci/run`
/// installs): a dependency nobody uses still costs every build.
fn unused_dependencies() -> Result<()> {
    // cargo-machete reads its arguments through argh's cargo support, which takes a set
    // CARGO_PKG_NAME (as `cargo run` sets for xtask) to mean it was run directly and
    // then reads `machete` as a path; the variable is not passed on.
    let installed = Command::new(cargo_bin())
        .args(["machete", "--version"])
        .env_remove("CARGO_PKG_NAME")
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    if !installed {
        bail!(
            "cargo-machete is required for the unused-dependency check: cargo install cargo-machete --locked"
        );
    }
    run(Command::new(cargo_bin())
        .arg("machete")
        .env_remove("CARGO_PKG_NAME"))
}

/// A PostgreSQL server from `scripts/test-postgres.sh` (which installs the Debian
/// package when it can, and says how when it cannot), stopped on drop.
struct TestPostgres {
    dir: PathBuf,
    url: String,
}

impl TestPostgres {
    fn start() -> Result<TestPostgres> {
        let dir = root().join("target").join("ci-postgres");
        // A server left by an interrupted run is stopped first.
        let _ = Command::new("bash")
            .arg(root().join("scripts/test-postgres.sh"))
            .arg("stop")
            .arg(&dir)
            .status();
        eprintln!(
            "xtask: starting PostgreSQL for the store tests in {}",
            dir.display()
        );
        let output = Command::new("bash")
            .arg(root().join("scripts/test-postgres.sh"))
            .arg("start")
            .arg(&dir)
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running scripts/test-postgres.sh")?;
        if !output.status.success() {
            bail!(
                "PostgreSQL could not be started for the store tests (see the message above); \
                 the suite needs it and does not skip those tests"
            );
        }
        let url = String::from_utf8(output.stdout)
            .context("the script's URL is not UTF-8")?
            .trim()
            .to_owned();
        Ok(TestPostgres { dir, url })
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(root().join("scripts/test-postgres.sh"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// `cargo clippy` on `target`, every warning an error.
fn clippy(target: &[&str]) -> Result<()> {
    let mut args = vec!["clippy"];
    args.extend_from_slice(target);
    args.extend_from_slice(&["--locked", "--", "-D", "warnings"]);
    cargo(&args)
}

fn has_nextest() -> bool {
    Command::new(cargo_bin())
        .args(["nextest", "--version"])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false)
}

fn cargo(args: &[&str]) -> Result<()> {
    run(Command::new(cargo_bin()).args(args))
}

fn run(command: &mut Command) -> Result<()> {
    command.current_dir(root());
    eprintln!("xtask: running {command:?}");
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("starting {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}{}", low_disk_hint());
    }
    eprintln!("xtask: done in {:.0?}", started.elapsed());
    Ok(())
}

/// What to add to a failure when the disk under `target/` is nearly full: a linker that
/// runs out of space dies of SIGBUS ("ld terminated with signal 7") or an I/O error
/// that does not say why.
fn low_disk_hint() -> String {
    const LOW_MB: u64 = 2048;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let Ok(output) = Command::new("df").arg("-Pk").arg(&target).output() else {
        return String::new();
    };
    let free_mb = String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().nth(3)?.parse::<u64>().ok())
        .map(|kb| kb / 1024);
    match free_mb {
        Some(mb) if mb < LOW_MB => format!(
            "\n  only {mb} MB are free on the disk under {}: the build has likely run out of \
             space (a linker that does dies of SIGBUS, \"signal 7\"); the suite's build \
             needs about 5 GB",
            target.display()
        ),
        _ => String::new(),
    }
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Installs the client the `aptix acp` tests drive the agent with (the Python ACP SDK,
/// pinned, in target/acp-venv, where the tests look for it), so that a machine that
/// cannot install it fails here, saying why, before the tests run.
fn acp_test_env() -> Result<()> {
    run(Command::new("bash").arg(root().join("scripts/acp-test-env.sh")))
}
