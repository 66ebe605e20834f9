//! AGN-004 mapping: a finished response or a failure in, the envelope out.
//!
//! One function per kind of outcome, so the orchestrator never builds an envelope by
//! hand: [`map_response`] / [`map_response_body`] for an HTTP 200 (completed, incomplete
//! or failed), [`map_folded`] for a stream folded to its end, [`map_error_body`] for a
//! non-2xx reply, [`map_stream_error`] for an in-stream `error` event,
//! [`map_transport_failure`] for a failure with no body, and [`map_mapping_error`] for
//! this crate's own errors (a body that is not a response, a stream cut short).
//!
//! Split by concept: output items (`items`), finish reason and kind (`finish`), usage
//! (`usage`), failures (`error`), the response as a whole (`response`, `folded`).

mod failure;
mod finish;
mod folded;
pub(crate) mod items;
mod response;
mod usage;

pub use failure::{map_error_body, map_mapping_error, map_stream_error, map_transport_failure};
pub use folded::map_folded;
pub use response::{map_response, map_response_body};

pub(crate) use failure::{error_body, stream_error_code};
pub(crate) use finish::finish_reason;
