//! `aptix index` builds the workspace index and refreshes it incrementally; with an
//! index, `--dry-run` shows the `[CONTEXT]` block exactly as the orchestrator builds it
//! with the same index as its retriever.

use std::sync::Arc;

use aptix_index::{IndexConfig, WorkspaceIndex};
use serde_json::Value;

use crate::dry_run::library_body_with;
use crate::support::{Sandbox, code, stderr, stdout, stdout_json};
use aptix_client::Capabilities;
use aptix_orchestrator::{ModelSettings, OrchestratorConfig};

/// A workspace with two small Rust files.
pub(crate) fn code_workspace() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file(
        "src/session.rs",
        "/// Commits a finished turn and the new session state in one transaction.\npub fn commit_turn(state: &str, turn: &str) -> Result<u64, String> {\n    if state.is_empty() {\n        return Err(\"no state\".into());\n    }\n    Ok(turn.len() as u64)\n}\n",
    );
    sandbox.write_workspace_file(
        "src/http.rs",
        "/// Reads the status code of an HTTP response line.\npub fn parse_status_line(line: &str) -> Option<u16> {\n    line.get(9..12)?.parse().ok()\n}\n",
    );
    sandbox
}

fn index(sandbox: &Sandbox) -> std::process::Output {
    sandbox
        .aptix()
        .args(["index", &sandbox.workspace_arg()])
        .output()
        .unwrap()
}

#[test]
fn index_builds_the_index_then_refreshes_only_what_changed() {
    let sandbox = code_workspace();
    let first = index(&sandbox);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let summary = stdout(&first);
    assert!(summary.starts_with("indexed 2 files ("), "{summary}");
    assert!(summary.contains("(built from scratch)"), "{summary}");
    let aptix_dir = sandbox.workspace.path().join(".aptix");
    assert!(aptix_dir.join("index").join("meta.json").is_file());

    let again = index(&sandbox);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stdout(&again).starts_with("indexed 0 files ("),
        "{}",
        stdout(&again)
    );
    assert!(stdout(&again).contains("2 unchanged"), "{}", stdout(&again));

    sandbox.write_workspace_file(
        "src/http.rs",
        "pub fn parse_status_line(line: &str) -> Option<u16> {\n    line.get(9..12)?.parse().ok()\n}\n\npub fn is_redirect(status: u16) -> bool {\n    (300..400).contains(&status)\n}\n",
    );
    let changed = index(&sandbox);
    assert_eq!(code(&changed), 0, "{}", stderr(&changed));
    assert!(
        stdout(&changed).starts_with("indexed 1 file ("),
        "{}",
        stdout(&changed)
    );
    assert!(
        stdout(&changed).contains("1 unchanged"),
        "{}",
        stdout(&changed)
    );
    // Named as every other command names it: `--workspace DIR`.
    let named = sandbox
        .aptix()
        .args(["index", "--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&named), 0, "{}", stderr(&named));
    assert!(stdout(&named).contains("2 unchanged"), "{}", stdout(&named));
    // Not both.
    let both = sandbox
        .aptix()
        .args(["index", "--workspace", &sandbox.workspace_arg()])
        .arg(sandbox.workspace_arg())
        .output()
        .unwrap();
    assert_eq!(code(&both), 2, "{}", stderr(&both));
}

#[test]
fn index_of_a_missing_folder_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let missing = sandbox.workspace.path().join("nope");
    let output = sandbox.aptix().arg("index").arg(&missing).output().unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("is not a folder"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_dry_run_on_an_indexed_workspace_shows_the_context_the_orchestrator_retrieves() {
    let sandbox = code_workspace();
    assert_eq!(code(&index(&sandbox)), 0);
    let instruction = "Where is commit_turn defined and what does it return?";
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--session",
            "s-dry",
            "--model",
            "gpt-test",
        ])
        .args(["--workspace", &sandbox.workspace_arg(), instruction])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);

    let index = WorkspaceIndex::open(sandbox.workspace.path(), IndexConfig::default()).unwrap();
    let mut expected = library_body_with(
        OrchestratorConfig {
            model: ModelSettings {
                model: "gpt-test".into(),
                ..ModelSettings::default()
            },
            ..OrchestratorConfig::default()
        },
        Capabilities::openai_responses(),
        Some(Arc::new(index)),
        instruction,
    );
    expected.stream = Some(true);
    assert_eq!(printed, serde_json::to_value(&expected).unwrap());

    let user = user_text(&printed);
    assert!(user.contains("[CONTEXT]"), "{user}");
    assert!(user.contains("src/session.rs"), "{user}");
    assert!(user.contains("pub fn commit_turn"), "{user}");
}

