//! `jinn`: the command line.
fn main() {}
