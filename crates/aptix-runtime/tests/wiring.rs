//! The wiring end to end, as a front end uses it: settings from a lookup, a turn run on
//! the orchestrator over a scripted provider, the session kept in the workspace's SQLite
//! store and continued under newly configured settings; and the settings that refuse
//! to wire before anything is created.

use std::sync::Arc;

use aptix_client::FakeProvider;
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::Response;
use aptix_runtime::{Error, Reporter, SettingsLayer, StoreLocation, Workspace};

struct Quiet;
impl Reporter for Quiet {}

fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    }
}

fn answer(id: &str, text: &str) -> Response {
    serde_json::from_value(serde_json::json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}]
    }))
    .unwrap()
}

fn turn(turn_id: &str, instruction: &str) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(&serde_json::json!({
        "sessionId": "s-wired", "turnId": turn_id, "instruction": instruction
    }))
    .unwrap()
}

#[tokio::test]
async fn a_turn_is_stored_in_the_workspace_and_continued_under_the_settings_in_force() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(
        root.path().join("src/store.rs"),
        "/// Commits a turn to the session store.\npub fn commit_turn() {}\n",
    )
    .unwrap();
    std::fs::write(root.path().join("aptix.toml"), "model = \"first-model\"\n").unwrap();

    let workspace = Workspace::load(root.path(), &SettingsLayer::default(), &|_| None).unwrap();
    assert_eq!(
        workspace.store_location().unwrap(),
        StoreLocation::Sqlite(root.path().join(".aptix/sessions.db"))
    );
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer("resp_1", "In store.rs."));
    let orchestrator = workspace
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    let envelope = orchestrator
        .execute(turn("t-1", "Where is a turn committed?"))
        .await
        .unwrap();
    assert_eq!(envelope.text.as_deref(), Some("In store.rs."));
    let sent = &provider.requests()[0];
    assert_eq!(sent.model, "first-model");
    let tools: Vec<String> = serde_json::to_value(&sent.tools)
        .unwrap()
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(tools, ["search_code", "read_file", "list_files"]);
    assert!(
        serde_json::to_string(&sent.input)
            .unwrap()
            .contains("commit_turn"),
        "the index is the retriever: the context holds the function"
    );
    assert!(root.path().join(".aptix/sessions.db").is_file());
    assert!(root.path().join(".aptix/.gitignore").is_file());

    // The same session, now configured with another model and one tool fewer.
    static LATER: &[(&str, &str)] = &[
        ("APTIX_MODEL", "second-model"),
        ("APTIX_DISABLED_TOOLS", "list_files"),
    ];
    let workspace =
        Workspace::load(root.path(), &SettingsLayer::default(), &env_of(LATER)).unwrap();
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer("resp_2", "Still there."));
    let orchestrator = workspace
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    orchestrator
        .execute(turn("t-2", "And then?"))
        .await
        .unwrap();
    let sent = &provider.requests()[0];
    assert_eq!(sent.model, "second-model", "what is configured now applies");
    assert_eq!(
        sent.previous_response_id.as_deref(),
        Some("resp_1"),
        "the stored session is continued"
    );
    let tools = serde_json::to_string(&sent.tools).unwrap();
    assert!(
        !tools.contains("list_files") && tools.contains("read_file"),
        "{tools}"
    );
}

