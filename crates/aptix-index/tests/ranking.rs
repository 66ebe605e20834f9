//! File kinds, query analysis, per-file caps and ranking that does not depend on the
//! index's history.

use std::path::Path;

use aptix_index::{IndexConfig, NoProgress, SearchQuery, WorkspaceIndex};
use aptix_model::contract::{ScopeCondition, ScopeOperator};
use tempfile::TempDir;

fn write(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

fn indexed(root: &Path) -> WorkspaceIndex {
    let index = WorkspaceIndex::open(root, IndexConfig::default()).unwrap();
    index.refresh(&NoProgress).unwrap();
    index
}

/// A function in its own chunk, `lines` long, mentioning `words`.
fn function(name: &str, words: &str, lines: usize) -> String {
    let mut text = format!("/// {words}\npub fn {name}() -> u32 {{\n");
    for line in 0..lines {
        text.push_str(&format!("    let v{line} = {line}; // {words}\n"));
    }
    text.push_str("    0\n}\n\n");
    text
}

/// The ranked (path, lines, score) of a query, for comparing two indexes.
fn ranking(index: &WorkspaceIndex, text: &str) -> Vec<(String, String, f32)> {
    index
        .search(&SearchQuery::new(text).with_limit(50))
        .unwrap()
        .hits
        .into_iter()
        .map(|hit| (hit.chunk.path, hit.chunk.lines.to_string(), hit.score))
        .collect()
}

fn paths(index: &WorkspaceIndex, text: &str) -> Vec<String> {
    ranking(index, text)
        .into_iter()
        .map(|(path, _, _)| path)
        .collect()
}

#[test]
fn the_same_tree_ranks_the_same_fresh_or_refreshed() {
    let final_tree = |root: &Path| {
        write(
            root,
            "src/router.rs",
            &function("route_request", "router route request path", 6),
        );
        write(
            root,
            "src/body.rs",
            &function("read_body", "body bytes request limit", 6),
        );
        write(
            root,
            "src/path.rs",
            &function("parse_path", "path segment parse request", 6),
        );
        write(root, "src/util.rs", &function("helper", "misc helper", 3));
    };
    // History: the final files and many others (all mentioning the query words) are
    // indexed in one commit, so they share a segment; the others are then rewritten
    // and deleted, so deleted documents linger in segments that also hold live ones.
    let history = TempDir::new().unwrap();
    final_tree(history.path());
    for step in 0..2 {
        for n in 0..12 {
            write(
                history.path(),
                &format!("src/old_{n}.rs"),
                &function(
                    &format!("old_{step}_{n}"),
                    "request path router request body",
                    10 + step,
                ),
            );
        }
        indexed(history.path());
    }
    for n in 0..12 {
        std::fs::remove_file(history.path().join(format!("src/old_{n}.rs"))).unwrap();
    }
    let refreshed = indexed(history.path());

    let fresh_root = TempDir::new().unwrap();
    final_tree(fresh_root.path());
    let fresh = indexed(fresh_root.path());

    for query in [
        "request path",
        "router request body limit",
        "parse path segment",
        "helper",
    ] {
        let a = ranking(&refreshed, query);
        let b = ranking(&fresh, query);
        assert!(!a.is_empty(), "{query}");
        assert_eq!(a, b, "{query}");
    }
}

#[test]
fn lockfiles_generated_and_vendored_files_are_not_indexed() {
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/lib.rs",
        &function("checksum", "checksum a1b2c3d4", 2),
    );
    write(
        root.path(),
        "Cargo.lock",
        "[[package]]\nname = \"checksum\"\nchecksum = \"a1b2c3d4\"\n",
    );
    write(
        root.path(),
        "web/app.min.js",
        "function checksum(){return 1}\n",
    );
    write(
        root.path(),
        "vendor/lib/checksum.c",
        "int checksum(void) { return 0; }\n",
    );
    let index = indexed(root.path());
    assert_eq!(paths(&index, "checksum"), ["src/lib.rs"]);

    // They are indexed when the configuration asks for them.
    let all = WorkspaceIndex::open(
        root.path(),
        IndexConfig {
            skipped_kinds: Vec::new(),
            ..IndexConfig::default()
        },
    )
    .unwrap();
    all.refresh(&NoProgress).unwrap();
    let mut found = paths(&all, "checksum");
    found.sort();
    assert_eq!(
        found,
        [
            "Cargo.lock",
            "src/lib.rs",
            "vendor/lib/checksum.c",
            "web/app.min.js"
        ]
    );
}

