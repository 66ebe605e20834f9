//! The envelope's two labels: [`Kind`] and [`FinishReason`].
//!
//! Both are *open* enums: each known value has a variant that serialises to exactly the
//! AGN-004 string, and any other string decodes to `Other(string)` instead of failing.
//! A client built today keeps working when a newer server adds a kind or a finish reason;
//! it sees the new string and can treat it as it treats the closest value it knows.
//! Decoding never produces `Other` holding a known string.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares an open string enum: known variants with their exact strings, plus `Other`.
macro_rules! open_enum {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$variant_doc:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$variant_doc])* $variant, )+
            /// A value this version does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// Every known value, in AGN-004's order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The exact string on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(text) => text,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                match $name::from(text.as_str()) {
                    $name::Other(_) => $name::Other(text),
                    known => known,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map($name::from)
            }
        }
    };
}

open_enum! {
    /// AGN-004 section 4: how a client should present the envelope.
    Kind {
        /// `ok`: text and/or tool calls, no structural error.
        Ok = "ok",
        /// `tool-only`: tool calls and no user-facing text.
        ToolOnly = "tool-only",
        /// `error`: an HTTP, API or in-stream error; see `errorCode` and `errorMessage`.
        Error = "error",
        /// `empty`: neither text nor tool calls.
        Empty = "empty",
    }
}

open_enum! {
    /// Why the model stopped, derived from the response `status` (see `docs/wire.md`).
    FinishReason {
        /// `stop`: the model finished its answer.
        Stop = "stop",
        /// `length`: the output token limit cut the answer off.
        Length = "length",
        /// `tool_use`: the model stopped to have tools called.
        ToolUse = "tool_use",
        /// `content_filter`: the provider's content filter stopped the answer.
        ContentFilter = "content_filter",
        /// `error`: the response failed.
        Error = "error",
    }
}

impl Default for Kind {
    /// [`Kind::Empty`]: an envelope with nothing in it yet.
    fn default() -> Self {
        Kind::Empty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_use_the_exact_strings() {
        let kinds: Vec<String> = Kind::KNOWN
            .iter()
            .map(|kind| serde_json::to_string(kind).unwrap())
            .collect();
        assert_eq!(
            kinds,
            [r#""ok""#, r#""tool-only""#, r#""error""#, r#""empty""#]
        );
        let reasons: Vec<&str> = FinishReason::KNOWN
            .iter()
            .map(FinishReason::as_str)
            .collect();
        assert_eq!(
            reasons,
            ["stop", "length", "tool_use", "content_filter", "error"]
        );
    }

    #[test]
    fn unknown_strings_are_kept() {
        let kind: Kind = serde_json::from_str(r#""partial""#).unwrap();
        assert_eq!(kind, Kind::Other("partial".into()));
        assert_eq!(serde_json::to_string(&kind).unwrap(), r#""partial""#);
        assert_eq!(
            FinishReason::from("tool_use".to_owned()),
            FinishReason::ToolUse
        );
        assert_eq!(
            FinishReason::from("Stop"),
            FinishReason::Other("Stop".into())
        );
        assert!(serde_json::from_str::<Kind>("3").is_err());
    }
}
