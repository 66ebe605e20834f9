//! The crate's one error type.
//!
//! Only unusable input is an error here; soft problems (an unknown stream event, a
//! refusal) are reported as values next to the result, not through this enum.

use thiserror::Error;

/// Everything that makes input unusable for `aptix-mapping`.
///
/// New variants are added as the crate grows, so matches need a wildcard arm.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MappingError {
    /// One server-sent event grew past the decoder's size limit
    /// ([`SseDecoder::with_max_event_size`](crate::SseDecoder::with_max_event_size)).
    ///
    /// The decoder stops buffering that event at once, drops the rest of it up to the
    /// blank line that ends it, and then carries on with the next event.
    #[error("sse event starting at byte {offset} is larger than the limit of {limit} bytes")]
    SseEventTooLarge {
        /// The limit in force, in bytes.
        limit: usize,
        /// Where the event starts, counted in bytes from the start of the stream.
        offset: u64,
    },
}
