//! `docs/ARCHITECTURE.md` stays exact (rust-analyzer's tidy rule for its
//! `architecture.md`): every backticked path exists, every backticked Rust item
//! (`aptix_crate::path::Item`, or a bare `CamelCase` name) is declared where it says,
//! every crate of the workspace has a section, and the dependency arrows of the sketch
//! are the manifests' own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository root")
        .to_path_buf()
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md")
}

/// The backticked spans of the doc, outside fenced blocks.
fn spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
            out.push(inside.to_owned());
        }
    }
    out
}

/// Every crate directory of the workspace (`crates/*`), by package name.
fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every `.rs` source of a crate, concatenated.
fn sources(dir: &Path) -> String {
    let mut text = String::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                text.push('\n');
            }
        }
    }
    text
}

/// Whether `source` declares `name` as an item (or a macro-declared variant or const).
fn declares(source: &str, name: &str) -> bool {
    ["fn", "struct", "enum", "trait", "type", "const", "mod", "static", "macro_rules!"]
        .iter()
        .any(|kind| {
            source.contains(&format!("{kind} {name}(")) || source.contains(&format!("{kind} {name} "))
                || source.contains(&format!("{kind} {name}<"))
                || source.contains(&format!("{kind} {name};"))
                || source.contains(&format!("{kind} {name}:"))
        })
        || source.contains(&format!("    {name}(")) // enum variants
        || source.contains(&format!("    {name},"))
        || source.contains(&format!("    {name} {{"))
        || source.contains(&format!("=> {name}("))
}

fn looks_like_path(span: &str) -> bool {
    !span.contains(' ')
        && (span.contains('/')
            || [".rs", ".md", ".toml", ".json", ".py", ".sh"]
                .iter()
                .any(|ext| span.ends_with(ext)))
        && !span.starts_with("/v1")
        && !span.starts_with("POST")
        && !span.starts_with("GET")
        && !span.contains("://")
}

#[test]
fn every_backticked_path_exists() {
    let missing: Vec<String> = spans(&doc())
        .into_iter()
        .filter(|span| looks_like_path(span))
        .filter(|span| !root().join(span.trim_end_matches('/')).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names paths that do not exist (write them from the repository root): {missing:?}"
    );
}

#[test]
fn every_backticked_item_is_declared_in_its_crate() {
    let mut missing = Vec::new();
    let all_sources: String = crates()
        .iter()
        .map(|name| sources(&root().join("crates").join(name).join("src")))
        .collect();
    for span in spans(&doc()) {
        let span = span.trim_end_matches("()").trim_end_matches('!');
        if span.contains(' ') || looks_like_path(span) {
            continue;
        }
        if let Some(rest) = span.strip_prefix("aptix_") {
            let mut segments = rest.split("::");
            let krate = format!(
                "aptix-{}",
                segments.next().unwrap_or_default().replace('_', "-")
            );
            let dir = root().join("crates").join(&krate);
            if !dir.is_dir() {
                missing.push(format!("{span} (no crate {krate})"));
                continue;
            }
            let source = sources(&dir.join("src"));
            for segment in segments {
                if !declares(&source, segment) {
                    missing.push(format!("{span} ({segment} is not declared in {krate})"));
                }
            }
        } else if span.chars().next().is_some_and(char::is_uppercase)
            && span.chars().all(|c| c.is_ascii_alphanumeric())
            && span.chars().any(char::is_lowercase)
            && !declares(&all_sources, span)
        {
            missing.push(format!("{span} (not declared in any crate)"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names items that do not exist: {missing:#?}"
    );
}

#[test]
fn every_crate_has_a_section() {
    let text = doc();
    for name in crates() {
        assert!(
            text.contains(&format!("### `crates/{name}`")),
            "docs/ARCHITECTURE.md has no section for crates/{name}"
        );
    }
}

/// `a -> b` lines of the dependency list under "One direction of dependencies" must be
/// exactly the normal dependencies between workspace crates in the manifests.
#[test]
fn the_dependency_list_is_the_manifests() {
    let text = doc();
    let documented: BTreeSet<(String, String)> = text
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|line| {
            let (from, rest) = line.split_once("` -> ")?;
            Some((from, rest))
        })
        .flat_map(|(from, rest)| {
            rest.split(", ")
                .map(|to| {
                    (
                        from.to_owned(),
                        to.trim().trim_matches('`').trim_end_matches('.').to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut actual = BTreeSet::new();
    for name in crates() {
        let manifest =
            std::fs::read_to_string(root().join("crates").join(&name).join("Cargo.toml")).unwrap();
        let mut in_dependencies = false;
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_dependencies = line == "[dependencies]";
                continue;
            }
            if in_dependencies
                && let Some(dep) = line.split(['.', ' ', '=']).next()
                && dep.starts_with("aptix-")
            {
                actual.insert((name.clone(), dep.to_owned()));
            }
        }
    }
    assert!(!actual.is_empty());
    assert_eq!(
        documented, actual,
        "docs/ARCHITECTURE.md's dependency list differs from the manifests"
    );
}
