//! `null` as the spelling of "absent": the one rule by which an answer's `null` members
//! that the caller's schema does not allow are read as members left out.
//!
//! Strict mode has no optional properties: the strict normaliser makes every property
//! required and an optional one nullable, so a model constrained by it writes
//! `"nick": null` for a nickname it does not have. A model in JSON mode often does the
//! same. The caller's schema (`"nick": {"type": "string"}`, not required) says the
//! member is left out, not `null`. So before an answer is judged, every `null` member
//! of an object whose property is not required and whose schema does not accept `null`
//! is removed: the answer is then judged by the caller's own rules, and the solution
//! returned is one the caller's schema accepts (a typed reader sees the field absent,
//! as `#[serde(default)]` and `Option` expect). A `null` the schema allows, or one of a
//! required property, is kept for the validator to judge.

use serde_json::Value;

/// How many schema steps (`$ref`, `allOf`, a chosen `anyOf` branch, a property, an
/// item) one walk may take: past it the rest of the answer is left as it is and the
/// validator judges it. Bounds a schema whose references loop without the answer going
/// deeper.
const MAX_STEPS: usize = 256;

/// How many schema steps one walk may take in all: a schema whose unions or `allOf`s
/// refer to themselves twice over would otherwise double the work at every step.
/// Past it, what is left is the validator's to judge.
const MAX_WORK: usize = 100_000;

/// Removes, at any depth of `answer`, the `null` members `schema` reads as absent (see
/// the module documentation). `schema` is the whole schema document: local references
/// (`#/$defs/...`) are resolved in it.
pub(crate) fn drop_absent_nulls(answer: &mut Value, schema: &Value) {
    Walk {
        root: schema,
        work: std::cell::Cell::new(0),
    }
    .value(answer, schema, 0);
}

struct Walk<'s> {
    root: &'s Value,
    /// Steps taken so far ([`MAX_WORK`]).
    work: std::cell::Cell<usize>,
}

impl<'s> Walk<'s> {
    /// Counts one step of the walk; `true` once the walk has taken too many.
    fn spent(&self) -> bool {
        let taken = self.work.get().saturating_add(1);
        self.work.set(taken);
        taken > MAX_WORK
    }