#[tokio::test]
async fn settings_that_cannot_run_turns_are_refused_before_anything_is_created() {
    let root = tempfile::tempdir().unwrap();
    let flags = SettingsLayer {
        background: Some(true),
        api: Some(aptix_runtime::ApiKind::Chat),
        ..SettingsLayer::default()
    };
    let workspace = Workspace::load(root.path(), &flags, &|_| None).unwrap();
    let error = workspace
        .orchestrator(Arc::new(FakeProvider::new()), None, &Quiet)
        .await
        .unwrap_err();
    assert!(error.is_config(), "{error}");
    assert!(
        error
            .to_string()
            .contains("background mode needs the responses api"),
        "{error}"
    );
    assert!(!root.path().join(".aptix").exists(), "nothing was created");

    // No key for the default host: the error says how to set one, and it is the
    // person's to fix.
    let workspace = Workspace::load(root.path(), &SettingsLayer::default(), &|_| None).unwrap();
    let Err(error) = workspace.provider(&|_| None) else {
        panic!("a provider without a key");
    };
    assert!(matches!(error, Error::MissingApiKey { .. }), "{error}");
    assert!(error.is_config());
    assert!(
        error
            .to_string()
            .starts_with("no api key for https://api.openai.com/v1")
    );
    // A host that needs none is called without one.
    static LOCAL: &[(&str, &str)] = &[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")];
    let workspace =
        Workspace::load(root.path(), &SettingsLayer::default(), &env_of(LOCAL)).unwrap();
    assert!(workspace.provider(&|_| None).is_ok());
}

#[test]
fn a_workspace_file_cannot_send_the_key_to_another_machine() {
    // A cloned repository (or whatever folder an editor opens) names its own server;
    // the user's key must not go there on the folder's word alone.
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let aptix_toml = root.path().join("aptix.toml");
    std::fs::write(
        &aptix_toml,
        "base_url = \"https://llm.attacker.example/v1\"\n",
    )
    .unwrap();
    let home_dir = home.path().to_str().unwrap().to_owned();
    let env = move |extra: &'static [(&'static str, &'static str)]| {
        let home_dir = home_dir.clone();
        move |name: &str| match name {
            "HOME" => Some(home_dir.clone()),
            "OPENAI_API_KEY" => Some("sk-test-0123456789abcdef".to_owned()),
            _ => env_of(extra)(name),
        }
    };
    let provider = |extra| {
        let env = env(extra);
        Workspace::load(root.path(), &SettingsLayer::default(), &env)
            .unwrap()
            .provider(&env)
            .map(|_| ())
    };
    let error = provider(&[]).unwrap_err();
    assert!(error.is_config(), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("https://llm.attacker.example/v1"),
        "{message}"
    );
    assert!(message.contains("--base-url"), "{message}");
    assert!(!message.contains("sk-test"), "{message}");
    // A dry run refuses what the call would; without a key, nothing is at stake.
    let body = aptix_model::wire::CreateResponseRequest::default;
    let env_plain = env(&[]);
    let loaded = Workspace::load(root.path(), &SettingsLayer::default(), &env_plain).unwrap();
    let dry = loaded.wire_request(body(), true).unwrap_err();
    assert_eq!(dry.to_string(), message);
    let home_dir = home.path().to_str().unwrap().to_owned();
    let keyless = move |name: &str| (name == "HOME").then(|| home_dir.clone());
    Workspace::load(root.path(), &SettingsLayer::default(), &keyless)
        .unwrap()
        .wire_request(body(), true)
        .unwrap();
    // The user's own word for the same server: the flag, the variable, the user file.
    static CHOSEN: &[(&str, &str)] = &[("OPENAI_BASE_URL", "https://llm.attacker.example/v1")];
    provider(CHOSEN).unwrap();
    let flags = SettingsLayer {
        base_url: Some("https://llm.attacker.example/v1".to_owned()),
        ..SettingsLayer::default()
    };
    let env_plain = env(&[]);
    Workspace::load(root.path(), &flags, &env_plain)
        .unwrap()
        .provider(&env_plain)
        .unwrap();
    let user_file = home.path().join(".config/aptix/config.toml");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        "base_url = \"https://llm.attacker.example/v1\"\n",
    )
    .unwrap();
    provider(&[]).unwrap();
    std::fs::remove_file(&user_file).unwrap();
    // A server on this machine (a llama-server the project documents) is the folder's
    // to name.
    std::fs::write(&aptix_toml, "base_url = \"http://127.0.0.1:8080/v1\"\n").unwrap();
    provider(&[]).unwrap();
}

