//! Developer tooling for the workspace, and the test-server library that other crates use as a
//! dev-dependency.
//!
//! As a binary (`cargo xtask <command>`, see `cargo xtask help`) it starts and stops local
//! ZooKeeper servers, runs the demo, the test suite and the jute conformance checks. As a
//! library it gives tests real ZooKeeper servers on loopback ([`Ensemble`], [`ZkServer`]) that
//! are killed when dropped, and makes sure the Java, ZooKeeper, Curator and kazoo installs the
//! project's tests need are present ([`deps`]). It is not part of what users of the recipes
//! compile, and it is not a ZooKeeper client.

pub mod bench;
pub mod conformance;
pub mod demo;
pub mod deps;
pub mod interop;
pub mod java;
pub mod paths;
pub mod proxy;
pub mod recipe_interop;
pub mod stress;
pub mod suite;
pub mod wire;
pub mod zk;

pub use proxy::FaultProxy;
pub use zk::{DetachedEnsemble, Ensemble, Mode, ZkOptions, ZkServer, four_letter};
