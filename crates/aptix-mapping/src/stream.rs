//! [`SseBodyFold`]: the SSE decoder and the fold together, bytes in, deltas out.
//!
//! For callers that hold the raw body: `aptix inspect` on an `.sse` capture, tests, and
//! benchmarks. The HTTP client frames the connection's bytes with the same decoder
//! (`aptix-sse`) and the orchestrator feeds those events to a [`StreamFold`] with
//! [`StreamFold::apply_sse`], the same call this type makes: one path for every stream.

use crate::error::MappingError;
use crate::fold::{FoldedStream, StreamDelta, StreamFold};
use aptix_sse::{SseDecoder, SseError, SseEvent};

/// Decodes a `text/event-stream` body fed in chunks of any size and folds its events.
///
/// ```
/// use aptix_mapping::{SseBodyFold, TurnContext, map_folded};
///
/// let body = concat!(
///     "event: response.created\n",
///     "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
///     "event: response.completed\n",
///     "data: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[]}}\n\n",
/// );
/// let mut folder = SseBodyFold::new();
/// for chunk in body.as_bytes().chunks(7) {
///     folder.feed(chunk);
/// }
/// let folded = folder.finish()?;
/// let (mapped, response) = map_folded(folded, &TurnContext::new("s-1", "t-1"));
/// assert_eq!(mapped.envelope.response_continuation_id.as_deref(), Some("resp_1"));
/// assert_eq!(response.id, "resp_1");
/// # Ok::<(), aptix_mapping::MappingError>(())
/// ```
#[derive(Debug, Default)]
pub struct SseBodyFold {
    decoder: SseDecoder,
    fold: StreamFold,
}

impl SseBodyFold {
    /// A folder with the default SSE event size limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A folder around a configured decoder (another event size limit).
    pub fn with_decoder(decoder: SseDecoder) -> Self {
        SseBodyFold {
            decoder,
            fold: StreamFold::new(),
        }
    }

    /// Feeds the next chunk and returns the deltas of the events it completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<StreamDelta> {
        let mut deltas = Vec::new();
        self.feed_into(bytes, &mut deltas);
        deltas
    }

    /// [`feed`](Self::feed), appending to a buffer the caller reuses.
    pub fn feed_into(&mut self, bytes: &[u8], deltas: &mut Vec<StreamDelta>) {
        self.decoder.feed(bytes);
        while let Some(result) = self.decoder.next_event() {
            self.take(result, deltas);
        }
    }

    /// Ends the input: folds an event still pending because the body lost its final
    /// blank line (a trimming proxy can cut it from `response.completed`), and returns
    /// its delta. [`finish`](Self::finish) does this too; call this first only to see
    /// that last delta.
    pub fn end_of_input(&mut self) -> Vec<StreamDelta> {
        let mut deltas = Vec::new();
        // The decoder moves past an event it rejects, so this loop ends.
        loop {
            match self.decoder.finish() {
                Ok(Some(event)) => self.take(Ok(event), &mut deltas),
                Ok(None) => break,
                Err(error) => self.take(Err(error), &mut deltas),
            }
        }
        deltas
    }

    /// The fold so far (to ask whether the terminal event has arrived).
    pub fn fold(&self) -> &StreamFold {
        &self.fold
    }

    /// Ends the input and the fold.
    ///
    /// # Errors
    ///
    /// As [`StreamFold::finish`]: the stream ended without its final response.
    pub fn finish(mut self) -> Result<FoldedStream, MappingError> {
        self.end_of_input();
        self.fold.finish()
    }

    fn take(&mut self, result: Result<SseEvent, SseError>, deltas: &mut Vec<StreamDelta>) {
        match result {
            Ok(event) => deltas.extend(self.fold.apply_sse(&event)),
            // An event over the size limit never reaches the fold; it is counted, and if
            // it was the final response the stream ends early.
            Err(error) => self.fold.note_undecodable(|| error.to_string()),
        }
    }
}
