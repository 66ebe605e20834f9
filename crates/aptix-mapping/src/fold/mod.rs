//! Folding stream events into the final `Response`, emitting [`StreamDelta`]s on the way.
//!
//! The rules are documented on [`StreamFold`], the type users see. Split by concept:
//! `stream_fold` (the fold), `folded` (its result), `state` (items by `output_index`), `delta`
//! (what is passed on), `shown` (what a reader of the deltas shows of a restarted answer), `decode` (SSE data to events), `anomalies` (counting what went wrong, to report it once).

mod anomalies;
mod decode;
mod delta;
mod folded;
mod shown;
mod state;
mod stream_fold;

pub use delta::{RetryCause, StreamDelta};
pub use folded::FoldedStream;
pub use shown::{AnswerText, ShownAnswer};
pub use stream_fold::StreamFold;
