//! A folded stream to the envelope: exactly what mapping its final response gives, plus
//! the stream's own warnings.

use aptix_model::wire::{Response, ResponseStatus};

use super::failure::stream_error_code;
use super::response::map_response;
use crate::context::{Mapped, TurnContext};
use crate::fold::FoldedStream;

/// Maps a folded stream. The envelope is the one [`map_response`] gives for the final
/// response (with the final response's JSON as sent as `rawResponseJson`, when the
/// stream was folded from SSE text), followed by the stream's warnings.
///
/// It takes the fold, so that the raw JSON moves into the envelope, and hands the final
/// response back, for a caller that keeps it (a session's history).
///
/// One addition: a `failed` final response without an error of its own takes the code
/// and message of the stream's `error` event, which said why it failed.
pub fn map_folded(folded: FoldedStream, turn: &TurnContext) -> (Mapped, Response) {
    let FoldedStream {
        response,
        raw_response_json,
        warnings,
        stream_error,
        ..
    } = folded;
    let mut mapped = map_response(&response, raw_response_json, turn);
    let failed_without_error = response.status == Some(ResponseStatus::Failed)
        && response
            .error
            .as_ref()
            .is_none_or(|error| error.code.is_none() && error.message.is_empty());
    if let (true, Some(error)) = (failed_without_error, &stream_error) {
        mapped.envelope.error_code = Some(stream_error_code(error));
        if !error.message.is_empty() {
            mapped.envelope.error_message = Some(error.message.clone());
        }
    }
    mapped.push_warnings(warnings);
    (mapped, response)
}
