//! The README's code, held to what users run:
//! - its first program is `recipe-mutex/examples/first_program.rs`, which the build compiles and
//!   clippy checks: the two are kept the same text;
//! - its dependency lines (the first program's, the test section's) name every crate of ours
//!   one way, a git dependency on the repository, as zk-mem-server's crate docs do;
//! - those lines, the first program and the test example are built and run in a crate outside
//!   the workspace, as a user's crate would (the slow one: a build of its own).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the README writes where a user puts the repository's URL.
const REPOSITORY: &str = "<this repository>";

/// The crates of ours a user may depend on.
const CRATES: [&str; 8] = [
    "zk-proto",
    "zk-client",
    "zk-mem-server",
    "recipes-core",
    "recipe-mutex",
    "recipe-rwlock",
    "recipe-semaphore",
    "recipe-multilock",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// The first code block whose fence starts with ```` ```{lang} ```` after the line
/// `## {heading}` (rustdoc's hidden `# ` lines shown), without its fences.
fn block(text: &str, heading: &str, lang: &str) -> String {
    let start = text
        .lines()
        .position(|l| l.trim_end() == format!("## {heading}"))
        .unwrap_or_else(|| panic!("README.md has no section `## {heading}`"));
    let mut lines = text.lines().skip(start);
    lines
        .find(|l| l.starts_with(&format!("```{lang}")))
        .unwrap_or_else(|| panic!("`## {heading}` has no ```{lang} block"));
    let mut out = String::new();
    for line in lines.take_while(|l| !l.starts_with("```")) {
        let line = match line.strip_prefix("# ") {
            Some(hidden) if lang == "rust" => hidden,
            _ if lang == "rust" && line == "#" => "",
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The same block out of a crate's `//!` docs.
fn doc_block(source: &str, lang: &str) -> String {
    let docs: String = source
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    block(&format!("## docs\n{docs}"), "docs", lang)
}

/// Every dependency line of `toml` naming a crate of ours: each must be the git form.
fn check_one_form(toml: &str, place: &str) {
    let ours: Vec<&str> = toml
        .lines()
        .filter(|l| CRATES.iter().any(|c| l.starts_with(&format!("{c} "))))
        .collect();
    assert!(!ours.is_empty(), "{place}: no dependency on our crates");
    for line in ours {
        let (name, _) = line.split_once(' ').unwrap();
        assert_eq!(
            line,
            format!("{name} = {{ git = \"{REPOSITORY}\" }}"),
            "{place}: every crate of ours is a git dependency on the repository"
        );
    }
}

#[test]
fn the_readmes_first_program_is_the_example() {
    let readme = readme();
    let example =
        std::fs::read_to_string(root().join("recipe-mutex/examples/first_program.rs")).unwrap();
    // The example without its header comment.
    let (_, body) = example.split_once("\n\n").unwrap();
    assert!(
        readme.contains(body.trim_end()),
        "README.md's first program differs from recipe-mutex/examples/first_program.rs"
    );
}

#[test]
fn the_readme_and_the_crate_docs_depend_on_the_crates_one_way() {
    let readme = readme();
    let first = block(&readme, "Your first program", "toml");
    let testing = block(&readme, "Testing your code without Java", "toml");
    check_one_form(&first, "README, Your first program");
    check_one_form(&testing, "README, Testing your code without Java");
    let lib = std::fs::read_to_string(root().join("zk-client/mem-server/src/lib.rs")).unwrap();
    assert_eq!(
        doc_block(&lib, "toml"),
        testing,
        "zk-mem-server's crate docs give the README's dev-dependency lines"
    );
}

/// Removes the crate outside the workspace when the test ends, passed or not.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A crate in a temporary directory, outside the workspace, whose `Cargo.toml` has exactly the
/// README's dependency lines, whose `src/main.rs` is its first program and whose
/// `tests/jobs.rs` is its test example; `cargo test` there must build all three and pass the
/// example's test.
///
/// The README's `git = "<this repository>"` becomes `git = "file://<this checkout>"`, not a
/// `path`: a git dependency is what the README tells users to write, and only it shows what
/// they get, cargo finding each crate by name in the repository's committed tree (a file left
/// out of git, or two crates resolved from two sources, fails here as it would for them). The
/// price: it builds the checkout's committed `HEAD`, so uncommitted changes are not in it (the
/// test says so when there are some; CI's clone has none). The workspace's `Cargo.lock` is
/// copied in, so the registry crates are the versions the workspace was tested with.
#[test]
fn the_readmes_dependency_lines_build_and_run_its_test_outside_the_workspace() {
    let root = root();
    let readme = readme();
    let url = format!("file://{}", root.display());
    let first = block(&readme, "Your first program", "toml");
    let testing = block(&readme, "Testing your code without Java", "toml");
    assert!(first.contains(REPOSITORY) && testing.contains(REPOSITORY));
    let manifest = format!(
        "[package]\nname = \"readme-user\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         {}\n{}\n# Not a member of any workspace above it.\n[workspace]\n",
        first.replace(REPOSITORY, &url),
        testing.replace(REPOSITORY, &url),
    );

    let dir = std::env::temp_dir().join(format!("zk-locks-readme-user-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let scratch = Scratch(dir);
    let dir = &scratch.0;
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), &manifest).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        block(&readme, "Your first program", "rust"),
    )
    .unwrap();
    std::fs::write(
        dir.join("tests/jobs.rs"),
        block(&readme, "Testing your code without Java", "rust"),
    )
    .unwrap();

    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(&root)
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        eprintln!(
            "note: {} has uncommitted changes; this builds its committed HEAD",
            root.display()
        );
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["test", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        // A target directory of its own, kept between runs (a rebuild is quick).
        .env("CARGO_TARGET_DIR", root.join("target/readme-user"))
        // The git CLI reads any clone, a linked worktree included.
        .env("CARGO_NET_GIT_FETCH_WITH_CLI", "true")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // Indented, so that the outer run's summary does not count the inner one's lines.
    let shown: String = said.lines().map(|l| format!("  | {l}\n")).collect();
    assert!(
        output.status.success(),
        "cargo test in a crate with the README's lines failed:\n{manifest}\n{shown}"
    );
    assert!(
        said.contains("test a_session_expired_mid_job_loses_the_lock_and_records_nothing ... ok"),
        "the README's test did not run:\n{shown}"
    );
}