#[tokio::test]
async fn a_workspace_file_cannot_send_pgpassword_to_another_machine() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("aptix.toml"),
        "store = \"postgres://me@db.attacker.example/aptix\"\n",
    )
    .unwrap();
    static PASSWORD: &[(&str, &str)] = &[("PGPASSWORD", "hunter2-db")];
    let workspace =
        Workspace::load(root.path(), &SettingsLayer::default(), &env_of(PASSWORD)).unwrap();
    // Refused before any connection is tried: no database is reached, none named.
    let Err(error) = workspace.open_store().await else {
        panic!("the store opened");
    };
    assert!(error.is_config(), "{error}");
    let message = error.to_string();
    assert!(message.contains("PGPASSWORD would be sent"), "{message}");
    assert!(message.contains("--store"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[tokio::test]
async fn the_orchestrators_of_one_workspace_share_its_store_and_index() {
    // An editor opens a session per thread: each used to open the store and the index
    // again (and hold them for as long as the agent ran).
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(root.path().join("src/a.rs"), "pub fn first_marker() {}\n").unwrap();
    let workspace = Workspace::load(root.path(), &SettingsLayer::default(), &|_| None).unwrap();
    let provider = Arc::new(FakeProvider::new());
    let first = workspace
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    let second = workspace
        .clone()
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    assert!(Arc::ptr_eq(first.store(), second.store()));
    assert!(Arc::ptr_eq(
        first.store(),
        &workspace.open_store().await.unwrap()
    ));
    // The shared index is still refreshed for each new orchestrator: a file added
    // between two sessions is found by the second.
    std::fs::write(root.path().join("src/b.rs"), "pub fn later_marker() {}\n").unwrap();
    let third = workspace
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    provider.push_response(answer("resp_1", "Found."));
    third
        .execute(turn("t-1", "Where is later_marker?"))
        .await
        .unwrap();
    let sent = serde_json::to_string(&provider.requests()[0].input).unwrap();
    assert!(sent.contains("later_marker"), "{sent}");
    // A workspace loaded anew (other settings) opens its own.
    let other = Workspace::load(root.path(), &SettingsLayer::default(), &|_| None).unwrap();
    assert!(!Arc::ptr_eq(
        first.store(),
        &other.open_store().await.unwrap()
    ));
}

#[tokio::test]
async fn a_long_lived_orchestrator_retrieves_what_was_saved_after_it_opened() {
    // An editor's session (or a service) opens once and runs many turns: a file saved
    // after it opened, and a file changed since, are retrieved as they are now.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("src")).unwrap();
    std::fs::write(
        root.path().join("src/old.rs"),
        "pub fn quokka_original() {}\n",
    )
    .unwrap();
    std::fs::write(root.path().join("aptix.toml"), "tools = false\n").unwrap();
    let workspace = Workspace::load(root.path(), &SettingsLayer::default(), &|_| None).unwrap();
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer("resp_1", "One."));
    provider.push_response(answer("resp_2", "Two."));
    let orchestrator = workspace
        .orchestrator(provider.clone(), None, &Quiet)
        .await
        .unwrap();
    orchestrator
        .execute(turn("t-1", "Where is quokka_original?"))
        .await
        .unwrap();
    std::fs::write(
        root.path().join("src/new.rs"),
        "pub fn zorblax_frobnicate() {}\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("src/old.rs"),
        "pub fn quokka_renamed() {}\n",
    )
    .unwrap();
    // Past the least time between two looks at the workspace (a quarter second).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    orchestrator
        .execute(turn(
            "t-2",
            "Where are zorblax_frobnicate and quokka_renamed?",
        ))
        .await
        .unwrap();
    let sent = serde_json::to_string(&provider.requests()[1].input).unwrap();
    assert!(sent.contains("pub fn zorblax_frobnicate"), "{sent}");
    assert!(sent.contains("pub fn quokka_renamed"), "{sent}");
    assert!(!sent.contains("quokka_original() {}"), "{sent}");
}

#[test]
fn a_dry_run_names_the_url_the_provider_posts_to() {
    // An Azure base URL carries its API version in the query: the call goes to
    // `.../v1/responses?api-version=...`, and the dry run said `...?api-version=.../responses`.
    let root = tempfile::tempdir().unwrap();
    let flags = SettingsLayer {
        base_url: Some("https://r.openai.azure.com/openai/v1/?api-version=preview".to_owned()),
        ..SettingsLayer::default()
    };
    let none = |_: &str| None;
    let sent = Workspace::load(root.path(), &flags, &none)
        .unwrap()
        .wire_request(aptix_model::wire::CreateResponseRequest::default(), false)
        .unwrap();
    assert_eq!(
        sent.endpoint,
        "https://r.openai.azure.com/openai/v1/responses?api-version=preview"
    );
}
