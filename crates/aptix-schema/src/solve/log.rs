//! [`AttemptLog`]: what the attempts of one Request cost and found, kept in a
//! [`SchemaError`](crate::SchemaError) when the Request gives no solution.

use aptix_model::contract::LlmUsage;

use crate::answer::AttemptFailure;
use crate::strategy::RefusedStrategy;

/// What the attempts of one Request did: how many were sent, what was wrong with each
/// rejected one, and the tokens they used together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptLog {
    /// Attempts sent, including the last.
    pub attempts: u32,
    /// Every rejected attempt's failure, in order.
    pub failures: Vec<AttemptFailure>,
    /// Token usage summed over every attempt that got a reply.
    pub usage: LlmUsage,
    /// The strategies the server refused (a 400 naming the format or the tools they
    /// send), in order, before the one the attempts above used, with what it said.
    pub refused_strategies: Vec<RefusedStrategy>,
}

impl AttemptLog {
    /// Every error of every rejected attempt, one line each, prefixed with the attempt;
    /// an attempt with more violations than were kept ends with how many more.
    pub fn error_lines(&self) -> Vec<String> {
        self.failures
            .iter()
            .flat_map(|failure| {
                let more = match &failure.problem {
                    crate::AttemptProblem::Invalid { unlisted, .. } if *unlisted > 0 => {
                        Some(format!("and {unlisted} more errors"))
                    }
                    _ => None,
                };
                failure
                    .errors()
                    .into_iter()
                    .chain(more)
                    .map(move |error| format!("attempt {}: {error}", failure.attempt))
            })
            .collect()
    }
}