#[test]
fn the_kind_is_chunk_metadata_and_a_scope_key() {
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/invoice.rs",
        &function("send_invoice", "send invoice", 2),
    );
    write(
        root.path(),
        "tests/invoice.rs",
        &function("sends_an_invoice", "send invoice test", 2),
    );
    write(
        root.path(),
        "CHANGELOG.md",
        "# Changes\n\n- send invoice: fixed\n",
    );
    let index = indexed(root.path());
    let search = |scope: Vec<ScopeCondition>| {
        index
            .search(&SearchQuery::new("send invoice").with_scope(scope))
            .unwrap()
    };
    let all = search(Vec::new());
    let kinds: Vec<(&str, &str)> = all
        .hits
        .iter()
        .map(|hit| (hit.chunk.path.as_str(), hit.chunk.metadata["kind"].as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("src/invoice.rs", "source"),
            ("tests/invoice.rs", "test"),
            ("CHANGELOG.md", "changelog")
        ]
    );
    let source_only = search(vec![ScopeCondition {
        key: "kind".into(),
        operator: ScopeOperator::Equals,
        values: vec!["source".into()],
    }]);
    assert!(
        source_only.warnings.is_empty(),
        "{:?}",
        source_only.warnings
    );
    assert_eq!(source_only.hits.len(), 1);
    assert_eq!(source_only.hits[0].chunk.path, "src/invoice.rs");
}

#[test]
fn a_question_about_tests_finds_tests_first() {
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/invoice.rs",
        &function("send_invoice", "send invoice", 2),
    );
    // Real tests say so (`#[test]`), so a question about tests matches them better, once
    // they are not weighted down.
    let test = format!("#[test]\n{}", function("send_invoice", "send invoice", 2));
    write(root.path(), "tests/invoice.rs", &test);
    let index = indexed(root.path());
    assert_eq!(paths(&index, "send invoice")[0], "src/invoice.rs");
    assert_eq!(
        paths(&index, "add a test for send invoice")[0],
        "tests/invoice.rs"
    );
}

#[test]
fn code_quoted_in_the_question_finds_the_chunks_holding_it_verbatim() {
    let root = TempDir::new().unwrap();
    // Three files share every word of the quote; one holds the quote itself.
    write(
        root.path(),
        "src/response.rs",
        &function(
            "into_response",
            "map response into response into response map response",
            6,
        ),
    );
    write(
        root.path(),
        "src/middleware.rs",
        &function("map_response", "map response into response", 6),
    );
    write(
        root.path(),
        "src/route.rs",
        "pub fn route() -> u32 {\n    svc.map_response(IntoResponse::into_response);\n    0\n}\n",
    );
    let index = indexed(root.path());
    let found = paths(
        &index,
        "Replace `map_response(IntoResponse::into_response)` with a custom wrapper",
    );
    assert_eq!(found[0], "src/route.rs", "{found:?}");
    // Without the quote the same words rank the file named for them first.
    let found = paths(
        &index,
        "Replace map response into response with a custom wrapper",
    );
    assert_ne!(found[0], "src/route.rs", "{found:?}");
}