#[test]
fn a_dry_run_on_a_never_indexed_workspace_indexes_it_and_shows_the_real_context() {
    let sandbox = code_workspace();
    let instruction = "Where is commit_turn defined and what does it return?";
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--no-tools", "--model", "gpt-test"])
        .args(["--workspace", &sandbox.workspace_arg(), instruction])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("indexing") && stderr(&output).contains("for the first time"),
        "{}",
        stderr(&output)
    );
    let printed = stdout_json(&output);
    let user = user_text(&printed);
    assert!(user.contains("[CONTEXT]"), "{user}");
    assert!(user.contains("pub fn commit_turn"), "{user}");

    // Exactly the body a real ask builds with the index now on disk.
    let index = WorkspaceIndex::open(sandbox.workspace.path(), IndexConfig::default()).unwrap();
    assert!(!index.is_stale().unwrap());
    let mut expected = library_body_with(
        OrchestratorConfig {
            model: ModelSettings {
                model: "gpt-test".into(),
                ..ModelSettings::default()
            },
            ..OrchestratorConfig::default()
        },
        Capabilities::openai_responses(),
        Some(Arc::new(index)),
        instruction,
    );
    expected.stream = Some(true);
    assert_eq!(printed, serde_json::to_value(&expected).unwrap());
}

