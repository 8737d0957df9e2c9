//! `cargo xtask demo` (being written).

/// Runs `cargo xtask demo` with the arguments after the subcommand.
pub fn run(_args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    Err("cargo xtask demo: not written yet".into())
}
