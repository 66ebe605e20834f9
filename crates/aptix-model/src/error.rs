//! The one error type of `aptix-model`.

/// Errors raised while decoding or checking Aptix contract and wire values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The input was not JSON of the expected shape.
    #[error("invalid JSON at {path}: {message}")]
    Json {
        /// A JSON path (`$.toolResults[0].toolCallId`) or `$` when unknown.
        path: String,
        /// What the JSON parser reported.
        message: String,
    },
    /// A scope condition written as text (`KEY OPERATOR VALUE[,VALUE...]`) that is not one.
    #[error("scope condition {text:?}: {reason}")]
    Scope {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}
