//! This crate's one error type.

use std::path::PathBuf;

use aptix_client::ClientError;
use aptix_index::IndexError;
use aptix_orchestrator::OrchestratorError;

/// What can go wrong wiring a workspace.
///
/// Two kinds, told apart by [`Error::is_config`]: a setting the person must change (a
/// flag, a variable, a config file, a missing key), and a failure of the machine (a file
/// that cannot be written, a database that cannot be reached). A front end maps the
/// first to its "bad usage" answer (exit code 2 for the `aptix` command) and the second
/// to a plain failure.
// The sources are boxed: an error is rare, a `Result` is everywhere.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting is wrong, or settings do not fit together. The message names where
    /// the value came from (`--temperature`, `APTIX_TEMPERATURE`, `` `temperature` in
    /// /repo/aptix.toml ``) and what is expected.
    #[error("{message}")]
    Config {
        /// What is wrong, in words a person can act on.
        message: String,
    },
    /// No API key is set for a host that needs one.
    #[error(
        "no api key for {base_url}\n  \
         set OPENAI_API_KEY to your key (it is read only from the environment), or\n  \
         point aptix at a server that needs none with --base-url, OPENAI_BASE_URL, or \
         base_url in aptix.toml or {user_file} (e.g. http://127.0.0.1:8080/v1 for llama-server)\n  \
         `aptix ask --dry-run` shows the request without a key"
    )]
    MissingApiKey {
        /// The base URL that needs a key.
        base_url: String,
        /// The user's config file, as it may be shown.
        user_file: String,
    },
    /// A file or folder could not be read, created or written.
    #[error("could not {action} {}", path.display())]
    Io {
        /// What was being done, e.g. "create", "read config file".
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system reported.
        #[source]
        source: std::io::Error,
    },
    /// The workspace index could not be opened or refreshed.
    #[error("could not {action} {}", path.display())]
    Index {
        /// What was being done, e.g. "open the index of", "index".
        action: &'static str,
        /// The workspace.
        path: PathBuf,
        /// What the index reported.
        #[source]
        source: Box<IndexError>,
    },
    /// A SQLite session store could not be opened.
    #[error("could not open the session store {location}")]
    OpenStore {
        /// The store, as it may be shown.
        location: String,
        /// What the store reported.
        #[source]
        source: Box<OrchestratorError>,
    },
    /// The session store failed (a PostgreSQL database that cannot be reached, say); its
    /// error names the database, password hidden.
    #[error(transparent)]
    Store(Box<OrchestratorError>),
    /// The provider could not be set up for a reason other than its settings.
    #[error("could not set up the provider")]
    Provider(#[source] Box<ClientError>),
    /// The Chat Completions bridge cannot express the request.
    #[error("the chat completions bridge cannot carry this request: {0}")]
    Bridge(Box<ClientError>),
    /// A request could not be written as JSON (a number that JSON cannot hold).
    #[error("the request cannot be written as JSON")]
    Json(#[source] serde_json::Error),
}

impl Error {
    /// Whether the fix is a change of settings (a flag, an environment variable, a
    /// config file, the API key) rather than of the machine the process runs on.
    pub fn is_config(&self) -> bool {
        matches!(self, Error::Config { .. } | Error::MissingApiKey { .. })
    }

    /// A settings error with this message.
    pub(crate) fn config(message: impl Into<String>) -> Error {
        Error::Config {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_key_message_says_how_to_set_one() {
        let error = Error::MissingApiKey {
            base_url: "https://api.openai.com/v1".into(),
            user_file: "/home/u/.config/aptix/config.toml".into(),
        };
        assert!(error.is_config());
        let text = error.to_string();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "no api key for https://api.openai.com/v1",
                "  set OPENAI_API_KEY to your key (it is read only from the environment), or",
                "  point aptix at a server that needs none with --base-url, OPENAI_BASE_URL, or base_url in aptix.toml or /home/u/.config/aptix/config.toml (e.g. http://127.0.0.1:8080/v1 for llama-server)",
                "  `aptix ask --dry-run` shows the request without a key",
            ]
        );
    }

    #[test]
    fn a_chain_joins_the_causes() {
        let error = Error::Io {
            action: "create",
            path: PathBuf::from("/repo/.aptix"),
            source: std::io::Error::other("disk full"),
        };
        assert!(!error.is_config());
        assert_eq!(
            aptix_model::error_chain(&error),
            "could not create /repo/.aptix: disk full"
        );
    }
}
