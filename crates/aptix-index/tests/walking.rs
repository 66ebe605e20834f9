//! What the walk indexes and what it skips, and why.

mod common;

use aptix_index::{IndexConfig, SearchQuery, SkipReason, WorkspaceIndex};
use common::*;

#[test]
fn ignore_files_hidden_files_and_build_folders_are_honoured_outside_git() {
    let workspace = workspace();
    assert!(!workspace.path().join(".git").exists());
    let index = WorkspaceIndex::open(workspace.path(), IndexConfig::default()).unwrap();
    let stats = index.refresh(&aptix_index::NoProgress).unwrap();
    assert_eq!(stats.files_indexed, SOURCES.len() as u64, "{stats:#?}");
    assert!(stats.skipped.is_empty(), "{stats:#?}");
    for (path, content) in EXCLUDED {
        assert!(
            index.file_chunks(path).unwrap().is_empty(),
            "{path} was indexed"
        );
        let marker = content
            .split_whitespace()
            .find(|w| w.contains("arker"))
            .unwrap();
        let marker = marker.trim_end_matches("()");
        let hits = index.search(&SearchQuery::new(marker)).unwrap().hits;
        assert!(
            hits.is_empty(),
            "{marker} found in {:?}",
            hits[0].chunk.path
        );
    }
    // Source folders that share a name with build outputs elsewhere are indexed.
    write(
        workspace.path(),
        "src/bin/tool.rs",
        "fn cargo_bin_marker() {}\n",
    );
    index.refresh(&aptix_index::NoProgress).unwrap();
    assert_eq!(index.file_chunks("src/bin/tool.rs").unwrap().len(), 1);
    // The index folder keeps itself out of version control.
    let gitignore = std::fs::read_to_string(workspace.path().join(".aptix/.gitignore")).unwrap();
    assert_eq!(
        gitignore,
        "# Aptix state (sessions, index): local to this machine.\n*\n"
    );
}

#[test]
fn build_folder_names_are_build_output_only_beside_a_manifest_and_aptixignore_brings_one_back() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    let kept = [
        // pip's `_internal/operations/build`: a source package named like build output.
        (
            "pkg/operations/build/wheel.py",
            "def build_wheel_marker(): pass\n",
        ),
        ("lib/out/sink.py", "def out_sink_marker(): pass\n"),
    ];
    let skipped = [
        ("build/bundle.js", "function rootBuildMarker() {}\n"),
        ("web/dist/bundle.js", "function webDistMarker() {}\n"),
        ("app/build/lib/gen.py", "def app_build_marker(): pass\n"),
        ("svc/obj/Debug/gen.cs", "class ObjMarker {}\n"),
    ];
    for (path, content) in kept.iter().chain(&skipped) {
        write(root, path, content);
    }
    write(root, "web/package.json", "{}\n");
    write(root, "app/setup.py", "from setuptools import setup\n");
    write(root, "svc/Svc.csproj", "<Project />\n");
    let index = indexed(root, IndexConfig::default());
    let files = aptix_index::WorkspaceFiles::new(root, IndexConfig::default()).unwrap();
    for (path, _) in kept {
        assert_eq!(index.file_chunks(path).unwrap().len(), 1, "{path}");
        assert!(!files.is_ignored(path), "{path}");
    }
    for (path, _) in skipped {
        assert!(index.file_chunks(path).unwrap().is_empty(), "{path}");
        assert!(files.is_ignored(path), "{path}");
    }
    // A user who wants one back says so in `.aptixignore`.
    write(root, ".aptixignore", "!app/build/\n");
    index.refresh(&aptix_index::NoProgress).unwrap();
    assert_eq!(index.file_chunks("app/build/lib/gen.py").unwrap().len(), 1);
    let files = aptix_index::WorkspaceFiles::new(root, IndexConfig::default()).unwrap();
    assert!(!files.is_ignored("app/build/lib/gen.py"));
    assert!(files.is_ignored("web/dist/bundle.js"));
}

#[test]
fn binary_oversized_and_minified_files_are_skipped_and_reported() {
    let workspace = workspace();
    let root = workspace.path();
    std::fs::write(
        root.join("logo.png"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fn main",
    )
    .unwrap();
    write(root, "big.txt", &"many words here\n".repeat(1000));
    // Named without `.min`: a `*.min.js` is generated and not indexed at all.
    write(
        root,
        "bundle.js",
        &format!("var a={};\n", "1,".repeat(20_000)),
    );
    let config = IndexConfig {
        max_file_bytes: 8 * 1024,
        ..IndexConfig::default()
    };
    let index = indexed(root, IndexConfig::default());
    drop(index);
    let index = WorkspaceIndex::open(root, config).unwrap();
    let stats = index.refresh(&aptix_index::NoProgress).unwrap();
    let reasons: Vec<(&str, &SkipReason)> = stats
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), &s.reason))
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert_eq!(reasons[0].0, "big.txt");
    assert!(matches!(
        reasons[0].1,
        SkipReason::TooLarge { limit: 8192, .. }
    ));
    assert_eq!(reasons[1].0, "bundle.js");
    assert!(matches!(reasons[1].1, SkipReason::TooLarge { .. }));
    assert_eq!(reasons[2], ("logo.png", &SkipReason::Binary));
    assert!(index.file_chunks("logo.png").unwrap().is_empty());

    // With a larger size limit, the minified bundle is skipped for its long line,
    // and the skip is remembered: unchanged skipped files are reported, not re-read.
    let config = IndexConfig {
        max_file_bytes: 1024 * 1024,
        ..IndexConfig::default()
    };
    let index = WorkspaceIndex::open(root, config).unwrap();
    let first = index.refresh(&aptix_index::NoProgress).unwrap();
    let again = index.refresh(&aptix_index::NoProgress).unwrap();
    for stats in [&first, &again] {
        let reasons: Vec<_> = stats
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.clone()))
            .collect();
        assert!(
            matches!(
                &reasons[..],
                [
                    ("bundle.js", SkipReason::LongLine { .. }),
                    ("logo.png", SkipReason::Binary)
                ]
            ),
            "{reasons:?}"
        );
    }
    assert_eq!(again.files_indexed, 0);
}

