//! PostgreSQL for tests: a fresh, empty database per test, on a real server.
//!
//! `cargo xtask ci` starts one server with `scripts/test-postgres.sh` and passes its URL
//! in `APTIX_TEST_POSTGRES_URL`; each [`TestDatabase`] is a new database on it. Run
//! outside xtask (plain `cargo nextest run`), a test starts a private server with the
//! same script and stops it when the [`TestDatabase`] is dropped, so a PostgreSQL test
//! never skips: it runs, or fails saying how to install PostgreSQL.

use std::path::PathBuf;
use std::process::Command;

use crate::repository_root;

/// The environment variable holding the URL of a running test server (its `postgres`
/// database, user `postgres`, trust authentication).
pub const SERVER_URL_VAR: &str = "APTIX_TEST_POSTGRES_URL";

/// A new, empty database; the private server it may have started stops on drop.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    private_server: Option<PathBuf>,
}

impl TestDatabase {
    /// Creates the database, starting a private server first when no server URL is set.
    /// Panics with the script's explanation when PostgreSQL cannot be run here.
    pub fn create() -> TestDatabase {
        let (server_url, private_server) = match std::env::var(SERVER_URL_VAR) {
            Ok(url) if !url.is_empty() => (url, None),
            _ => {
                let dir = std::env::temp_dir().join(format!(
                    "aptix-pg-{}-{}",
                    std::process::id(),
                    unique()
                ));
                let url = script(&["start", &dir.to_string_lossy()]);
                (url, Some(dir))
            }
        };
        let url = script(&["database", &server_url]);
        TestDatabase {
            url,
            private_server,
        }
    }

    /// The database's URL (`postgres://postgres@127.0.0.1:PORT/aptix_test_…`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's URL for another login: `user_info` replaces `postgres`
    /// (`role`, or `role:password` percent-encoded).
    pub fn url_as(&self, user_info: &str) -> String {
        match self.url.split_once("://").zip(self.url.split_once('@')) {
            Some(((scheme, _), (_, rest))) => format!("{scheme}://{user_info}@{rest}"),
            None => self.url.clone(),
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some(dir) = &self.private_server {
            let _ = Command::new("bash")
                .arg(repository_root().join("scripts").join("test-postgres.sh"))
                .args(["stop", &dir.to_string_lossy()])
                .status();
        }
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

/// Runs `scripts/test-postgres.sh` and returns its one line of output.
fn script(args: &[&str]) -> String {
    let path = repository_root().join("scripts").join("test-postgres.sh");
    let output = Command::new("bash")
        .arg(&path)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("could not run {}: {error}", path.display()));
    assert!(
        output.status.success(),
        "PostgreSQL is needed for this test and {} {} failed:\n{}",
        path.display(),
        args.first().copied().unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
