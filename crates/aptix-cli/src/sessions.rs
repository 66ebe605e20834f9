//! `aptix sessions`: the workspace's stored sessions, newest first; `show ID` and
//! `delete ID` for one.
//!
//! The sessions are those `aptix ask --session`, `aptix serve` and `aptix acp` keep in
//! the workspace's store (its SQLite file, or the PostgreSQL database `store` names).
//! `show --json` prints what `GET /v1/sessions/{id}` answers
//! (`aptix_server::session_json`), so a script reads one shape from both.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow};
use aptix_orchestrator::SessionStore;
use aptix_runtime::{Env, SettingsLayer, Workspace};
use serde_json::Value;
use tokio::runtime::Runtime;

use crate::cli::{SessionsAction, SessionsArgs};
use crate::exit::SUCCESS;
use crate::output::{note, print_json, print_stored};
use crate::workspace;

/// How many characters of a session's last instruction a listing shows.
const INSTRUCTION_WIDTH: usize = 72;

/// Runs `aptix sessions`; returns the exit code.
pub(crate) fn run(
    args: &SessionsArgs,
    env: Env<'_>,
    runtime: &Runtime,
) -> Result<u8, anyhow::Error> {
    let root = workspace::resolve(args.workspace.as_deref())?;
    let flags = SettingsLayer {
        store: args.store.clone(),
        ..SettingsLayer::default()
    };
    let workspace = Workspace::load(&root, &flags, env)?;
    let store_location = workspace.store_location()?;
    let mut location = store_location.shown();
    if let aptix_runtime::StoreLocation::Sqlite(path) = &store_location
        && !path.exists()
    {
        // A typo in --store is told apart from a store that holds nothing.
        location.push_str(" (no session store there yet)");
    }
    // Looking creates nothing: a SQLite file that is not there holds no session.
    let store = runtime.block_on(workspace.existing_store())?;
    match &args.action {
        None => runtime.block_on(list(store, args, &location)),
        Some(SessionsAction::Show { id }) => {
            runtime.block_on(show(store.as_ref(), id, args.json, &location))
        }
        Some(SessionsAction::Delete { id }) => {
            let deleted = runtime
                .block_on(aptix_orchestrator::delete_session(store.as_ref(), id))
                .with_context(|| format!("could not delete session {id}"))?;
            if !deleted {
                return Err(anyhow!("no session {id} in {location}"));
            }
            note(format_args!("deleted session {id} and its turns"));
            Ok(SUCCESS)
        }
    }
}

/// The newest sessions, one line each (or a JSON array).
async fn list(
    store: Arc<dyn SessionStore>,
    args: &SessionsArgs,
    location: &str,
) -> Result<u8, anyhow::Error> {
    let page = store
        .list_sessions(usize::from(args.limit), None)
        .await
        .context("could not list the sessions")?;
    let mut rows = Vec::with_capacity(page.sessions.len());
    for summary in page.sessions {
        let (turns, last_instruction, unreadable) = match store.load(&summary.session_id).await {
            Ok(Some(stored)) => (
                Some(stored.value.totals.turns),
                stored.value.last_instruction().map(listed),
                None,
            ),
            // Deleted since the listing: not shown.
            Ok(None) => continue,
            // One session that does not read (written by a newer build, damaged) is
            // listed as such; the others still are.
            Err(error) => (None, None, Some(aptix_model::error_chain(&error))),
        };
        rows.push(Row {
            updated_at: rfc3339(summary.updated_at_unix_ms),
            age: summary.updated_at_unix_ms.map(age),
            session_id: summary.session_id,
            mode: summary.mode,
            version: summary.version,
            turns,
            last_instruction,
            unreadable,
        });
    }
    if args.json {
        print_json(&rows)?;
    } else if rows.is_empty() {
        note(format_args!("no sessions in {location}"));
    } else {
        let mut text = String::new();
        for row in &rows {
            let Row {
                session_id, mode, ..
            } = row;
            if let Some(reason) = &row.unreadable {
                let _ = writeln!(text, "{session_id}  {mode}  (unreadable: {reason})");
                continue;
            }
            let turns = row.turns.unwrap_or(0);
            let _ = writeln!(
                text,
                "{session_id}  {mode}  {turns} turn{}  {}  {}",
                if turns == 1 { "" } else { "s" },
                row.age.as_deref().unwrap_or("-"),
                shortened(row.last_instruction.as_deref().unwrap_or("")),
            );
        }
        print_stored(text.trim_end())?;
    }
    if page.next_cursor.is_some() {
        note(format_args!(
            "more sessions than these {}: raise --limit (at most 1000)",
            rows.len()
        ));
    }
    Ok(SUCCESS)
}

/// A listed session: a line of text, or an object of `--json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    session_id: String,
    mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    turns: Option<u64>,
    version: u64,
    updated_at: Option<String>,
    /// How long ago, for the text only.
    #[serde(skip)]
    age: Option<String>,
    last_instruction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
}

