//! The schema-constrained Request (seed 003): `context` + JSON `schema` -> a solution
//! that satisfies the schema. This module is the pure part: everything but sending.
//!
//! # Pipeline
//!
//! 1. **Context.** A [`SchemaRequest`] holds an ordered list of [`Message`]s whose
//!    [`Content`] is text, wire content parts, or a [`CustomContent`]
//!    (`{"type": "<name>", ...}`), plus the LLM configuration ([`LlmConfig`]), the
//!    schema and optional ordinary tools. It decodes from JSON.
//! 2. **Handlers.** [`process`] runs the messages, in order, through the
//!    [`HandlerRegistry`]: each custom type's [`ContentHandler`] may change the
//!    configuration, the schema and the final message list. An unregistered type is an
//!    error naming it and the message index. Built-in handlers are in [`handlers`].
//! 3. **Strategy.** [`SchemaSupport::choose`] picks how the schema reaches the model
//!    ([`Strategy`]): native `text.format` json_schema, a forced `generate_response`
//!    tool, `json_object` with the schema in the system prompt, or plain text with it.
//!    A caller may force one.
//! 4. **Strict schemas.** For the native strategy and strict tools, [`normalize_strict`]
//!    closes every object, makes every property required (optional ones nullable) and
//!    removes or rejects what strict mode does not take.
//! 5. **Body.** [`prepare`] does 2 to 4 and gives a [`Prepared`]: the exact
//!    `/v1/responses` body of the first attempt.
//! 6. **Answer.** [`Prepared::evaluate`] reads a reply: the JSON from the message text
//!    or the `generate_response` arguments, validated against the schema, giving a
//!    [`Verdict`]. A rejected attempt is fed back with [`Prepared::reask`], which
//!    extends the body with the reply and the errors.
//!
//! Sending, the attempt loop and usage totals live in `aptix-orchestrator`'s `solve`
//! module; `docs/schema-request.md` describes the whole.
//!
//! # Example
//!
//! ```
//! use aptix_model::wire::Role;
//! use aptix_request::schema::{
//!     CustomContent, HandlerRegistry, SchemaRequest, SchemaSupport, Strategy, prepare,
//! };
//! use serde_json::json;
//!
//! let request = SchemaRequest::new(
//!     "gpt-4o-mini",
//!     json!({"type": "object", "properties": {"capital": {"type": "string"}}}),
//! )
//! .system("You are a helpful assistant.")
//! .message(Role::User, CustomContent::new("state").with("state", json!({"country": "France"})))
//! .user("What is the capital?");
//!
//! let prepared = prepare(request, &HandlerRegistry::default(), &SchemaSupport::full(), None)?;
//! assert_eq!(prepared.strategy(), Strategy::NativeSchema);
//! let body = serde_json::to_value(prepared.body()).expect("a body serialises");
//! assert_eq!(body["text"]["format"]["type"], "json_schema");
//! assert_eq!(body["text"]["format"]["schema"]["required"], json!(["capital"]));
//! assert!(body["input"][1]["content"][0]["text"].as_str().unwrap().starts_with("[STATE]"));
//! # Ok::<(), aptix_request::schema::SchemaError>(())
//! ```

mod answer;
mod context;
mod error;
mod handler;
pub mod handlers;
mod plan;
mod reask;
mod strategy;
mod strict;
mod typed;

pub use answer::{
    AttemptFailure, AttemptProblem, MAX_VIOLATIONS, Reply, StopReason, Verdict, Violation,
};
pub use context::{Content, CustomContent, DEFAULT_SCHEMA_NAME, LlmConfig, Message, SchemaRequest};
pub use error::SchemaError;
pub use handler::{
    ContentHandler, HandlerContext, HandlerError, HandlerRegistry, Processed, process,
};
pub use plan::{GENERATE_RESPONSE_DESCRIPTION, Prepared, RESERVED_OPTIONS, prepare};
pub use reask::MAX_LISTED_ERRORS;
pub use strategy::{GENERATE_RESPONSE, SchemaSupport, Strategy};
pub use strict::{MAX_SCHEMA_DEPTH, RemovedKeyword, StrictSchema, normalize_strict};
pub use typed::{deserialize_solution, schema_for_type};
