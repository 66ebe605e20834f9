//! Indexes a workspace (argv[1], default the current folder) and searches it.
//!
//! ```text
//! cargo run -p aptix-index --example index_and_search -- PATH "query words" [key op value]
//! ```
//!
//! Runs offline: the index lives in `PATH/.aptix/`. An optional scope condition is
//! given as three words, e.g. `language == rust` or `path contains src/`.

use aptix_index::{FileOutcome, IndexConfig, IndexProgress, SearchQuery, WorkspaceIndex};
use aptix_model::contract::{ScopeCondition, ScopeOperator};
use std::sync::atomic::{AtomicU64, Ordering};

/// Prints a dot every 500 files, as a stand-in for the CLI's progress bar.
#[derive(Default)]
struct Dots(AtomicU64);

impl IndexProgress for Dots {
    fn files_found(&self, total: u64) {
        eprintln!("{total} files to look at");
    }
    fn file_done(&self, _path: &str, _outcome: &FileOutcome, _bytes: u64) {
        if self.0.fetch_add(1, Ordering::Relaxed) % 500 == 499 {
            eprint!(".");
        }
    }
    fn committing(&self) {
        eprintln!("\ncommitting");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = args.first().cloned().unwrap_or_else(|| ".".to_owned());
    let text = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "parse config".to_owned());
    let scope = match (
        args.get(2),
        args.get(3).and_then(|op| ScopeOperator::parse(op)),
        args.get(4),
    ) {
        (Some(key), Some(operator), Some(value)) => vec![ScopeCondition {
            key: key.clone(),
            operator,
            values: vec![value.clone()],
        }],
        _ => Vec::new(),
    };

    let index = WorkspaceIndex::open(&root, IndexConfig::default())?;
    let stats = index.refresh(&Dots::default())?;
    println!(
        "indexed {} files ({} unchanged, {} deleted, {} skipped), {} chunks in {:.2?}",
        stats.files_indexed,
        stats.files_unchanged,
        stats.files_deleted,
        stats.skipped.len(),
        stats.chunks_total,
        stats.elapsed
    );
    for skipped in stats.skipped.iter().take(5) {
        println!("  skipped {}: {}", skipped.path, skipped.reason);
    }

    let results = index.search(
        &SearchQuery::new(text.as_str())
            .with_scope(scope)
            .with_limit(5),
    )?;
    for warning in &results.warnings {
        println!("warning: {warning}");
    }
    for hit in &results.hits {
        let chunk = &hit.chunk;
        let symbol = chunk.metadata.get("symbol").map_or("", String::as_str);
        println!(
            "{:6.2}  {}:{}  {}  [{}]",
            hit.score, chunk.path, chunk.lines, chunk.language, symbol
        );
    }
    Ok(())
}
