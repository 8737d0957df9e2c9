//! `cargo xtask test`: the whole suite.
//!
//! Makes sure what the tests need is installed (Java, ZooKeeper, Curator, kazoo), runs
//! `cargo test --workspace --all-features` (so the optional `tls` and `sasl-digest` code is
//! tested too; extra arguments are passed on to it), then the jute conformance
//! check, and ends with one line counting everything: `suite: N passed, N failed`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::deps::{self, Need};

/// Sums the `test result: ok. 12 passed; 0 failed; ...` lines of cargo test's output.
fn count(line: &str, passed: &mut u64, failed: &mut u64) {
    let Some(rest) = line.strip_prefix("test result: ") else {
        return;
    };
    for part in rest.split(';') {
        let mut words = part.split_whitespace().rev();
        let (Some(kind), Some(n)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match kind {
            "passed" => *passed += n,
            "failed" => *failed += n,
            _ => {}
        }
    }
}

/// Runs the suite.
pub fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(cargo)
        .args(["test", "--workspace", "--all-features"])
        .args(args)
        .current_dir(crate::paths::workspace_root())
        .stdout(Stdio::piped())
        .spawn()?;
    let (mut passed, mut failed) = (0, 0);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            count(&line, &mut passed, &mut failed);
        }
    }
    let tests_ok = child.wait()?.success();
    println!("\n== jute conformance against ZooKeeper's Java classes");
    let conformance = crate::conformance::run();
    match &conformance {
        Ok(()) => passed += 1,
        Err(e) => {
            failed += 1;
            eprintln!("conformance: {e}");
        }
    }
    println!("\nsuite: {passed} passed, {failed} failed");
    if !tests_ok || conformance.is_err() {
        return Err("the suite failed".into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::count;

    #[test]
    fn sums_cargo_test_result_lines() {
        let (mut p, mut f) = (0, 0);
        count(
            "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            &mut p,
            &mut f,
        );
        count(
            "test result: FAILED. 3 passed; 2 failed; 0 ignored",
            &mut p,
            &mut f,
        );
        count("running 5 tests", &mut p, &mut f);
        assert_eq!((p, f), (15, 2));
    }
}
