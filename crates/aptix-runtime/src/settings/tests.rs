//! The layering of settings: precedence, files, the environment, errors naming their
//! source, and the drift checks of the tables against their help texts and the docs.

use std::path::{Path, PathBuf};

use aptix_orchestrator::OrchestratorConfig;

use super::table::Table;
use super::*;

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.trim().is_empty())
    }
}

fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn from_file(path: &Path) -> Result<Option<SettingsLayer>, Error> {
    file::read::<SettingsLayer>(path)
}

/// The flags alone: no file, no environment.
fn from_flags(flags: &SettingsLayer) -> Result<SettingsLayer, Error> {
    let empty = tempfile::tempdir().unwrap();
    Settings::load(empty.path(), flags, &|_| None).map(|settings| settings.configured)
}

#[test]
fn flags_beat_env_beat_workspace_file_beat_user_file_beat_defaults() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    write(
        home.path(),
        ".config/aptix/config.toml",
        "model = \"user-model\"\ntemperature = 0.1\nmax_output_tokens = 100\nmode = \"code-edit\"\n",
    );
    write(
        workspace.path(),
        "aptix.toml",
        "model = \"workspace-model\"\ntemperature = 0.2\nstateless = true\n",
    );
    let home_text = home.path().to_str().unwrap().to_owned();
    let env = env_of(&[
        ("HOME", &home_text),
        ("APTIX_TEMPERATURE", "0.3"),
        ("APTIX_STATELESS", "false"),
    ]);
    let flags = SettingsLayer {
        temperature: Some(0.4),
        ..SettingsLayer::default()
    };
    let settings = Settings::load(workspace.path(), &flags, &env).unwrap();
    let layer = settings.configured();
    assert_eq!(layer.model.as_deref(), Some("workspace-model"));
    assert_eq!(layer.temperature, Some(0.4));
    assert_eq!(layer.max_output_tokens, Some(100));
    assert_eq!(layer.mode.as_deref(), Some("CODE_EDIT"));
    assert!(!settings.stateless(), "the environment beats the file");
    assert_eq!(settings.api(), ApiKind::Responses);
    assert_eq!(settings.files().len(), 2);

    let config = settings.orchestrator_config();
    assert_eq!(config.model.model, "workspace-model");
    assert_eq!(config.default_mode, "CODE_EDIT");
    let defaults = OrchestratorConfig::default();
    assert_eq!(config.context_token_budget, defaults.context_token_budget);
}

#[test]
fn xdg_config_home_wins_over_home_when_absolute() {
    let env = env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/xdg")]);
    assert_eq!(
        user_config_path(&env).unwrap(),
        Path::new("/xdg/aptix/config.toml")
    );
    let env = env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "relative")]);
    assert_eq!(
        user_config_path(&env).unwrap(),
        Path::new("/home/u/.config/aptix/config.toml")
    );
    assert_eq!(user_config_path(&env_of(&[])), None);
}

#[test]
fn unknown_keys_name_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "aptix.toml", "modle = \"x\"\n");
    let error = from_file(&path).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("unknown key `modle`"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("did you mean `model`?"), "{text}");
    assert!(error.is_config());
}

#[test]
fn a_misspelt_key_suggests_the_closest_known_one_and_a_stranger_none() {
    let dir = tempfile::tempdir().unwrap();
    for (written, meant) in [
        ("max_concurent_turns", Some("max_concurrent_turns")),
        ("temprature", Some("temperature")),
        ("base-url", Some("base_url")),
        ("colour_scheme", None),
    ] {
        let path = write(dir.path(), "aptix.toml", &format!("{written} = 1\n"));
        let text = from_file(&path).unwrap_err().to_string();
        match meant {
            Some(meant) => assert!(
                text.contains(&format!("did you mean `{meant}`?")),
                "{written}: {text}"
            ),
            None => assert!(!text.contains("did you mean"), "{written}: {text}"),
        }
    }
}

#[test]
fn an_api_key_in_a_config_file_is_refused_without_echoing_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "aptix.toml", "api_key = \"sk-secret-value\"\n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("sk-secret-value"), "{text}");
}

