//! The test kit: real ZooKeeper servers for tests, and what they need.
//!
//! - [`ZkServer`] (standalone) and [`Ensemble`] (N members) on free loopback ports, each
//!   member a JVM running Debian's ZooKeeper 3.8 jars; members can be killed, restarted,
//!   paused and cut off from each other; everything is stopped and removed when dropped, also
//!   when a test panics.
//! - [`FaultProxy`]: a loopback TCP proxy that delays, stalls, cuts or refuses connections.
//! - [`deps`]: makes sure Java, ZooKeeper, Curator and kazoo are installed; [`java`]: the
//!   classpaths and a cached `javac`.
//!
//! It depends on no crate of the workspace (the product crates' tests use it without
//! rebuilding it when a recipe changes), and it is not a ZooKeeper client. The `xtask` binary
//! keeps the commands (demo, benchmarks, interop, stress, simulator) and re-exports this.
//!
//! # Examples
//!
//! ```no_run
//! let mut zk = zk_testkit::Ensemble::start(3, zk_testkit::ZkOptions::default())?; // all serve
//! let leader = zk.wait_leader(std::time::Duration::from_secs(30))?;
//! zk.kill(leader)?; // SIGKILL; restart(i), pause(i) (SIGSTOP), resume(i) too
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod deps;
pub mod java;
pub mod lines;
pub mod paths;
pub mod proxy;
pub mod zk;

pub use proxy::FaultProxy;
pub use zk::{DetachedEnsemble, Ensemble, Mode, ZkOptions, ZkServer, four_letter};
