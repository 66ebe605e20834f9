//! The envelope's two labels, [`Kind`] and [`FinishReason`]: open string enums.

use crate::open_enum::open_string_enum;

open_string_enum! {
    /// AGN-004 section 4: how a client should present the envelope.
    pub enum Kind {
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

open_string_enum! {
    /// Why the model stopped, derived from the response `status` (see `docs/wire.md`).
    pub enum FinishReason {
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

impl Kind {
    /// AGN-004 section 4, the one home of the rule: a failure is `error` whatever else
    /// the output holds; otherwise text (or a refusal, which is the model's answer in
    /// words) makes it `ok`, tool calls alone `tool-only`, and nothing at all `empty`.
    pub fn classify(failed: bool, has_text: bool, has_tool_calls: bool, refused: bool) -> Kind {
        if failed {
            Kind::Error
        } else if has_text || refused {
            Kind::Ok
        } else if has_tool_calls {
            Kind::ToolOnly
        } else {
            Kind::Empty
        }
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
