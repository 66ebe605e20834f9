//! A turn as users run it, against the floor of raw HTTP, in the same process and run,
//! with the system allocator (what a library user gets unless they choose another).
//!
//! `cargo bench -p aptix --bench turn`; `benches/turn_bench/mod.rs` says what is
//! measured, and `--bench turn_mimalloc` runs the same with the `aptix` command's
//! allocator.

mod turn_bench;

fn main() {
    turn_bench::run();
}
