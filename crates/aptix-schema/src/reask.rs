//! Re-asking: [`Prepared::reask`] extends the next attempt's body with the rejected
//! reply and the errors found in it.
//!
//! Every attempt is a complete, self-contained body: the rejected reply is replayed as
//! history rather than referenced with `previous_response_id`. That works on every
//! provider (stored state or not, `store` on or off), keeps each attempt's body
//! reproducible from the Request alone, and costs little, since the prefix of the
//! conversation is unchanged and providers cache it.
//!
//! - A text reply is replayed as an assistant message (`output_text`), followed by a
//!   user message listing the errors.
//! - A `generate_response` call is replayed as its `function_call` item, followed by a
//!   `function_call_output` for it whose output lists the errors: the API requires an
//!   output for every call in the input, and it is where the model looks for the result
//!   of its call.
//! - No reply at all: only the user message.

use aptix_model::wire::{FunctionCall, FunctionCallOutput, Input, InputItem, Role};

use super::answer::{AttemptFailure, AttemptProblem, Reply};
use super::handler::text_message;
use super::plan::Prepared;
use super::strategy::{GENERATE_RESPONSE, Strategy};

/// The most errors listed in one re-ask; the rest are counted.
pub(crate) const MAX_LISTED_ERRORS: usize = 20;

impl Prepared {
    /// Appends the rejected reply of `failure` and the feedback on it to the body, for
    /// the next attempt.
    pub fn reask(&mut self, failure: &AttemptFailure) {
        let feedback = feedback(failure, self.strategy);
        let mut items = match std::mem::take(&mut self.body.input) {
            Input::Items(items) => items,
            Input::Text(text) => vec![InputItem::Message(text_message(Role::User, text))],
        };
        match &failure.reply {
            Reply::Text(text) => {
                items.push(InputItem::Message(text_message(
                    Role::Assistant,
                    text.clone(),
                )));
                items.push(InputItem::Message(text_message(Role::User, feedback)));
            }
            Reply::Call(call) => {
                items.push(InputItem::FunctionCall(FunctionCall {
                    id: None,
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    status: None,
                }));
                items.push(InputItem::FunctionCallOutput(FunctionCallOutput::text(
                    call.call_id.clone(),
                    feedback,
                )));
            }
            Reply::Nothing => items.push(InputItem::Message(text_message(Role::User, feedback))),
        }
        self.body.input = Input::Items(items);
    }
}

/// The text that tells the model what was wrong and what to do.
pub(crate) fn feedback(failure: &AttemptFailure, strategy: Strategy) -> String {
    let errors = failure.errors();
    let mut text = String::from("Your previous answer was rejected:\n");
    for error in errors.iter().take(MAX_LISTED_ERRORS) {
        text.push_str("- ");
        text.push_str(error);
        text.push('\n');
    }
    // Those found but not listed here, and those not even kept.
    let unlisted = errors.len().saturating_sub(MAX_LISTED_ERRORS)
        + match &failure.problem {
            AttemptProblem::Invalid { unlisted, .. } => *unlisted,
            _ => 0,
        };
    if unlisted > 0 {
        text.push_str(&format!("- and {unlisted} more errors\n"));
    }
    text.push('\n');
    if strategy == Strategy::ToolCall {
        text.push_str(&format!(
            "Call {GENERATE_RESPONSE} again with arguments that correct every error listed."
        ));
    } else {
        text.push_str(
            "Answer again with a JSON value that conforms to the schema and corrects every error listed.",
        );
    }
    text
}
