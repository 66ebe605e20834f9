//! Puts the commit the command was built from into `aptix --version`
//! (`aptix 0.1.0 (930aa68c1e 2026-11-27)`): the crates are not published, so a version
//! number alone does not say which build a bug report is about. Without git, or outside
//! a git checkout (a source archive), the version is the package's alone.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=APTIX_BUILD_COMMIT");
    let version = env!("CARGO_PKG_VERSION");
    // A packager building from an archive can name the commit itself.
    let commit = std::env::var("APTIX_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .map(|commit| commit.trim().to_owned())
        .or_else(git_commit);
    match commit {
        Some(commit) => println!("cargo:rustc-env=APTIX_VERSION={version} ({commit})"),
        None => println!("cargo:rustc-env=APTIX_VERSION={version}"),
    }
}

/// `930aa68c1e 2026-11-27`: the checked-out commit and its date, when the source is a
/// git checkout and git runs; rebuilt when the checkout moves to another commit.
fn git_commit() -> Option<String> {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(&manifest_dir)
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8(output.stdout).ok()?;
        (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    // Only this workspace's own checkout: a source archive unpacked inside another
    // repository (a distribution's packaging) is not that repository's commit.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let workspace = Path::new(&manifest_dir).join("../..");
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(workspace).ok()? {
        return None;
    }
    let described = git(&["log", "-1", "--format=%h %cs", "--abbrev=10"])?;
    // Watch what moves when a commit is made or checked out: HEAD, the branch it names
    // (a loose ref, or the packed ones), wherever git keeps them (`--git-path` knows
    // linked worktrees). A watched path that does not exist would make cargo run this
    // script on every build, so only existing ones are named.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        let Some(path) = git(&["rev-parse", "--git-path", &name]) else {
            continue;
        };
        let path = Path::new(&manifest_dir).join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Some(described)
}
