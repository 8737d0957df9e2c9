//! The suite's second pass: the client's and the recipes' real-server test files again, with
//! the test kit starting zk-mem-server's binary instead of ZooKeeper
//! (`ZK_TESTKIT_SERVER=mem`), so the in-memory server users test against is held to the
//! same tests as the real one.
//!
//! What it cannot be is left out by name, each with the reason: ensembles (member kills,
//! leader changes, read-only members, reconfig), TLS and SASL. The table is checked
//! against the test files: every name it leaves out is one test function there, found once
//! across the five crates (cargo's `--skip` applies to every binary of the run).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use super::Tally;

/// The packages whose `tests/` run in this pass.
pub const PACKAGES: [&str; 5] = [
    "zk-client",
    "recipe-mutex",
    "recipe-rwlock",
    "recipe-semaphore",
    "recipe-multilock",
];

/// Why a test is left out of the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Needs {
    /// More than one member: kills of a member or the leader, read-only members, reconfig.
    Ensemble,
    /// A TLS port or SASL.
    Secure,
}

impl Needs {
    /// What the reason says in the summary.
    pub fn describe(self) -> &'static str {
        match self {
            Needs::Ensemble => "an ensemble",
            Needs::Secure => "TLS or SASL",
        }
    }
}

/// One test left out: the file that holds it (from the workspace root), its name, and why.
#[derive(Debug, Clone, Copy)]
pub struct LeftOut {
    /// The test file.
    pub file: &'static str,
    /// The test function.
    pub test: &'static str,
    /// Why.
    pub needs: Needs,
}

const fn out(file: &'static str, test: &'static str, needs: Needs) -> LeftOut {
    LeftOut { file, test, needs }
}

const FAULTS: &str = "zk-client/tests/faults.rs";
const SECURE: &str = "zk-client/tests/secure.rs";

/// Every test the pass leaves out.
pub const LEFT_OUT: [LeftOut; 19] = [
    out(
        FAULTS,
        "killing_the_connected_member_moves_the_session_and_restores_its_watches",
        Needs::Ensemble,
    ),
    out(
        FAULTS,
        "killing_the_connected_member_time_to_usable",
        Needs::Ensemble,
    ),
    out(
        FAULTS,
        "writes_across_a_leader_kill_succeed_once_or_fail_with_connection_loss",
        Needs::Ensemble,
    ),
    out(
        FAULTS,
        "pausing_every_member_past_the_timeout_loses_then_expires_the_session",
        Needs::Ensemble,
    ),
    out(FAULTS, "connects_while_one_member_is_down", Needs::Ensemble),
    out(FAULTS, "read_only_mode", Needs::Ensemble),
    out(
        FAULTS,
        "reconfig_removes_a_member_and_the_config_watch_fires",
        Needs::Ensemble,
    ),
    out(
        "recipe-mutex/tests/mutex.rs",
        "eight_sessions_across_a_member_kill_never_two_holders_and_no_node_left",
        Needs::Ensemble,
    ),
    out(
        "recipe-multilock/tests/multilock.rs",
        "bank_transfers_conserve_the_total_across_a_leader_kill",
        Needs::Ensemble,
    ),
    out(SECURE, "tls_with_server_authentication", Needs::Secure),
    out(
        SECURE,
        "mutual_tls_presents_the_client_certificate_over_tls_1_3_and_1_2",
        Needs::Secure,
    ),
    out(
        SECURE,
        "a_wrong_ca_a_wrong_name_and_a_plain_port_are_refused_with_clear_errors",
        Needs::Secure,
    ),
    out(
        SECURE,
        "sasl_digest_authenticates_and_acls_follow_the_identity",
        Needs::Secure,
    ),
    out(
        SECURE,
        "a_wrong_sasl_password_ends_the_session_with_auth_failed",
        Needs::Secure,
    ),
    out(
        SECURE,
        "an_enforcing_server_closes_a_session_without_sasl_with_auth_required",
        Needs::Secure,
    ),
    out(
        SECURE,
        "sasl_over_tls_survives_a_cut_and_authenticates_again",
        Needs::Secure,
    ),
    out(
        SECURE,
        "an_ensemble_over_tls_and_sasl_keeps_the_session_across_a_member_kill",
        Needs::Secure,
    ),
    out(
        SECURE,
        "read_only_mode_over_tls_and_back_to_read_write",
        Needs::Secure,
    ),
    out(
        "zk-client/tests/stalls.rs",
        "a_stalled_tls_server_cannot_hang_the_session_or_its_close",
        Needs::Secure,
    ),
];