#[test]
fn a_pasted_error_message_finds_the_code_that_raises_it_before_files_named_for_its_words() {
    let root = TempDir::new().unwrap();
    // Files named and filled after the message's words, and one long function that
    // says the message, among other things.
    write(
        root.path(),
        "src/read.rs",
        &function("read", "read a file from the disk", 8),
    );
    write(
        root.path(),
        "src/schema.rs",
        &function("schema", "the schema of an answer", 8),
    );
    let mut ask = String::from("pub fn ask(a: bool, b: bool) -> Result<u32, String> {\n");
    for line in 0..40 {
        ask.push_str(&format!("    let step{line} = prepare({line});\n"));
    }
    ask.push_str(
        "    if a && b {\n        return Err(\"the instruction and the schema cannot both be read from stdin: give one as a file\".into());\n    }\n    Ok(0)\n}\n",
    );
    write(root.path(), "src/ask.rs", &ask);
    let index = indexed(root.path());
    let message = "the instruction and the schema cannot both be read from stdin";
    let found = paths(&index, message);
    assert_eq!(found[0], "src/ask.rs", "{found:?}");
    // In double quotes inside a question, the same.
    let found = paths(
        &index,
        &format!("why does aptix say \"{message}\" when I pipe both?"),
    );
    assert_eq!(found[0], "src/ask.rs", "{found:?}");

    // As in this repository: a file named for one word of the message, whose chunk is
    // a short impl saying that word in every name, and the message said once in a long
    // function about many other things (its score diluted by its length).
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/read.rs",
        "impl Tool for ReadFile {\n    fn name(&self) -> &str {\n        \"read_file\"\n    }\n    fn usage(&self) -> &str {\n        \"read_file: read a file; read part of it, then read on\"\n    }\n}\n",
    );
    let mut run = String::from("pub fn run(args: &Args) -> Result<u8, Error> {\n");
    for line in 0..100 {
        run.push_str(&format!(
            "    let setting{line} = layer.value_{line}(&args.flag{line}, workspace_{line});\n"
        ));
    }
    run.push_str(
        "    if args.a && args.b {\n        return Err(usage(\"the instruction and the schema cannot both be read from stdin: give one as a file\"));\n    }\n    Ok(0)\n}\n",
    );
    write(root.path(), "src/ask.rs", &run);
    // Other code, which says none of the message's words, as a real tree has.
    for n in 0..60 {
        write(
            root.path(),
            &format!("src/other{n}.rs"),
            &function(&format!("other{n}"), "compute the total of a list", 6),
        );
    }
    let index = indexed(root.path());
    let found = paths(&index, message);
    assert_eq!(found[0], "src/ask.rs", "{found:?}");
}

