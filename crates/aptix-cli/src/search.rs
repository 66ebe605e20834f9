//! `aptix search QUERY`: the workspace index's ranking for a query, without a model.
//!
//! Shows what `aptix ask` would retrieve and why: the ranked chunks with their scores,
//! kinds and the query terms each matched in its text, definitions and path, then the
//! files in the order of their best chunk. The index is refreshed first when stale, as
//! for every turn (`aptix_runtime::Workspace::index`: it is a cache of the workspace).

use std::fmt::Write as _;

use aptix_index::{HitMatch, SearchQuery, SearchResults};
use aptix_model::contract::ScopeCondition;
use aptix_runtime::{Env, SettingsLayer, Workspace};
use serde_json::json;

use crate::cli::SearchArgs;
use crate::exit::{SUCCESS, usage};
use crate::output::{StderrReporter, print_json, print_stored, warn};
use crate::workspace;

/// Runs `aptix search`; returns the exit code.
pub(crate) fn run(args: &SearchArgs, env: Env<'_>) -> Result<u8, anyhow::Error> {
    let query = crate::output::text_argument(&args.query, "query")?;
    let scope = args
        .scope
        .iter()
        .map(|text| parse_scope(text))
        .collect::<Result<Vec<_>, _>>()?;
    let workspace = workspace::resolve(args.workspace.as_deref())?;
    let index =
        Workspace::load(&workspace, &SettingsLayer::default(), env)?.index(&StderrReporter)?;
    let results = index.search(
        &SearchQuery::new(query)
            .with_scope(scope)
            .with_limit(usize::from(args.limit)),
    )?;
    for warning in &results.warnings {
        warn(warning);
    }
    if args.json {
        print_json(&as_json(&results))?;
    } else {
        print_stored(&as_text(&results))?;
    }
    Ok(SUCCESS)
}

/// `key op value[,value...]`, e.g. `kind == source`, `path contains src/`: the model
/// crate's parser, its error as a usage error naming the flag.
pub(crate) fn parse_scope(text: &str) -> Result<ScopeCondition, anyhow::Error> {
    let condition =
        ScopeCondition::parse(text).map_err(|error| usage(format!("--scope: {error}")))?;
    // A mistyped key or kind would widen the context, or empty it, without a word; a
    // person typing it wants to hear (a service's clients get warnings instead).
    match aptix_index::scope_problem(&condition) {
        Some(problem) => Err(usage(format!("--scope {text:?}: {problem}"))),
        None => Ok(condition),
    }
}

/// Files in the order of their best chunk, with that chunk's score and their chunk count.
fn files(results: &SearchResults) -> Vec<(&str, f32, usize)> {
    let mut files: Vec<(&str, f32, usize)> = Vec::new();
    for hit in &results.hits {
        match files
            .iter_mut()
            .find(|(path, _, _)| *path == hit.chunk.path)
        {
            Some((_, _, count)) => *count += 1,
            None => files.push((&hit.chunk.path, hit.score, 1)),
        }
    }
    files
}

fn as_json(results: &SearchResults) -> serde_json::Value {
    let chunks: Vec<serde_json::Value> = results
        .hits
        .iter()
        .zip(&results.matches)
        .enumerate()
        .map(|(rank, (hit, matched))| {
            let chunk = &hit.chunk;
            json!({
                "rank": rank + 1,
                "score": hit.score,
                "path": chunk.path,
                "lines": [chunk.lines.start(), chunk.lines.end()],
                "id": chunk.id.as_str(),
                "kind": chunk.metadata.get("kind"),
                "symbol": chunk.metadata.get("symbol"),
                "matched": {
                    "text": matched.text,
                    "symbol": matched.symbol,
                    "heading": matched.heading,
                    "path": matched.path,
                },
            })
        })
        .collect();
    let files: Vec<serde_json::Value> = files(results)
        .into_iter()
        .enumerate()
        .map(|(rank, (path, score, chunks))| {
            json!({"rank": rank + 1, "path": path, "score": score, "chunks": chunks})
        })
        .collect();
    json!({
        "terms": results.terms,
        "chunks": chunks,
        "files": files,
        "warnings": results.warnings,
    })
}

fn as_text(results: &SearchResults) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "terms: {}", results.terms.join(" "));
    if results.hits.is_empty() {
        out.push_str("no matches");
        return out;
    }
    out.push_str("\nchunks:\n");
    for (rank, (hit, matched)) in results.hits.iter().zip(&results.matches).enumerate() {
        let chunk = &hit.chunk;
        let kind = chunk.metadata.get("kind").map_or("?", String::as_str);
        let _ = write!(
            out,
            "{:>3}. {:>8.3}  {}:{}  [{kind}]",
            rank + 1,
            hit.score,
            one_line(&chunk.path),
            chunk.lines
        );
        if let Some(symbol) = chunk.metadata.get("symbol") {
            let _ = write!(out, "  {}", one_line(symbol));
        }
        let _ = writeln!(out, "\n       matched {}", why(matched));
    }
    out.push_str("\nfiles:\n");
    for (rank, (path, score, chunks)) in files(results).into_iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>3}. {score:>8.3}  {} ({chunks})",
            rank + 1,
            one_line(path)
        );
    }
    out.trim_end().to_owned()
}

/// A file name or symbol as part of one line of the listing: a control character in it
/// (a file named with a line break) is written escaped (`\n`), so that every result
/// stays one line for whatever reads the output, piped or not.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// `text: a b; symbol: c; heading: d; path: e`, leaving out empty fields.
fn why(matched: &HitMatch) -> String {
    let parts: Vec<String> = [
        ("text", &matched.text),
        ("symbol", &matched.symbol),
        ("heading", &matched.heading),
        ("path", &matched.path),
    ]
    .into_iter()
    .filter(|(_, terms)| !terms.is_empty())
    .map(|(field, terms)| format!("{field}: {}", terms.join(" ")))
    .collect();
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_name_with_control_characters_stays_on_one_line() {
        assert_eq!(one_line("src/new\nline.rs"), "src/new\\nline.rs");
        assert_eq!(one_line("a\tb\u{1b}[31m.rs"), "a\\tb\\u{1b}[31m.rs");
        assert_eq!(one_line("src/café.rs"), "src/café.rs");
    }
}
