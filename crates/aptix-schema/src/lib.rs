//! Aptix seed 003, the schema-constrained Request: `context` + JSON `schema` -> a
//! solution that satisfies the schema, on any provider.
//!
//! A caller gives an ordered list of messages (text, wire content parts, or custom
//! content such as `{"type": "state", ...}`), model settings and a JSON Schema; this
//! crate turns them into `/v1/responses` bodies the provider can honour, sends them
//! through the provider trait, validates the answer against the schema, and asks again
//! with the errors until an answer is valid or the attempts run out.
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
//!    error naming it and the message index. The built-in handlers (`state`, `file`,
//!    `require_fields`, `config`) are registered by [`HandlerRegistry::default`].
//! 3. **Strategy.** [`SchemaSupport::choose`] picks how the schema reaches the model
//!    ([`Strategy`]): native `text.format` json_schema, a forced `generate_response`
//!    tool, `json_object` with the schema in the system prompt, or plain text with it.
//!    A caller may force one. [`schema_support`] reads it from a provider's
//!    capabilities.
//! 4. **Strict schemas.** For the native strategy and strict tools, [`normalize_strict`]
//!    closes every object, makes every property required (optional ones nullable) and
//!    removes or rejects what strict mode does not take.
//! 5. **Body.** [`prepare`] does 2 to 4 and gives a [`Prepared`]: the exact
//!    `/v1/responses` body of the first attempt, built with `aptix_request`'s
//!    `RequestBuilder`, so the model settings follow the same rule
//!    (`aptix_request::check_model_settings`) as every other request.
//! 6. **Answer.** [`Prepared::evaluate`] reads a reply: the JSON from the message text
//!    or the `generate_response` arguments, validated against the schema, giving a
//!    [`Verdict`]. A rejected attempt is fed back with [`Prepared::reask`], which
//!    extends the body with the reply and the errors.
//! 7. **Solve.** [`solve_value`] runs 1 to 6 against a
//!    [`ResponsesProvider`](aptix_client::ResponsesProvider), up to
//!    [`SolveOptions::max_attempts`] attempts, summing usage; [`solve`] does the same
//!    for a Rust type that derives its schema (`schemars`) and returns that type.
//!
//! Every failure is a [`SchemaError`]: a Request that cannot be prepared (naming the
//! message, option or schema location at fault), a provider failure, a reply that
//! ends the Request (a refusal, a truncated response, calls of ordinary tools), or
//! every attempt rejected. `docs/schema-request.md` describes the whole.
//!
//! **Architecture invariant:** steps 1 to 6 are pure functions over data; the solve
//! loop is the one place that sends, and only through the provider trait (this crate
//! never pulls in an HTTP stack or picks a provider).
//!
//! # Example
//!
//! ```
//! use aptix_client::FakeProvider;
//! use aptix_model::wire::{Response, Role};
//! use aptix_schema::{
//!     CustomContent, HandlerRegistry, SchemaRequest, SchemaSupport, Strategy, prepare, solve,
//! };
//! use serde_json::json;
//!
//! // The body of the first attempt, without sending anything.
//! let request = SchemaRequest::new(
//!     "gpt-4o-mini",
//!     json!({"type": "object", "properties": {"capital": {"type": "string"}}}),
//! )
//! .system("You are a helpful assistant.")
//! .message(Role::User, CustomContent::new("state").with("state", json!({"country": "France"})))
//! .user("What is the capital?");
//! let prepared = prepare(request, &HandlerRegistry::default(), &SchemaSupport::full(), None)?;
//! assert_eq!(prepared.strategy(), Strategy::NativeSchema);
//! let body = serde_json::to_value(prepared.body()).expect("a body serialises");
//! assert_eq!(body["text"]["format"]["type"], "json_schema");
//! assert_eq!(body["text"]["format"]["schema"]["required"], json!(["capital"]));
//! assert!(body["input"][1]["content"][0]["text"].as_str().unwrap().starts_with("[STATE]"));
//!
//! // A typed solution, from a (here scripted) provider.
//! #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
//! struct City {
//!     name: String,
//!     population: Option<u64>,
//! }
//!
//! let provider = FakeProvider::new();
//! provider.push_response(serde_json::from_value::<Response>(json!({
//!     "id": "resp_1", "status": "completed",
//!     "output": [{"type": "message", "role": "assistant", "content": [
//!         {"type": "output_text", "text": "{\"name\":\"Paris\",\"population\":null}"}]}]
//! }))?);
//! let request = SchemaRequest::for_type::<City>("gpt-4o-mini").user("The capital of France?");
//! let runtime = tokio::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()?;
//! let city: City = runtime.block_on(solve(&provider, request))?;
//! assert_eq!(city, City { name: "Paris".into(), population: None });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod absent;
mod answer;
mod context;
mod error;
mod handler;
mod handlers;
mod plan;
mod reask;
mod solve;
mod strategy;
mod strict;
mod typed;

pub use answer::{AttemptFailure, AttemptProblem, Reply, StopReason, Verdict, Violation};
pub use context::{Content, CustomContent, LlmConfig, Message, SchemaRequest};
pub use error::SchemaError;
pub use handler::{
    ContentHandler, HandlerContext, HandlerError, HandlerRegistry, Processed, process,
};
pub use plan::{Prepared, prepare};
pub use solve::{
    AttemptLog, DEFAULT_MAX_ATTEMPTS, Solution, SolveOptions, TypedSolution, schema_support, solve,
    solve_typed_with, solve_value, solve_value_with,
};
pub use strategy::{RefusedStrategy, SchemaSupport, Strategy};
pub use strict::{RemovedKeyword, StrictSchema, normalize_strict};
pub use typed::schema_for_type;