#[test]
fn a_quoted_qualified_name_finds_its_definition_before_the_type_and_namesakes() {
    let root = TempDir::new().unwrap();
    // The type, whose docs say "route" and "router" more than anything else ...
    let mut docs = String::new();
    for _ in 0..6 {
        docs.push_str("/// A router: each route of the router is a route to a handler.\n");
    }
    write(
        root.path(),
        "src/router.rs",
        &format!("{docs}pub struct Router {{\n    routes: Vec<u32>,\n}}\n"),
    );
    // ... a method of the same name on another type, which says them too ...
    write(
        root.path(),
        "src/path_router.rs",
        "impl PathRouter {\n    /// Adds a route to the path router.\n    pub fn route(&mut self, path: &str) -> u32 {\n        self.router.route(path)\n    }\n}\n",
    );
    // ... and the method the question names, whose text never spells `Router::route`.
    write(
        root.path(),
        "src/methods.rs",
        "impl Router {\n    /// Adds a handler at a path.\n    pub fn route(self, path: &str) -> Self {\n        let _ = path;\n        self\n    }\n}\n",
    );
    let index = indexed(root.path());
    let results = index
        .search(&SearchQuery::new("Router::route panics when called twice").with_limit(5))
        .unwrap();
    assert_eq!(
        results.hits[0].chunk.path,
        "src/methods.rs",
        "{:?}",
        results
            .hits
            .iter()
            .map(|hit| (&hit.chunk.path, hit.score))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_section_heading_names_what_its_section_is_about() {
    let root = TempDir::new().unwrap();
    // The crate doc's feature table, under its heading ...
    write(
        root.path(),
        "src/lib.rs",
        "//! A web framework.\n//!\n//! # Feature flags\n//!\n//! Name | Description | Default?\n//! ---|---|---\n//! `json` | Enables the JSON extractor | Yes\n//! `ws` | Enables WebSockets | No\n\npub mod json;\n",
    );
    // ... and code that says the same words more often, in comments.
    write(
        root.path(),
        "src/json.rs",
        &function(
            "parse",
            "the json feature is on by default; default feature flags",
            4,
        ),
    );
    let index = indexed(root.path());
    let results = index
        .search(&SearchQuery::new("Make it easier to scan the feature flags").with_limit(10))
        .unwrap();
    let found: Vec<&str> = results.hits.iter().map(|h| h.chunk.path.as_str()).collect();
    assert_eq!(found.first(), Some(&"src/lib.rs"), "{found:?}");
    assert_eq!(
        results.matches[0].heading,
        ["feature", "flags"],
        "{:?}",
        results.matches
    );
    // A `#` line in a fenced example is not a heading.
    write(
        root.path(),
        "src/lib.rs",
        "//! ```\n//! # Feature flags\n//! ```\npub mod json;\n",
    );
    index.refresh(&NoProgress).unwrap();
    let results = index
        .search(&SearchQuery::new("feature flags").with_limit(10))
        .unwrap();
    assert!(
        results.matches.iter().all(|m| m.heading.is_empty()),
        "{:?}",
        results.matches
    );
}

#[test]
fn the_changelog_does_not_outrank_the_code() {
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/router.rs",
        &function("nest_service", "nest service router", 4),
    );
    let mut changelog = String::from("# Changelog\n\n");
    for n in 0..40 {
        changelog.push_str(&format!(
            "- **fixed:** nest service at the root of the router (#{n})\n"
        ));
    }
    write(root.path(), "CHANGELOG.md", &changelog);
    let index = indexed(root.path());
    assert_eq!(
        paths(&index, "Fix nest_service at the root of the router")[0],
        "src/router.rs"
    );
}

#[test]
fn noise_in_the_question_does_not_reach_the_query() {
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/router.rs",
        &function("nest_service", "nest service", 2),
    );
    // A file full of the noise's words: if they reached the query, it would match.
    write(
        root.path(),
        "src/noise.rs",
        &function(
            "noise",
            "https github com tokio rs axum pull 8e4d01dc4f cargo run example hello",
            2,
        ),
    );
    let index = indexed(root.path());
    let results = index
        .search(&SearchQuery::new(
            "Fix nest_service (#3051)\n\nSee https://github.com/tokio-rs/axum/pull/3051, \
             broken since 8e4d01dc4f.\n\n```console\n$ cargo run --example hello\n```\n",
        ))
        .unwrap();
    for noise in [
        "https",
        "github",
        "8e4d01dc4f",
        "3051",
        "cargo",
        "hello",
        "example",
    ] {
        assert!(
            !results.terms.iter().any(|t| t == noise),
            "{noise} in {:?}",
            results.terms
        );
    }
    let found: Vec<&str> = results.hits.iter().map(|h| h.chunk.path.as_str()).collect();
    assert_eq!(found, ["src/router.rs"]);
    // The hit says why it matched.
    assert!(
        results.matches[0]
            .symbol
            .contains(&"nestservice".to_owned()),
        "{:?}",
        results.matches
    );
}

