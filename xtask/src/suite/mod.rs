//! `cargo xtask test`: the whole suite.
//!
//! Makes sure what the tests need is installed (Java, ZooKeeper, Curator, kazoo), runs
//! `cargo test --workspace --all-features --no-fail-fast` (so the optional `tls` and
//! `sasl-digest` code is tested too, and one failing test binary does not hide the others;
//! extra arguments are passed on to it), then the jute conformance check, one record type
//! counting as one test, then (with no extra arguments) the client's and the recipes'
//! real-server tests again on zk-mem-server ([`mem`]). It ends by naming the ignored and the
//! failed tests, with one line counting the first two parts, `suite: N passed (of which N
//! conformance records), N failed, N ignored`, and one the last: `suite on zk-mem-server: N
//! passed, N failed, N ignored; N left out, needing ...`.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;

use crate::conformance::Checked;

pub mod mem;
use crate::deps::{self, Need};

/// What cargo test's output said, line by line: counts from the `test result:` lines, names
/// from the `test <name> ... <outcome>` lines, each with the test binary it came from.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Conformance record types among `passed`.
    records: u64,
    /// `<test>, in <binary>`, in the order cargo reported them.
    failures: Vec<String>,
    /// `<test>, in <binary>[: <reason>]`.
    ignores: Vec<String>,
    /// The binary whose tests are running, from cargo's last `Running` or `Doc-tests` line.
    binary: Option<String>,
    /// Whether that binary printed its `test result:` line.
    finished: bool,
}

/// The binary a cargo status line announces: `Running unittests src/lib.rs
/// (target/debug/deps/zk_proto-1a2b)` gives `zk_proto (src/lib.rs)`, `Running tests/servers.rs
/// (target/debug/deps/servers-3c4d)` gives `servers (tests/servers.rs)`, and `Doc-tests
/// zk_proto` gives `zk_proto (doc-tests)`.
fn binary_of(line: &str) -> Option<String> {
    let line = line.trim();
    if let Some(krate) = line.strip_prefix("Doc-tests ") {
        return Some(format!("{} (doc-tests)", krate.trim()));
    }
    let rest = line.strip_prefix("Running ")?;
    let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
    let (source, exe) = rest.split_once(" (")?;
    let file = exe.trim_end_matches(')').rsplit(['/', '\\']).next()?;
    // `name-<hash>`, or `name-<hash>.exe`.
    let stem = file.split('.').next().unwrap_or(file);
    let name = stem.rsplit_once('-').map_or(stem, |(name, _hash)| name);
    Some(format!("{name} ({source})"))
}

/// `test <name> ... <outcome>` split in two; `None` for any other line.
fn test_line(line: &str) -> Option<(&str, &str)> {
    line.strip_prefix("test ")?.rsplit_once(" ... ")
}

/// Adds `n <kind>` counts of a `test result: ok. 12 passed; 0 failed; 1 ignored; ...` line.
fn add_result(rest: &str, tally: &mut Tally) {
    for part in rest.split(';') {
        let mut words = part.split_whitespace().rev();
        let (Some(kind), Some(n)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match kind {
            "passed" => tally.passed += n,
            "failed" => tally.failed += n,
            "ignored" => tally.ignored += n,
            _ => {}
        }
    }
}

impl Tally {
    /// Reads one line of cargo test's output (stdout or stderr).
    fn line(&mut self, line: &str) {
        if let Some(binary) = binary_of(line) {
            self.binary = Some(binary);
            self.finished = false;
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            add_result(rest, self);
            self.finished = true;
        } else if let Some((name, outcome)) = test_line(line) {
            let name = match &self.binary {
                Some(binary) => format!("{name}, in {binary}"),
                None => name.to_owned(),
            };
            if outcome == "FAILED" {
                self.failures.push(name);
            } else if outcome == "ignored" {
                self.ignores.push(name);
            } else if let Some(reason) = outcome.strip_prefix("ignored, ") {
                self.ignores.push(format!("{name}: {reason}"));
            }
        } else if line
            .trim_start()
            .starts_with("error: test failed, to rerun pass")
        {
            // A binary that crashed, or was killed, prints no `test result:`: its failure
            // would otherwise count nowhere.
            if !self.finished {
                let binary = self.binary.as_deref().unwrap_or("a test binary");
                self.failed += 1;
                self.failures
                    .push(format!("{binary} ended before reporting its results"));
                self.finished = true;
            }
        }
    }

    /// Counts each conformance record type as one test.
    fn add_conformance(&mut self, checked: &Checked) {
        let passed = u64::try_from(checked.passed).unwrap_or(u64::MAX);
        self.passed += passed;
        self.records += passed;
        for name in &checked.failed {
            self.failed += 1;
            self.failures
                .push(format!("{name}, in the jute conformance check"));
        }
    }

    /// The conformance check could not run at all: one failure.
    fn conformance_did_not_run(&mut self, error: &str) {
        self.failed += 1;
        self.failures
            .push(format!("the jute conformance check did not run: {error}"));
    }

    /// The end of the suite's output: the ignored tests, the failed ones, then the counts.
    fn summary(&self) -> String {
        let mut out = String::new();
        for (title, names) in [("ignored", &self.ignores), ("failed", &self.failures)] {
            if names.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{title} ({}):", names.len());
            for name in names {
                let _ = writeln!(out, "  {name}");
            }
        }
        let _ = write!(
            out,
            "suite: {} passed (of which {} conformance records), {} failed, {} ignored",
            self.passed, self.records, self.failed, self.ignored
        );
        out
    }
}

/// Re-prints `stream` line by line (through `print`) and sends each line on `tx`.
fn forward(
    stream: impl Read + Send + 'static,
    tx: mpsc::Sender<String>,
    print: fn(&str),
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            print(&line);
            if tx.send(line).is_err() {
                break;
            }
        }
    })
}

