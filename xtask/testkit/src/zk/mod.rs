//! ZooKeeper servers for tests and for `cargo xtask zk`: a standalone server or an N-member
//! ensemble on 127.0.0.1, with free ports, temporary directories, fault injection (kill,
//! restart, pause, partitions), and cleanup when dropped or when the starting process dies.
//!
//! The servers are Debian's ZooKeeper 3.8 jars run by Java 17 (see [`crate::deps`]). Each JVM
//! is started through a tiny Java launcher (`xtask/java/ZkLauncher.java`) that halts the server
//! when the test process goes away. This module is not a ZooKeeper client: besides starting
//! and stopping servers it only speaks ZooKeeper's four-letter words.
//!
//! - [`Ensemble`]: N members owned by the caller, killed on drop; [`ZkServer`] for one.
//! - [`ZkOptions`]: tick time, session limits, heap, extra `zoo.cfg` lines, ports.
//! - [`DetachedEnsemble`]: servers left running for `cargo xtask zk start`, and their state file.
//! - [`four_letter()`]: send `ruok`, `srvr`, `mntr`... to any server.
//! - [`secure`]: a TLS client port with certificates made per ensemble, SASL users.

pub mod config;
mod detached;
mod ensemble;
pub mod four_letter;
mod options;
pub mod ports;
mod process;
pub mod program;
pub mod secure;
mod server;

pub use config::MemberPorts;
pub use detached::{DetachedEnsemble, DetachedMember, Stopped};
pub use ensemble::Ensemble;
pub use four_letter::{Mode, four_letter, parse_mntr, parse_mode};
pub use options::ZkOptions;
pub use program::Program;
pub use secure::{ClientAuth, SaslOptions, TestPki, TlsOptions};
pub use server::ZkServer;

/// A connect string of `addrs`, as clients take it: `127.0.0.1:p1,127.0.0.1:p2,...`.
fn connect_string_of(addrs: impl IntoIterator<Item = std::net::SocketAddr>) -> String {
    addrs
        .into_iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
