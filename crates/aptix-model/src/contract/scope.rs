//! RAG scope conditions (AGN-034 section 4.3).
//!
//! A client narrows retrieval with conditions over chunk metadata (`path`, `language`,
//! `repo`, `extension`, `symbol`, `kind` (source, test, docs, ...), ...). All conditions of a request are ANDed. Within
//! one condition the values are alternatives:
//!
//! | operator | a chunk passes when its metadata value for `key` ... |
//! |---|---|
//! | `==` | equals any of `values` |
//! | `!=` | equals none of `values` |
//! | `contains` | contains any of `values` as a substring |
//! | `does_not_contain` | contains none of `values` as a substring |
//!
//! A chunk with no value for `key` passes `!=` and `does_not_contain` and fails `==`
//! and `contains`. The seed calls scope advisory: a retriever that does not know a key
//! reports a warning rather than failing the turn.

use serde::{Deserialize, Serialize};

/// How a [`ScopeCondition`] compares a chunk's metadata value with its `values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ScopeOperator {
    /// `==`: the value equals one of the values.
    #[serde(rename = "==")]
    Equals,
    /// `!=`: the value equals none of the values.
    #[serde(rename = "!=")]
    NotEquals,
    /// `contains`: the value contains one of the values.
    #[serde(rename = "contains")]
    Contains,
    /// `does_not_contain`: the value contains none of the values.
    #[serde(rename = "does_not_contain")]
    DoesNotContain,
}

impl ScopeOperator {
    /// Every operator, in the order AGN-034 lists them.
    pub const ALL: [ScopeOperator; 4] = [
        ScopeOperator::Equals,
        ScopeOperator::NotEquals,
        ScopeOperator::Contains,
        ScopeOperator::DoesNotContain,
    ];

    /// The operator's spelling on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeOperator::Equals => "==",
            ScopeOperator::NotEquals => "!=",
            ScopeOperator::Contains => "contains",
            ScopeOperator::DoesNotContain => "does_not_contain",
        }
    }

    /// Parses the wire spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<ScopeOperator> {
        ScopeOperator::ALL
            .into_iter()
            .find(|op| op.as_str() == text)
    }
}

/// One retrieval scope condition: `key operator values`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScopeCondition {
    /// The chunk metadata key, e.g. `path`, `language`, `repo`; at most 128 bytes.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 128, pattern = r"\S")
    )]
    pub key: String,
    /// The comparison.
    pub operator: ScopeOperator,
    /// The alternatives compared against; never empty in a valid request. Each is at most
    /// 1,024 bytes and may be empty.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 256))]
    pub values: Vec<String>,
}

impl ScopeCondition {
    /// Parses the written form `KEY OPERATOR VALUE[,VALUE...]`, e.g. `kind == source,test`
    /// or `path contains crates/`: the one parser behind `aptix search --scope`,
    /// `aptix ask --scope` and the `search_code` tool's `scope` argument.
    ///
    /// Values are trimmed and empty ones dropped; at least one must remain.
    pub fn parse(text: &str) -> Result<ScopeCondition, crate::ModelError> {
        let fail = |reason: String| crate::ModelError::Scope {
            text: text.to_owned(),
            reason,
        };
        let mut parts = text.trim().splitn(3, char::is_whitespace);
        let (Some(key), Some(operator), Some(values)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(fail(
                "expected `KEY OPERATOR VALUE[,VALUE...]`, e.g. `kind == source`".to_owned(),
            ));
        };
        let Some(operator) = ScopeOperator::parse(operator) else {
            return Err(fail(format!(
                "unknown operator {operator:?} (==, !=, contains, does_not_contain)"
            )));
        };
        let values: Vec<String> = values
            .split(',')
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
            .collect();
        if values.is_empty() {
            return Err(fail("no value to compare with".to_owned()));
        }
        Ok(ScopeCondition {
            key: key.to_owned(),
            operator,
            values,
        })
    }

    /// Whether a chunk whose metadata value for [`key`](Self::key) is `value` passes.
    ///
    /// `None` means the chunk has no such metadata.
    pub fn accepts(&self, value: Option<&str>) -> bool {
        let any = |test: &dyn Fn(&str, &str) -> bool| match value {
            Some(value) => self.values.iter().any(|wanted| test(value, wanted)),
            None => false,
        };
        match self.operator {
            ScopeOperator::Equals => any(&|value, wanted| value == wanted),
            ScopeOperator::NotEquals => !any(&|value, wanted| value == wanted),
            ScopeOperator::Contains => any(&|value, wanted| value.contains(wanted)),
            ScopeOperator::DoesNotContain => !any(&|value, wanted| value.contains(wanted)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_from_their_written_form() {
        let condition = ScopeCondition::parse("kind == source,test").unwrap();
        assert_eq!(condition.key, "kind");
        assert_eq!(condition.operator, ScopeOperator::Equals);
        assert_eq!(condition.values, ["source", "test"]);
        let condition = ScopeCondition::parse("path does_not_contain tests/").unwrap();
        assert_eq!(condition.operator, ScopeOperator::DoesNotContain);
        assert_eq!(condition.values, ["tests/"]);
        assert!(ScopeCondition::parse("kind source").is_err());
        assert!(ScopeCondition::parse("kind =~ source").is_err());
        assert!(ScopeCondition::parse("kind == ,").is_err());
    }

    fn condition(operator: ScopeOperator, values: &[&str]) -> ScopeCondition {
        ScopeCondition {
            key: "path".into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn operators_compare_against_any_value() {
        let eq = condition(ScopeOperator::Equals, &["a.rs", "b.rs"]);
        assert!(eq.accepts(Some("b.rs")));
        assert!(!eq.accepts(Some("c.rs")));
        assert!(!eq.accepts(None));

        let ne = condition(ScopeOperator::NotEquals, &["a.rs"]);
        assert!(!ne.accepts(Some("a.rs")));
        assert!(ne.accepts(Some("b.rs")));
        assert!(ne.accepts(None));

        let contains = condition(ScopeOperator::Contains, &["src/", "lib"]);
        assert!(contains.accepts(Some("crates/x/src/main.rs")));
        assert!(!contains.accepts(Some("README.md")));
        assert!(!contains.accepts(None));

        let not_contains = condition(ScopeOperator::DoesNotContain, &["test"]);
        assert!(not_contains.accepts(Some("src/main.rs")));
        assert!(!not_contains.accepts(Some("tests/it.rs")));
        assert!(not_contains.accepts(None));
    }

    #[test]
    fn operator_spellings_round_trip() {
        for op in ScopeOperator::ALL {
            assert_eq!(ScopeOperator::parse(op.as_str()), Some(op));
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(json, format!("\"{}\"", op.as_str()));
        }
        assert_eq!(ScopeOperator::parse("=~"), None);
    }
}