#[test]
fn search_shows_ranked_chunks_files_and_why() {
    let sandbox = code_workspace();
    let output = sandbox
        .aptix()
        .args(["search", "--json", "--workspace", &sandbox.workspace_arg()])
        .args(["--scope", "kind == source", "where is commit_turn?"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);
    let first = &printed["chunks"][0];
    assert_eq!(first["path"], "src/session.rs", "{printed}");
    assert_eq!(first["kind"], "source");
    assert!(
        first["matched"]["symbol"]
            .as_array()
            .unwrap()
            .contains(&Value::from("committurn")),
        "{printed}"
    );
    assert_eq!(printed["files"][0]["path"], "src/session.rs");

    let bad = sandbox
        .aptix()
        .args(["search", "--workspace", &sandbox.workspace_arg()])
        .args(["--scope", "kind source", "commit_turn"])
        .output()
        .unwrap();
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    // `-` reads the query from stdin, as `ask -` reads its instruction.
    let piped = sandbox
        .aptix()
        .args([
            "search",
            "--json",
            "--workspace",
            &sandbox.workspace_arg(),
            "-",
        ])
        .write_stdin("where is commit_turn?\n")
        .output()
        .unwrap();
    assert_eq!(code(&piped), 0, "{}", stderr(&piped));
    assert_eq!(
        stdout_json(&piped)["chunks"][0]["path"],
        "src/session.rs",
        "{}",
        stdout(&piped)
    );
    // `--limit 0` showed one result; it is refused, naming the range.
    for limit in ["0", "1001"] {
        let bad = sandbox
            .aptix()
            .args(["search", "--workspace", &sandbox.workspace_arg()])
            .args(["--limit", limit, "commit_turn"])
            .output()
            .unwrap();
        assert_eq!(code(&bad), 2, "{}", stderr(&bad));
        assert!(stderr(&bad).contains("--limit"), "{}", stderr(&bad));
    }
}

/// Every text part of the last input message.
pub(crate) fn user_text(body: &Value) -> String {
    let input = body["input"].as_array().unwrap();
    input.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn indexing_a_subfolder_does_not_take_it_out_of_its_project() {
    // `aptix index src/task` left an `.aptix/` there, which then marked src/task as a
    // workspace of its own: the project's aptix.toml and sessions were ignored there.
    let sandbox = code_workspace();
    sandbox.write_workspace_file("aptix.toml", "model = \"from-the-project\"\n");
    sandbox.write_workspace_file("src/task/spawn.rs", "pub fn spawn_task() {}\n");
    let sub = sandbox.workspace.path().join("src/task");
    let indexed = sandbox
        .aptix()
        .current_dir(&sub)
        .args(["index", "."])
        .output()
        .unwrap();
    assert_eq!(code(&indexed), 0, "{}", stderr(&indexed));
    assert!(
        stderr(&indexed).contains("is inside the workspace"),
        "{}",
        stderr(&indexed)
    );
    assert!(sub.join(".aptix").is_dir());
    let asked = sandbox
        .aptix()
        .current_dir(&sub)
        .args(["ask", "--dry-run", "where is spawn_task?"])
        .output()
        .unwrap();
    assert_eq!(code(&asked), 0, "{}", stderr(&asked));
    assert_eq!(stdout_json(&asked)["model"], "from-the-project");
}

#[test]
fn a_file_name_with_an_escape_sequence_is_never_written_raw_to_the_log() {
    // A cloned repository's file names are anyone's: one holding an escape sequence
    // would set the terminal's title or clear the screen if the skip log wrote it raw.
    let sandbox = code_workspace();
    sandbox.write_workspace_file("bin\u{1b}]0;PWNED\u{7}\u{1b}[2J.rs", "\0binary\0");
    let output = sandbox
        .aptix()
        .args(["index", "-v", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let log = stderr(&output);
    assert!(log.contains("skipped"), "{log}");
    assert!(!log.contains('\u{1b}') && !log.contains('\u{7}'), "{log:?}");
    assert!(log.contains(r"\u{1b}]0;PWNED"), "{log}");
}

#[test]
fn a_dry_run_says_what_the_turn_would_leave_out() {
    // A budget too small for any chunk: the body has no context, and the dry run says
    // so as the turn's envelope would, instead of an empty context that looks like a
    // question nothing answers.
    let sandbox = code_workspace();
    assert_eq!(code(&index(&sandbox)), 0);
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--context-token-budget",
            "20",
        ])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Where is commit_turn defined and what does it return?")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(!user_text(&stdout_json(&output)).contains("[CONTEXT]"));
    let warned = stderr(&output);
    assert!(
        warned.contains("warning: ")
            && warned.contains("left out to keep the context within 20 tokens")
            && warned.contains("no context is sent"),
        "{warned}"
    );
}

#[test]
fn the_serve_tokens_file_is_never_indexed_or_searched_by_index_and_search() {
    // `aptix serve` kept its tokens file out of the index, and `aptix index` put it
    // back: every front end loads the workspace's settings, which name the file.
    let sandbox = code_workspace();
    let token = "qxvzjwkpfhgmbtrl";
    // The tokens file alone holds `second`; another file holds `token` too, so that a
    // search for it finds something.
    let second = "mvkdlwzqprstnhgc";
    sandbox.write_workspace_file(
        "conf/team.txt",
        &format!("# team token\n{token}\n{second}\n"),
    );
    sandbox.write_workspace_file("conf/env.txt", &format!("{token}\n"));
    sandbox.write_workspace_file("aptix.toml", "tokens_file = \"conf/team.txt\"\n");
    let indexed = index(&sandbox);
    assert_eq!(code(&indexed), 0, "{}", stderr(&indexed));
    // The same for a tokens file named by the environment only.
    let search = |env_file: Option<&str>| {
        let mut command = sandbox.aptix();
        if let Some(file) = env_file {
            command.env("APTIX_TOKENS_FILE", sandbox.workspace.path().join(file));
        }
        let output = command
            .args(["search", "--json", "--workspace", &sandbox.workspace_arg()])
            .arg(token)
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let printed = stdout_json(&output);
        printed["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["path"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(search(None), ["conf/env.txt"]);
    let files = walk_files(&sandbox.workspace.path().join(".aptix/index"));
    let texts: Vec<_> = files
        .iter()
        .map(|file| String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned())
        .collect();
    // The index keeps chunk text readable: what is not found in it is not there.
    assert!(texts.iter().any(|text| text.contains(token)));
    for (file, text) in files.iter().zip(&texts) {
        assert!(
            !text.contains(second),
            "{} holds the tokens file's text",
            file.display()
        );
    }
    // Named by the environment alone, the same; and named by nothing, it is found.
    sandbox.write_workspace_file("aptix.toml", "");
    assert_eq!(search(Some("conf/team.txt")), ["conf/env.txt"]);
    let mut found = search(None);
    found.sort();
    assert_eq!(found, ["conf/env.txt", "conf/team.txt"]);
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_file_named_like_the_aptix_folder_is_said_to_be_in_the_way() {
    let sandbox = code_workspace();
    sandbox.write_workspace_file(".aptix", "notes\n");
    let output = index(&sandbox);
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("a file is in the way"),
        "{}",
        stderr(&output)
    );
}

/// Holds a refresh of the index open (in its last step) until told to go on.
struct Held(
    std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    std::sync::mpsc::Sender<()>,
);

impl aptix_index::IndexProgress for Held {
    fn committing(&self) {
        let _ = self.1.send(());
        if let Some(go_on) = self.0.lock().unwrap().take() {
            let _ = go_on.recv();
        }
    }
}

#[test]
fn a_second_index_waits_for_the_refresh_running_and_then_runs() {
    use std::io::BufRead as _;
    let sandbox = code_workspace();
    let root = sandbox.workspace.path().to_path_buf();
    let (go_on, wait) = std::sync::mpsc::channel();
    let (holding, held) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let index = aptix_index::WorkspaceIndex::open(&root, Default::default()).unwrap();
        let progress = Held(std::sync::Mutex::new(Some(wait)), holding);
        index.refresh(&progress).unwrap();
    });
    held.recv().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aptix"))
        .args(["index", &sandbox.workspace_arg()])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home.path())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(
        first.contains("waiting for another process that is refreshing the index"),
        "{first}"
    );
    go_on.send(()).unwrap();
    holder.join().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{first}{rest}");
}