#[test]
fn files_that_may_hold_secrets_are_never_indexed_and_are_listed_as_skipped() {
    let workspace = workspace();
    let root = workspace.path();
    let secrets = [
        ("server.pem", "-----BEGIN PRIVATE KEY-----\nleakpem\n"),
        ("id_rsa", "leakrsa\n"),
        ("deploy/tls.key", "leakkey\n"),
        ("credentials", "aws_secret_access_key = leakaws\n"),
        ("config/secrets.yaml", "token: leakyaml\n"),
        (".env.production", "API_KEY=leakenv\n"),
    ];
    for (path, content) in secrets {
        write(root, path, content);
    }
    // Inside a secret folder: the folder is not entered at all.
    write(root, "ops/.aws/config", "leakfolder\n");
    write(root, "ops/secrets/db.txt", "leakfolder2\n");
    // A source file about keys is not a key.
    write(root, "src/keys.rs", "pub fn rotate_keys() {}\n");
    let config = IndexConfig {
        include_hidden: true,
        ..IndexConfig::default()
    };
    let index = WorkspaceIndex::open(root, config).unwrap();
    let stats = index.refresh(&aptix_index::NoProgress).unwrap();
    let skipped: Vec<(&str, &SkipReason)> = stats
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), &s.reason))
        .filter(|(_, reason)| **reason == SkipReason::MayHoldSecrets)
        .collect();
    // (The shared fixture has a `.env` of its own.)
    for (path, _) in secrets {
        assert!(
            skipped.iter().any(|(skipped, _)| *skipped == path),
            "{path} is not listed: {stats:#?}"
        );
    }
    // A secret folder is not entered: it is listed once, its files not one by one.
    let under_ops: Vec<(&str, &SkipReason)> = stats
        .skipped
        .iter()
        .filter(|s| s.path.starts_with("ops/"))
        .map(|s| (s.path.as_str(), &s.reason))
        .collect();
    assert_eq!(
        under_ops,
        [
            ("ops/.aws/", &SkipReason::MayHoldSecrets),
            ("ops/secrets/", &SkipReason::MayHoldSecrets)
        ],
        "{stats:#?}"
    );
    for marker in [
        "leakpem",
        "leakrsa",
        "leakkey",
        "leakaws",
        "leakyaml",
        "leakenv",
        "leakfolder",
        "leakfolder2",
    ] {
        let hits = index.search(&SearchQuery::new(marker)).unwrap().hits;
        assert!(
            hits.is_empty(),
            "{marker} found in {:?}",
            hits[0].chunk.path
        );
    }
    assert_eq!(index.file_chunks("src/keys.rs").unwrap().len(), 1);
    assert_eq!(
        SkipReason::MayHoldSecrets.to_string(),
        "may hold secrets (keys, tokens, credentials)"
    );
}

#[cfg(unix)]
#[test]
fn symlink_loops_are_not_followed() {
    let workspace = workspace();
    std::os::unix::fs::symlink(workspace.path(), workspace.path().join("src/loop")).unwrap();
    let index = indexed(workspace.path(), IndexConfig::default());
    assert_eq!(
        index
            .file_chunks("src/loop/src/billing/invoice.rs")
            .unwrap()
            .len(),
        0
    );
    assert!(
        !index
            .file_chunks("src/billing/invoice.rs")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn ids_are_stable_across_indexes_and_runs() {
    let one = workspace();
    let two = workspace();
    let first = indexed(one.path(), IndexConfig::default());
    let second = indexed(two.path(), IndexConfig::default());
    for (path, _) in SOURCES {
        let a: Vec<_> = first
            .file_chunks(path)
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let b: Vec<_> = second
            .file_chunks(path)
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(a, b, "{path}");
    }
    // Reopening and rebuilding from scratch gives the same ids again.
    std::fs::remove_dir_all(one.path().join(".aptix")).unwrap();
    let rebuilt = indexed(one.path(), IndexConfig::default());
    for (path, _) in SOURCES {
        assert_eq!(
            rebuilt.file_chunks(path).unwrap(),
            first.file_chunks(path).unwrap()
        );
    }
}

#[test]
fn bad_configurations_and_roots_are_errors() {
    let workspace = workspace();
    let config = IndexConfig {
        writer_threads: 0,
        ..IndexConfig::default()
    };
    assert!(matches!(
        WorkspaceIndex::open(workspace.path(), config),
        Err(aptix_index::IndexError::InvalidConfig {
            field: "writer_threads",
            ..
        })
    ));
    let missing = workspace.path().join("nope");
    assert!(matches!(
        WorkspaceIndex::open(&missing, IndexConfig::default()),
        Err(aptix_index::IndexError::NotADirectory { .. })
    ));
}
