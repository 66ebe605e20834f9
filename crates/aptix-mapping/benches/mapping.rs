//! Placeholder until the mapping benchmark lands.
fn main() {}
