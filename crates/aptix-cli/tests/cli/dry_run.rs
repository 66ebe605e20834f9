//! `aptix ask --dry-run` prints exactly the body the orchestrator builds for the same
//! settings, as the provider would send it, with no key, no network and no file
//! written.

use std::sync::Arc;

use aptix_client::chat::{ChatOptions, to_chat_request};
use aptix_client::{Capabilities, FakeProvider};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::CreateResponseRequest;
use aptix_orchestrator::{
    DEFAULT_SYSTEM_PROMPT, InMemorySessionStore, ModelSettings, Orchestrator, OrchestratorConfig,
};
use aptix_rag::Retriever;
use serde_json::{Value, json};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout, stdout_json};

const INSTRUCTION: &str = "Explain how the session store commits a turn";

/// The first body of a new session through the library, as `Orchestrator::dry_run`
/// builds it.
fn library_body(config: OrchestratorConfig, capabilities: Capabilities) -> CreateResponseRequest {
    library_body_with(config, capabilities, None, INSTRUCTION)
}

/// [`library_body`] with a retriever and an instruction of the caller's.
pub(crate) fn library_body_with(
    config: OrchestratorConfig,
    capabilities: Capabilities,
    retriever: Option<Arc<dyn Retriever>>,
    instruction: &str,
) -> CreateResponseRequest {
    let mut builder = Orchestrator::builder(
        Arc::new(FakeProvider::new().with_capabilities(capabilities)),
        Arc::new(InMemorySessionStore::new()),
    )
    .config(config);
    if let Some(retriever) = retriever {
        builder = builder.retriever(retriever);
    }
    let orchestrator = builder.build().unwrap();
    let request = AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s-dry", "turnId": "t-dry", "instruction": instruction}),
    )
    .unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(orchestrator.dry_run(&request))
        .unwrap()
}

fn model(name: &str) -> ModelSettings {
    ModelSettings {
        model: name.to_owned(),
        ..ModelSettings::default()
    }
}

/// The text of the input message at `index`.
fn message_text(body: &Value, index: usize) -> &str {
    body["input"][index]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn the_default_body_equals_the_orchestrators_and_needs_no_key() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .args(["--session", "s-dry", "--model", "gpt-test", INSTRUCTION])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);

    let mut expected = library_body(
        OrchestratorConfig {
            model: model("gpt-test"),
            ..OrchestratorConfig::default()
        },
        Capabilities::openai_responses(),
    );
    // Streaming is the default, and the provider sends `stream: true` for it.
    expected.stream = Some(true);
    assert_eq!(printed, serde_json::to_value(&expected).unwrap());

    assert_eq!(printed["model"], "gpt-test");
    assert_eq!(printed["stream"], true);
    assert!(printed.get("previous_response_id").is_none());
    let input = printed["input"].as_array().unwrap();
    assert_eq!(input[0]["role"], "system", "the system message comes first");
    assert_eq!(message_text(&printed, 0), DEFAULT_SYSTEM_PROMPT);
    let user = message_text(&printed, input.len() - 1);
    assert!(user.starts_with("[MODE: QA]"), "{user}");
    assert!(
        user.contains(&format!("[INSTRUCTION]\n{INSTRUCTION}")),
        "{user}"
    );
    assert!(
        stderr(&output).contains("dry run, nothing sent: POST https://api.openai.com/v1/responses"),
        "{}",
        stderr(&output)
    );
    // The index is a cache and is refreshed like a real ask; no session is written.
    assert!(
        !sandbox
            .workspace
            .path()
            .join(".aptix")
            .join("sessions.db")
            .exists(),
        "a dry run writes no session"
    );
}

#[test]
fn config_files_and_flags_shape_the_body_exactly_as_the_same_library_config() {
    let sandbox = Sandbox::new();
    sandbox.write_user_config("model = \"user-model\"\nreasoning_effort = \"low\"\n");
    sandbox.write_workspace_file(
        "aptix.toml",
        "model = \"file-model\"\nmode = \"code-edit\"\ntemperature = 0.25\nmax_output_tokens = 300\nsystem_prompt = \"Answer in French.\"\n",
    );
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--no-stream",
            "--session",
            "s-dry",
        ])
        .args(["--workspace", &sandbox.workspace_arg(), INSTRUCTION])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);

    let mut config = OrchestratorConfig {
        model: ModelSettings {
            model: "file-model".into(),
            temperature: Some(0.25),
            max_output_tokens: Some(300),
            reasoning_effort: Some("low".into()),
        },
        default_mode: "CODE_EDIT".into(),
        ..OrchestratorConfig::default()
    };
    for mode in &mut config.modes {
        mode.system_prompt = Some("Answer in French.".into());
    }
    let expected = library_body(config, Capabilities::openai_responses());
    assert_eq!(expected.stream, None, "--no-stream sends no stream field");
    assert_eq!(printed, serde_json::to_value(&expected).unwrap());

    assert_eq!(printed["model"], "file-model");
    let system_parts: Vec<&str> = printed["input"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(system_parts, [DEFAULT_SYSTEM_PROMPT, "Answer in French."]);
    let last = printed["input"].as_array().unwrap().len() - 1;
    assert!(message_text(&printed, last).starts_with("[MODE: CODE_EDIT]"));
}

