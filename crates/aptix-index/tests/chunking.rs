//! Chunk boundaries per grammar, exact spans, ids.
// The fixture covers every grammar; without them chunks are line windows.
#![cfg(all(
    feature = "lang-rust",
    feature = "lang-python",
    feature = "lang-typescript",
    feature = "lang-javascript",
    feature = "lang-go",
    feature = "lang-java",
    feature = "lang-csharp"
))]

mod common;

use aptix_index::{ChunkingConfig, IndexConfig, chunk_file};
use aptix_rag::Chunk;
use common::*;

/// A definition of a fixture file: its qualified symbol and the lines (found by
/// needles) where it starts and ends.
struct Definition {
    path: &'static str,
    symbol: &'static str,
    first: &'static str,
    last: &'static str,
}

const fn def(
    path: &'static str,
    symbol: &'static str,
    first: &'static str,
    last: &'static str,
) -> Definition {
    Definition {
        path,
        symbol,
        first,
        last,
    }
}

const DEFINITIONS: &[Definition] = &[
    def(
        "src/billing/invoice.rs",
        "InvoiceManager::send_invoice",
        "pub fn send_invoice",
        "end send_invoice",
    ),
    def(
        "src/billing/invoice.rs",
        "InvoiceManager::parse_http_response",
        "pub fn parse_http_response",
        "end parse_http_response",
    ),
    def(
        "src/billing/invoice.rs",
        "helper_total",
        "fn helper_total",
        "end helper_total",
    ),
    def(
        "py/invoice.py",
        "InvoiceManager.send_invoice",
        "def send_invoice",
        "return count",
    ),
    def(
        "py/invoice.py",
        "InvoiceManager.parse_http_response",
        "def parse_http_response",
        "return int(code)",
    ),
    def(
        "py/invoice.py",
        "helper_total",
        "@staticmethod",
        "return total",
    ),
    def(
        "web/invoice.ts",
        "InvoiceManager.sendInvoice",
        "sendInvoice(to: string)",
        "end sendInvoice",
    ),
    def(
        "web/invoice.ts",
        "InvoiceManager.parseHttpResponse",
        "parseHttpResponse(body",
        "end parseHttpResponse",
    ),
    def(
        "web/invoice.ts",
        "helperTotal",
        "export function helperTotal",
        "end helperTotal",
    ),
    def(
        "web/Invoice.tsx",
        "InvoiceView",
        "export function InvoiceView",
        "end InvoiceView",
    ),
    def(
        "web/Invoice.tsx",
        "InvoiceList",
        "export const InvoiceList",
        "end InvoiceList",
    ),
    def(
        "web/legacy.js",
        "InvoiceManager.sendInvoice",
        "sendInvoice(to)",
        "end sendInvoice",
    ),
    def(
        "web/legacy.js",
        "helperTotal",
        "function helperTotal",
        "end helperTotal",
    ),
    def(
        "go/invoice.go",
        "InvoiceManager",
        "type InvoiceManager struct",
        "end type",
    ),
    def(
        "go/invoice.go",
        "InvoiceManager.SendInvoice",
        "func (m *InvoiceManager) SendInvoice",
        "end SendInvoice",
    ),
    def(
        "go/invoice.go",
        "HelperTotal",
        "func HelperTotal",
        "end HelperTotal",
    ),
    def(
        "java/InvoiceManager.java",
        "InvoiceManager.sendInvoice",
        "public boolean sendInvoice",
        "end sendInvoice",
    ),
    def(
        "java/InvoiceManager.java",
        "InvoiceManager.parseHttpResponse",
        "public int parseHttpResponse",
        "end parseHttpResponse",
    ),
    def(
        "Billing/Managers/InvoiceManager.cs",
        "InvoiceManager.SendInvoiceEmail",
        "public bool SendInvoiceEmail",
        "end SendInvoiceEmail",
    ),
    def(
        "Billing/Managers/InvoiceManager.cs",
        "InvoiceManager.ParseHttpResponse",
        "public int ParseHttpResponse",
        "end ParseHttpResponse",
    ),
];

/// Small enough that every class and impl of the fixture is split into its methods.
fn split_config() -> ChunkingConfig {
    ChunkingConfig {
        min_lines: 2,
        max_lines: 8,
        ..ChunkingConfig::default()
    }
}

fn source(path: &str) -> &'static str {
    SOURCES.iter().find(|(p, _)| *p == path).unwrap().1
}

