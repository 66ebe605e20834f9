//! The `turn` bench with mimalloc as the process's allocator, as in the `aptix`
//! command (`crates/aptix-cli/src/main.rs`): the raw floor and the turn alike.
//!
//! `cargo bench -p aptix --bench turn_mimalloc`; `benches/turn_bench/mod.rs` says
//! what is measured.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod turn_bench;

fn main() {
    turn_bench::run();
}
