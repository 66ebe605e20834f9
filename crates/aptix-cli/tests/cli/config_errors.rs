//! Configuration mistakes end with exit code 2 and a message that says what to change:
//! a missing key, an unknown config key, a bad flag value.

use crate::support::{Sandbox, code, stderr, stdout};

/// `ask --dry-run` of "hi" in the sandbox's workspace: runs the whole configuration
/// without a key or a network.
fn dry_run_args(sandbox: &Sandbox) -> [String; 5] {
    [
        "ask",
        "--dry-run",
        "--workspace",
        &sandbox.workspace_arg(),
        "hi",
    ]
    .map(str::to_owned)
}

#[test]
fn with_json_logs_the_closing_error_is_a_json_record_too() {
    // A collector reading stderr of `--log-format json` finds only JSON lines, the
    // error the command ends with among them.
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["--log-format", "json", "ask"])
        .args(["--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let records: Vec<serde_json::Value> = stderr(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let error = records
        .iter()
        .find(|record| record["level"] == "ERROR")
        .unwrap_or_else(|| panic!("{records:?}"));
    assert_eq!(error["target"], "aptix");
    assert!(
        error["fields"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("no api key for")),
        "{error}"
    );
}

#[test]
fn a_missing_key_says_how_to_set_one_and_exits_2() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["ask", "--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let text = stderr(&output);
    for hint in [
        "no api key for https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "--base-url",
        "aptix.toml",
        ".config/aptix/config.toml",
        "--dry-run",
    ] {
        assert!(text.contains(hint), "missing {hint:?} in:\n{text}");
    }
    assert!(output.stdout.is_empty());
    assert!(
        !sandbox.workspace.path().join(".aptix").exists(),
        "nothing is created before the provider is set up"
    );
}

#[test]
fn a_key_pasted_with_a_line_break_is_named_as_unusable_not_missing() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", "sk-proj-SECRETKEY-zz9876abcd\n")
        .args(["ask", "--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("OPENAI_API_KEY is not usable"), "{text}");
    assert!(text.contains("line break"), "{text}");
    assert!(!text.contains("no api key"), "{text}");
    assert!(!text.contains("SECRETKEY"), "{text}");
}

#[test]
fn a_hosted_base_url_without_a_key_is_refused_too() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env(
            "OPENAI_BASE_URL",
            "https://example.openai.azure.com/openai/v1",
        )
        .args(["ask", "--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("OPENAI_API_KEY"));
}

#[test]
fn an_unknown_config_key_names_the_key_and_the_file() {
    let sandbox = Sandbox::new();
    let path = sandbox.write_workspace_file("aptix.toml", "modle = \"gpt-test\"\n");
    let output = sandbox
        .aptix()
        .args(dry_run_args(&sandbox))
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    let text = stderr(&output);
    assert!(text.contains("unknown key `modle`"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");

    let path = sandbox.write_user_config("api_key = \"sk-in-a-file\"\n");
    sandbox.write_workspace_file("aptix.toml", "");
    let output = sandbox
        .aptix()
        .args(dry_run_args(&sandbox))
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    let text = stderr(&output);
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("sk-in-a-file"), "{text}");
}

#[test]
fn a_config_file_that_does_not_read_is_a_usage_error_naming_it() {
    // Not UTF-8, a folder, a link to nothing: each the person's to fix, as a file
    // that does not parse is (exit 2), and none of them passed over in silence.
    let sandbox = Sandbox::new();
    let file = sandbox.workspace.path().join("aptix.toml");
    let run = || {
        let output = sandbox
            .aptix()
            .args(dry_run_args(&sandbox))
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        stderr(&output)
    };
    std::fs::write(&file, b"model = \"caf\xe9\"\n").unwrap();
    let text = run();
    assert!(text.contains("is not UTF-8 text"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let text = run();
    assert!(text.contains("cannot be read"), "{text}");
    std::fs::remove_dir(&file).unwrap();
    std::os::unix::fs::symlink(sandbox.workspace.path().join("gone.toml"), &file).unwrap();
    let text = run();
    assert!(text.contains("a symbolic link to nothing"), "{text}");
}

#[test]
fn a_misspelt_variable_is_warned_of_with_the_one_meant() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("APTIX_MODLE", "gpt-typo")
        .env("APTIX_BENCH_ROUNDS", "3")
        .args(dry_run_args(&sandbox))
        .output()
        .unwrap();
    // A warning, not an error: the dry run still runs, on the default model.
    assert_eq!(code(&output), 0);
    let text = stderr(&output);
    assert!(
        text.contains(
            "warning: APTIX_MODLE is not an Aptix variable and is ignored; did you mean APTIX_MODEL?"
        ),
        "{text}"
    );
    assert!(!text.contains("APTIX_BENCH_ROUNDS"), "{text}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("gpt-typo"));
}

#[test]
fn bad_values_name_their_flag_or_variable() {
    let sandbox = Sandbox::new();
    let run = |extra: &[&str], env: Option<(&str, &str)>| {
        let mut command = sandbox.aptix();
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        command
            .args(["ask", "--dry-run", "--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg("hi")
            .output()
            .unwrap()
    };
    let output = run(&["--mode", "poetry"], None);
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("--mode"), "{}", stderr(&output));

    let output = run(&[], Some(("APTIX_TEMPERATURE", "9")));
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("APTIX_TEMPERATURE"));

    let output = run(&["--api", "grpc"], None);
    assert_eq!(code(&output), 2, "clap's usage errors exit with 2 as well");
}

#[test]
fn max_output_tokens_below_the_api_minimum_is_refused_with_the_builders_message() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--max-output-tokens",
            "15",
            "--workspace",
            &sandbox.workspace_arg(),
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("--max-output-tokens"), "{text}");
    // The exact text of RequestError::MaxOutputTokensTooSmall: one rule, one message.
    let builder_message = aptix_request::RequestError::MaxOutputTokensTooSmall {
        value: 15,
        minimum: aptix_request::MIN_MAX_OUTPUT_TOKENS,
    }
    .to_string();
    assert!(text.contains(&builder_message), "{text}");
    assert!(output.stdout.is_empty(), "nothing is built or printed");

    let output = sandbox
        .aptix()
        .env("APTIX_MAX_OUTPUT_TOKENS", "16")
        .args(dry_run_args(&sandbox))
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "16 is the minimum: {}", stderr(&output));
}

#[test]
fn an_unreachable_postgres_store_is_named_without_its_password_at_any_verbosity() {
    let sandbox = Sandbox::new();
    for (flag_or_env, verbosity) in [(true, "-vvv"), (false, "-v")] {
        let mut command = sandbox.aptix();
        command
            .env("OPENAI_API_KEY", "sk-test-key-never-printed")
            .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
            .env("RUST_LOG", "trace");
        let url = "postgres://aptix:hunter2-db-password@127.0.0.1:1/aptix?connect_timeout=2";
        if flag_or_env {
            command.args(["ask", "--store", url]);
        } else {
            command.env("APTIX_STORE_URL", url).arg("ask");
        }
        let output = command
            .args([verbosity, "--workspace", &sandbox.workspace_arg(), "hello"])
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_ne!(code(&output), 0, "{text}");
        assert!(
            text.contains("postgres://aptix:***@127.0.0.1:1/aptix"),
            "the store is named: {text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!String::from_utf8_lossy(&output.stdout).contains("hunter2"));
    }
    // The password from PGPASSWORD, for a URL without one, is as secret at trace level.
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", "sk-test-key-never-printed")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .env("RUST_LOG", "trace")
        .env("PGPASSWORD", "pgpassword-never-printed")
        .args([
            "ask",
            "--store",
            "postgres://aptix@127.0.0.1:1/aptix?connect_timeout=2",
        ])
        .args(["-vvv", "--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_ne!(code(&output), 0, "{text}");
    assert!(
        text.contains("postgres://aptix@127.0.0.1:1/aptix"),
        "{text}"
    );
    assert!(!text.contains("pgpassword-never-printed"), "{text}");
}

#[test]
fn a_store_url_of_an_unknown_kind_is_a_usage_error_naming_the_scheme() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .args(["ask", "--store", "mysql://root:hunter2@db/aptix"])
        .args(["--workspace", &sandbox.workspace_arg(), "hello"])
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_eq!(code(&output), 2, "{text}");
    assert!(text.contains("unsupported scheme `mysql`"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn completions_cover_every_command_for_each_shell_and_an_unknown_shell_is_usage() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = sandbox
            .aptix()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        for word in [
            "ask",
            "sessions",
            "serve",
            "acp",
            "body-limit",
            "max-concurrent-turns",
        ] {
            assert!(script.contains(word), "{shell} completes no {word}");
        }
    }
    let output = sandbox
        .aptix()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("bash"), "{}", stderr(&output));
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let sandbox = Sandbox::new();
    let output = sandbox.aptix().arg("--version").output().unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let version = stdout(&output);
    let expected = concat!("aptix ", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(expected), "{version}");
    // Built from a git checkout (as every test run is, but a source archive's), the
    // commit follows, abbreviated as `git log` abbreviates it, with its date.
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    match head {
        // A packager names the commit of an archive build (APTIX_BUILD_COMMIT).
        _ if let Some(named) = option_env!("APTIX_BUILD_COMMIT") => {
            assert!(version.contains(named.trim()), "{version:?}");
        }
        Some(head) => {
            let commit = version[expected.len()..]
                .trim()
                .strip_prefix('(')
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("no commit in {version:?}"));
            assert!(
                commit.len() >= 7 && head.starts_with(commit),
                "{version:?} does not name HEAD {head}"
            );
        }
        None => assert_eq!(version.trim(), expected),
    }
}
