//! The schema-constrained Request, sent: [`solve_value`] and [`solve`] run the pure
//! pipeline against a provider, re-asking rejected answers.
//!
//! [`solve_value`] is the whole pipeline with default options: the context runs through
//! the built-in content handlers, the strategy is chosen from the provider's
//! capabilities ([`schema_support`]), the body is sent with
//! [`ResponsesProvider::create`], and the answer is parsed and validated against the
//! schema. A rejected answer is re-asked with its errors, up to
//! [`SolveOptions::max_attempts`] attempts in all, and usage is summed over every
//! attempt. [`solve`] does the same for a Rust type that derives its schema and returns
//! the value as that type. The `_with` variants take [`SolveOptions`]: other handlers,
//! a forced strategy, other support, another number of attempts.
//!
//! This module only sends and loops, so it is the one place with I/O (through the
//! provider trait).

mod log;
mod run;
mod support;

use aptix_client::ResponsesProvider;
use aptix_model::contract::LlmUsage;

use crate::answer::AttemptFailure;
use crate::context::SchemaRequest;
use crate::error::SchemaError;
use crate::handler::HandlerRegistry;
use crate::strategy::{SchemaSupport, Strategy};
use crate::strict::RemovedKeyword;
use crate::typed::{deserialize_solution, schema_for_type};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use log::AttemptLog;
pub use support::schema_support;

/// Attempts per Request by default: the first and two re-asks.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// How a Request is solved.
#[derive(Debug, Clone)]
pub struct SolveOptions {
    /// The content handlers; the built-in ones by default.
    pub handlers: HandlerRegistry,
    /// A strategy to use whatever the provider supports; `None` chooses.
    pub strategy: Option<Strategy>,
    /// What the provider supports, instead of what its capabilities say.
    pub support: Option<SchemaSupport>,
    /// Attempts in all, the first included (at least 1): a rejected answer is re-asked
    /// `max_attempts - 1` times at most.
    pub max_attempts: u32,
}

impl Default for SolveOptions {
    fn default() -> SolveOptions {
        SolveOptions {
            handlers: HandlerRegistry::default(),
            strategy: None,
            support: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}

/// A validated solution and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The JSON value, valid against the schema.
    pub value: Value,
    /// Token usage summed over every attempt.
    pub usage: LlmUsage,
    /// Attempts sent, the accepted one included.
    pub attempts: u32,
    /// The rejected attempts before the accepted one, with their errors.
    pub failures: Vec<AttemptFailure>,
    /// How the schema was applied.
    pub strategy: Strategy,
    /// The strategies chosen before it that the server refused (a 400 naming the
    /// structured-output format or the tools they send), in order, with what it said.
    pub refused_strategies: Vec<crate::RefusedStrategy>,
    /// The id of the response that was accepted.
    pub response_id: String,
    /// Keywords the strict normaliser left out of the wire schema (still validated).
    pub removed_keywords: Vec<RemovedKeyword>,
}

/// A solution read as a Rust type, with what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedSolution<T> {
    /// The solution as `T`.
    pub value: T,
    /// The solution as JSON, with usage and attempts.
    pub solution: Solution,
}

/// Solves `request` with the default options: the validated JSON value plus usage and
/// attempts. This is the function the CLI's `aptix ask --schema FILE` calls.
///
/// # Errors
///
/// See [`SchemaError`]: preparation, the provider, a reply that ends the Request, or
/// every attempt rejected.
pub async fn solve_value(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
) -> Result<Solution, SchemaError> {
    solve_value_with(provider, request, &SolveOptions::default()).await
}

/// Solves `request` with `options`.
///
/// # Errors
///
/// See [`SchemaError`].
pub async fn solve_value_with(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
    options: &SolveOptions,
) -> Result<Solution, SchemaError> {
    run::run(provider, request, options).await
}

/// Solves `request` for a `T`, with the default options. The request's schema is
/// replaced by `T`'s (`schemars`), normalised as the strategy needs. `T` must be a
/// JSON object (a struct, or a map): the Responses API's strict schemas have an object
/// at their root, so a list or an enum is asked for as a member of a struct.
///
/// # Errors
///
/// See [`SchemaError`]; [`SchemaError::Deserialize`] when the validated value still does
/// not read as a `T`.
pub async fn solve<T: JsonSchema + DeserializeOwned>(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
) -> Result<T, SchemaError> {
    solve_typed_with(provider, request, &SolveOptions::default())
        .await
        .map(|typed| typed.value)
}

/// Solves `request` for a `T` with `options`, keeping the solution's details.
///
/// # Errors
///
/// See [`solve`].
pub async fn solve_typed_with<T: JsonSchema + DeserializeOwned>(
    provider: &dyn ResponsesProvider,
    mut request: SchemaRequest,
    options: &SolveOptions,
) -> Result<TypedSolution<T>, SchemaError> {
    request.schema = schema_for_type::<T>();
    let solution = solve_value_with(provider, request, options).await?;
    match deserialize_solution::<T>(&solution.value) {
        Ok(value) => Ok(TypedSolution { value, solution }),
        Err(source) => Err(SchemaError::Deserialize {
            solution: Box::new(solution),
            source,
        }),
    }
}
