//! The ids the editor knows the model's tool calls by.
//!
//! A call's `toolCallId` is the model's own call id, so that what the editor shows and
//! what the log and the stored session say can be matched. A model call id is unique
//! only as far as its server keeps it so: some local servers number each reply's calls
//! afresh (`call_0`, `call_1`, ...). A second call named like one the session showed
//! already would update the earlier call's card in the editor, so it is shown as
//! `call_0#2` (then `#3`, ...), and the later updates of that call go to the new id.
//! `session/load` replays a session's calls through the same rule, so a loaded session
//! and the turns after it agree with what a live one showed.

use std::collections::{HashMap, HashSet};

/// The editor ids given so far in one session.
#[derive(Debug, Default)]
pub(crate) struct CallIds {
    /// Every id the editor was given.
    shown: HashSet<String>,
    /// For each model call id, the editor id of its latest call.
    latest: HashMap<String, String>,
}

impl CallIds {
    /// The editor id of a new call the model named `call_id`: `call_id` itself the
    /// first time, `call_id#N` when the session showed that id already.
    pub(crate) fn start(&mut self, call_id: &str) -> String {
        let mut id = call_id.to_owned();
        let mut count: u64 = 1;
        while self.shown.contains(&id) {
            count += 1;
            id = format!("{call_id}#{count}");
        }
        self.shown.insert(id.clone());
        self.latest.insert(call_id.to_owned(), id.clone());
        id
    }

    /// The editor id of the latest call the model named `call_id`; `call_id` itself
    /// when the session has shown none (an output whose call is not in the history).
    pub(crate) fn latest(&self, call_id: &str) -> String {
        self.latest
            .get(call_id)
            .cloned()
            .unwrap_or_else(|| call_id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_id_a_server_reuses_gets_an_id_of_its_own_each_time() {
        let mut ids = CallIds::default();
        assert_eq!(ids.start("call_0"), "call_0");
        assert_eq!(ids.start("call_1"), "call_1");
        assert_eq!(ids.latest("call_0"), "call_0");
        assert_eq!(ids.start("call_0"), "call_0#2");
        assert_eq!(ids.latest("call_0"), "call_0#2");
        assert_eq!(ids.start("call_0"), "call_0#3");
        // A model id that is itself spelt like a given one is not given it twice.
        assert_eq!(ids.start("call_0#2"), "call_0#2#2");
        assert_eq!(ids.latest("call_9"), "call_9");
    }
}