    fn value(&self, answer: &mut Value, schema: &'s Value, steps: usize) {
        if steps > MAX_STEPS || self.spent() {
            return;
        }
        let Some(map) = schema.as_object() else {
            return;
        };
        if let Some(target) = map
            .get("$ref")
            .and_then(|reference| self.resolve(reference))
        {
            self.value(answer, target, steps + 1);
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            for branch in all {
                self.value(answer, branch, steps + 1);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = map.get(keyword) else {
                continue;
            };
            match self.branches_of(answer, branches).as_slice() {
                [] => {}
                [branch] => self.value(answer, branch, steps + 1),
                // Several fit: a `null` member every one of them reads as absent is.
                several => {
                    if let Value::Object(members) = answer {
                        members.retain(|name, member| {
                            !(member.is_null()
                                && several
                                    .iter()
                                    .all(|branch| self.reads_as_absent(branch, name, steps + 1)))
                        });
                    }
                }
            }
        }
        match answer {
            Value::Object(members) => {
                let Some(Value::Object(properties)) = map.get("properties") else {
                    return;
                };
                let absent: Vec<&String> = properties
                    .keys()
                    .filter(|name| {
                        matches!(members.get(name.as_str()), Some(Value::Null))
                            && self.reads_as_absent(schema, name, steps + 1)
                    })
                    .collect();
                if !absent.is_empty() {
                    // `retain`, not `remove`: with serde_json's `preserve_order` (which
                    // the ACP SDK turns on) `remove` moves the last member into the gap,
                    // and the answer should keep the order it was written in.
                    members.retain(|name, _| !absent.contains(&name));
                }
                for (name, property) in properties {
                    if let Some(member) = members.get_mut(name) {
                        self.value(member, property, steps + 1);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = map.get("items").filter(|item| item.is_object()) {
                    for element in items {
                        self.value(element, item, steps + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether the object schema `schema` reads a `null` for its property `name` as
    /// absent: it declares the property, does not require it, and its schema does not
    /// accept `null`.
    fn reads_as_absent(&self, schema: &Value, name: &str, steps: usize) -> bool {
        let Some(property) = schema
            .get("properties")
            .and_then(|properties| properties.get(name))
        else {
            return false;
        };
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|required| required == name));
        !required && !self.accepts_null(property, steps)
    }

    /// The branches of an `anyOf`/`oneOf` an answer can be an instance of, for an object
    /// or an array (nothing inside other values can be absent). An object fits a branch
    /// that declares each of its members and whose required ones it has; an array, a
    /// branch of arrays. Branches that are references or unions themselves are looked
    /// through.
    fn branches_of(&self, answer: &Value, branches: &'s [Value]) -> Vec<&'s Value> {
        if !answer.is_object() && !answer.is_array() {
            return Vec::new();
        }
        let mut candidates = Vec::new();
        self.flatten(branches, &mut candidates, 0);
        candidates.retain(|branch| self.fits(answer, branch));
        candidates
    }

    /// Whether an object or array `answer` fits the union branch `branch` (see
    /// [`branches_of`](Self::branches_of)).
    fn fits(&self, answer: &Value, branch: &Value) -> bool {
        (answer.is_object() || answer.is_array()) && self.could_be(answer, branch, 0)
    }

    /// Whether `value` could be an instance of `schema`, by its shape alone: its JSON
    /// type, an object's members (each declared; each required one given, and not as a
    /// `null` its schema refuses), an array's elements, `enum` and `const`. Absent
    /// members are not yet removed, so a `null` of an optional member is not held
    /// against it. `true` whenever that cannot be told.
    fn could_be(&self, value: &Value, schema: &Value, steps: usize) -> bool {
        let Some(map) = schema.as_object() else {
            return schema.as_bool().unwrap_or(true);
        };
        if steps > MAX_STEPS || self.spent() {
            return true;
        }
        if let Some(reference) = map.get("$ref") {
            match self.resolve(reference) {
                Some(target) if !self.could_be(value, target, steps + 1) => return false,
                _ => {}
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword)
                && !branches
                    .iter()
                    .any(|branch| self.could_be(value, branch, steps + 1))
            {
                return false;
            }
        }
        if let Some(kinds) = map.get("type") {
            let named = |kind: &str| match kinds {
                Value::String(one) => one == kind,
                Value::Array(many) => many.iter().any(|one| one == kind),
                _ => true,
            };
            let typed = match value {
                Value::Null => named("null"),
                Value::Bool(_) => named("boolean"),
                Value::Number(number) => {
                    named("number") || (named("integer") && (number.is_i64() || number.is_u64()))
                }
                Value::String(_) => named("string"),
                Value::Array(_) => named("array"),
                Value::Object(_) => named("object"),
            };
            if !typed {
                return false;
            }
        }
        if map.get("const").is_some_and(|constant| constant != value) {
            return false;
        }
        if let Some(Value::Array(values)) = map.get("enum")
            && !values.contains(value)
        {
            return false;
        }
        match value {
            Value::Object(members) => {
                let Some(properties) = map.get("properties").and_then(Value::as_object) else {
                    return true;
                };
                // A branch that does not declare a member fits it only if it takes
                // others (strict mode's objects, closed, say they do not).
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                if closed && !members.keys().all(|name| properties.contains_key(name)) {
                    return false;
                }
                let required = map.get("required").and_then(Value::as_array);
                let is_required =
                    |name: &str| required.is_some_and(|names| names.iter().any(|n| n == name));
                if required.is_some_and(|names| {
                    names.iter().any(|name| {
                        name.as_str()
                            .is_some_and(|name| !members.contains_key(name))
                    })
                }) {
                    return false;
                }
                members.iter().all(|(name, member)| {
                    let Some(property) = properties.get(name) else {
                        return true;
                    };
                    if member.is_null() && !is_required(name) {
                        return true;
                    }
                    self.could_be(member, property, steps + 1)
                })
            }
            Value::Array(elements) => match map.get("items") {
                Some(item) if item.is_object() => elements
                    .iter()
                    .all(|element| self.could_be(element, item, steps + 1)),
                _ => true,
            },
            _ => true,
        }
    }

    /// The branches of a union, with a branch that is only a reference replaced by what
    /// it names and one that is only a union replaced by its own branches.
    fn flatten(&self, branches: &'s [Value], out: &mut Vec<&'s Value>, steps: usize) {
        if steps > MAX_STEPS || self.spent() {
            return;
        }
        for branch in branches {
            let branch = match branch.get("$ref") {
                Some(reference) if branch.get("properties").is_none() => {
                    match self.resolve(reference) {
                        Some(target) => target,
                        None => continue,
                    }
                }
                _ => branch,
            };
            let nested = ["anyOf", "oneOf"]
                .iter()
                .find_map(|keyword| branch.get(*keyword).and_then(Value::as_array));
            match nested {
                Some(nested) if branch.get("properties").is_none() => {
                    self.flatten(nested, out, steps + 1);
                }
                _ => out.push(branch),
            }
        }
    }

    /// Whether `schema` accepts `null`; `true` whenever that cannot be told (a
    /// reference that does not resolve, a loop), so that an unclear `null` is kept and
    /// judged by the validator rather than dropped.
    fn accepts_null(&self, schema: &Value, steps: usize) -> bool {
        let map = match schema {
            Value::Bool(accepts) => return *accepts,
            Value::Object(map) => map,
            _ => return true,
        };
        if steps > MAX_STEPS || self.spent() {
            return true;
        }
        if let Some(reference) = map.get("$ref") {
            match self.resolve(reference) {
                Some(target) if !self.accepts_null(target, steps + 1) => return false,
                Some(_) => {}
                None => return true,
            }
        }
        let type_allows = match map.get("type") {
            None => true,
            Some(Value::String(kind)) => kind == "null",
            Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
            Some(_) => true,
        };
        let const_allows = map.get("const").is_none_or(Value::is_null);
        let enum_allows = match map.get("enum") {
            Some(Value::Array(values)) => values.iter().any(Value::is_null),
            _ => true,
        };
        let unions_allow = ["anyOf", "oneOf"]
            .iter()
            .all(|keyword| match map.get(*keyword) {
                Some(Value::Array(branches)) => branches
                    .iter()
                    .any(|branch| self.accepts_null(branch, steps + 1)),
                _ => true,
            });
        let all_allow = match map.get("allOf") {
            Some(Value::Array(branches)) => branches
                .iter()
                .all(|branch| self.accepts_null(branch, steps + 1)),
            _ => true,
        };
        type_allows && const_allows && enum_allows && unions_allow && all_allow
    }

    /// The schema a local reference (`#`, `#/$defs/Name`) names in the document.
    fn resolve(&self, reference: &Value) -> Option<&'s Value> {
        let pointer = reference.as_str()?.strip_prefix('#')?;
        let pointer = percent_decoded(pointer)?;
        self.root.pointer(&pointer)
    }
}

/// A URI fragment's `%XX` escapes decoded (`#/$defs/My%20Type`); `None` when one is
/// malformed or the result is not UTF-8.
fn percent_decoded(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dropped(mut answer: Value, schema: &Value) -> Value {
        drop_absent_nulls(&mut answer, schema);
        answer
    }

    #[test]
    fn an_optional_member_the_schema_gives_no_null_is_read_as_absent() {
        let schema = json!({
            "type": "object",
            "properties": {
                "capital": {"type": "string"},
                "nick": {"type": "string"},
                "motto": {"type": ["string", "null"]},
                "code": {"type": "string"},
                "tags": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
                    "required": ["name"]
                }}
            },
            "required": ["capital", "code"]
        });
        let answer = json!({
            "capital": "Paris", "nick": null, "motto": null, "code": null,
            "tags": [{"name": "fr", "note": null}, {"name": "eu", "note": "x"}]
        });
        assert_eq!(
            dropped(answer, &schema),
            // `motto` allows null; `code` is required, so its null is the validator's.
            json!({
                "capital": "Paris", "motto": null, "code": null,
                "tags": [{"name": "fr"}, {"name": "eu", "note": "x"}]
            })
        );
    }

    #[test]
    fn references_all_of_and_the_fitting_union_branch_are_followed() {
        let schema = json!({
            "$defs": {
                "Cat": {"type": "object", "properties": {
                    "kind": {"const": "cat"}, "lives": {"type": "integer"}
                }, "required": ["kind"]},
                "Dog": {"type": "object", "properties": {
                    "kind": {"const": "dog"}, "bark": {"type": "string"}
                }, "required": ["kind"]},
                "Name": {"type": "string"},
                "Loop": {"$ref": "#/$defs/Loop"}
            },
            "type": "object",
            "properties": {
                "pet": {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]},
                "name": {"$ref": "#/$defs/Name"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Name"}, {"type": "null"}]},
                "looped": {"$ref": "#/$defs/Loop"},
                "merged": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}]}
            }
        });
        let answer = json!({
            "pet": {"kind": "dog", "bark": null},
            "name": null, "maybe": null, "looped": null,
            "merged": {"a": null}
        });
        assert_eq!(
            dropped(answer, &schema),
            json!({"pet": {"kind": "dog"}, "maybe": null, "looped": null, "merged": {}})
        );
    }

    #[test]
    fn a_schema_that_refers_to_itself_twice_over_ends() {
        let schema = json!({
            "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}],
                            "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}]}},
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}}
        });
        let answer = json!({"a": {"b": null}});
        assert_eq!(dropped(answer.clone(), &schema), answer);
    }