#[test]
fn bad_values_name_their_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "aptix.toml", "temperature = \"hot\"\n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(text.contains("`temperature`"), "{text}");
    assert!(text.contains("aptix.toml"), "{text}");

    let path = write(dir.path(), "aptix.toml", "temperature = 7.0\n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(text.contains("temperature 7 is outside 0..=2"), "{text}");

    let path = write(dir.path(), "aptix.toml", "model = \n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(text.contains("not valid toml"), "{text}");
    // Where, by line and key, never the value.
    let path = write(
        dir.path(),
        "aptix.toml",
        "model = \"m\"\ntemperature = 0.2\nmodel = \"secret-ish\"\n",
    );
    let text = from_file(&path).unwrap_err().to_string();
    assert!(
        text.contains("not valid toml (line 3, at `model`)") && !text.contains("secret-ish"),
        "{text}"
    );

    let env = env_of(&[("APTIX_API", "grpc")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(text.contains("APTIX_API"), "{text}");

    // A misspelt effort is refused here, not by the API after the context was gathered.
    let env = env_of(&[("APTIX_REASONING_EFFORT", "hihg")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(
        text.contains("APTIX_REASONING_EFFORT")
            && text.contains("\"hihg\"")
            && text.contains("low, medium, high"),
        "{text}"
    );
    let env = env_of(&[("APTIX_REASONING_EFFORT", "minimal")]);
    assert!(SettingsLayer::from_env(&env).is_ok());

    let env = env_of(&[("APTIX_MODE", "poetry")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(text.contains("APTIX_MODE") && text.contains("QA"), "{text}");

    // A lease shorter than a second lapses between its renewals.
    let env = env_of(&[("APTIX_LEASE_TTL", "1ms")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(
        text.contains("APTIX_LEASE_TTL") && text.contains("at least 1s"),
        "{text}"
    );
    let env = env_of(&[("APTIX_LEASE_TTL", "1s")]);
    assert!(SettingsLayer::from_env(&env).is_ok());

    let flags = SettingsLayer {
        base_url: Some("localhost:8080".into()),
        ..SettingsLayer::default()
    };
    let text = from_flags(&flags).unwrap_err().to_string();
    assert!(text.contains("--base-url"), "{text}");
    // A misspelt scheme is named without the password or key the url holds.
    let flags = SettingsLayer {
        base_url: Some("htps://me:hunter2@proxy.example/v1?key=s3cret".into()),
        ..SettingsLayer::default()
    };
    let text = from_flags(&flags).unwrap_err().to_string();
    assert!(
        text.contains("htps://me:***@proxy.example/v1?key=***")
            && !text.contains("hunter2")
            && !text.contains("s3cret"),
        "{text}"
    );

    let path = write(dir.path(), "aptix.toml", "request_timeout = \"soon\"\n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(
        text.contains("`request_timeout`") && text.contains("expected e.g. 30s"),
        "{text}"
    );
    // A variable is refused for the reason a flag or a config file is: a zero duration
    // for being zero, not for its spelling.
    let env = env_of(&[("APTIX_LEASE_TTL", "0s")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(
        text.contains("APTIX_LEASE_TTL") && text.contains("must be longer than zero"),
        "{text}"
    );
    let env = env_of(&[("APTIX_TURN_TIMEOUT", "soon")]);
    let text = ServeLayer::from_env(&env).unwrap_err().to_string();
    assert!(
        text.contains("APTIX_TURN_TIMEOUT") && text.contains("expected e.g. 30s"),
        "{text}"
    );
    let env = env_of(&[("APTIX_BODY_LIMIT", "0")]);
    let text = ServeLayer::from_env(&env).unwrap_err().to_string();
    assert!(text.contains("must be larger than zero"), "{text}");
    let env = env_of(&[("APTIX_STREAM_MAX_ATTEMPTS", "0")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert!(text.contains("APTIX_STREAM_MAX_ATTEMPTS"), "{text}");
}

#[test]
fn an_unknown_tool_name_is_refused_naming_its_source_and_the_known_tools() {
    let known = "(known tools: search_code, read_file, list_files)";
    let flags = SettingsLayer {
        disabled_tools: Some(vec!["read_file".into(), "run_shell".into()]),
        ..SettingsLayer::default()
    };
    let error = from_flags(&flags).unwrap_err();
    assert!(error.is_config());
    assert_eq!(
        error.to_string(),
        format!("--disable-tool \"run_shell\" is not a built-in tool {known}")
    );

    let env = env_of(&[("APTIX_DISABLED_TOOLS", "read_file,grep")]);
    let text = SettingsLayer::from_env(&env).unwrap_err().to_string();
    assert_eq!(
        text,
        format!("APTIX_DISABLED_TOOLS \"grep\" is not a built-in tool {known}")
    );

    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "aptix.toml",
        "disabled_tools = [\"readfile\"]\n",
    );
    let text = from_file(&path).unwrap_err().to_string();
    assert_eq!(
        text,
        format!(
            "`disabled_tools` in {} \"readfile\" is not a built-in tool {known}",
            path.display()
        )
    );
    let path = write(dir.path(), "aptix.toml", "disabled_tools = \"read_file\"\n");
    let text = from_file(&path).unwrap_err().to_string();
    assert!(
        text.contains("invalid value for `disabled_tools`") && text.contains("sequence"),
        "{text}"
    );
}

#[test]
fn disabled_tools_are_layered_like_every_setting_and_leave_the_others_offered() {
    let workspace = tempfile::tempdir().unwrap();
    write(
        workspace.path(),
        "aptix.toml",
        "disabled_tools = [\"read_file\"]\n",
    );
    let none = SettingsLayer::default();
    let offered = |settings: &Settings| -> Vec<&str> {
        aptix_tools::TOOL_NAMES
            .into_iter()
            .filter(|name| settings.offers_tool(name))
            .collect()
    };

    let settings = Settings::load(workspace.path(), &none, &|_| None).unwrap();
    assert_eq!(offered(&settings), ["search_code", "list_files"]);

    // A higher layer replaces the list, as it replaces any value.
    let env = env_of(&[(
        "APTIX_DISABLED_TOOLS",
        " list_files , search_code,list_files",
    )]);
    let settings = Settings::load(workspace.path(), &none, &env).unwrap();
    assert_eq!(
        settings.configured().disabled_tools.as_deref(),
        Some(&["list_files".to_owned(), "search_code".to_owned()][..]),
        "trimmed, each name once"
    );
    assert_eq!(offered(&settings), ["read_file"]);

    let flags = SettingsLayer {
        disabled_tools: Some(Vec::new()),
        ..SettingsLayer::default()
    };
    let settings = Settings::load(workspace.path(), &flags, &env).unwrap();
    assert_eq!(offered(&settings), aptix_tools::TOOL_NAMES);

    // `tools = false` turns every tool off, whatever the list says.
    let flags = SettingsLayer {
        tools: Some(false),
        ..SettingsLayer::default()
    };
    let settings = Settings::load(workspace.path(), &flags, &|_| None).unwrap();
    assert!(offered(&settings).is_empty());
}

#[test]
fn every_key_can_be_set_in_a_file_and_in_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "aptix.toml",
        "model = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi = \"chat\"\nstateless = true\nmode = \"QA\"\ntemperature = 1\nmax_output_tokens = 64\nreasoning_effort = \"low\"\ncontext_token_budget = 9\nsystem_prompt = \"Be brief.\"\nrequest_timeout = \"2m\"\nstream_idle_timeout = 90\nconnect_timeout = \"5s\"\nmax_retries = 4\nstream_max_attempts = 3\nbackground = true\ncontext_window = 50000\ncompact_threshold = 0.5\nlease_ttl = \"1m 30s\"\ntools = false\ndisabled_tools = [\"read_file\", \"list_files\"]\nschema_strategy = \"tool_call\"\nstore = \"postgres://u:pw@db/aptix\"\n",
    );
    let from_file = from_file(&path).unwrap().unwrap();
    let vars: Vec<(String, String)> = [
        ("model", "m"),
        ("base_url", "http://127.0.0.1:1/v1"),
        ("api", "chat"),
        ("stateless", "yes"),
        ("mode", "qa"),
        ("temperature", "1"),
        ("max_output_tokens", "64"),
        ("reasoning_effort", "low"),
        ("context_token_budget", "9"),
        ("system_prompt", "Be brief."),
        ("request_timeout", "120s"),
        ("stream_idle_timeout", "1m 30s"),
        ("connect_timeout", "5"),
        ("max_retries", "4"),
        ("stream_max_attempts", "3"),
        ("background", "on"),
        ("context_window", "50000"),
        ("compact_threshold", "0.5"),
        ("lease_ttl", "90s"),
        ("tools", "off"),
        ("disabled_tools", "read_file,list_files"),
        ("schema_strategy", "Tool_Call"),
        ("store", "postgres://u:pw@db/aptix"),
    ]
    .iter()
    .map(|(key, value)| (env_var(key), (*value).to_owned()))
    .collect();
    assert_eq!(vars.len(), KEYS.len());
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let from_env = SettingsLayer::from_env(&env_of(&pairs)).unwrap();
    assert_eq!(from_file, from_env);
    assert_eq!(from_file.api, Some(ApiKind::Chat));
    let settings = Settings::of(from_file);
    assert_eq!(
        settings.schema_strategy(),
        Some(aptix_schema::Strategy::ToolCall)
    );
    let config = settings.orchestrator_config();
    assert!(config.stateless);
    assert_eq!(config.context_token_budget, 9);
    assert_eq!(config.lease_ttl, std::time::Duration::from_secs(90));
    assert_eq!(config.stream_recovery.max_attempts, 3);
    assert!(config.background);
    assert_eq!(config.context_window, Some(50_000));
    assert_eq!(config.compact_threshold, 0.5);
    assert_eq!(
        format!("{:?}", settings.configured().store),
        "Some(StoreUrl(\"postgres://u:***@db/aptix\"))",
        "Debug never shows the password"
    );
    // Nor a proxy's, in a base URL, where the whole layer is shown (logged at -vv).
    let layer = crate::SettingsLayer {
        base_url: Some("https://me:hunter2@proxy.example/v1".to_owned()),
        ..settings.configured().clone()
    };
    let shown = format!("{layer:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains("base_url: Some(\"https://me:***@proxy.example/v1\")"),
        "{shown}"
    );
    assert!(shown.contains("context_token_budget: Some(9)"), "{shown}");
    let client = settings
        .apply_client_settings(
            aptix_client::OpenAiConfig::builder().base_url("http://127.0.0.1:1/v1"),
        )
        .build()
        .unwrap();
    let timeouts = client.timeouts();
    assert_eq!(timeouts.request, Some(std::time::Duration::from_secs(120)));
    assert_eq!(
        timeouts.stream_idle,
        Some(std::time::Duration::from_secs(90))
    );
    assert_eq!(timeouts.connect, Some(std::time::Duration::from_secs(5)));
    assert_eq!(client.retry().max_retries, 4);
    assert!(
        config
            .modes
            .iter()
            .all(|mode| mode.system_prompt.as_deref() == Some("Be brief."))
    );
}

/// A table's help texts and flags, for the drift checks.
struct Described {
    serve: bool,
    help_texts: Vec<(&'static str, &'static str)>,
    flag: fn(&str) -> Option<String>,
}

fn tables() -> [Described; 2] {
    [
        Described {
            serve: false,
            help_texts: SettingsLayer::help_texts(),
            flag: SettingsLayer::flag,
        },
        Described {
            serve: true,
            help_texts: ServeLayer::help_texts(),
            flag: ServeLayer::flag,
        },
    ]
}

#[test]
fn every_flag_help_names_its_config_key_and_environment_variable() {
    for table in tables() {
        let keys = if table.serve { SERVE_KEYS } else { KEYS };
        assert_eq!(
            table
                .help_texts
                .iter()
                .map(|(key, _)| *key)
                .collect::<Vec<_>>(),
            keys
        );
        for (key, help) in table.help_texts {
            let help = help.replace('\n', " ").replace("  ", " ");
            assert!(help.contains(&format!("config: {key}")), "{key}: {help}");
            assert!(
                help.contains(&format!("env: {}", env_var(key))),
                "{key}: {help}"
            );
        }
    }
}

#[test]
fn the_cli_docs_list_every_key_its_variable_and_its_flag() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"))
            .unwrap();
    for table in tables() {
        for (key, _) in table.help_texts {
            assert!(
                docs.contains(&format!("`{key}`")),
                "docs/cli.md does not list `{key}`"
            );
            assert!(
                docs.contains(&env_var(key)),
                "docs/cli.md does not name {}",
                env_var(key)
            );
            let flag = (table.flag)(key).unwrap();
            assert!(docs.contains(&flag), "docs/cli.md does not show {flag}");
        }
    }
}

/// With the `clap` feature (the `aptix` command turns it on), each key's flag is the one
/// its errors name.
#[cfg(feature = "clap")]
#[test]
fn the_flags_clap_derives_are_the_ones_errors_name() {
    use clap::Args as _;
    for table in tables() {
        let command = if table.serve {
            ServeLayer::augment_args(clap::Command::new("t"))
        } else {
            SettingsLayer::augment_args(clap::Command::new("t"))
        };
        for (key, _) in table.help_texts {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_id() == key)
                .unwrap_or_else(|| panic!("no argument {key}"));
            assert_eq!(
                format!("--{}", arg.get_long().unwrap()),
                (table.flag)(key).unwrap(),
                "{key}"
            );
        }
    }
}

#[test]
fn a_workspace_file_cannot_open_the_service_to_other_machines() {
    // A cloned repository's aptix.toml that listens on every interface, with tokens its
    // author knows, would let anyone run turns on the user's key.
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home_text = home.path().to_string_lossy().into_owned();
    let env = move |name: &str| (name == "HOME").then(|| home_text.clone());
    write(
        dir.path(),
        "aptix.toml",
        "listen = \"0.0.0.0:8798\"\ntokens_file = \"repo_tokens.txt\"\n",
    );
    let text = ServeLayer::load(dir.path(), &ServeLayer::default(), &env)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("sets listen to 0.0.0.0:8798") && text.contains("loopback"),
        "{text}"
    );
    // The user's own flag for the address, with the folder's tokens: still refused.
    let flags = ServeLayer {
        listen: Some("0.0.0.0:8798".parse().unwrap()),
        ..ServeLayer::default()
    };
    let text = ServeLayer::load(dir.path(), &flags, &env)
        .unwrap_err()
        .to_string();
    assert!(text.contains("sets tokens_file to"), "{text}");
    // Both the user's: served.
    let flags = ServeLayer {
        tokens_file: Some(dir.path().join("mine.txt")),
        ..flags
    };
    let layer = ServeLayer::load(dir.path(), &flags, &env).unwrap();
    assert_eq!(layer.listen, Some("0.0.0.0:8798".parse().unwrap()));
    // In the user's config file too; and a loopback address the folder may choose.
    write(
        home.path(),
        ".config/aptix/config.toml",
        "listen = \"0.0.0.0:8798\"\ntokens_file = \"/etc/aptix/tokens\"\n",
    );
    write(dir.path(), "aptix.toml", "max_concurrent_turns = 4\n");
    assert!(ServeLayer::load(dir.path(), &ServeLayer::default(), &env).is_ok());
    write(
        dir.path(),
        "aptix.toml",
        "listen = \"127.0.0.1:8798\"\ntokens_file = \"repo_tokens.txt\"\n",
    );
    let layer = ServeLayer::load(dir.path(), &ServeLayer::default(), &env).unwrap();
    assert_eq!(layer.listen, Some("127.0.0.1:8798".parse().unwrap()));
}

#[test]
fn serve_settings_layer_flags_over_env_over_the_workspace_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "aptix.toml",
        "model = \"m\"\nlisten = \"127.0.0.1:9000\"\ntokens_file = \"secrets/tokens\"\nmax_concurrent_turns = 8\nbody_limit = 2048\nturn_timeout = \"2m\"\nshutdown_grace = 5\nheader_timeout = \"10s\"\nbody_timeout = \"1m\"\n",
    );
    // The shared layer accepts the file (serve keys are known keys) and ignores them.
    let layer = from_file(&dir.path().join("aptix.toml")).unwrap().unwrap();
    assert_eq!(layer.model.as_deref(), Some("m"));

    let none = |_: &str| None;
    let from_file = ServeLayer::load(dir.path(), &ServeLayer::default(), &none).unwrap();
    assert_eq!(from_file.listen, Some("127.0.0.1:9000".parse().unwrap()));
    assert_eq!(
        from_file.tokens_file,
        Some(dir.path().join("secrets/tokens")),
        "relative to the file that names it"
    );
    assert_eq!(from_file.max_concurrent_turns, Some(8));
    assert_eq!(from_file.body_limit, Some(ByteSize(2048)));
    assert_eq!(
        from_file.turn_timeout,
        Some(HumanDuration(std::time::Duration::from_secs(120)))
    );
    assert_eq!(
        from_file.shutdown_grace,
        Some(HumanDuration(std::time::Duration::from_secs(5)))
    );
    assert_eq!(
        from_file.header_timeout,
        Some(HumanDuration(std::time::Duration::from_secs(10)))
    );
    assert_eq!(
        from_file.body_timeout,
        Some(HumanDuration(std::time::Duration::from_secs(60)))
    );

    let env = env_of(&[
        ("APTIX_LISTEN", "127.0.0.1:9001"),
        ("APTIX_BODY_LIMIT", "4096"),
        ("APTIX_HEADER_TIMEOUT", "3s"),
    ]);
    let flags = ServeLayer {
        listen: Some("127.0.0.1:9002".parse().unwrap()),
        ..ServeLayer::default()
    };
    let layered = ServeLayer::load(dir.path(), &flags, &env).unwrap();
    assert_eq!(layered.listen, Some("127.0.0.1:9002".parse().unwrap()));
    assert_eq!(layered.body_limit, Some(ByteSize(4096)));
    assert_eq!(layered.max_concurrent_turns, Some(8));
    assert_eq!(
        layered.header_timeout,
        Some(HumanDuration(std::time::Duration::from_secs(3)))
    );

    let env = env_of(&[("APTIX_MAX_CONCURRENT_TURNS", "many")]);
    let text = ServeLayer::load(dir.path(), &ServeLayer::default(), &env)
        .unwrap_err()
        .to_string();
    assert!(text.contains("APTIX_MAX_CONCURRENT_TURNS"), "{text}");

    write(dir.path(), "aptix.toml", "listen = \"not an address\"\n");
    let text = ServeLayer::load(dir.path(), &ServeLayer::default(), &none)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("`listen`") && text.contains("aptix.toml"),
        "{text}"
    );
    write(dir.path(), "aptix.toml", "listn = \"127.0.0.1:1\"\n");
    let text = ServeLayer::load(dir.path(), &ServeLayer::default(), &none)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("unknown key `listn`") && text.contains("listen"),
        "{text}"
    );
}

#[test]
fn misspelt_variables_are_named_with_the_one_meant_and_others_left_alone() {
    let names = [
        "APTIX_MODLE",
        "APTIX_TEMPERATUR",
        "APTIX_MCP_TOOL_TIMOUT",
        "APTIX_WORKSPCE",
        "APTIX_MAX_CONCURENT_TURNS",
        "APTIX_LOG_FROMAT",
        "APTIX_TOKENS",
        "APTIX_CONCURRENT_TURNS",
        // Known, or another tool's: nothing to say.
        "APTIX_URL",
        "APTIX_TOKEN",
        "APTIX_LOG",
        "APTIX_FILE",
        "APTIX_TIMEOUT",
        "APTIX_MODEL",
        "APTIX_STORE_URL",
        "APTIX_SERVE_TOKENS",
        "APTIX_WORKSPACE",
        "APTIX_MCP_TOOL_TIMEOUT",
        "APTIX_MCP_STARTUP_TIMEOUT",
        "APTIX_PG_BIN",
        "APTIX_BIN",
        "APTIX_DIR",
        "APTIX_BENCH_ROUNDS",
        "APTIX_BENCH_ONLY",
        "APTIX_BENCH_TREE",
        "APTIX_BENCH_UNPAIRED",
        "APTIX_BENCH_BREAKDOWN",
        "APTIX_BENCH_POSTGRES_URL",
        "APTIX_TEST_POSTGRES_URL",
        "APTIX_ACP_PYTHON",
        "APTIX_IGNORE_FILE",
        "OPENAI_MODLE",
        "PATH",
    ];
    let found = crate::misspelt_variables(names);
    let found: Vec<(&str, &str)> = found
        .iter()
        .map(|(name, meant)| (*name, meant.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("APTIX_MODLE", "APTIX_MODEL"),
            ("APTIX_TEMPERATUR", "APTIX_TEMPERATURE"),
            ("APTIX_MCP_TOOL_TIMOUT", "APTIX_MCP_TOOL_TIMEOUT"),
            ("APTIX_WORKSPCE", "APTIX_WORKSPACE"),
            ("APTIX_MAX_CONCURENT_TURNS", "APTIX_MAX_CONCURRENT_TURNS"),
            ("APTIX_LOG_FROMAT", "APTIX_LOG_FORMAT"),
            ("APTIX_TOKENS", "APTIX_SERVE_TOKENS or APTIX_TOKENS_FILE"),
            ("APTIX_CONCURRENT_TURNS", "APTIX_MAX_CONCURRENT_TURNS"),
        ]
    );
}
