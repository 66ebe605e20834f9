//! Open string enums of the wire: roles and statuses.

use crate::open_enum::open_string_enum;

open_string_enum! {
    /// The author of a message.
    pub enum Role {
        /// Top-priority instructions (`system`).
        System = "system",
        /// Developer instructions, which newer models treat like `system`.
        Developer = "developer",
        /// The end user.
        User = "user",
        /// The model.
        Assistant = "assistant",
    }
}

open_string_enum! {
    /// The lifecycle status of a whole response.
    pub enum ResponseStatus {
        /// Finished normally.
        Completed = "completed",
        /// Stopped early; `incomplete_details.reason` says why.
        Incomplete = "incomplete",
        /// Failed; `error` says why.
        Failed = "failed",
        /// Cancelled (background responses only).
        Cancelled = "cancelled",
        /// Waiting to start (background responses only).
        Queued = "queued",
        /// Still running: seen in stream events before the terminal one.
        InProgress = "in_progress",
    }
}

open_string_enum! {
    /// The status of one output item.
    pub enum ItemStatus {
        /// Being generated.
        InProgress = "in_progress",
        /// Done.
        Completed = "completed",
        /// Cut off with the response.
        Incomplete = "incomplete",
    }
}
