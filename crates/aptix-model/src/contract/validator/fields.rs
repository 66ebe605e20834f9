//! Reading a JSON object's fields: accepted casings, duplicates, nulls and strangers.
//!
//! Every object of the request goes through [`read_object`], so the casing rule (camelCase
//! or PascalCase, reported under the camelCase name), the null rule (a `null` value is the
//! same as leaving the field out) and the unknown-field rule hold everywhere alike.

use serde_json::{Map, Value};

use super::{Checker, child};
use crate::contract::violation::{Violation, ViolationCode};

/// A field that is not one of an object's own fields but gets its own violation instead
/// of "unknown field": a server-owned field, or a common mistake with a known fix.
pub(super) struct Stranger {
    /// The name the violation's path uses (canonical camelCase).
    pub(super) name: &'static str,
    /// The rule broken.
    pub(super) code: ViolationCode,
    /// What to do instead.
    pub(super) message: String,
}

/// How one kind of object reads: its fields and how it treats other keys.
pub(super) struct Shape {
    /// What the object is, for messages: "the request", "a tool result".
    pub(super) what: &'static str,
    /// Its fields, in camelCase, in the order they are checked.
    pub(super) fields: &'static [&'static str],
    /// Special treatment of some other keys; `None` means "unknown field".
    pub(super) stranger: fn(&str) -> Option<Stranger>,
}

/// No key gets special treatment.
pub(super) fn no_strangers(_key: &str) -> Option<Stranger> {
    None
}

/// An object's present, non-null fields under their camelCase names.
pub(super) struct Fields<'a> {
    found: Vec<(&'static str, &'a Value)>,
}

impl<'a> Fields<'a> {
    /// The field's value; `None` when absent or `null`.
    pub(super) fn get(&self, name: &str) -> Option<&'a Value> {
        self.found
            .iter()
            .find(|(found, _)| *found == name)
            .map(|(_, value)| *value)
    }
}

/// `sessionId` -> `SessionId`: the other casing the original server accepted.
pub(super) fn pascal_case(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Whether `key` is `name` in PascalCase (`SessionId` for `sessionId`), without
/// allocating: every request checks every key against every field this way.
fn is_pascal_of(key: &str, name: &str) -> bool {
    let mut name_chars = name.chars();
    let Some(first) = name_chars.next() else {
        return key.is_empty();
    };
    let mut key_chars = key.chars();
    first
        .to_uppercase()
        .all(|upper| key_chars.next() == Some(upper))
        && key_chars.as_str() == name_chars.as_str()
}

/// Whether `a` and `b` are two spellings of one name: the same lowercase without `_`
/// and `-` (compared as they are read, building neither: it is asked for every unknown
/// key of a request, which may have a hundred thousand).
pub(super) fn same_folded(a: &str, b: &str) -> bool {
    folding(a).eq(folding(b))
}

/// `name` lowercase without `_` and `-`.
fn folding(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
}

/// Reads `object` (at `path`) as `shape`, reporting duplicate casings, server-owned and
/// unknown keys. Fields are visited in the shape's order and strangers in sorted order,
/// so the violations come out the same whatever order the client sent the keys in.
pub(super) fn read_object<'a>(
    checker: &mut Checker,
    object: &'a Map<String, Value>,
    path: &str,
    shape: &Shape,
) -> Fields<'a> {
    let present = |key: &str| object.get(key).filter(|value| !value.is_null());
    // Nearly every client sends camelCase only: then no PascalCase key is looked for.
    let any_upper = object
        .keys()
        .any(|key| key.starts_with(|c: char| c.is_uppercase()));
    let present_pascal = |name: &str| {
        if !any_upper {
            return None;
        }
        object
            .iter()
            .find(|(key, value)| is_pascal_of(key, name) && !value.is_null())
            .map(|(_, value)| value)
    };
    let mut found = Vec::new();
    for &name in shape.fields {
        match (present(name), present_pascal(name)) {
            (Some(value), other) => {
                if other.is_some() {
                    let pascal = pascal_case(name);
                    checker.report(Violation::new(
                        child(path, name),
                        ViolationCode::DuplicateField,
                        format!("{name} is given twice, as {name} and as {pascal}; send it once"),
                    ));
                }
                found.push((name, value));
            }
            (None, Some(value)) => found.push((name, value)),
            (None, None) => {}
        }
    }

    let mut strangers: Vec<&String> = object
        .iter()
        .filter(|(key, value)| {
            !value.is_null()
                && !shape
                    .fields
                    .iter()
                    .any(|name| key.as_str() == *name || is_pascal_of(key, name))
        })
        .map(|(key, _)| key)
        .collect();
    strangers.sort();

    let mut special_reported: Vec<&'static str> = Vec::new();
    for key in strangers {
        match (shape.stranger)(key) {
            // `mode` and `Mode` together are one problem, reported once.
            Some(special) if special_reported.contains(&special.name) => {}
            Some(special) => {
                special_reported.push(special.name);
                checker.report(Violation::new(
                    child(path, special.name),
                    special.code,
                    special.message,
                ));
            }
            None => {
                checker.report_with(|| {
                    let suggestion = shape
                        .fields
                        .iter()
                        .find(|name| same_folded(name, key))
                        .map(|name| format!("; did you mean {name}?"))
                        .unwrap_or_default();
                    Violation::new(
                        child(path, key),
                        ViolationCode::UnknownField,
                        format!("unknown field {key} in {}{suggestion}", shape.what),
                    )
                });
            }
        }
    }
    Fields { found }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The allocation-free check agrees with the spelled-out PascalCase, for any
        /// text (multi-char uppercases such as `ß` included).
        #[test]
        fn is_pascal_of_agrees_with_pascal_case(
            name in "[a-zA-Z\u{df}\u{e9}\u{149}_]{0,6}",
            key in "[a-zA-Z\u{df}\u{e9}\u{149}_]{0,6}|SS[a-z]{0,3}",
        ) {
            proptest::prop_assert_eq!(is_pascal_of(&key, &name), key == pascal_case(&name));
            proptest::prop_assert!(is_pascal_of(&pascal_case(&name), &name));
        }
    }

    #[test]
    fn casings_and_folding() {
        assert_eq!(pascal_case("toolCallId"), "ToolCallId");
        for (key, name, expected) in [
            ("ToolCallId", "toolCallId", true),
            ("toolCallId", "toolCallId", false),
            ("ToolCallID", "toolCallId", false),
            ("T", "t", true),
            ("", "", true),
            ("X", "", false),
            ("Tool", "toolCallId", false),
        ] {
            assert_eq!(is_pascal_of(key, name), expected, "{key} {name}");
            assert_eq!(
                is_pascal_of(key, name),
                key == pascal_case(name),
                "{key} {name}"
            );
        }
        assert_eq!(pascal_case(""), "");
        assert_eq!(folding("tool_call-Id").collect::<String>(), "toolcallid");
        assert!(same_folded("tool_call-Id", "toolCallId"));
        assert!(!same_folded("toolCallIds", "toolCallId"));
    }
}
