//! Indexing throughput and query latency on a real source tree.
//!
//! The tree is `$APTIX_BENCH_TREE` or, by default, the crates Cargo unpacked into
//! `~/.cargo/registry/src/index.crates.io-*`. It is copied into a temporary folder
//! first (the index writes `.aptix/` inside the tree it indexes, and the registry must
//! stay untouched); the copy is not timed. Run with
//! `cargo bench -p aptix-index --bench index`.
//!
//! Then, unless `APTIX_BENCH_BREAKDOWN=0`, two measurements in the same run say where
//! the time goes: the same tree indexed again with parsing turned off
//! (`max_syntax_bytes = 0`: every file cut into line windows), and tree-sitter-rust
//! alone parsing the tree's Rust files that the index parses, on one thread.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aptix_index::{IndexConfig, NoProgress, SearchQuery, WorkspaceIndex};

/// Queries timed for the latency figures.
const QUERIES: usize = 100;

fn main() {
    let source = match std::env::var_os("APTIX_BENCH_TREE") {
        Some(tree) => PathBuf::from(tree),
        None => default_tree(),
    };
    let copy = tempfile::Builder::new()
        .prefix("aptix-bench")
        .tempdir()
        .expect("temp dir");
    let workspace = copy.path().join("tree");
    copy_tree(&source, &workspace).expect("copy the tree");

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let index = WorkspaceIndex::open(&workspace, IndexConfig::default()).expect("open");
    let cpu_before = cpu_seconds();
    let stats = index.refresh(&NoProgress).expect("cold refresh");
    let cold = stats.elapsed;
    let cpu = cpu_seconds() - cpu_before;
    let warm = index.refresh(&NoProgress).expect("warm refresh").elapsed;
    let stale_started = Instant::now();
    let stale = index.is_stale().expect("is_stale");
    let stale_check = stale_started.elapsed();

    let queries = identifier_queries(&workspace, &index);
    let mut latencies = Vec::with_capacity(queries.len());
    let mut empty = 0;
    for query in &queries {
        let started = Instant::now();
        let results = index
            .search(&SearchQuery::new(query.as_str()))
            .expect("search");
        latencies.push(started.elapsed());
        if results.hits.is_empty() {
            empty += 1;
        }
    }
    latencies.sort();

    let mb = stats.bytes_indexed as f64 / 1e6;
    let index_size = dir_size(&workspace.join(".aptix")) as f64 / 1e6;
    println!("tree                 {}", source.display());
    println!("threads              {threads} (cores available)");
    println!("files seen           {}", stats.files_seen);
    println!("files indexed        {}", stats.files_indexed);
    println!("files skipped        {}", stats.skipped.len());
    println!("lines indexed        {}", stats.lines_indexed);
    println!("MB indexed           {mb:.1}");
    println!("chunks               {}", stats.chunks_total);
    println!("cold index seconds   {:.2}", cold.as_secs_f64());
    println!("throughput MB/s      {:.1}", mb / cold.as_secs_f64());
    // The machine is shared: CPU time is what contention does not inflate.
    println!(
        "cpu seconds          {cpu:.2} ({:.2} cores busy)",
        cpu / cold.as_secs_f64()
    );
    println!("MB per cpu second    {:.1}", mb / cpu);
    println!("index size MB        {index_size:.1}");
    println!("no-op refresh ms     {:.0}", ms(warm));
    println!(
        "is_stale ms          {:.0} (stale: {stale})",
        ms(stale_check)
    );
    println!(
        "queries              {} ({empty} without hits)",
        latencies.len()
    );
    println!("query p50 ms         {:.2}", ms(percentile(&latencies, 50)));
    println!("query p99 ms         {:.2}", ms(percentile(&latencies, 99)));
    println!(
        "query max ms         {:.2}",
        ms(latencies.last().copied().unwrap_or_default())
    );

    if std::env::var_os("APTIX_BENCH_BREAKDOWN").is_some_and(|value| value == "0") {
        return;
    }
    drop(index);
    breakdown(&workspace, mb, threads);
}

/// Where indexing time goes; see the module docs.
fn breakdown(workspace: &Path, mb: f64, threads: usize) {
    std::fs::remove_dir_all(workspace.join(".aptix")).expect("remove the index");
    let mut config = IndexConfig::default();
    config.chunking.max_syntax_bytes = 0;
    let index = WorkspaceIndex::open(workspace, config).expect("open without parsing");
    let cpu_before = cpu_seconds();
    let stats = index.refresh(&NoProgress).expect("refresh without parsing");
    let cpu = cpu_seconds() - cpu_before;
    let wall = stats.elapsed.as_secs_f64();
    println!("-- the same tree, no tree-sitter (line windows only)");
    println!("cold index seconds   {wall:.2} = {:.1} MB/s", mb / wall);
    println!(
        "cpu seconds          {cpu:.2} = {:.1} MB per cpu second",
        mb / cpu
    );

    let limits = IndexConfig::default();
    let mut files = Vec::new();
    collect_files(workspace, workspace, &mut files);
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_rust::LANGUAGE.into())
        .expect("tree-sitter-rust");
    let (mut parsed_bytes, mut parsed_files) = (0usize, 0usize);
    let cpu_before = cpu_seconds();
    for path in files.iter().filter(|path| path.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(workspace.join(path)) else {
            continue;
        };
        if text.len() > limits.chunking.max_syntax_bytes {
            continue;
        }
        if parser.parse(&text, None).is_some() {
            parsed_bytes += text.len();
            parsed_files += 1;
        }
    }
    let parse_cpu = cpu_seconds() - cpu_before;
    let parsed_mb = parsed_bytes as f64 / 1e6;
    println!("-- tree-sitter-rust alone, one thread, on the Rust files the index parses");
    println!(
        "parsed               {parsed_files} files, {parsed_mb:.1} MB in {parse_cpu:.2} cpu s = {:.1} MB/s",
        parsed_mb / parse_cpu
    );
    println!(
        "ceiling              {:.1} MB/s for the whole tree with {threads} cores parsing and nothing else",
        mb / (parse_cpu / threads as f64)
    );
}

fn default_tree() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let src = home.join("registry/src");
    std::fs::read_dir(&src)
        .expect("~/.cargo/registry/src")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("index.crates.io-"))
        })
        .expect("an index.crates.io-* folder")
}

/// `QUERIES` identifiers, one from each of that many chunks spread over the index:
/// the longest snake_case or camelCase word of the chunk, as a developer would type it.
fn identifier_queries(workspace: &Path, index: &WorkspaceIndex) -> Vec<String> {
    let mut files = Vec::new();
    collect_files(workspace, workspace, &mut files);
    files.sort();
    let step = (files.len() / (QUERIES * 3)).max(1);
    let mut queries = Vec::new();
    for path in files.iter().step_by(step) {
        if queries.len() == QUERIES {
            break;
        }
        let Ok(chunks) = index.file_chunks(path) else {
            continue;
        };
        let identifier = chunks.first().and_then(|chunk| {
            chunk
                .content
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| word.len() >= 6 && word.len() <= 40)
                .filter(|word| {
                    word.contains('_') || word.chars().skip(1).any(|c| c.is_ascii_uppercase())
                })
                .max_by_key(|word| word.len())
                .map(str::to_owned)
        });
        queries.extend(identifier);
    }
    queries
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && entry.file_name() != ".aptix" {
            collect_files(root, &path, out);
        } else if kind.is_file()
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => dir_size(&entry.path()),
            _ => entry.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// User plus system CPU time of this process so far, from `/proc/self/stat` (0 where
/// that file does not exist).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name;
    // the kernel counts them in USER_HZ, 100 on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
