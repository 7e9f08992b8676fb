//! `jinn`: the command line of jinn — world models and reversible sequence models.

fn main() -> anyhow::Result<()> {
    jinn::main()
}
