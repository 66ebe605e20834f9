//! The strict-mode normaliser: [`normalize_strict`] turns a JSON Schema into one that
//! OpenAI's strict mode (`text.format` `json_schema` with `strict: true`, and strict
//! function tools) accepts, or says exactly where it cannot.
//!
//! Rules, applied recursively through `properties`, `items`, `anyOf`, `oneOf`, a
//! one-element `allOf`, `$defs` and `definitions`:
//!
//! - **Objects are closed.** Every object gets `"additionalProperties": false`. An
//!   `additionalProperties` *schema* (a map) is rejected, and so is an explicit
//!   `additionalProperties: true` (closing it would refuse what the schema allows); so
//!   is an object without
//!   `properties` (it could only ever be `{}`) unless it already says
//!   `additionalProperties: false`.
//! - **Every property is required; optional ones become nullable.** A property that
//!   was not in `required` is added to it and its schema is made to accept `null`
//!   (`"type": [T, "null"]`, or `anyOf` with `{"type": "null"}`), so "absent" is spelt
//!   `null`. A `required` name with no schema in `properties` is rejected.
//! - **Unions.** `oneOf` becomes `anyOf` (which accepts at least as much); a
//!   one-element `allOf` is merged into its parent; a longer `allOf` is rejected.
//! - **References.** Only local references (`#...`) are allowed, and each must resolve
//!   to a schema (a cycle of bare references names none). A `$ref` into a property's
//!   schema (`#/properties/a`) is replaced by that schema, normalised where it is
//!   used: an optional property is made nullable where it stands, and a reference to
//!   it must not take that along. A `$ref` with sibling
//!   keywords (schemars writes `{"$ref": ..., "description": ...}`) is replaced by the
//!   referenced schema with the siblings laid over it, because strict mode does not
//!   take a `$ref` with siblings.
//! - **Keywords.** Those strict mode supports are kept (see `keywords.rs`); `format`
//!   is kept only on strings and only for the formats strict mode knows. Keywords whose
//!   removal can only make the schema accept more (`minLength`, `maxLength`,
//!   `uniqueItems`, `minProperties`, `contains`, `default`, `examples`, `$schema`,
//!   unknown ones, ...) are removed and listed in [`StrictSchema::removed`]. The rest
//!   (`not`, `if`/`then`/`else`, `patternProperties`, `prefixItems`, ...) are rejected
//!   with [`RequestError::NotStrict`] naming the JSON pointer.
//! - **Types.** A schema that accepts anything (`true`, `{}`, one without `type`,
//!   `$ref`, `anyOf`, `enum` or `const`) is rejected, and so is an array without
//!   `items`. The root must be an object schema, not a union.
//!
//! The result holds two schemas built by the same walk: [`wire`](StrictSchema::wire),
//! what is sent, and [`validation`](StrictSchema::validation), the same schema with
//! the removed keywords kept (and `oneOf` kept as `oneOf`) and optional properties left
//! optional, which the solution is validated against once the `null`s strict mode
//! made the model write for absent members are removed. The model is constrained by the first and judged by the second,
//! so nothing the caller asked for is silently lost.
//!
//! Normalising is idempotent, and the wire schema accepts every instance the input
//! schema accepted once the missing optional properties are filled with `null`
//! (property-tested). Closing objects is the one deliberate narrowing: undeclared
//! properties are no longer accepted.

mod keywords;
mod nullable;

use serde_json::{Map, Value};

use crate::error::RequestError;
use keywords::{STRING_FORMATS, is_kept, rejection};
use nullable::nullable;

/// How deep schemas may nest before normalising gives up (strict mode allows far less).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// A schema normalised for strict mode.
#[derive(Debug, Clone, PartialEq)]
pub struct StrictSchema {
    /// The schema to send.
    pub wire: Value,
    /// The schema to validate the solution against: `wire` with the removed keywords
    /// kept, and optional properties optional (neither required nor made nullable).
    pub validation: Value,
    /// The keywords removed from `wire`, in the order they were met.
    pub removed: Vec<RemovedKeyword>,
}

/// A keyword the normaliser removed from the wire schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedKeyword {
    /// JSON pointer of the schema object that held it.
    pub pointer: String,
    /// The keyword.
    pub keyword: String,
}

