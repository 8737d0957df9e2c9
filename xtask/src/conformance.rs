//! `cargo xtask conformance` (being written).

/// Runs `cargo xtask conformance` with the arguments after the subcommand.
pub fn run(_args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    Err("cargo xtask conformance: not written yet".into())
}
