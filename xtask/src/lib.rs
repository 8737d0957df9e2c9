//! Developer tooling for the workspace: `cargo xtask <command>` (see `cargo xtask help`)
//! starts and stops local ZooKeeper servers, runs the demo, the test suite, the jute
//! conformance checks, the benchmarks, the Curator interop checks, the stress test and the
//! simulator. The test servers themselves are the `zk-testkit` crate (`xtask/testkit`), which
//! the product crates' tests use directly and this re-exports. It is not part of what users of
//! the recipes compile, and it is not a ZooKeeper client.

pub mod bench;
pub mod chaos;
pub mod cli;
pub mod conformance;
pub mod curator;
pub mod demo;
pub mod differential;
pub mod fuzz;
pub mod house;
pub mod interop;
pub mod line;
pub mod recipe;
pub mod stress;
pub mod suite;
pub mod txnlog;
pub mod wire;
pub mod worker_process;

pub use zk_testkit::{
    DetachedEnsemble, Ensemble, FaultProxy, Mode, ZkOptions, ZkServer, deps, four_letter, java,
    paths, proxy, zk,
};

/// The README's code, compiled as doctests here, where every crate it uses is a dependency
/// (its first program and its test example are also built outside the workspace, as a user's
/// crate, by `tests/readme.rs`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDocs;

/// The command reference's code (the test kit), compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/commands.md")]
struct CommandDocs;
