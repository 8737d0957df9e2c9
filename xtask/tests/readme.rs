//! The README's first program is `recipe-mutex/examples/first_program.rs`, which the build
//! compiles and clippy checks: this keeps the two the same text.

#![allow(clippy::unwrap_used)]

#[test]
fn the_readmes_first_program_is_the_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example =
        std::fs::read_to_string(root.join("recipe-mutex/examples/first_program.rs")).unwrap();
    // The example without its header comment.
    let (_, body) = example.split_once("\n\n").unwrap();
    assert!(
        readme.contains(body.trim_end()),
        "README.md's first program differs from recipe-mutex/examples/first_program.rs"
    );
}
