//! `cargo xtask suite` (being written).

/// Runs `cargo xtask suite` with the arguments after the subcommand.
pub fn run(_args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    Err("cargo xtask suite: not written yet".into())
}
