//! Checked text values of the request: the ids, the instruction and tool error messages.
//!
//! Each is a newtype whose constructor runs the same check the request validator runs,
//! so a value built in code and a value decoded from JSON obey the same rules, and code
//! holding a [`SessionId`] never has to ask whether it is blank.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::limits::{MAX_ID_BYTES, MAX_INSTRUCTION_BYTES, MAX_TOOL_OUTPUT_BYTES};
use super::violation::{Problem, Violation, ViolationCode};

/// Checks a text that must say something: not blank, at most `max` bytes.
pub(crate) fn check_text(field: &str, text: &str, max: usize) -> Result<(), Problem> {
    if text.trim().is_empty() {
        return Err(Problem::new(
            ViolationCode::Empty,
            format!("{field} must not be empty or only whitespace"),
        ));
    }
    check_size(field, text.len(), max)
}

/// Checks an id: a text that says something, without control characters (NUL, line
/// breaks, tabs), which no id needs and which logs, URL paths and databases (PostgreSQL
/// refuses NUL in text) do not take as they are.
pub(crate) fn check_id(field: &str, text: &str, max: usize) -> Result<(), Problem> {
    check_text(field, text, max)?;
    if let Some(found) = text.chars().find(|c| c.is_control()) {
        return Err(Problem::new(
            ViolationCode::InvalidId,
            format!("{field} holds the control character {found:?}; ids are printable text"),
        ));
    }
    if let Some(found) = text.chars().find(|&c| is_invisible_format(c)) {
        return Err(Problem::new(
            ViolationCode::InvalidId,
            format!(
                "{field} holds the invisible character U+{:04X}; ids are printable text",
                u32::from(found)
            ),
        ));
    }
    Ok(())
}

/// A character that shows nothing, or reorders the text around it: zero-width spaces
/// and joiners, direction marks, embeddings, overrides and isolates, the byte order mark.
/// An id holding one reads as another id, in a log line or a list ("Trojan Source").
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Checks a size in bytes against its limit.
pub(crate) fn check_size(field: &str, bytes: usize, max: usize) -> Result<(), Problem> {
    if bytes > max {
        return Err(Problem::new(
            ViolationCode::TooLarge,
            format!("{field} is {bytes} bytes; the limit is {max} bytes"),
        ));
    }
    Ok(())
}

/// Declares a checked text newtype: constructor, accessors, `Display`, serde as a plain
/// JSON string whose decoding runs the check, and (feature `openapi`) its schema.
macro_rules! checked_text {
    ($(#[doc = $doc:literal])* $name:ident, field = $field:literal, max = $max:expr, check = $check:ident) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("Checks and wraps a `", $field, "`: not empty or only whitespace, at most [`", stringify!($max), "`](super::limits::", stringify!($max), ") bytes (`", stringify!($check), "`: an id holds no control character).")]
            pub fn new(text: impl Into<String>) -> Result<Self, Violation> {
                let text = text.into();
                $check($field, &text, $max).map_err(|problem| problem.at($field))?;
                Ok($name(text))
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, by value.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = Violation;
            fn try_from(text: String) -> Result<Self, Violation> {
                $name::new(text)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                $name::new(text).map_err(serde::de::Error::custom)
            }
        }

        // A string, checked as `check_text` checks it; the description is the doc
        // comments.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                crate::openapi::checked_text(&[$($doc),*], $max)
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($name))
            }
        }
    };
}

checked_text!(
    /// The client's conversation id (`sessionId`): the server keeps mode, model settings,
    /// history and pending tool calls under it.
    SessionId,
    field = "sessionId",
    max = MAX_ID_BYTES,
    check = check_id
);

checked_text!(
    /// The client's id for one turn (`turnId`). A tool continuation repeats the id of the
    /// turn it continues; a retried request with the same session and turn ids gets the
    /// stored result instead of a second model call.
    TurnId,
    field = "turnId",
    max = MAX_ID_BYTES,
    check = check_id
);

checked_text!(
    /// The id of a tool call the model made (the Responses API `call_id`, `call_...`),
    /// which a tool result answers.
    ToolCallId,
    field = "toolCallId",
    max = MAX_ID_BYTES,
    check = check_id
);

checked_text!(
    /// The developer's instruction: UTF-8 Markdown, passed to the model as written.
    Instruction,
    field = "instruction",
    max = MAX_INSTRUCTION_BYTES,
    check = check_text
);

checked_text!(
    /// Why a tool failed (`errorMessage`), shown to the model as the tool's output.
    ToolErrorMessage,
    field = "errorMessage",
    max = MAX_TOOL_OUTPUT_BYTES,
    check = check_text
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_reject_blank_and_oversized_text() {
        assert_eq!(SessionId::new("s-1").unwrap().as_str(), "s-1");
        let blank = TurnId::new(" \t").unwrap_err();
        assert_eq!(
            (blank.path.as_str(), blank.code),
            ("turnId", ViolationCode::Empty)
        );
        let long = ToolCallId::new("x".repeat(MAX_ID_BYTES + 1)).unwrap_err();
        assert_eq!(long.code, ViolationCode::TooLarge);
        assert!(ToolCallId::new("x".repeat(MAX_ID_BYTES)).is_ok());
        // Control characters: PostgreSQL refuses NUL in text (a 503 for a 400 before),
        // and a line break in an id forges log lines.
        for id in [
            "s-\u{0}",
            "a\nb",
            "tab\there",
            "\u{1b}[31m",
            // Invisible, or reordering what follows: another id in disguise.
            "e-\u{202e}x",
            "a\u{200b}b",
            "\u{feff}s",
            "s\u{2066}",
        ] {
            let error = SessionId::new(id).unwrap_err();
            assert_eq!(
                (error.path.as_str(), error.code),
                ("sessionId", ViolationCode::InvalidId),
                "{id:?}"
            );
        }
        assert!(SessionId::new("ünïcödé id with spaces/and?punctuation#").is_ok());
        // Texts that are not ids keep their control characters.
        assert!(Instruction::new("line one\nline two\twith a tab").is_ok());
    }

    #[test]
    fn serde_runs_the_same_check() {
        let id: SessionId = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"abc\"");
        let error = serde_json::from_str::<Instruction>("\"  \"").unwrap_err();
        assert!(
            error.to_string().contains("instruction must not be empty"),
            "{error}"
        );
    }
}