    #[test]
    fn what_cannot_be_told_is_left_for_the_validator() {
        let schema = json!({
            "type": "object",
            "properties": {
                "remote": {"$ref": "https://example.com/s.json"},
                "any": {},
                "either": {"anyOf": [
                    {"type": "object", "properties": {"x": {"type": "string"}}},
                    {"type": "object", "properties": {"x": {"type": ["string", "null"]}, "y": {"type": "string"}}}
                ]},
                "both": {"anyOf": [
                    {"type": "object", "properties": {"x": {"type": "string"}}},
                    {"type": "object", "properties": {"x": {"enum": ["a"]}, "y": {"type": "string"}}}
                ]}
            }
        });
        // Two branches fit `either`, and one allows the null: kept.
        let answer =
            json!({"remote": null, "any": null, "either": {"x": null}, "both": {"x": null}});
        assert_eq!(
            dropped(answer, &schema),
            // Two fit `both`, and each reads the null as absent: dropped.
            json!({"remote": null, "any": null, "either": {"x": null}, "both": {}})
        );
        // Not an object schema at all: nothing to say.
        assert_eq!(
            dropped(json!({"a": null}), &json!(true)),
            json!({"a": null})
        );
        assert_eq!(
            percent_decoded("/$defs/My%20Type").as_deref(),
            Some("/$defs/My Type")
        );
        assert_eq!(percent_decoded("/bad%2"), None);
    }
}