/// Normalises `schema` for strict mode; see the module documentation for the rules.
///
/// # Errors
///
/// [`RequestError::NotStrict`] naming the JSON pointer of the first construct strict
/// mode cannot express.
pub fn normalize_strict(schema: &Value) -> Result<StrictSchema, RequestError> {
    // Walked in key order, so `required` and the removed keywords come out in the same
    // order whatever serde_json's features.
    let schema = &aptix_model::canonical::sorted(schema);
    let mut wire = Walker::new(schema, Mode::Wire);
    let wire_schema = wire.root()?;
    let mut validation = Walker::new(schema, Mode::Validation);
    let validation_schema = validation.root()?;
    Ok(StrictSchema {
        wire: wire_schema,
        validation: validation_schema,
        removed: wire.removed,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Remove what strict mode does not take.
    Wire,
    /// Keep removable keywords, for validating the solution.
    Validation,
}

struct Walker<'r> {
    root: &'r Value,
    mode: Mode,
    removed: Vec<RemovedKeyword>,
    /// References being inlined, outermost first: inlining one of them again is a cycle.
    inlining: Vec<String>,
}

fn not_strict(pointer: &str, reason: impl Into<String>) -> RequestError {
    RequestError::NotStrict {
        pointer: pointer.to_owned(),
        reason: reason.into(),
    }
}

/// `pointer` extended by one reference token, escaped as RFC 6901 says.
fn child(pointer: &str, token: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for character in token.chars() {
        match character {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            other => out.push(other),
        }
    }
    out
}

impl<'r> Walker<'r> {
    fn new(root: &'r Value, mode: Mode) -> Walker<'r> {
        Walker {
            root,
            mode,
            removed: Vec::new(),
            inlining: Vec::new(),
        }
    }

    fn root(&mut self) -> Result<Value, RequestError> {
        let Value::Object(map) = self.root else {
            return Err(not_strict(
                "",
                "the root of a strict schema must be an object schema",
            ));
        };
        let mut map = map.clone();
        // The root's own identity and dialect are annotations of the document; `$id`
        // is only rejected where it would re-root nested references.
        if map.remove("$id").is_some() && self.mode == Mode::Wire {
            self.note_removed("", "$id");
        }
        if self.mode == Mode::Wire && map.remove("$schema").is_some() {
            self.note_removed("", "$schema");
        }
        if !map.contains_key("type") && map.contains_key("properties") {
            map.insert("type".to_owned(), Value::String("object".to_owned()));
        }
        if map.get("type").and_then(Value::as_str) != Some("object") {
            // Said of what the root has, so that a misspelt type is not read as a union.
            let has = match map.get("type") {
                None if map.contains_key("anyOf") || map.contains_key("oneOf") => {
                    "a union (anyOf/oneOf)".to_owned()
                }
                None => "no \"type\"".to_owned(),
                Some(Value::Array(_)) => "a list of types (a union)".to_owned(),
                Some(other) => format!("\"type\": {other}"),
            };
            return Err(not_strict(
                "",
                format!(
                    "the root of a strict schema must have \"type\": \"object\"; it has {has} \
                     (wrap it as an object's property, or use the prompt_only strategy, which \
                     takes any root)"
                ),
            ));
        }
        self.node(&Value::Object(map), "", 0)
    }

    fn note_removed(&mut self, pointer: &str, keyword: &str) {
        self.removed.push(RemovedKeyword {
            pointer: pointer.to_owned(),
            keyword: keyword.to_owned(),
        });
    }

    fn node(&mut self, schema: &Value, pointer: &str, depth: usize) -> Result<Value, RequestError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(not_strict(
                pointer,
                format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        let Value::Object(map) = schema else {
            return Err(not_strict(
                pointer,
                "a boolean or non-object schema cannot be strict; give it a \"type\"",
            ));
        };
        if let Some(reference) = map.get("$ref") {
            let reference = local_reference(reference, pointer)?;
            // A reference into a property's schema is inlined too: on the wire that
            // schema may have been made nullable (an optional property), and the
            // reference must keep what it named.
            let into_property = reference.split('/').any(|segment| segment == "properties");
            if map.len() > 1 || into_property {
                return self.inline(map, reference, pointer, depth);
            }
            self.names_a_schema(reference, pointer)?;
            return Ok(schema.clone());
        }
        let map = merge_all_of(map, pointer)?;
        let mut out = Map::new();
        for (keyword, value) in &map {
            self.keyword(keyword, value, &map, pointer, depth, &mut out)?;
        }
        let typed = ["type", "anyOf", "oneOf", "enum", "const"]
            .iter()
            .any(|keyword| out.contains_key(*keyword));
        if !typed {
            return Err(not_strict(
                pointer,
                "a schema without \"type\", \"$ref\", \"anyOf\", \"enum\" or \"const\" accepts anything, which strict mode cannot express",
            ));
        }
        if out.contains_key("anyOf") && out.contains_key("oneOf") {
            return Err(not_strict(
                pointer,
                "\"anyOf\" and \"oneOf\" together are not supported",
            ));
        }
        if has_type_in(&out, "object") || out.contains_key("properties") {
            close_object(&mut out, &map, pointer, self.mode)?;
        }
        if has_type_in(&out, "array") && !out.contains_key("items") {
            return Err(not_strict(
                pointer,
                "an array without \"items\" cannot be strict",
            ));
        }
        Ok(Value::Object(out))
    }

    /// Normalises one keyword of a schema object into `out`.
    fn keyword(
        &mut self,
        keyword: &str,
        value: &Value,
        parent: &Map<String, Value>,
        pointer: &str,
        depth: usize,
        out: &mut Map<String, Value>,
    ) -> Result<(), RequestError> {
        let here = child(pointer, keyword);
        if let Some(reason) = rejection(keyword) {
            return Err(not_strict(&here, reason));
        }
        let normalised = match keyword {
            "properties" | "$defs" | "definitions" => {
                let Value::Object(members) = value else {
                    return Err(not_strict(
                        &here,
                        format!("\"{keyword}\" must be an object"),
                    ));
                };
                let mut normalised = Map::new();
                for (name, member) in members {
                    let member = self.node(member, &child(&here, name), depth + 1)?;
                    normalised.insert(name.clone(), member);
                }
                Value::Object(normalised)
            }
            "items" => match value {
                Value::Object(_) => self.node(value, &here, depth + 1)?,
                _ => {
                    return Err(not_strict(
                        &here,
                        "\"items\" must be one schema; tuples are not supported in strict mode",
                    ));
                }
            },
            "anyOf" | "oneOf" => {
                let branches = match value {
                    Value::Array(branches) if !branches.is_empty() => branches,
                    _ => {
                        return Err(not_strict(
                            &here,
                            format!("\"{keyword}\" must be a non-empty list of schemas"),
                        ));
                    }
                };
                let mut normalised = Vec::with_capacity(branches.len());
                for (index, branch) in branches.iter().enumerate() {
                    normalised.push(self.node(
                        branch,
                        &child(&here, &index.to_string()),
                        depth + 1,
                    )?);
                }
                Value::Array(normalised)
            }
            "additionalProperties" => match value {
                Value::Bool(false) => Value::Bool(false),
                // Closed, the object would refuse what the caller's schema allows: an
                // answer with more properties passed or failed by the strategy used.
                Value::Bool(true) => {
                    return Err(not_strict(
                        &here,
                        "\"additionalProperties\": true lets the object hold properties it does not name, which strict mode cannot express: name them in \"properties\", set it to false, or use the json_object strategy",
                    ));
                }
                _ => {
                    return Err(not_strict(
                        &here,
                        "\"additionalProperties\" with a schema describes a map, which strict mode cannot express",
                    ));
                }
            },
            "format" if self.mode == Mode::Wire => {
                let known = value
                    .as_str()
                    .is_some_and(|name| STRING_FORMATS.contains(&name));
                if known && has_type_in(parent, "string") {
                    value.clone()
                } else {
                    self.note_removed(pointer, keyword);
                    return Ok(());
                }
            }
            _ if is_kept(keyword) || self.mode == Mode::Validation => value.clone(),
            _ => {
                self.note_removed(pointer, keyword);
                return Ok(());
            }
        };
        let key = if keyword == "oneOf" && self.mode == Mode::Wire {
            "anyOf"
        } else {
            keyword
        };
        out.insert(key.to_owned(), normalised);
        Ok(())
    }

    /// Checks that a bare `$ref` leads to a schema: it resolves, and a chain of bare
    /// references from it ends somewhere else than where it began (a cycle of them
    /// names no schema, so accepts anything).
    fn names_a_schema(&self, reference: &str, pointer: &str) -> Result<(), RequestError> {
        let at = child(pointer, "$ref");
        let mut seen = vec![reference];
        let mut current = reference;
        loop {
            let target = self
                .root
                .pointer(current.trim_start_matches('#'))
                .ok_or_else(|| {
                    not_strict(&at, format!("reference {current:?} does not resolve"))
                })?;
            let next = target
                .as_object()
                .filter(|target| target.len() == 1)
                .and_then(|target| target.get("$ref"))
                .and_then(Value::as_str);
            match next {
                Some(next) if seen.contains(&next) => {
                    return Err(not_strict(
                        &at,
                        format!(
                            "reference {reference:?} leads only to references, back to {next:?}: it names no schema, so accepts anything, which strict mode cannot express"
                        ),
                    ));
                }
                Some(next) => {
                    seen.push(next);
                    current = next;
                }
                None => return Ok(()),
            }
        }
    }

    /// Replaces `{"$ref": r, ...siblings}` by the schema `r` names with the siblings
    /// laid over it, then normalises that.
    fn inline(
        &mut self,
        map: &Map<String, Value>,
        reference: &str,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, RequestError> {
        if self.inlining.iter().any(|seen| seen == reference) {
            return Err(not_strict(
                &child(pointer, "$ref"),
                format!("reference {reference:?} with sibling keywords refers to itself"),
            ));
        }
        let target = self
            .root
            .pointer(reference.trim_start_matches('#'))
            .ok_or_else(|| {
                not_strict(
                    &child(pointer, "$ref"),
                    format!("reference {reference:?} does not resolve"),
                )
            })?;
        let Value::Object(target) = target else {
            return Err(not_strict(
                &child(pointer, "$ref"),
                format!("reference {reference:?} does not name a schema object"),
            ));
        };
        let mut merged = target.clone();
        for (keyword, value) in map {
            if keyword != "$ref" {
                merged.insert(keyword.clone(), value.clone());
            }
        }
        self.inlining.push(reference.to_owned());
        let result = self.node(&Value::Object(merged), pointer, depth + 1);
        self.inlining.pop();
        result
    }
}

/// The reference of a `$ref`, which must be a local one (`#`, `#/$defs/...`).
fn local_reference<'v>(reference: &'v Value, pointer: &str) -> Result<&'v str, RequestError> {
    match reference.as_str() {
        Some(text) if text == "#" || text.starts_with("#/") => Ok(text),
        _ => Err(not_strict(
            &child(pointer, "$ref"),
            "only local references (\"#\" or \"#/...\") are supported",
        )),
    }
}

/// The schema object with a one-element `allOf` merged in; a longer one is rejected, as
/// is a merge where both sides set the same keyword differently.
fn merge_all_of(
    map: &Map<String, Value>,
    pointer: &str,
) -> Result<Map<String, Value>, RequestError> {
    let Some(all_of) = map.get("allOf") else {
        return Ok(map.clone());
    };
    let here = child(pointer, "allOf");
    let part = match all_of.as_array().map(Vec::as_slice) {
        Some([Value::Object(part)]) => part,
        _ => {
            return Err(not_strict(
                &here,
                "\"allOf\" is supported only with exactly one schema object",
            ));
        }
    };
    if part.contains_key("$ref") {
        return Err(not_strict(
            &here,
            "\"allOf\" around a \"$ref\" is not supported; use the \"$ref\" directly",
        ));
    }
    let mut merged: Map<String, Value> = map
        .iter()
        .filter(|(keyword, _)| keyword.as_str() != "allOf")
        .map(|(keyword, value)| (keyword.clone(), value.clone()))
        .collect();
    for (keyword, value) in part {
        match merged.get(keyword) {
            Some(existing) if existing != value => {
                return Err(not_strict(
                    &child(&child(&here, "0"), keyword),
                    format!("\"{keyword}\" conflicts with the same keyword beside \"allOf\""),
                ));
            }
            _ => {
                merged.insert(keyword.clone(), value.clone());
            }
        }
    }
    Ok(merged)
}

/// Whether `type` is `kind` or a list holding it.
fn has_type_in(map: &Map<String, Value>, kind: &str) -> bool {
    match map.get("type") {
        Some(Value::String(single)) => single == kind,
        Some(Value::Array(kinds)) => kinds.iter().any(|each| each == kind),
        _ => false,
    }
}

/// Closes an (already normalised) object schema: every property required, optional ones
/// nullable, no additional properties.
fn close_object(
    out: &mut Map<String, Value>,
    original: &Map<String, Value>,
    pointer: &str,
    mode: Mode,
) -> Result<(), RequestError> {
    let explicitly_closed = original.get("additionalProperties") == Some(&Value::Bool(false));
    let mut properties = match out.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ if explicitly_closed => Map::new(),
        _ => {
            return Err(not_strict(
                pointer,
                "an object without \"properties\" would only accept {}; declare its properties",
            ));
        }
    };
    let declared: Vec<String> = match original.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names
            .iter()
            .map(|name| {
                name.as_str().map(str::to_owned).ok_or_else(|| {
                    not_strict(
                        &child(pointer, "required"),
                        "\"required\" must list strings",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(not_strict(
                &child(pointer, "required"),
                "\"required\" must be a list",
            ));
        }
    };
    if let Some(missing) = declared.iter().find(|name| !properties.contains_key(*name)) {
        return Err(not_strict(
            &child(pointer, "required"),
            format!("required property {missing:?} has no schema in \"properties\""),
        ));
    }
    let mut required: Vec<Value> = Vec::with_capacity(properties.len());
    for name in &declared {
        if !required.iter().any(|seen| seen.as_str() == Some(name)) {
            required.push(Value::String(name.clone()));
        }
    }
    // The solution is judged with optional properties optional: a `null` strict mode
    // made the model write for one is read as absent first (`aptix-schema`'s `absent`).
    if mode == Mode::Wire {
        for (name, schema) in properties.iter_mut() {
            if !declared.contains(name) {
                *schema = nullable(std::mem::take(schema));
                required.push(Value::String(name.clone()));
            }
        }
    }
    out.insert("properties".to_owned(), Value::Object(properties));
    out.insert("required".to_owned(), Value::Array(required));
    out.insert("additionalProperties".to_owned(), Value::Bool(false));
    Ok(())
}
