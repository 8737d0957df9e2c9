//! Developer tooling for the workspace, and the test-server library that other crates use as a
//! dev-dependency.

pub mod conformance;
pub mod demo;
pub mod suite;
