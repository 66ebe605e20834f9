//! Wire types of the real OpenAI `POST /v1/responses` API.
//!
//! Split by concept, as the API documents them: the request body ([`request`]), input
//! items ([`input`]), output items ([`output`]), content parts ([`content`]), tools and
//! tool choice ([`tools`]), text formats ([`text`]), the `Response` object
//! ([`response`]), token usage ([`usage`]), error bodies ([`error`]) and stream events
//! ([`stream`]).
//!
//! Every tagged enum here has an `Other(serde_json::Value)` variant that catches item,
//! part, tool and event types this crate does not know, and known types whose shape
//! does not match (a `function_call` without `call_id`), holding the raw JSON so that
//! nothing is lost and the caller can report it. Unset optional fields are omitted on
//! encoding.

pub mod compact;
pub mod content;
pub mod error;
pub mod input;
pub mod output;
pub mod request;
pub mod response;
pub mod stream;
pub mod text;
pub mod tools;
pub mod usage;

mod open_enum;
mod serde_util;
mod stray_tag;

pub use compact::{CompactRequest, CompactResponse};
pub use content::{ContentPart, InputFile, InputImage, OutputText, Refusal};
pub use error::{ApiError, ErrorBody};
pub use input::{
    FunctionCallOutput, FunctionOutput, Input, InputItem, InputMessage, MessageContent,
};
pub use open_enum::{ItemStatus, ResponseStatus, Role};
pub use output::{
    CustomToolCall, FunctionCall, OutputItem, OutputMessage, ReasoningItem, SummaryPart,
};
pub use request::{CreateResponseRequest, ReasoningConfig};
pub use response::{IncompleteDetails, IncompleteReason, Response, ResponseError};
pub use stream::{
    ContentPartEvent, ErrorEvent, OutputItemEvent, ResponseEvent, StreamEvent, SummaryPartEvent,
    TextDeltaEvent, TextDoneEvent,
};
pub use text::{JsonSchemaFormat, TextConfig, TextFormat};
pub use tools::{FunctionTool, NamedToolChoice, Tool, ToolChoice, ToolChoiceMode};
pub use usage::{InputTokensDetails, OutputTokensDetails, Usage};
