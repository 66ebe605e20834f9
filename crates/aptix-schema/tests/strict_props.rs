//! Property tests of the strict normaliser over generated schemas and instances.
//!
//! A schema is generated as a small tree (strings with length limits and formats,
//! integers with bounds, booleans, enums, arrays, objects with required and optional
//! properties, `anyOf`, `oneOf` of disjoint types, `$ref`s into `$defs`, with and
//! without sibling keywords), together with an instance the input schema accepts, in
//! which optional properties may be absent. The properties:
//!
//! - normalising is idempotent (the wire schema is its own normal form);
//! - the input schema accepts the instance (the generator is right);
//! - the wire schema accepts the instance once every absent optional property is
//!   filled with `null` (what a strict model writes), and the validation schema accepts
//!   it as it is (optional properties stay optional there);
//! - an answer written the strict way, the `null`s filled in, is accepted as the
//!   instance itself: the solution has the shape the caller's schema describes.

use aptix_model::wire::Response;
use aptix_schema::{
    HandlerRegistry, SchemaRequest, SchemaSupport, Verdict, normalize_strict, prepare,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A generated schema.
#[derive(Debug, Clone)]
enum Node {
    Str {
        min_length: Option<u8>,
        format: Option<&'static str>,
    },
    Int {
        minimum: Option<i8>,
        format: bool,
    },
    Bool,
    Enum(Vec<&'static str>),
    Array(Box<Node>, Option<u8>),
    /// Properties as (schema, required).
    Object(Vec<(Node, bool)>),
    AnyOf(Vec<Node>),
    /// `oneOf` of a string and an integer: disjoint, so exactly one branch matches.
    OneOfStrInt,
    /// A reference to `$defs/D{index}`, with a `description` beside it or not.
    Ref(usize, bool),
}

/// A generated instance: leaves, arrays, and objects whose optional members may be
/// absent.
#[derive(Debug, Clone)]
enum Inst {
    Leaf(Value),
    Array(Vec<Inst>),
    Object(Vec<(String, Option<Inst>)>),
}

fn property_name(index: usize) -> String {
    format!("p{index}")
}

fn leaf(defs: usize) -> BoxedStrategy<Node> {
    let mut leaves = vec![
        (
            prop::option::of(0u8..4),
            prop::option::of(prop::sample::select(vec!["uri", "email", "date-time"])),
        )
            .prop_map(|(min_length, format)| Node::Str { min_length, format })
            .boxed(),
        (prop::option::of(-5i8..5), any::<bool>())
            .prop_map(|(minimum, format)| Node::Int { minimum, format })
            .boxed(),
        Just(Node::Bool).boxed(),
        prop::sample::subsequence(vec!["a", "b", "c"], 1..=3)
            .prop_map(Node::Enum)
            .boxed(),
        Just(Node::OneOfStrInt).boxed(),
    ];
    if defs > 0 {
        leaves.push(
            (0..defs, any::<bool>())
                .prop_map(|(index, described)| Node::Ref(index, described))
                .boxed(),
        );
    }
    prop::strategy::Union::new(leaves).boxed()
}

fn object(inner: BoxedStrategy<Node>) -> BoxedStrategy<Node> {
    prop::collection::vec((inner, any::<bool>()), 0..4)
        .prop_map(Node::Object)
        .boxed()
}

fn node(defs: usize) -> BoxedStrategy<Node> {
    leaf(defs)
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                (inner.clone(), prop::option::of(0u8..2))
                    .prop_map(|(items, min)| Node::Array(Box::new(items), min)),
                object(inner.clone()),
                prop::collection::vec(inner, 1..3).prop_map(Node::AnyOf),
            ]
        })
        .boxed()
}

/// `$defs` (leaves and flat objects, which reference nothing) and a root object.
fn document() -> impl Strategy<Value = (Vec<Node>, Node)> {
    prop::collection::vec(prop_oneof![leaf(0), object(leaf(0))], 0..3).prop_flat_map(|defs| {
        let count = defs.len();
        (Just(defs), object(node(count)))
    })
}

fn schema_of(node: &Node) -> Value {
    match node {
        Node::Str { min_length, format } => {
            let mut schema = json!({"type": "string"});
            if let Some(min) = min_length {
                schema["minLength"] = json!(min);
            }
            if let Some(format) = format {
                schema["format"] = json!(format);
            }
            schema
        }
        Node::Int { minimum, format } => {
            let mut schema = json!({"type": "integer"});
            if let Some(minimum) = minimum {
                schema["minimum"] = json!(minimum);
            }
            if *format {
                schema["format"] = json!("int32");
            }
            schema
        }
        Node::Bool => json!({"type": "boolean"}),
        Node::Enum(values) => json!({"type": "string", "enum": values}),
        Node::Array(items, min) => {
            let mut schema = json!({"type": "array", "items": schema_of(items)});
            if let Some(min) = min {
                schema["minItems"] = json!(min);
            }
            schema
        }
        Node::Object(properties) => {
            let mut members = Map::new();
            let mut required = Vec::new();
            for (index, (property, is_required)) in properties.iter().enumerate() {
                members.insert(property_name(index), schema_of(property));
                if *is_required {
                    required.push(json!(property_name(index)));
                }
            }
            json!({"type": "object", "properties": members, "required": required})
        }
        Node::AnyOf(branches) => {
            json!({"anyOf": branches.iter().map(schema_of).collect::<Vec<_>>()})
        }
        Node::OneOfStrInt => json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        Node::Ref(index, described) => {
            let mut schema = json!({"$ref": format!("#/$defs/D{index}")});
            if *described {
                schema["description"] = json!("a described reference");
            }
            schema
        }
    }
}

