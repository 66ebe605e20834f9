//! Running the binary in a clean environment, and reading what it printed.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// A key that must never appear in any output.
pub(crate) const SECRET_KEY: &str = "sk-test-do-not-print-4f1c9e";

/// A clean home and workspace for one test.
pub(crate) struct Sandbox {
    /// `HOME` of the runs (holds `.config/aptix/config.toml` when a test writes one).
    pub(crate) home: tempfile::TempDir,
    /// The workspace passed with `--workspace`.
    pub(crate) workspace: tempfile::TempDir,
}

impl Sandbox {
    /// Two fresh temporary folders.
    pub(crate) fn new() -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    /// The workspace path as a string argument.
    pub(crate) fn workspace_arg(&self) -> String {
        self.workspace.path().to_str().unwrap().to_owned()
    }

    /// `aptix` with an empty environment but `PATH` and `HOME`.
    pub(crate) fn aptix(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aptix"));
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .current_dir(self.workspace.path());
        command
    }

    /// Writes a file under the workspace.
    pub(crate) fn write_workspace_file(&self, relative: &str, text: &str) -> PathBuf {
        write(self.workspace.path(), relative, text)
    }

    /// Writes the user config file under `HOME`.
    pub(crate) fn write_user_config(&self, text: &str) -> PathBuf {
        write(self.home.path(), ".config/aptix/config.toml", text)
    }
}

fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// Stdout as text.
pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Stderr as text.
pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Stdout parsed as JSON, with stderr in the panic message when it is not.
pub(crate) fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}):\n{}\nstderr:\n{}",
            stdout(output),
            stderr(output)
        )
    })
}

/// The exit code.
pub(crate) fn code(output: &Output) -> i32 {
    output.status.code().expect("the process exited normally")
}

/// A fixture's path.
pub(crate) fn fixture(name: &str) -> PathBuf {
    aptix_testkit::fixtures_dir().join(name)
}
