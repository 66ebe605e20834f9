//! What strict mode does with each JSON Schema keyword: keep it, remove it, or reject
//! the schema. The lists follow OpenAI's "supported schemas" for Structured Outputs.
//!
//! The rule that decides between removing and rejecting: a keyword is *removed* only
//! when dropping it can only make the schema accept more (an assertion such as
//! `minLength`, or an annotation such as `default`). Removed assertions are still
//! checked when the solution is validated, so the re-ask loop catches an answer that
//! breaks them. A keyword whose removal would change what is accepted in the other
//! direction, or that strict mode cannot express at all, is *rejected* with the JSON
//! pointer of the keyword.

/// Keywords strict mode accepts, kept as they are (`format` is checked separately).
pub(crate) const KEPT: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
    "title",
    "description",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Keywords that strict mode rejects and that cannot be dropped without changing what
/// the schema means, with the reason given in the error.
pub(crate) const REJECTED: &[(&str, &str)] = &[
    ("not", "\"not\" is not supported in strict mode"),
    (
        "if",
        "conditional schemas (if/then/else) are not supported in strict mode",
    ),
    (
        "then",
        "conditional schemas (if/then/else) are not supported in strict mode",
    ),
    (
        "else",
        "conditional schemas (if/then/else) are not supported in strict mode",
    ),
    (
        "dependentRequired",
        "\"dependentRequired\" is not supported in strict mode",
    ),
    (
        "dependentSchemas",
        "\"dependentSchemas\" is not supported in strict mode",
    ),
    (
        "dependencies",
        "\"dependencies\" is not supported in strict mode",
    ),
    (
        "patternProperties",
        "\"patternProperties\" is not supported in strict mode, and dropping it would reject the keys it allows",
    ),
    (
        "propertyNames",
        "\"propertyNames\" is not supported in strict mode",
    ),
    (
        "prefixItems",
        "tuples (\"prefixItems\") are not supported in strict mode",
    ),
    (
        "$id",
        "nested \"$id\" changes how references resolve and is not supported",
    ),
    (
        "$anchor",
        "\"$anchor\" is not supported; use \"$defs\" and \"#/$defs/...\" references",
    ),
    (
        "$dynamicRef",
        "\"$dynamicRef\" is not supported in strict mode",
    ),
    (
        "$dynamicAnchor",
        "\"$dynamicAnchor\" is not supported in strict mode",
    ),
    (
        "$recursiveRef",
        "\"$recursiveRef\" is not supported in strict mode",
    ),
    (
        "$recursiveAnchor",
        "\"$recursiveAnchor\" is not supported in strict mode",
    ),
];

/// String formats strict mode accepts; any other `format` is removed.
pub(crate) const STRING_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The reason a keyword is rejected, if it is.
pub(crate) fn rejection(keyword: &str) -> Option<&'static str> {
    REJECTED
        .iter()
        .find(|(name, _)| *name == keyword)
        .map(|(_, reason)| *reason)
}

/// Whether strict mode keeps `keyword` (everything neither kept nor rejected is removed:
/// `minLength`, `maxLength`, `uniqueItems`, `default`, `examples`, `$schema`, unknown
/// keywords, ...).
pub(crate) fn is_kept(keyword: &str) -> bool {
    KEPT.contains(&keyword)
}
