//! What counts as a definition in each grammar, what it is called, and which nodes
//! (comments, attributes) belong to the definition that follows them.

use tree_sitter::Node;

use crate::language::Grammar;

/// A definition node: its unqualified name and whether it holds other definitions
/// worth naming (classes, impls, modules) rather than code (functions).
pub(crate) struct Definition<'t> {
    pub(crate) name: String,
    pub(crate) is_container: bool,
    /// The definition proper: `node` itself, or the node inside a wrapper.
    pub(crate) node: Node<'t>,
}

impl Grammar {
    /// How qualified names are joined: `Type::method` in Rust, `Class.method` elsewhere.
    pub(crate) fn separator(self) -> &'static str {
        match self {
            Grammar::Rust => "::",
            _ => ".",
        }
    }

    /// Comments and attributes: merged into the definition after them.
    pub(crate) fn is_leading_trivia(self, kind: &str) -> bool {
        kind.contains("comment")
            || matches!(
                (self, kind),
                (Grammar::Rust, "attribute_item")
                    | (Grammar::CSharp, "attribute_list")
                    | (
                        Grammar::TypeScript | Grammar::Tsx | Grammar::JavaScript,
                        "decorator"
                    )
            )
    }

    /// The definition `node` is, if any, looking through wrappers such as `export` or
    /// Python decorators.
    pub(crate) fn definition<'t>(self, node: Node<'t>, source: &[u8]) -> Option<Definition<'t>> {
        let kind = node.kind();
        let named = |is_container| {
            let name = text(node.child_by_field_name("name")?, source)?;
            Some(Definition {
                name,
                is_container,
                node,
            })
        };
        match self {
            Grammar::Rust => match kind {
                "function_item"
                | "function_signature_item"
                | "macro_definition"
                | "struct_item"
                | "enum_item"
                | "union_item"
                | "type_item"
                | "const_item"
                | "static_item" => named(false),
                "trait_item" | "mod_item" => named(true),
                "impl_item" => {
                    let name = text(node.child_by_field_name("type")?, source)?;
                    let name = name.split('<').next().unwrap_or(&name).trim().to_owned();
                    Some(Definition {
                        name,
                        is_container: true,
                        node,
                    })
                }
                _ => None,
            },
            Grammar::Python => match kind {
                "function_definition" => named(false),
                "class_definition" => named(true),
                "decorated_definition" => {
                    self.definition(node.child_by_field_name("definition")?, source)
                }
                _ => None,
            },
            Grammar::TypeScript | Grammar::Tsx | Grammar::JavaScript => match kind {
                "function_declaration"
                | "generator_function_declaration"
                | "method_definition"
                | "type_alias_declaration"
                | "enum_declaration"
                | "abstract_method_signature" => named(false),
                "class_declaration"
                | "abstract_class_declaration"
                | "interface_declaration"
                | "internal_module"
                | "module" => named(true),
                "export_statement" => {
                    self.definition(node.child_by_field_name("declaration")?, source)
                }
                "lexical_declaration" | "variable_declaration" => {
                    let mut cursor = node.walk();
                    let declarator = node.named_children(&mut cursor).find(|child| {
                        child.kind() == "variable_declarator"
                            && child.child_by_field_name("value").is_some_and(|value| {
                                matches!(
                                    value.kind(),
                                    "arrow_function" | "function_expression" | "function" | "class"
                                )
                            })
                    })?;
                    let name = text(declarator.child_by_field_name("name")?, source)?;
                    Some(Definition {
                        name,
                        is_container: false,
                        node,
                    })
                }
                _ => None,
            },
            Grammar::Go => match kind {
                "function_declaration" => named(false),
                "method_declaration" => {
                    let method = text(node.child_by_field_name("name")?, source)?;
                    let receiver = node
                        .child_by_field_name("receiver")
                        .and_then(|receiver| go_receiver_type(receiver, source));
                    let name = match receiver {
                        Some(receiver) => format!("{receiver}.{method}"),
                        None => method,
                    };
                    Some(Definition {
                        name,
                        is_container: false,
                        node,
                    })
                }
                "type_declaration" => {
                    let mut cursor = node.walk();
                    let spec = node
                        .named_children(&mut cursor)
                        .find(|child| matches!(child.kind(), "type_spec" | "type_alias"))?;
                    let name = text(spec.child_by_field_name("name")?, source)?;
                    Some(Definition {
                        name,
                        is_container: false,
                        node,
                    })
                }
                _ => None,
            },
            Grammar::Java => match kind {
                "method_declaration" | "constructor_declaration" => named(false),
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration" => named(true),
                _ => None,
            },
            Grammar::CSharp => match kind {
                "method_declaration"
                | "constructor_declaration"
                | "destructor_declaration"
                | "property_declaration"
                | "delegate_declaration"
                | "enum_declaration" => named(false),
                "class_declaration"
                | "struct_declaration"
                | "interface_declaration"
                | "record_declaration"
                | "record_struct_declaration" => named(true),
                _ => None,
            },
        }
    }
}

/// The type a Go method is declared on: `(m *Manager[T])` -> `Manager`.
fn go_receiver_type(receiver: Node<'_>, source: &[u8]) -> Option<String> {
    let mut cursor = receiver.walk();
    let parameter = receiver.named_children(&mut cursor).next()?;
    let type_text = text(parameter.child_by_field_name("type")?, source)?;
    let name = type_text.trim_start_matches('*');
    Some(name.split('[').next().unwrap_or(name).trim().to_owned())
}

fn text(node: Node<'_>, source: &[u8]) -> Option<String> {
    let text = node.utf8_text(source).ok()?.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
