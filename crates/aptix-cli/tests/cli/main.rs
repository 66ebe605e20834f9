//! The `aptix` binary end to end, run as a user runs it: `--dry-run` bodies against the
//! library's own, `index` building and refreshing the workspace index, `inspect` over every recorded reply, configuration and key errors in
//! a clean environment, and `ask` against local mock servers (streamed and whole
//! replies, sessions continued, the chat bridge, stateless replay).
//!
//! Every run clears the environment and points `HOME` at a temporary folder, so no
//! setting or key of the machine running the tests leaks in. Servers listen on
//! 127.0.0.1 only.

mod acp;
mod ask_e2e;
mod attachments;
mod config_errors;
mod dry_run;
mod faults;
mod index;
mod inspect;
mod schema;
mod serve;
mod serve_replicas;
mod served;
mod support;
mod tools_e2e;