#[test]
fn the_environment_beats_the_files_and_flags_beat_the_environment() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("aptix.toml", "model = \"file-model\"\n");
    let model_of = |flag: Option<&str>| {
        let mut command = sandbox.aptix();
        command.env("APTIX_MODEL", "env-model").args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
        ]);
        if let Some(model) = flag {
            command.args(["--model", model]);
        }
        let output = command.arg(INSTRUCTION).output().unwrap();
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        stdout_json(&output)["model"].as_str().unwrap().to_owned()
    };
    assert_eq!(model_of(None), "env-model");
    assert_eq!(model_of(Some("flag-model")), "flag-model");
}

#[test]
fn the_chat_bridge_body_is_the_translation_of_the_same_request() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--api",
            "chat",
            "--model",
            "llama",
        ])
        .args(["--base-url", "http://127.0.0.1:9/v1", "--session", "s-dry"])
        .args(["--workspace", &sandbox.workspace_arg(), INSTRUCTION])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);
    let body = library_body(
        OrchestratorConfig {
            model: model("llama"),
            ..OrchestratorConfig::default()
        },
        Capabilities::chat_completions(),
    );
    let expected = to_chat_request(&body, &ChatOptions::default(), true).unwrap();
    assert_eq!(printed, expected);
    assert_eq!(printed["messages"][0]["role"], "system");
    assert!(
        stderr(&output).contains("POST http://127.0.0.1:9/v1/chat/completions"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_base_url_the_call_would_refuse_is_refused_by_the_dry_run_too() {
    // The endpoint pasted whole: the dry run showed `POST .../v1/responses/responses`
    // and exited 0 where the real call exits 2.
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--no-tools"])
        .args(["--base-url", "http://127.0.0.1:9/v1/responses"])
        .args(["--workspace", &sandbox.workspace_arg(), INSTRUCTION])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the base URL names the /responses endpoint"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
}

#[test]
fn the_key_is_never_printed() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args([
            "-vvv",
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .arg(INSTRUCTION)
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(!stdout(&output).contains(SECRET_KEY));
    assert!(!stderr(&output).contains(SECRET_KEY));
}

#[test]
fn the_instruction_can_come_from_stdin() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
            "-",
        ])
        .write_stdin(format!("{INSTRUCTION}\n"))
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let printed = stdout_json(&output);
    let last = printed["input"].as_array().unwrap().len() - 1;
    assert!(
        message_text(&printed, last).ends_with(&format!("[INSTRUCTION]\n{INSTRUCTION}")),
        "{printed:#}"
    );

    let empty = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
            "-",
        ])
        .write_stdin("  \n")
        .output()
        .unwrap();
    assert_eq!(code(&empty), 2);
    assert!(stderr(&empty).contains("the instruction is empty"));
}

#[test]
fn a_bare_switch_before_the_instruction_is_on_and_leaves_the_instruction_alone() {
    // `--stateless "question"` once read the question as the switch's value and failed:
    // "invalid value 'How does spawn work' for '--stateless [<BOOL>]'".
    let sandbox = Sandbox::new();
    for switch in [
        "--stateless",
        "--background",
        "--tools",
        "--stateless=false",
        // The words the variables take (`APTIX_STATELESS=yes`) are taken here too.
        "--stateless=yes",
        "--background=off",
    ] {
        let output = sandbox
            .aptix()
            .args(["ask", "--dry-run", "--workspace", &sandbox.workspace_arg()])
            .args([switch, "How does spawn work"])
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{switch}: {}", stderr(&output));
        let body = stdout_json(&output).to_string();
        assert!(body.contains("How does spawn work"), "{switch}: {body}");
    }
    // A value is given with `=`; a wrong one names the switch.
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--stateless=maybe", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("--stateless"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_home_folder_is_no_workspace_by_default_and_a_tilde_workspace_is_home() {
    // Run outside any project, from the home folder: the first ask indexed every file
    // under it and sent what it found as context.
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.path().join("Downloads")).unwrap();
    std::fs::write(sandbox.home.path().join("Downloads/notes.txt"), "private\n").unwrap();
    let output = sandbox
        .aptix()
        .current_dir(sandbox.home.path())
        .args(["ask", "--dry-run", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("too wide a workspace"),
        "{}",
        stderr(&output)
    );
    assert!(!sandbox.home.path().join(".aptix").exists());
    // `~/…` in --workspace (an editor's args, which no shell expands) is the home folder.
    std::fs::create_dir_all(sandbox.home.path().join("project")).unwrap();
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--workspace", "~/project", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(sandbox.home.path().join("project/.aptix").exists());
    // A home folder kept in git (dotfiles), or holding an index an older aptix left
    // there, is still too wide; an index nearer the current folder is the workspace.
    std::fs::create_dir_all(sandbox.home.path().join(".git")).unwrap();
    std::fs::create_dir_all(sandbox.home.path().join(".aptix")).unwrap();
    let output = sandbox
        .aptix()
        .current_dir(sandbox.home.path().join("Downloads"))
        .args(["ask", "--dry-run", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let output = sandbox
        .aptix()
        .current_dir(sandbox.home.path().join("project"))
        .args(["ask", "--dry-run", "-v", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
}