/// Every definition lies whole inside one chunk that names it, and no other chunk
/// touches its lines: boundaries fall between definitions, never inside one.
fn check_definitions(config: &ChunkingConfig) {
    for definition in DEFINITIONS {
        let text = source(definition.path);
        let chunks = chunk_file(definition.path, text, "fixture", config);
        let first = line_of(text, definition.first);
        let last = line_of(text, definition.last);
        let holders: Vec<&Chunk> = chunks
            .iter()
            .filter(|c| c.lines.start() <= last && c.lines.end() >= first)
            .collect();
        assert_eq!(
            holders.len(),
            1,
            "{} {}: lines {first}-{last} cut by {:?}",
            definition.path,
            definition.symbol,
            holders.iter().map(|c| c.lines).collect::<Vec<_>>()
        );
        let holder = holders[0];
        assert!(
            holder.lines.start() <= first && holder.lines.end() >= last,
            "{} {}: {} does not hold {first}-{last}",
            definition.path,
            definition.symbol,
            holder.lines
        );
        assert!(
            symbols(holder).iter().any(|s| s == definition.symbol),
            "{} {}: chunk {} names {:?}",
            definition.path,
            definition.symbol,
            holder.lines,
            symbols(holder)
        );
    }
}

#[test]
fn definitions_stay_whole_with_default_sizes() {
    check_definitions(&ChunkingConfig::default());
}

#[test]
fn definitions_stay_whole_when_classes_are_split() {
    check_definitions(&split_config());
}

fn spans(chunks: &[Chunk]) -> Vec<(u32, u32)> {
    chunks
        .iter()
        .map(|c| (c.lines.start(), c.lines.end()))
        .collect()
}

#[test]
fn a_rust_impl_is_one_chunk_when_it_fits() {
    let chunks = chunk_file(
        "src/billing/invoice.rs",
        RUST,
        "fixture",
        &ChunkingConfig::default(),
    );
    let impl_chunk = chunks
        .iter()
        .find(|c| {
            c.metadata.get("symbol").map(String::as_str) == Some("InvoiceManager")
                && c.content.starts_with("impl")
        })
        .unwrap();
    assert_eq!(
        (impl_chunk.lines.start(), impl_chunk.lines.end()),
        (
            line_of(RUST, "impl InvoiceManager"),
            line_of(RUST, "end impl")
        )
    );
    assert_eq!(
        symbols(impl_chunk),
        [
            "InvoiceManager",
            "InvoiceManager::send_invoice",
            "InvoiceManager::parse_http_response"
        ]
    );
}

#[test]
fn a_large_rust_impl_splits_into_methods_with_header_and_brace_attached() {
    let chunks = chunk_file("src/billing/invoice.rs", RUST, "fixture", &split_config());
    assert_eq!(
        spans(&chunks),
        vec![
            (1, line_of(RUST, "name: String") + 1),
            (
                line_of(RUST, "impl InvoiceManager"),
                line_of(RUST, "end send_invoice")
            ),
            (
                line_of(RUST, "pub fn parse_http_response"),
                line_of(RUST, "end impl")
            ),
            (
                line_of(RUST, "fn helper_total"),
                line_of(RUST, "end helper_total")
            ),
        ]
    );
    // The doc comment travels with the function after it.
    assert!(chunks[1].content.contains("/// Sends one invoice."));
    assert_eq!(
        chunks[2].metadata["symbol"],
        "InvoiceManager::parse_http_response"
    );
}

#[test]
fn files_without_a_grammar_fall_back_to_line_windows() {
    let text: String = (1..=130).map(|i| format!("line {i}\n")).collect();
    let config = ChunkingConfig::default();
    let chunks = chunk_file("notes/long.txt", &text, "fixture", &config);
    assert_eq!(spans(&chunks), vec![(1, 60), (61, 120), (121, 130)]);
    assert!(
        chunks
            .iter()
            .all(|c| c.language == "text" && !c.metadata.contains_key("symbol"))
    );
}

#[test]
fn unparsable_code_falls_back_to_windows_and_still_covers_every_line() {
    let text: String = (1..=20)
        .map(|i| format!("}}}} ))) fn fn {{ <<{i}\n"))
        .collect();
    let chunks = chunk_file("broken.rs", &text, "fixture", &ChunkingConfig::default());
    assert_eq!(spans(&chunks), vec![(1, 20)]);
}

