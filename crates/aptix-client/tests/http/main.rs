//! The HTTP providers against local servers: wiremock for scripted replies, the
//! in-repo streaming fake for timing, stalls and drops. One test binary, so the
//! network stack links once.

#[path = "../support/mod.rs"]
mod support;

mod bridge_http;
mod faults;
mod openai_errors;
mod openai_retries;
mod openai_success;
mod secrets;
mod streaming_fake;
mod swap;
