//! `aptix ask --file`, `--image` and `--scope`, seen in the dry-run body: the text file
//! travels as context with its workspace path, the image as an inline input image, and
//! the scope keeps retrieved chunks to what it names.

use serde_json::Value;

use crate::support::{Sandbox, code, stderr, stdout, stdout_json};

#[test]
fn files_images_and_scope_reach_the_body() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("notes/plan.md", "The plan: rename the fold.\n");
    // A Latin-1 byte in a text file: sent as text, the byte as U+FFFD (as the index and
    // read_file read it), not refused as binary.
    std::fs::write(
        sandbox.workspace.path().join("notes/legacy.txt"),
        b"Caf\xe9 pricing rules\n",
    )
    .unwrap();
    sandbox.write_workspace_file(
        "src/fold.rs",
        "pub fn fold_events() -> usize { 1 }\n// the fold of events\n",
    );
    sandbox.write_workspace_file(
        "docs/fold.md",
        "# The fold\nThe fold of events is described here.\n",
    );
    let image = sandbox.workspace.path().join("shot.png");
    std::fs::write(&image, [0x89, b'P', b'N', b'G', 0, 1, 2, 3]).unwrap();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .args(["--file", "notes/plan.md", "--image", "shot.png"])
        .args(["--file", "notes/legacy.txt"])
        .args(["--scope", "path contains src/"])
        .arg("How does the fold of events work?")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let body = stdout_json(&output);
    let text = body.to_string();
    assert!(text.contains("notes/plan.md"), "the file's path is shown");
    assert!(
        text.contains("The plan: rename the fold."),
        "the file's content is sent"
    );
    assert!(text.contains("Caf\u{fffd} pricing rules"), "{text}");
    assert!(
        text.contains("src/fold.rs"),
        "retrieval still runs within the scope"
    );
    assert!(
        !text.contains("docs/fold.md"),
        "a chunk outside the scope was sent"
    );
    let images: Vec<&Value> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter(|part| part["type"] == "input_image")
        .collect();
    assert_eq!(images.len(), 1, "{body:#}");
    // `detail` is among the spec's required members of an input image.
    assert_eq!(images[0]["detail"], "auto", "{}", images[0]);
    assert!(
        images[0]["image_url"]
            .as_str()
            .is_some_and(|url| url.starts_with("data:image/png;base64,iVBORw")),
        "{}",
        images[0]
    );
}

#[test]
fn bad_attachments_and_scopes_are_usage_errors_naming_the_flag() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.workspace.path().join("blob.bin"),
        [0xff, 0xfe, 0x00],
    )
    .unwrap();
    std::fs::write(sandbox.workspace.path().join("fake.png"), "not an image\n").unwrap();
    // A PNG too large to send: 16 MiB of image after its signature.
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(16 * 1024 * 1024, 0);
    std::fs::write(sandbox.workspace.path().join("big.png"), big).unwrap();
    let looped = sandbox.workspace.path().join("loop.md");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    for (args, expected) in [
        (
            vec!["--image", "big.png"],
            "--image big.png is 16.0 MiB; an image may be at most 15 MiB",
        ),
        // A link to itself does not "name no file": the system's reason is given.
        (vec!["--file", "loop.md"], "symbolic links"),
        (vec!["--file", "missing.md"], "--file missing.md"),
        (vec!["--file", "blob.bin"], "is not text (a binary file)"),
        (vec!["--image", "blob.bin"], "--image blob.bin"),
        // Named as an image, holding text: refused here rather than by the API.
        (
            vec!["--image", "fake.png"],
            "does not hold a PNG, JPEG, GIF or WebP image",
        ),
        (vec!["--scope", "path resembles src"], "--scope"),
        // A mistyped key or kind: the context would widen, or empty, without a word.
        (
            vec!["--scope", "pth contains x"],
            "scope key \"pth\" is not known",
        ),
        (
            vec!["--scope", "kind == sauce"],
            "sauce is not a file kind (kinds: source, test",
        ),
    ] {
        let output = sandbox
            .aptix()
            .args([
                "ask",
                "--dry-run",
                "--no-tools",
                "--workspace",
                &sandbox.workspace_arg(),
            ])
            .args(&args)
            .arg("question")
            .output()
            .unwrap();
        // Exit 2, as any bad flag value: a missing file is the caller's mistake too.
        assert_eq!(code(&output), 2, "{args:?}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn an_instruction_on_stdin_that_is_not_text_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--workspace",
            &sandbox.workspace_arg(),
            "-",
        ])
        .write_stdin(vec![0xff, 0xfe, b'x'])
        .output()
        .unwrap();
    // Exit 2, as the same bytes in an argument are: the caller's mistake.
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stderr(&output).contains("not UTF-8"), "{}", stderr(&output));
}