/// Runs `cmd` (a `cargo test`), re-printing its output, and returns what it said and whether
/// it succeeded.
fn cargo_test(mut cmd: Command) -> std::io::Result<(Tally, bool)> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Cargo's `Running` lines come on stderr, the tests' lines on stdout. The two are read
    // apart; a binary's first `test` line comes well after the `Running` line cargo printed
    // before starting it, so the names get the right binary.
    let (tx, rx) = mpsc::channel();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(forward(out, tx.clone(), |l| println!("{l}")));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(forward(err, tx.clone(), |l| eprintln!("{l}")));
    }
    drop(tx);
    let mut tally = Tally::default();
    for line in rx {
        tally.line(&line);
    }
    for reader in readers {
        let _ = reader.join();
    }
    let ok = child.wait()?.success();
    Ok((tally, ok))
}

/// Runs the suite.
pub fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["test", "--workspace", "--all-features", "--no-fail-fast"])
        .args(args)
        .current_dir(crate::paths::workspace_root());
    let (mut tally, tests_ok) = cargo_test(cmd)?;

    println!("\n== jute conformance against ZooKeeper's Java classes");
    let conformance_ok = match crate::conformance::check_all() {
        Ok(checked) => {
            tally.add_conformance(&checked);
            checked.failed.is_empty()
        }
        Err(e) => {
            eprintln!("conformance: {e}");
            tally.conformance_did_not_run(&e.to_string());
            false
        }
    };

    // The second pass runs with the whole suite only: arguments meant for the first (a
    // package, a filter) would not fit it.
    let mem = if args.is_empty() {
        println!("\n== the real-server tests again, on zk-mem-server (ZK_TESTKIT_SERVER=mem)");
        Some(mem::run()?)
    } else {
        None
    };

    println!("\n{}", tally.summary());
    if let Some((mem_tally, _)) = &mem {
        if !mem_tally.failures.is_empty() {
            println!("failed on zk-mem-server ({}):", mem_tally.failures.len());
            for name in &mem_tally.failures {
                println!("  {name}");
            }
        }
        println!("{}", mem::summary(mem_tally));
    } else {
        println!("suite on zk-mem-server: not run (arguments were given)");
    }
    if !tests_ok && tally.failures.is_empty() {
        return Err("cargo test failed before any test failed (see its errors above)".into());
    }
    if let Some((mem_tally, mem_ok)) = &mem {
        if !mem_ok && mem_tally.failures.is_empty() {
            return Err(
                "cargo test on zk-mem-server failed before any test failed (see its errors above)"
                    .into(),
            );
        }
    }
    let mem_ok = mem.as_ref().is_none_or(|(_, ok)| *ok);
    if !tests_ok || !conformance_ok || !mem_ok {
        return Err("the suite failed".into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn read(lines: &str) -> Tally {
        let mut tally = Tally::default();
        for line in lines.lines() {
            tally.line(line);
        }
        tally
    }

    #[test]
    fn names_the_binary_from_cargo_status_lines() {
        assert_eq!(
            binary_of("     Running unittests src/lib.rs (target/debug/deps/zk_proto-1a2b3c4d)")
                .as_deref(),
            Some("zk_proto (src/lib.rs)")
        );
        assert_eq!(
            binary_of("     Running tests/servers.rs (target/debug/deps/servers-0f9e8d7c6b5a4321)")
                .as_deref(),
            Some("servers (tests/servers.rs)")
        );
        assert_eq!(
            binary_of("     Running unittests src/main.rs (target/debug/deps/xtask-77.exe)")
                .as_deref(),
            Some("xtask (src/main.rs)")
        );
        assert_eq!(
            binary_of("   Doc-tests recipe_mutex").as_deref(),
            Some("recipe_mutex (doc-tests)")
        );
        assert_eq!(binary_of("test result: ok. 1 passed"), None);
        assert_eq!(binary_of("running 5 tests"), None);
    }

    #[test]
    fn sums_result_lines_and_names_ignored_and_failed_tests() {
        let tally = read(
            "     Running unittests src/lib.rs (target/debug/deps/xtask-1a2b)\n\
             running 3 tests\n\
             test suite::tests::one ... ok\n\
             test suite::tests::two ... FAILED\n\
             test wire::tests::slow ... ignored\n\
             test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
             error: test failed, to rerun pass `-p xtask --lib`\n\
             \x20    Running tests/servers.rs (target/debug/deps/servers-3c4d)\n\
             test helper_holds_a_server_until_killed ... ignored, helper process for server_dies_with_a_killed_test_process\n\
             test standalone_serves_and_restarts_with_its_data ... ok\n\
             test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 9.1s\n\
             \x20  Doc-tests zk_proto\n\
             test zk-proto/src/reader.rs - reader::Reader (line 12) ... ok\n\
             test result: ok. 4 passed; 0 failed; 0 ignored\n",
        );
        assert_eq!(
            (tally.passed, tally.failed, tally.ignored),
            (17, 1, 2),
            "{tally:?}"
        );
        assert_eq!(tally.failures, ["suite::tests::two, in xtask (src/lib.rs)"]);
        assert_eq!(
            tally.ignores,
            [
                "wire::tests::slow, in xtask (src/lib.rs)",
                "helper_holds_a_server_until_killed, in servers (tests/servers.rs): helper process for server_dies_with_a_killed_test_process",
            ]
        );
    }

    #[test]
    fn a_binary_that_dies_without_results_counts_as_a_failure() {
        let tally = read(
            "     Running tests/stress.rs (target/debug/deps/stress-5e6f)\n\
             running 2 tests\n\
             error: test failed, to rerun pass `-p xtask --test stress`\n\
             \x20    Running tests/proxy.rs (target/debug/deps/proxy-7a8b)\n\
             test result: ok. 3 passed; 0 failed; 0 ignored\n",
        );
        assert_eq!((tally.passed, tally.failed), (3, 1));
        assert_eq!(
            tally.failures,
            ["stress (tests/stress.rs) ended before reporting its results"]
        );
    }

    #[test]
    fn counts_each_conformance_record_and_ends_with_one_line() {
        let mut tally = read(
            "     Running tests/servers.rs (target/debug/deps/servers-3c4d)\n\
             test helper ... ignored, helper process\n\
             test result: ok. 381 passed; 0 failed; 2 ignored\n",
        );
        tally.add_conformance(&Checked {
            passed: 50,
            failed: Vec::new(),
        });
        assert_eq!(
            tally.summary(),
            "ignored (1):\n  \
             helper, in servers (tests/servers.rs): helper process\n\
             suite: 431 passed (of which 50 conformance records), 0 failed, 2 ignored"
        );

        let mut tally = Tally::default();
        tally.add_conformance(&Checked {
            passed: 49,
            failed: vec!["Stat".into()],
        });
        tally.conformance_did_not_run("java not found");
        assert_eq!(
            tally.summary(),
            "failed (2):\n  \
             Stat, in the jute conformance check\n  \
             the jute conformance check did not run: java not found\n\
             suite: 49 passed (of which 49 conformance records), 2 failed, 0 ignored"
        );
    }
}
