//! [`FoldedStream`], what a fold gives at the end of a stream, and the comparison of the
//! streamed items with the final response.

use aptix_model::wire::{ApiError, OutputItem, Response};

use super::state::OutputState;
use crate::warning::MappingWarning;

/// Output indexes named in one [`MappingWarning::StreamDiffersFromFinal`], at most.
const MAX_DIFFERING_INDEXES: usize = 20;

/// A stream folded to its end: the final response, and what the fold saw on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedStream {
    /// The terminal event's response, as sent: the same object a non-streamed call
    /// returns. (Its `output` is filled from the stream only when it was empty; see
    /// [`MappingWarning::OutputFilledFromStream`].)
    pub response: Response,
    /// The terminal event's `response` JSON exactly as sent, when folded from SSE text.
    pub raw_response_json: Option<String>,
    /// The items the events built, in `output_index` order, for comparison and
    /// debugging; the final response's `output` is the authoritative one.
    pub streamed_output: Vec<OutputItem>,
    /// The stream's `error` event, if it sent one.
    pub stream_error: Option<ApiError>,
    /// Stream anomalies, one per kind.
    pub warnings: Vec<MappingWarning>,
    /// Events received, decodable or not.
    pub events: u64,
    /// The highest `sequence_number` seen.
    pub last_sequence_number: Option<u64>,
    /// Event types that were ignored because this version does not know them, each once.
    pub ignored_event_types: Vec<String>,
}

/// Indexes where the streamed items and the final output differ, at most
/// [`MAX_DIFFERING_INDEXES`] of them.
pub(crate) fn differing_indexes(streamed: &OutputState, final_output: &[OutputItem]) -> Vec<u64> {
    let final_indexed = final_output
        .iter()
        .enumerate()
        .map(|(index, item)| (index as u64, item));
    let mut differing: Vec<u64> = final_indexed
        .filter(|(index, item)| streamed.item(*index) != Some(*item))
        .map(|(index, _)| index)
        .chain(
            streamed
                .iter()
                .map(|(index, _)| index)
                .filter(|index| *index >= final_output.len() as u64),
        )
        .take(MAX_DIFFERING_INDEXES)
        .collect();
    differing.sort_unstable();
    differing
}
