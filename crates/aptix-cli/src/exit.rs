//! Exit codes, and the error type that marks a failure as the user's to fix.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the answer, the envelope, the dry-run body or the inspection was printed |
//! | 1 | the model or the provider failed (an error envelope), or a runtime failure (I/O, the session store) |
//! | 2 | bad usage or configuration: a flag, an environment variable or a config file is wrong, or no API key is set for a host that needs one |
//! | 3 | the answer is incomplete: the output token limit (or a content filter) cut it short; what arrived was printed |
//! | 130, 143 | interrupted by SIGINT or SIGTERM: the turn was dropped, not saved (unless its answer was already being written), and the session released |
//!
//! Clap's own usage errors also exit with 2.

use std::fmt;

/// Everything worked.
pub(crate) const SUCCESS: u8 = 0;
/// The turn ended in an error envelope, or something failed at run time.
pub(crate) const FAILURE: u8 = 1;
/// The command line, the environment or a config file must be changed.
pub(crate) const USAGE: u8 = 2;
/// The answer was cut short (`finishReason` `length` or `content_filter`).
pub(crate) const TRUNCATED: u8 = 3;

/// A failure the user fixes by changing a flag, a variable or a config file. Anywhere
/// in an error's chain, it makes the process exit with [`USAGE`], as does an
/// `aptix_runtime::Error` that is a configuration error.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A usage error with this message.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The exit code for a failed command.
pub(crate) fn code_of(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| {
        cause.is::<UsageError>()
            || cause
                .downcast_ref::<aptix_runtime::Error>()
                .is_some_and(aptix_runtime::Error::is_config)
    }) {
        USAGE
    } else {
        FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn usage_errors_exit_with_2_even_under_context() {
        let error = Err::<(), _>(usage("bad flag"))
            .context("reading settings")
            .unwrap_err();
        assert_eq!(code_of(&error), USAGE);
        assert_eq!(code_of(&anyhow::anyhow!("disk full")), FAILURE);
    }

    #[test]
    fn runtime_configuration_errors_exit_with_2_and_its_failures_with_1() {
        let flags = aptix_runtime::SettingsLayer {
            mode: Some("poetry".into()),
            ..aptix_runtime::SettingsLayer::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let error = aptix_runtime::Settings::load(dir.path(), &flags, &|_| None).unwrap_err();
        assert!(error.is_config());
        let error = Err::<(), _>(error).context("loading").unwrap_err();
        assert_eq!(code_of(&error), USAGE);

        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let settings = aptix_runtime::Settings::load(dir.path(), &Default::default(), &|_| None);
        let workspace = aptix_runtime::Workspace::new(&file, settings.unwrap());
        let error = workspace.open_index().unwrap_err();
        assert!(!error.is_config());
        assert_eq!(code_of(&anyhow::Error::new(error)), FAILURE);
    }
}
