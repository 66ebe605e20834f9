//! Folding stream events into the final `Response`, emitting [`StreamDelta`]s on the way.
//!
//! # Rules
//!
//! - State is keyed by `output_index` (reasoning items usually come first).
//! - `output_item.added` creates the item: a function call's `name` and `call_id` come
//!   from here, because `function_call_arguments.done` carries no `name` on the wire and
//!   deltas carry only the item id.
//! - Deltas append; `.done` events set the full value; `output_item.done` replaces the
//!   item. A delta for an index with no item starts a message there (some compatible
//!   servers skip `output_item.added`); any other event the fold cannot place is an
//!   orphan, counted and reported once.
//! - The terminal event (`response.completed`, `.incomplete`, `.failed`) carries the full
//!   final response, and that is the result, as sent. The items built from the events
//!   are kept next to it and compared with it: a difference is a warning (events were
//!   lost), and when the final response has an empty `output` the built items fill it.
//! - An `error` event is recorded and passed on as [`StreamDelta::Error`], and folding
//!   goes on, because OpenAI follows it with `response.failed`. A stream that ends after
//!   an `error` event without a terminal event is [`MappingError::StreamFailed`]; one that
//!   ends without either is [`MappingError::StreamEndedEarly`], never a success with
//!   partial text.
//! - `sequence_number`s must increase. An event whose number is not above the previous
//!   one (a repeat or a reordering) is skipped, so a duplicating proxy cannot double the
//!   text; terminal and `error` events are never skipped. Gaps are reported. Events after
//!   the terminal event are ignored. Each kind of anomaly is one warning with a count.
//! - Unknown event types (annotations, hosted tool progress, new events) are ignored
//!   without a warning, because their effect is in `output_item.done` and the final
//!   response; their names are listed in [`FoldedStream::ignored_event_types`]. A payload
//!   that is not JSON, or a known event of unexpected shape, is a warning.

mod anomalies;
mod decode;
mod delta;
mod state;
mod stream_fold;

pub use delta::StreamDelta;
pub use stream_fold::{FoldedStream, StreamFold};
