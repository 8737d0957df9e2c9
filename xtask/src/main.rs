//! `cargo xtask ...`: see `cargo xtask help`.
fn main() {
    println!("xtask: under construction");
}