fn instance(node: &Node, defs: &[Node]) -> BoxedStrategy<Inst> {
    match node {
        Node::Str { min_length, format } => {
            let min = usize::from(min_length.unwrap_or(0));
            // A string of its format, as answers are held to formats (the minimum
            // length, at most 3, is met by every one of them).
            let format = *format;
            prop::collection::vec(prop::char::range('a', 'z'), min..min + 4)
                .prop_map(move |chars| {
                    let word: String = chars.into_iter().collect();
                    Inst::Leaf(json!(match format {
                        Some("uri") => format!("https://{word}.example/"),
                        Some("email") => format!("{word}x@example.com"),
                        Some("date-time") => "2026-11-29T12:00:00Z".to_owned(),
                        _ => word,
                    }))
                })
                .boxed()
        }
        Node::Int { minimum, .. } => {
            let min = i64::from(minimum.unwrap_or(-20));
            (min..min + 40).prop_map(|n| Inst::Leaf(json!(n))).boxed()
        }
        Node::Bool => any::<bool>().prop_map(|b| Inst::Leaf(json!(b))).boxed(),
        Node::Enum(values) => prop::sample::select(values.clone())
            .prop_map(|value| Inst::Leaf(json!(value)))
            .boxed(),
        Node::Array(items, min) => {
            let min = usize::from(min.unwrap_or(0));
            prop::collection::vec(instance(items, defs), min..min + 3)
                .prop_map(Inst::Array)
                .boxed()
        }
        Node::Object(properties) => {
            let members: Vec<BoxedStrategy<(String, Option<Inst>)>> = properties
                .iter()
                .enumerate()
                .map(|(index, (property, required))| {
                    let name = property_name(index);
                    let value = instance(property, defs);
                    if *required {
                        value
                            .prop_map(move |inst| (name.clone(), Some(inst)))
                            .boxed()
                    } else {
                        prop::option::of(value)
                            .prop_map(move |inst| (name.clone(), inst))
                            .boxed()
                    }
                })
                .collect();
            members.prop_map(Inst::Object).boxed()
        }
        Node::AnyOf(branches) => {
            let options: Vec<BoxedStrategy<Inst>> = branches
                .iter()
                .map(|branch| instance(branch, defs))
                .collect();
            prop::strategy::Union::new(options).boxed()
        }
        Node::OneOfStrInt => prop_oneof![
            "[a-z]{0,3}".prop_map(|s| Inst::Leaf(json!(s))),
            any::<i32>().prop_map(|n| Inst::Leaf(json!(n))),
        ]
        .boxed(),
        Node::Ref(index, _) => match defs.get(*index) {
            Some(target) => instance(target, defs),
            None => Just(Inst::Leaf(Value::Null)).boxed(),
        },
    }
}

/// The instance as JSON; absent members are left out, or written as `null` when
/// `fill_null`.
fn render(inst: &Inst, fill_null: bool) -> Value {
    match inst {
        Inst::Leaf(value) => value.clone(),
        Inst::Array(items) => {
            Value::Array(items.iter().map(|item| render(item, fill_null)).collect())
        }
        Inst::Object(members) => {
            let mut object = Map::new();
            for (name, member) in members {
                match member {
                    Some(member) => {
                        object.insert(name.clone(), render(member, fill_null));
                    }
                    None if fill_null => {
                        object.insert(name.clone(), Value::Null);
                    }
                    None => {}
                }
            }
            Value::Object(object)
        }
    }
}

fn case() -> impl Strategy<Value = (Value, Inst)> {
    document().prop_flat_map(|(defs, root)| {
        let mut schema = schema_of(&root);
        if !defs.is_empty() {
            let definitions: Map<String, Value> = defs
                .iter()
                .enumerate()
                .map(|(index, def)| (format!("D{index}"), schema_of(def)))
                .collect();
            schema["$defs"] = Value::Object(definitions);
        }
        let inst = instance(&root, &defs);
        (Just(schema), inst)
    })
}

fn accepts(schema: &Value, instance: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|error| error.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn normalising_is_idempotent_and_loses_no_instance((schema, inst) in case()) {
        let strict = normalize_strict(&schema).map_err(|error| TestCaseError::fail(error.to_string()))?;
        let again = normalize_strict(&strict.wire).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(&again.wire, &strict.wire);
        prop_assert!(again.removed.is_empty(), "removed again: {:?}", again.removed);

        let sparse = render(&inst, false);
        let filled = render(&inst, true);
        prop_assert_eq!(accepts(&schema, &sparse), Ok(()), "input rejects its own instance {}", sparse);
        prop_assert_eq!(accepts(&strict.wire, &filled), Ok(()), "wire {} rejects {}", strict.wire, filled);
        prop_assert_eq!(accepts(&strict.validation, &sparse), Ok(()), "validation {} rejects {}", strict.validation, sparse);

        let prepared = prepare(
            SchemaRequest::new("m", schema.clone()).user("q"),
            &HandlerRegistry::default(),
            &SchemaSupport::full(),
            Some(aptix_schema::Strategy::NativeSchema),
        )
        .map_err(|error| TestCaseError::fail(error.to_string()))?;
        let reply: Response = serde_json::from_value(json!({
            "id": "resp_1", "status": "completed",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": filled.to_string()}]}]
        }))
        .map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(prepared.evaluate(&reply, 1), Verdict::Accepted(sparse.clone()), "schema {}", schema);
    }
}
