//! The built-in tools against a real workspace: what they return, and every refusal
//! (traversal, absolute paths, links out, huge, binary, secret and ignored files, bad
//! arguments) as a tool error the model can act on.

use std::sync::Arc;

use aptix_index::{IndexConfig, NoProgress, WorkspaceFiles, WorkspaceIndex};
use aptix_orchestrator::ServerTool;
use aptix_tools::{
    DiskReader, ListFiles, ReadFile, SearchCode, TOOL_NAMES, Workspace, builtin_tools,
};
use serde_json::Value;

struct Fixture {
    dir: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let fixture = Fixture {
            dir: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        fixture.write(".aptixignore", "private/\n");
        fixture.write(".gitignore", "*.log\n");
        fixture.write(
            "crates/http/src/lib.rs",
            "/// Parses the status line.\npub fn parse_status_line(line: &str) -> Option<u16> {\n    line.get(9..12)?.parse().ok()\n}\n",
        );
        fixture.write(
            "docs/guide.md",
            "# Guide\n\nparse_status_line is documented here.\n",
        );
        fixture.write("private/notes.txt", "not for the model\n");
        fixture.write("debug.log", "noise\n");
        fixture.write("config/server.pem", "-----BEGIN PRIVATE KEY-----\n");
        fixture.write("credentials.json", "{}\n");
        std::fs::write(fixture.outside.path().join("secret.txt"), "outside\n").unwrap();
        std::fs::write(fixture.dir.path().join("image.bin"), b"PNG\0\x01\x02").unwrap();
        std::fs::write(fixture.dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        fixture
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn workspace(&self) -> Workspace {
        Workspace::new(WorkspaceFiles::new(self.dir.path(), IndexConfig::default()).unwrap())
    }

    fn read_file(&self) -> ReadFile {
        ReadFile::new(self.workspace(), Arc::new(DiskReader))
    }

    fn list_files(&self) -> ListFiles {
        ListFiles::new(self.workspace())
    }
}

async fn read(fixture: &Fixture, args: &str) -> Result<Value, String> {
    fixture
        .read_file()
        .execute(args)
        .await
        .map(|text| serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn read_file_returns_numbered_lines_of_a_range() {
    let fixture = Fixture::new();
    let value = read(
        &fixture,
        r#"{"path":"crates/http/src/lib.rs","start_line":2,"end_line":3}"#,
    )
    .await
    .unwrap();
    assert_eq!(value["path"], "crates/http/src/lib.rs");
    assert_eq!(value["start_line"], 2);
    assert_eq!(value["end_line"], 3);
    assert_eq!(value["total_lines"], 4);
    assert_eq!(
        value["content"],
        "2| pub fn parse_status_line(line: &str) -> Option<u16> {\n3|     line.get(9..12)?.parse().ok()\n"
    );
    let whole = read(&fixture, r#"{"path":"./crates/http/src/lib.rs"}"#)
        .await
        .unwrap();
    assert_eq!(whole["end_line"], 4);
    assert!(whole.get("note").is_none());
}

#[tokio::test]
async fn read_file_refuses_traversal_and_absolute_paths() {
    let fixture = Fixture::new();
    for path in [
        "../secret.txt",
        "crates/../../secret.txt",
        "crates/..",
        "/etc/passwd",
        "~/secret.txt",
        "C:/Windows/win.ini",
        "..\\secret.txt",
    ] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(error.contains("outside the workspace"), "{path}: {error}");
    }
    let outside = fixture.outside.path().join("secret.txt");
    let args = serde_json::json!({ "path": outside }).to_string();
    let error = read(&fixture, &args).await.unwrap_err();
    assert!(error.contains("outside the workspace"), "{error}");
    // An absolute path inside the workspace is that file (a model repeats the absolute
    // locations an editor is shown), under the same rules; `..` still may not leave.
    let inside = fixture.dir.path().join("crates/http/src/lib.rs");
    let args = serde_json::json!({ "path": inside }).to_string();
    let value = read(&fixture, &args).await.unwrap();
    assert_eq!(value["path"], "crates/http/src/lib.rs");
    for path in [
        format!("{}/../secret.txt", fixture.dir.path().display()),
        format!("{}/credentials.json", fixture.dir.path().display()),
        format!("{}2/x.rs", fixture.dir.path().display()),
    ] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(
            error.contains("outside the workspace") || error.contains("secrets"),
            "{path}: {error}"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn read_file_refuses_links_that_resolve_outside_or_to_secrets() {
    let fixture = Fixture::new();
    let root = fixture.dir.path();
    std::os::unix::fs::symlink(
        fixture.outside.path().join("secret.txt"),
        root.join("escape.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(fixture.outside.path(), root.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(root.join("credentials.json"), root.join("innocent.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("missing"), root.join("dangling.txt")).unwrap();
    std::os::unix::fs::symlink(root.join("docs/guide.md"), root.join("guide-link.md")).unwrap();
    for path in ["escape.txt", "elsewhere/secret.txt", "dangling.txt"] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(error.contains("outside the workspace"), "{path}: {error}");
    }
    let error = read(&fixture, r#"{"path":"innocent.txt"}"#)
        .await
        .unwrap_err();
    assert!(error.contains("secrets"), "{error}");
    // A link that stays inside and points at a readable file is fine.
    let value = read(&fixture, r#"{"path":"guide-link.md"}"#).await.unwrap();
    assert_eq!(value["total_lines"], 3);
}

#[tokio::test]
async fn read_file_refuses_secret_ignored_binary_and_missing_files() {
    let fixture = Fixture::new();
    fixture.write(".env", "TOKEN=1\n");
    fixture.write("deploy/id_rsa", "key\n");
    fixture.write(".npmrc", "//registry:_authToken=x\n");
    fixture.write("target/debug/out.rs", "fn built() {}\n");
    for path in ["config/server.pem", "credentials.json", "deploy/id_rsa"] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(error.contains("may hold secrets"), "{path}: {error}");
    }
    for path in [".env", ".npmrc"] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(error.contains("may hold secrets"), "{path}: {error}");
    }
    for path in [
        "private/notes.txt",
        "debug.log",
        ".aptixignore",
        "target/debug/out.rs",
    ] {
        let args = serde_json::json!({ "path": path }).to_string();
        let error = read(&fixture, &args).await.unwrap_err();
        assert!(error.contains("ignored"), "{path}: {error}");
    }
    let error = read(&fixture, r#"{"path":"image.bin"}"#).await.unwrap_err();
    assert!(error.contains("binary file"), "{error}");
    // A stray Latin-1 byte is text with one character unknown, as the index reads it:
    // retrieval serves such a file, so the model can read further into it.
    let latin1 = read(&fixture, r#"{"path":"latin1.txt"}"#).await.unwrap();
    assert!(
        latin1["content"].as_str().unwrap().contains("caf\u{fffd}"),
        "{latin1}"
    );
    let error = read(&fixture, r#"{"path":"src/nothing.rs"}"#)
        .await
        .unwrap_err();
    assert!(error.contains("no such file"), "{error}");
    let error = read(&fixture, r#"{"path":"crates"}"#).await.unwrap_err();
    assert!(error.contains("use list_files"), "{error}");
    // A named pipe is refused, not opened: opening one waits for a writer forever.
    let made = std::process::Command::new("mkfifo")
        .arg(fixture.dir.path().join("pipe.py"))
        .status()
        .unwrap();
    assert!(made.success());
    let error = read(&fixture, r#"{"path":"pipe.py"}"#).await.unwrap_err();
    assert!(error.contains("not a regular file"), "{error}");
}

#[tokio::test]
async fn read_file_reads_a_huge_file_in_ranges_with_a_note() {
    let fixture = Fixture::new();
    let text: String = (1..=5000).map(|n| format!("line number {n}\n")).collect();
    fixture.write("big.txt", &text);
    let value = read(&fixture, r#"{"path":"big.txt"}"#).await.unwrap();
    assert_eq!(value["start_line"], 1);
    assert_eq!(value["end_line"], 400);
    assert_eq!(value["total_lines"], 5000);
    let note = value["note"].as_str().unwrap();
    assert!(note.contains("start_line 401"), "{note}");
    let value = read(&fixture, r#"{"path":"big.txt","start_line":4990}"#)
        .await
        .unwrap();
    assert_eq!(value["end_line"], 5000);
    assert!(
        value["content"]
            .as_str()
            .unwrap()
            .starts_with("4990| line number 4990\n")
    );

    // Long lines: the byte cap cuts first.
    let wide: String = (1..=100)
        .map(|n| format!("{n} {}\n", "x".repeat(2000)))
        .collect();
    fixture.write("wide.txt", &wide);
    let value = read(&fixture, r#"{"path":"wide.txt"}"#).await.unwrap();
    assert!(value["end_line"].as_u64().unwrap() < 100);
    assert!(value["content"].as_str().unwrap().len() <= 64 * 1024);
    assert!(value["note"].as_str().unwrap().contains("64 KiB"));

    // One line longer than a call (a one-line JSON fixture, minified code): its start,
    // said to be cut, and the way on; not nothing, which a model asks for again.
    // Three-byte characters, so that the cut falls inside one and must step back.
    let one_line = format!("{{\"data\": \"{}\"}}\n", "€".repeat(45 * 1024));
    fixture.write("fixture.json", &format!("{one_line}second\n"));
    let value = read(&fixture, r#"{"path":"fixture.json"}"#).await.unwrap();
    let content = value["content"].as_str().unwrap();
    assert!(content.starts_with("1| {\"data\": \"€€€"), "{content:.40}");
    assert!(content.len() <= 64 * 1024, "{}", content.len());
    assert_eq!(value["end_line"], 1);
    let note = value["note"].as_str().unwrap();
    assert!(note.contains("line 1 is 136 KiB long"), "{note}");
    assert!(note.contains("start_line 2"), "{note}");
    let value = read(&fixture, r#"{"path":"fixture.json","start_line":2}"#)
        .await
        .unwrap();
    assert_eq!(value["content"], "2| second\n");
}

#[tokio::test]
async fn read_file_explains_bad_arguments() {
    let fixture = Fixture::new();
    for (args, expected) in [
        ("not json", "invalid arguments"),
        ("{}", "missing field `path`"),
        (
            r#"{"path":"docs/guide.md","start_line":0}"#,
            "counts from 1",
        ),
        (
            r#"{"path":"docs/guide.md","start_line":3,"end_line":2}"#,
            "before start_line",
        ),
        (
            r#"{"path":"docs/guide.md","start_line":99}"#,
            "past the end",
        ),
        (r#"{"path":"docs/guide.md","lines":"1-2"}"#, "unknown field"),
        (r#"{"path":7}"#, "invalid type"),
    ] {
        let error = read(&fixture, args).await.unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[tokio::test]
async fn list_files_lists_a_folder_under_the_rules() {
    let fixture = Fixture::new();
    let tool = fixture.list_files();
    let value: Value = serde_json::from_str(&tool.execute("{}").await.unwrap()).unwrap();
    let files: Vec<&str> = value["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"crates/http/src/lib.rs"), "{files:?}");
    assert!(files.contains(&"docs/guide.md"), "{files:?}");
    for hidden in [
        "private/notes.txt",
        "debug.log",
        "config/server.pem",
        "credentials.json",
        ".aptixignore",
    ] {
        assert!(!files.contains(&hidden), "{hidden} listed: {files:?}");
    }
    let value: Value = serde_json::from_str(
        &tool
            .execute(r#"{"path":"crates","glob":"*.rs"}"#)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        value["files"],
        serde_json::json!(["crates/http/src/lib.rs"])
    );
    let value: Value =
        serde_json::from_str(&tool.execute(r#"{"glob":"*.md","limit":1}"#).await.unwrap()).unwrap();
    assert_eq!(value["files"].as_array().unwrap().len(), 1);
    assert_eq!(value["truncated"], false);
    let value: Value =
        serde_json::from_str(&tool.execute(r#"{"limit":1}"#).await.unwrap()).unwrap();
    assert_eq!(value["truncated"], true);
    assert!(value["note"].as_str().unwrap().contains("limit of 1"));
}

#[tokio::test]
async fn list_files_refuses_escapes_and_bad_arguments() {
    let fixture = Fixture::new();
    let tool = fixture.list_files();
    for (args, expected) in [
        (r#"{"path":".."}"#, "outside the workspace"),
        (r#"{"path":"/"}"#, "outside the workspace"),
        (r#"{"path":"private"}"#, "ignored"),
        (r#"{"path":"docs/guide.md"}"#, "use read_file"),
        (r#"{"path":"nowhere"}"#, "no such file"),
        (r#"{"glob":"[unclosed"}"#, "glob"),
        (r#"{"limit":0}"#, "limit must be"),
        (r#"{"limit":100000}"#, "limit must be"),
        (r#"{"folder":"docs"}"#, "unknown field"),
    ] {
        let error = tool.execute(args).await.unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[tokio::test]
async fn search_code_finds_chunks_within_a_scope() {
    let fixture = Fixture::new();
    let index = WorkspaceIndex::open(fixture.dir.path(), IndexConfig::default()).unwrap();
    index.refresh(&NoProgress).unwrap();
    let tool = SearchCode::new(index);
    let value: Value = serde_json::from_str(
        &tool
            .execute(r#"{"query":"parse_status_line"}"#)
            .await
            .unwrap(),
    )
    .unwrap();
    let paths: Vec<&str> = value["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"crates/http/src/lib.rs"), "{paths:?}");
    assert!(paths.contains(&"docs/guide.md"), "{paths:?}");
    let value: Value = serde_json::from_str(
        &tool
            .execute(r#"{"query":"parse_status_line","scope":["path contains crates/"],"limit":3}"#)
            .await
            .unwrap(),
    )
    .unwrap();
    let hits = value["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["path"].as_str().unwrap().starts_with("crates/")),
        "{hits:?}"
    );
    assert_eq!(hits[0]["start_line"], 1);
    assert!(
        hits[0]["text"]
            .as_str()
            .unwrap()
            .contains("pub fn parse_status_line")
    );
    // One condition written as a string, and `null` for none, as models often send
    // them: read as a list of one, and as none.
    for args in [
        r#"{"query":"parse_status_line","scope":"path contains crates/","limit":3}"#,
        r#"{"query":"parse_status_line","scope":["path contains crates/"],"limit":3}"#,
    ] {
        let value: Value = serde_json::from_str(&tool.execute(args).await.unwrap()).unwrap();
        let hits = value["hits"].as_array().unwrap();
        assert!(
            !hits.is_empty()
                && hits
                    .iter()
                    .all(|h| h["path"].as_str().unwrap().starts_with("crates/")),
            "{args}: {hits:?}"
        );
    }
    let unscoped: Value = serde_json::from_str(
        &tool
            .execute(r#"{"query":"parse_status_line","scope":null}"#)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(!unscoped["hits"].as_array().unwrap().is_empty());
    for (args, expected) in [
        (r#"{"query":"x","scope":7}"#, "scope must be a list"),
        (r#"{"query":"x","scope":[7]}"#, "scope must be a list"),
        (r#"{"query":"  "}"#, "query is empty"),
        (
            r#"{"query":"x","scope":["path ~ crates"]}"#,
            "unknown operator",
        ),
        (r#"{"query":"x","limit":0}"#, "limit must be"),
        (r#"{}"#, "missing field `query`"),
    ] {
        let error = tool.execute(args).await.unwrap_err();
        assert!(error.contains(expected), "{args}: {error}");
    }
}

#[test]
fn the_builtin_tools_have_usage_texts_and_valid_names() {
    let fixture = Fixture::new();
    let index = WorkspaceIndex::open(fixture.dir.path(), IndexConfig::default()).unwrap();
    let tools = builtin_tools(index);
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in &tools {
        assert!(tool.usage().is_some_and(|u| u.starts_with(tool.name())));
        assert_eq!(tool.parameters()["type"], "object");
    }
}

#[tokio::test]
async fn a_credential_in_a_source_file_is_neither_searched_nor_read_out() {
    let fixture = Fixture::new();
    let key = "AKIAIOSFODNN7EXAMPLE";
    let pem = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5Xc\n-----END EC PRIVATE KEY-----";
    fixture.write(
        "deploy/upload.py",
        &format!("ACCESS_KEY = \"{key}\"\nSIGNING = \"\"\"{pem}\"\"\"\ndef upload_report(bucket):\n    return bucket\n"),
    );
    let index = WorkspaceIndex::open(fixture.dir.path(), IndexConfig::default()).unwrap();
    index.refresh(&NoProgress).unwrap();
    let search = SearchCode::new(index);
    let found = search
        .execute(r#"{"query":"upload_report ACCESS_KEY SIGNING"}"#)
        .await
        .unwrap();
    assert!(found.contains("deploy/upload.py"), "{found}");
    assert!(found.contains("[secret redacted]"), "{found}");
    for leak in [key, "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5Xc"] {
        assert!(!found.contains(leak), "search showed {leak}: {found}");
        let hits = search
            .execute(&format!(r#"{{"query":"{leak}"}}"#))
            .await
            .unwrap();
        assert!(!hits.contains(leak), "{hits}");
    }

    let whole = read(&fixture, r#"{"path":"deploy/upload.py"}"#)
        .await
        .unwrap();
    let content = whole["content"].as_str().unwrap();
    assert!(
        !content.contains(key) && !content.contains("MHcCAQ"),
        "{content}"
    );
    // The lines stay where the file has them.
    assert!(
        content.contains("5| def upload_report(bucket):"),
        "{content}"
    );
    assert_eq!(whole["total_lines"], 6);
}