/// One session: what `GET /v1/sessions/{id}` answers, as JSON or in lines.
async fn show(
    store: &dyn SessionStore,
    id: &str,
    json: bool,
    location: &str,
) -> Result<u8, anyhow::Error> {
    let view = aptix_server::session_json(store, id)
        .await
        .with_context(|| format!("could not read session {id}"))?
        .ok_or_else(|| anyhow!("no session {id} in {location}"))?;
    if json {
        print_json(&view)?;
        return Ok(SUCCESS);
    }
    let text_of = |value: &Value| value.as_str().unwrap_or("-").to_owned();
    let number = |value: &Value| value.as_u64().unwrap_or(0);
    let usage = &view["usage"];
    let mut text = String::new();
    let _ = writeln!(
        text,
        "session {}  (mode {}, model {}, version {})",
        text_of(&view["sessionId"]),
        text_of(&view["mode"]),
        text_of(&view["model"]),
        number(&view["version"]),
    );
    let _ = writeln!(
        text,
        "turns: {}; tokens: {} in ({} cached), {} out ({} reasoning)",
        number(&view["turns"]),
        number(&usage["promptTokens"]),
        number(&usage["cachedTokens"]),
        number(&usage["completionTokens"]),
        number(&usage["reasoningTokens"]),
    );
    if let Some(response) = view["lastResponseId"].as_str() {
        let _ = writeln!(text, "continues from response {response}");
    }
    // What a listing cuts at 1,000 characters, whole.
    if let Ok(Some(stored)) = store.load(id).await
        && let Some(instruction) = stored.value.last_instruction()
    {
        let _ = writeln!(text, "last asked: {instruction}");
    }
    for call in view["pendingToolCalls"].as_array().into_iter().flatten() {
        let _ = writeln!(
            text,
            "waiting for the result of {} (call {}, turn {})",
            text_of(&call["name"]),
            text_of(&call["callId"]),
            text_of(&call["turnId"]),
        );
    }
    let recent = view["recentTurns"].as_array().cloned().unwrap_or_default();
    if !recent.is_empty() {
        let _ = writeln!(text, "recent turns, newest first:");
    }
    for turn in &recent {
        let _ = writeln!(
            text,
            "  {}  {}  {}{}  {} in / {} out tokens",
            text_of(&turn["turnId"]),
            text_of(&turn["scenario"]),
            text_of(&turn["kind"]),
            turn["finishReason"]
                .as_str()
                .map(|reason| format!(" ({reason})"))
                .unwrap_or_default(),
            number(&turn["usage"]["promptTokens"]),
            number(&turn["usage"]["completionTokens"]),
        );
    }
    print_stored(text.trim_end())?;
    Ok(SUCCESS)
}

/// A time in milliseconds since the Unix epoch as RFC 3339 (`2026-11-27T18:40:12Z`).
fn rfc3339(unix_ms: Option<u64>) -> Option<String> {
    unix_ms.map(|ms| {
        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
    })
}

/// How long ago `unix_ms` was, coarsely: `just now`, `5m ago`, `3h ago`, `12d ago`.
fn age(unix_ms: u64) -> String {
    let then = UNIX_EPOCH + Duration::from_millis(unix_ms);
    let seconds = SystemTime::now()
        .duration_since(then)
        .map_or(0, |ago| ago.as_secs());
    match seconds {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{}m ago", seconds / 60),
        3_600..172_800 => format!("{}h ago", seconds / 3_600),
        _ => format!("{}d ago", seconds / 86_400),
    }
}

/// The most characters of a session's last instruction a listing carries (`--json`
/// too): a listing is an overview, and twenty sessions of 1 MiB questions made 20 MB
/// of it. `aptix sessions show ID` has the whole.
const LISTED_INSTRUCTION_CHARS: usize = 1000;

/// `text` as a listing carries it: at most [`LISTED_INSTRUCTION_CHARS`] characters,
/// an ellipsis when cut.
fn listed(text: &str) -> String {
    match text.char_indices().nth(LISTED_INSTRUCTION_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first line of `text`, at most [`INSTRUCTION_WIDTH`] characters, an ellipsis when
/// cut.
fn shortened(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    let more_lines = text.trim().len() > line.len();
    if !more_lines && line.chars().count() <= INSTRUCTION_WIDTH {
        return line.to_owned();
    }
    let kept: String = line.chars().take(INSTRUCTION_WIDTH - 1).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_carries_at_most_a_thousand_characters_of_an_instruction() {
        assert_eq!(listed("short"), "short");
        let long = "é".repeat(5000);
        let shown = listed(&long);
        assert_eq!(shown.chars().count(), LISTED_INSTRUCTION_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(listed(&"x".repeat(1000)), "x".repeat(1000));
    }

    #[test]
    fn ages_are_coarse_and_times_are_rfc_3339() {
        let now = u64::try_from(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap();
        assert_eq!(age(now), "just now");
        assert_eq!(age(now - 5 * 60_000 - 10), "5m ago");
        assert_eq!(age(now - 3 * 3_600_000 - 10), "3h ago");
        assert_eq!(age(now - 12 * 86_400_000 - 10), "12d ago");
        // A clock behind the store's is not "in the future".
        assert_eq!(age(now + 60_000), "just now");
        assert_eq!(
            rfc3339(Some(1_795_545_612_000)).as_deref(),
            Some("2026-11-24T18:40:12Z")
        );
        assert_eq!(rfc3339(None), None);
    }

    #[test]
    fn a_long_or_many_line_instruction_is_shortened_to_one_line() {
        assert_eq!(shortened("Where is main?"), "Where is main?");
        assert_eq!(shortened("First line\nsecond"), "First line…");
        let long = "x".repeat(100);
        let shown = shortened(&long);
        assert_eq!(shown.chars().count(), INSTRUCTION_WIDTH);
        assert!(shown.ends_with('…'));
        assert_eq!(shortened(""), "");
        let exact = "y".repeat(INSTRUCTION_WIDTH);
        assert_eq!(shortened(&exact), exact);
    }
}
