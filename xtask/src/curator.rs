//! The Curator worker (`java/CuratorWorker.java`: `bench`, `interop` and `chaos` modes, as
//! `zk-worker` has ours): its classpath and its compile, shared by `cargo xtask bench`,
//! `interop` and `chaos`.

use std::error::Error;

use crate::deps::{self, Need};
use crate::java;

/// The Curator worker's jars: Curator 5.4 (Debian's jars are not shaded; Debian's Guava
/// bundles `failureaccess`), ZooKeeper's client, and a silent SLF4J binding.
pub const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "guava",
    "zookeeper",
    "zookeeper-jute",
    "slf4j-api",
    "slf4j-nop",
];

/// The worker's main class.
pub const MAIN: &str = "CuratorWorker";

/// Makes sure Java, ZooKeeper and Curator are installed and the worker is compiled; its
/// classpath (the classes, then [`CURATOR_JARS`]).
///
/// # Errors
/// A missing package or a failed compile.
pub fn classpath() -> Result<String, Box<dyn Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator])?;
    let jars = java::jars(&CURATOR_JARS);
    let sources = [
        "CuratorWorker",
        "CuratorInterop",
        "CuratorChaos",
        "CuratorBench",
        "CuratorQueue",
        "BenchSupport",
    ]
    .map(|name| java::java_dir().join(format!("{name}.java")));
    let classes = java::compile(MAIN, &sources, &jars)?;
    Ok(format!("{}:{jars}", classes.display()))
}