#[test]
fn attachments_and_the_question_carry_no_secrets() {
    // A secret-named file is refused, as the index and the tools refuse it; another
    // file's credential-shaped text is redacted as they redact it; the API key itself,
    // pasted into the question or a file, is taken out of both.
    let sandbox = Sandbox::new();
    let key = crate::support::SECRET_KEY;
    sandbox.write_workspace_file(".env.local", &format!("OPENAI_API_KEY={key}\n"));
    sandbox.write_workspace_file(
        "src/settings.rs",
        &format!(
            "const KEY: &str = \"{key}\";\nconst GH: &str = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\";\n"
        ),
    );
    let dry_run = |args: &[&str]| {
        sandbox
            .aptix()
            .env("OPENAI_API_KEY", key)
            .args([
                "ask",
                "--dry-run",
                "--no-tools",
                "--workspace",
                &sandbox.workspace_arg(),
            ])
            .args(args)
            .output()
            .unwrap()
    };
    let refused = dry_run(&["--file", ".env.local", "what is in this file?"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("may hold secrets"),
        "{}",
        stderr(&refused)
    );
    assert!(!stderr(&refused).contains(key), "{}", stderr(&refused));

    let sent = dry_run(&[
        "--file",
        "src/settings.rs",
        &format!("why does my key {key} get 401?"),
    ]);
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    let body = stdout(&sent);
    assert!(!body.contains(key), "{body}");
    assert!(
        !body.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        "{body}"
    );
    assert!(
        body.contains("why does my key [redacted] get 401?"),
        "{body}"
    );
    assert!(
        body.contains("const GH: &str"),
        "the rest of the file is sent: {body}"
    );
}

#[test]
fn the_default_dry_run_offers_the_built_in_tools_with_their_usage_block() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--workspace", &sandbox.workspace_arg()])
        .arg("What does answer return?")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let body = stdout_json(&output);
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools are offered by default")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["search_code", "read_file", "list_files"]);
    let system = body["input"][0]["content"].to_string();
    for name in names {
        assert!(
            system.contains(name),
            "the usage block does not explain {name}"
        );
    }

    let without = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-tools",
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .arg("What does answer return?")
        .output()
        .unwrap();
    assert!(stdout_json(&without).get("tools").is_none());
}

#[test]
fn a_placeholder_key_rewrites_nothing_sent_or_shown() {
    // Local servers take any key (`ollama`, `x`): redacted as if secret, it rewrote the
    // question ("Which runtime is [redacted]?") and the body's own words (`te[redacted]t`).
    let sandbox = Sandbox::new();
    for key in ["ollama", "x"] {
        let output = sandbox
            .aptix()
            .env("OPENAI_API_KEY", key)
            .args([
                "ask",
                "--dry-run",
                "--no-tools",
                "--workspace",
                &sandbox.workspace_arg(),
            ])
            .arg("Which runtime is ollama?")
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let text = stdout(&output);
        assert!(text.contains("Which runtime is ollama?"), "{key}: {text}");
        assert!(!text.contains("[redacted]"), "{key}: {text}");
    }
}