/// The test binary's arguments that leave [`LEFT_OUT`] out: `--skip <name>` each, matched
/// exactly.
pub fn skip_args() -> Vec<String> {
    let mut args = Vec::with_capacity(LEFT_OUT.len() * 2 + 1);
    for left in &LEFT_OUT {
        args.push("--skip".to_owned());
        args.push(left.test.to_owned());
    }
    args.push("--exact".to_owned());
    args
}

/// How many tests are left out for each reason, in [`Needs`]' order.
pub fn left_out_counts() -> Vec<(Needs, usize)> {
    let mut counts: Vec<(Needs, usize)> = Vec::new();
    for left in &LEFT_OUT {
        match counts.iter_mut().find(|(needs, _)| *needs == left.needs) {
            Some((_, n)) => *n += 1,
            None => counts.push((left.needs, 1)),
        }
    }
    counts.sort();
    counts
}

/// The pass's summary line.
pub(super) fn summary(tally: &Tally) -> String {
    let reasons = left_out_counts()
        .iter()
        .map(|(needs, n)| format!("{} {n}", needs.describe()))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "suite on zk-mem-server: {} passed, {} failed, {} ignored; {} left out, needing {reasons}",
        tally.passed,
        tally.failed,
        tally.ignored,
        LEFT_OUT.len()
    )
}

/// Builds the `zk-mem-server` binary and returns its path.
fn build_binary(cargo: &OsString) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let status = Command::new(cargo)
        .args(["build", "-p", "zk-mem-server", "--bin", "zk-mem-server"])
        .current_dir(crate::paths::workspace_root())
        .status()?;
    if !status.success() {
        return Err(format!("building zk-mem-server's binary failed: {status}").into());
    }
    Ok(crate::paths::target_dir()
        .join("debug")
        .join(format!("zk-mem-server{}", std::env::consts::EXE_SUFFIX)))
}

/// Runs the pass and returns its tally and whether cargo test succeeded.
pub(super) fn run() -> Result<(Tally, bool), Box<dyn std::error::Error>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let bin = build_binary(&cargo)?;
    let mut cmd = Command::new(&cargo);
    cmd.arg("test");
    for package in PACKAGES {
        cmd.args(["-p", package]);
    }
    cmd.args(["--all-features", "--no-fail-fast", "--test", "*", "--"])
        .args(skip_args())
        .env(zk_testkit::zk::program::SERVER_ENV, "mem")
        .env(zk_testkit::zk::program::MEM_BIN_ENV, bin);
    Ok(super::cargo_test(cmd)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `(file, name)` of every test function in the five packages' `tests/` files.
    fn test_functions() -> Vec<(String, String)> {
        let root = crate::paths::workspace_root();
        let mut found = Vec::new();
        for package in PACKAGES {
            let dir = package;
            let tests = root.join(dir).join("tests");
            for entry in std::fs::read_dir(&tests).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let file = format!(
                    "{dir}/tests/{}",
                    path.file_name().unwrap().to_string_lossy()
                );
                for line in text.lines() {
                    let line = line.trim_start();
                    let rest = line
                        .strip_prefix("async fn ")
                        .or_else(|| line.strip_prefix("fn "));
                    if let Some(name) = rest.and_then(|r| r.split('(').next()) {
                        found.push((file.clone(), name.to_owned()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn every_test_left_out_is_one_function_of_its_file() {
        let functions = test_functions();
        for left in &LEFT_OUT {
            let homes: Vec<_> = functions
                .iter()
                .filter(|(_, name)| name == left.test)
                .map(|(file, _)| file.as_str())
                .collect();
            assert_eq!(homes, [left.file], "{}", left.test);
        }
    }

    #[test]
    fn skips_each_name_exactly_and_counts_the_reasons() {
        let args = skip_args();
        assert_eq!(args.len(), LEFT_OUT.len() * 2 + 1);
        assert_eq!(args.first().map(String::as_str), Some("--skip"));
        assert_eq!(args.last().map(String::as_str), Some("--exact"));
        let counts = left_out_counts();
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<usize>(), LEFT_OUT.len());
        let tally = Tally {
            passed: 7,
            ..Tally::default()
        };
        let line = summary(&tally);
        assert!(
            line.starts_with("suite on zk-mem-server: 7 passed, 0 failed, 0 ignored; 19 left out, needing an ensemble 9, TLS or SASL 10"),
            "{line}"
        );
    }
}