#[test]
fn one_file_takes_at_most_three_of_the_top_slots() {
    let root = TempDir::new().unwrap();
    let mut big = String::new();
    for n in 0..8 {
        big.push_str(&function(
            &format!("invoice_step_{n}"),
            "invoice total tax invoice total",
            8,
        ));
    }
    write(root.path(), "src/big.rs", &big);
    write(
        root.path(),
        "src/small.rs",
        &function("tax", "invoice tax", 8),
    );
    write(
        root.path(),
        "src/other.rs",
        &function("total", "invoice total", 8),
    );
    let index = indexed(root.path());
    let found = paths(&index, "invoice total tax");
    let top: Vec<&str> = found.iter().take(5).map(String::as_str).collect();
    assert_eq!(
        top.iter().filter(|p| **p == "src/big.rs").count(),
        3,
        "{found:?}"
    );
    assert!(
        top.contains(&"src/small.rs") && top.contains(&"src/other.rs"),
        "{found:?}"
    );
    // The rest of the big file is still there, after the others.
    assert_eq!(
        found.iter().filter(|p| *p == "src/big.rs").count(),
        8,
        "{found:?}"
    );
}

#[test]
fn a_short_search_is_a_prefix_of_a_long_one() {
    let root = TempDir::new().unwrap();
    // One strong chunk in b.rs; a slightly weaker one in a.rs, whose file also has weak
    // matches that rank below many one-chunk files. A short search must not rank a.rs
    // and b.rs differently from a long one just because it scored fewer candidates.
    write(
        root.path(),
        "src/b.rs",
        &function("b_main", "invoice total invoice total", 3),
    );
    let mut a = function("a_main", "invoice total", 3);
    for n in 0..6 {
        a.push_str(&format!("/// total\npub fn a_weak_{n}() {{\n"));
        for line in 0..30 {
            a.push_str(&format!("    let x{line} = {line};\n"));
        }
        a.push_str("}\n\n");
    }
    write(root.path(), "src/a.rs", &a);
    for n in 0..40 {
        write(
            root.path(),
            &format!("src/filler_{n}.rs"),
            &function(&format!("f_{n}"), "invoice total", 30),
        );
    }
    let index = indexed(root.path());
    let spans = |limit: usize| -> Vec<(String, String, f32)> {
        index
            .search(&SearchQuery::new("invoice total").with_limit(limit))
            .unwrap()
            .hits
            .into_iter()
            .map(|hit| (hit.chunk.path, hit.chunk.lines.to_string(), hit.score))
            .collect()
    };
    let long = spans(100);
    assert!(long.len() > 40, "{long:?}");
    for limit in [1, 2, 5, 12] {
        assert_eq!(spans(limit), long[..limit], "limit {limit}");
    }
}

#[test]
fn a_short_phrase_in_double_quotes_finds_the_chunks_that_say_it_first() {
    // "names no file": three words, each common; the chunks that hold them apart (and a
    // file named for one of them) outranked the one that says the phrase. A phrase in
    // double quotes is asked for as it is, whatever its length.
    let root = TempDir::new().unwrap();
    write(
        root.path(),
        "src/file.rs",
        &function("file", "a file names a path; no file is empty", 6),
    );
    write(
        root.path(),
        "src/names.rs",
        &function("names", "names of files, no names twice, file names", 6),
    );
    let mut attach = String::from("pub fn attach(path: &str) -> Result<u32, String> {\n");
    for line in 0..40 {
        attach.push_str(&format!("    let part{line} = read_part(path, {line});\n"));
    }
    attach.push_str(
        "    if path.is_empty() {\n        return Err(format!(\"--file {path} names no file\"));\n    }\n    Ok(0)\n}\n",
    );
    write(root.path(), "src/attach.rs", &attach);
    for n in 0..30 {
        write(
            root.path(),
            &format!("src/other{n}.rs"),
            &function(&format!("other{n}"), "compute the total of a list", 6),
        );
    }
    let index = indexed(root.path());
    let found = paths(&index, "why \"names no file\"?");
    assert_eq!(found[0], "src/attach.rs", "{found:?}");
}