#[test]
fn crlf_and_invalid_utf8_never_break_spans() {
    let crlf = RUST.replace('\n', "\r\n");
    let chunks = chunk_file("src/crlf.rs", &crlf, "fixture", &ChunkingConfig::default());
    assert!(!chunks.is_empty());
    let lines: Vec<&str> = crlf.split("\r\n").collect();
    for chunk in &chunks {
        let expected =
            lines[chunk.lines.start() as usize - 1..chunk.lines.end() as usize].join("\r\n");
        assert_eq!(chunk.content, expected);
    }
    let lossy = String::from_utf8_lossy(b"fn caf\xe9() {\n    let x = 1;\n}\n").into_owned();
    let chunks = chunk_file(
        "src/latin1.rs",
        &lossy,
        "fixture",
        &ChunkingConfig::default(),
    );
    assert_eq!(spans(&chunks), vec![(1, 3)]);
}

#[test]
fn every_indexed_chunk_is_exactly_its_lines() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    for (path, text) in SOURCES {
        let chunks = index.file_chunks(path).unwrap();
        assert!(!chunks.is_empty(), "{path} has chunks");
        for chunk in &chunks {
            assert_exact(text, chunk);
            assert_eq!(chunk.path, *path);
            assert_eq!(chunk.metadata["repo"], index.repo());
        }
        // Chunks are disjoint and in order.
        for pair in chunks.windows(2) {
            assert!(pair[0].lines.end() < pair[1].lines.start(), "{path}");
        }
    }
}

#[test]
fn metadata_carries_language_extension_and_symbol() {
    let chunks = chunk_file(
        "Billing/Managers/InvoiceManager.cs",
        CSHARP,
        "billing",
        &ChunkingConfig::default(),
    );
    let chunk = &chunks[0];
    assert_eq!(chunk.language, "csharp");
    assert_eq!(chunk.metadata["extension"], "cs");
    assert_eq!(chunk.metadata["repo"], "billing");
    assert!(symbols(chunk).contains(&"InvoiceManager.SendInvoiceEmail".to_owned()));
    let tsx = chunk_file(
        "web/Invoice.tsx",
        TSX,
        "billing",
        &ChunkingConfig::default(),
    );
    assert_eq!(tsx[0].language, "tsx");
}

#[test]
fn ids_are_stable_and_follow_content() {
    let config = ChunkingConfig::default();
    let first = chunk_file("py/invoice.py", PYTHON, "r", &config);
    let again = chunk_file("py/invoice.py", PYTHON, "r", &config);
    assert_eq!(first, again);
    let edited = PYTHON.replace("return int(code)", "return int(code) + 0");
    let changed = chunk_file("py/invoice.py", &edited, "r", &config);
    let ids = |chunks: &[Chunk]| chunks.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first).len(), ids(&changed).len());
    let differing = ids(&first)
        .iter()
        .zip(ids(&changed))
        .filter(|(a, b)| *a != b)
        .count();
    assert_eq!(differing, 1, "only the edited chunk gets a new id");
    // Same content at another path is another chunk.
    let moved = chunk_file("py/moved.py", PYTHON, "r", &config);
    assert_ne!(ids(&first), ids(&moved));
    assert!(first.iter().all(|c| c.id.as_str().len() == 16));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Hostile text (unbalanced brackets, CRLF, stray unicode, long lines) never panics
    /// any grammar, and every chunk is still exactly its lines, in order, disjoint.
    #[test]
    fn any_text_chunks_into_exact_disjoint_spans(
        text in "(fn |class |def |func |\\{|\\}|\\(|\\)|\\r\\n|\\n|    |x|é|//|/\\*|\"|;|[a-z]{1,8}){0,400}",
        extension in proptest::sample::select(vec!["rs", "py", "ts", "tsx", "js", "go", "java", "cs", "txt"]),
    ) {
        let config = ChunkingConfig { min_lines: 2, max_lines: 6, window_lines: 4, ..ChunkingConfig::default() };
        let path = format!("f.{extension}");
        let chunks = chunk_file(&path, &text, "r", &config);
        let lines: Vec<&str> = text.split('\n').collect();
        let mut previous_end = 0;
        for chunk in &chunks {
            let (start, end) = (chunk.lines.start() as usize, chunk.lines.end() as usize);
            proptest::prop_assert!(start > previous_end);
            proptest::prop_assert!(end <= lines.len());
            let expected = lines[start - 1..end].join("\n");
            let expected = expected.strip_suffix('\r').unwrap_or(&expected);
            proptest::prop_assert_eq!(chunk.content.as_str(), expected);
            previous_end = end;
        }
    }
}
