//! An in-memory ZooKeeper server for your tests: no Java, no Docker, no ports unless you ask.
//!
//! [`MemServer`] speaks ZooKeeper's real wire protocol (the same jute frames a 3.8 server
//! reads and writes), so the code under test runs unchanged: the real `zk_client::Client`,
//! the lock crates on it, your functions that take either. It is not on crates.io yet: add
//! it as a git dev-dependency on the repository, the same form as your dependencies on
//! `zk-client` and the lock crates (one checkout, so one `zk_client` for both; a path
//! dependency beside git ones would build two that do not mix):
//!
//! ```toml
//! [dev-dependencies]
//! zk-mem-server = { git = "<this repository>" }
//! tokio = { version = "1", features = ["macros", "rt", "test-util"] }
//! ```
//!
//! - **In the test's process, on tokio's clock.** [`MemServer::client`] connects a client
//!   over in-memory streams (`tokio::io::duplex`): no socket, no thread, every deadline on
//!   tokio's clock, so `#[tokio::test(start_paused = true)]` runs hours of session time in
//!   no wall time. A server starts in microseconds (the test kit's Java ZooKeeper: seconds).
//! - **Over loopback TCP**, for code that takes a connect string and for other processes:
//!   [`MemServer::listen`] (several calls, several ports on one tree: a connect string that
//!   looks like an ensemble), on the real clock.
//! - **Seeded.** Session ids, passwords, the faults of [`MemServer::chaos`] and request
//!   latencies ([`ServerConfig::latency`]) come from [`ServerConfig::seed`]: a seed replays a
//!   run, and [`MemServer::record`] keeps a trace of every frame to compare two.
//! - **Faults on command**, each what a real ensemble does to a client:
//!
//! | call | what a real ensemble would be doing | what the client sees |
//! | --- | --- | --- |
//! | [`cut`](MemServer::cut) | the client's server closed its connection (a restart, a network blip) | `Disconnected`, then a reconnect to the same session; requests in flight fail with `ConnectionLoss` (applied or not) |
//! | [`stall`](MemServer::stall) | a network that stops moving bytes but keeps the connection (a partition of one link, a GC pause of the server) | nothing, until the client's own read deadline (two thirds of its session timeout) drops the link and it reconnects |
//! | [`partition`](MemServer::partition) | the client cut off from every server, new connections included | `Disconnected`, then `Lost` on its own clock; on the heal, `Expired` if the session timed out meanwhile |
//! | [`expire`](MemServer::expire) | the ensemble expiring the session (its client was away past its timeout) | `Expired`; its ephemerals deleted and others' watches fired at once |
//! | [`partition`](MemServer::partition) then [`expire`](MemServer::expire) | a session expired while its client hears nothing (the silent expiry behind a partition) | nothing from the server; `Lost` on its own clock; `Expired` once the partition heals |
//! | [`down`](MemServer::down) / [`up`](MemServer::up) | every server unreachable (sessions keep expiring meanwhile) | `Disconnected`, refused reconnects, `Expired` if it lasted past the timeout |
//! | [`stop`](MemServer::stop) / [`start`](MemServer::start) | the whole ensemble restarted: sessions survive, each given its whole timeout again from the start | `Disconnected` (`Lost` if long), then the same session |
//! | [`refuse`](MemServer::refuse) | no server accepting new connections; open ones untouched | only a reconnect fails |
//! | [`ServerConfig::latency`] | a slow network: each request takes a seeded time to arrive, in order | slower replies; a request still on its way when its connection drops never arrives |
//!
//! A fault strikes the server when its call returns; the client hears of it when its own task
//! next runs. [`MemServer::landed`] returns once every client of [`MemServer::client`] has
//! seen what it can see of the faults so far (the table's last column).
//!
//! - **Test helpers**: [`MemServer::client`] (a client bound to the server), [`pause`] (the
//!   code under test stops at a point until the test lets it go on), [`wait_state`] (a
//!   session state), [`MemServer::landed`] (the faults seen). Each wait is bounded by
//!   [`WAIT_BOUND`] of tokio's clock and ends in a [`WaitError`] saying what did not happen.
//!
//! Inspect the server directly, outside the protocol: [`MemServer::children`],
//! [`MemServer::exists`], [`MemServer::data`], [`MemServer::node`], [`MemServer::ephemerals`],
//! [`MemServer::sessions`], [`MemServer::zxid`].
//!
//! # What it serves
//!
//! The handshake (new sessions; resuming one with its id and password; `timeOut` 0 for an
//! expired, unknown or wrongly-passworded session, then close), `ping`, `closeSession`,
//! `create`/`create2`/`createContainer`/`createTTL` in every mode (`%010d` sequence numbers
//! from the parent's `cversion`; containers and TTL nodes with ZooKeeper's `ephemeralOwner`
//! encodings, removed as its container manager removes them), `delete`, `exists`, `getData`, `setData`, `getChildren`,
//! `getChildren2`, `getACL`/`setACL`, `sync`, `check`, `multi`
//! (all-or-nothing, per-op results as ZooKeeper gives them), `multiRead`, `getEphemerals`,
//! `getAllChildrenNumber`, `addAuth` and `whoAmI`, one-shot watches with ZooKeeper's
//! firing rules, persistent and recursive watches (`addWatch`; a recursive one fires for its
//! node and every descendant, never `NodeChildrenChanged`), `checkWatches`/`removeWatches`,
//! and `setWatches`/`setWatches2` after a reconnect (what changed since the client's zxid
//! fires at once for one-shot watches; persistent ones are re-added). Replies carry the zxid
//! of the last transaction; every write, failed or not, and every session start and end is a
//! transaction. Over TCP it answers the four-letter words `ruok`, `srvr`, `mntr`, `wchs`,
//! `wchp` and `wchc`.
//!
//! ACLs are enforced as a 3.8 server with its default providers does: each connection is
//! known as `ip:127.0.0.1` and by the `digest` identities `addAuth` gave it (another scheme is
//! `AuthFailed` and the connection closed); a new ACL is fixed up (`auth` expanded to the
//! connection's digest identities, duplicates dropped, ids each provider cannot read
//! `InvalidACL`); `CREATE`/`DELETE` are checked on the parent, `WRITE` by `setData`, `ADMIN`
//! by `setACL`, `READ` by `getData`, `getChildren`, `getAllChildrenNumber` and `check`,
//! `READ` or `ADMIN` by `getACL` (digest ids shown as `user:x` without `ADMIN`), each after
//! the node's `NoNode` and before its version's `BadVersion`, as ZooKeeper orders them;
//! `exists` checks nothing (3.8.0).
//!
//! The `zk-mem-server` binary serves it on a loopback port as a process of its own (for code
//! that takes a connect string, in any language); `ZK_TESTKIT_SERVER=mem` makes this
//! workspace's test kit start it where a test asks for a ZooKeeper, and `cargo xtask test`
//! runs the client's and the recipes' real-server tests on it that way (those needing an
//! ensemble, TLS or SASL left out by name).
//!
//! # What it does not (known differences from ZooKeeper 3.8)
//!
//! - Answered `Unimplemented`: `reconfig`, SASL. None of our lock crates uses them.
//! - Only the `ip` and `digest` providers: no super user, no `x509` or `sasl` identities;
//!   every connection's IP is `127.0.0.1`.
//! - `removeWatches`/`checkWatches` of type `Data` or `Children` name one-shot watches only
//!   (3.8 keeps a persistent watch in both its data and its child table and would take that
//!   table's half of it); `Any` names every kind, as in 3.8. 3.9's `Persistent` and
//!   `PersistentRecursive` types are `MarshallingError`, as 3.8 answers.
//! - One server behind every port: no read-only mode, no `SessionMoved`, no stale reads from
//!   a lagging follower, no leader election. A test of what a client does while its server
//!   lags behind the leader needs a real ensemble (the test kit's).
//! - By default containers are removed right after the write that took their last child, and
//!   TTL nodes at the first request after their TTL passed (each removal its own
//!   transaction), not by the container manager's timer (every 60 s by default): a test sees
//!   them go sooner, and code that assumes an empty container lingers fails here first.
//!   [`ServerConfig::container_manager`] sets an interval instead (the `zk-mem-server`
//!   binary's default is ZooKeeper's 60 s), or turns removal off.
//! - Sessions expire exactly at their deadline (no tick rounding), when no frame has come
//!   from their client for their negotiated timeout, connected or not.
//! - [`MemServer::new`] writes nothing to disk: a [`MemServer::stop`] keeps the tree and the
//!   sessions in memory, as a restarted ensemble does from its snapshot and log.
//!   [`MemServer::open`] (the binary's `--data-dir`) keeps them in a file instead, rewritten
//!   whole after every transaction: a killed process comes back with every acknowledged
//!   write, not synced to disk and not meant for large trees.
//!
//! # Not for
//!
//! Production, or a benchmark: it is one mutex around one tree, built to be exact and
//! inspectable, not fast. The protocol lives in [`ServerMachine`] (plain data, no IO; see its
//! calling contract); the rest of the crate only moves bytes between it and the streams and
//! sleeps until its next session deadline.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), zk_client::Error> {
//! use zk_client::{Client, CreateMode, CreateOptions, SessionState};
//! use zk_mem_server::{MemServer, ServerConfig};
//!
//! let server = MemServer::new(ServerConfig::new(7));
//! let client = server.client(Client::builder(), 1).await?;
//! client.create("/a", b"x", &CreateOptions::new(CreateMode::Ephemeral)).await?;
//! assert!(server.exists("/a").is_some());
//!
//! // The server expires the session: the ephemeral goes, and the client hears so.
//! server.expire(client.session_id());
//! assert!(server.exists("/a").is_none());
//! let mut states = client.state_watch();
//! states.wait_for(|s| *s == SessionState::Expired).await.ok();
//! # Ok(()) }
//! ```
//!
//! A lock under test, with its session expired behind its back while the job holding it is
//! paused, is the README's "Testing your code without Java".

mod acl;
mod chaos;
mod conn;
mod data_tree;
mod four_letter;
mod machine;
mod pause;
mod seeded;
mod server;
mod shared;
mod tcp;
mod trace;
mod wait;
mod watches;

pub use chaos::Fault;
pub use data_tree::{Change, DataTree, Node};
pub use machine::{
    ConnId, EPOCH_MS, Output, ServerConfig, ServerMachine, SessionInfo, SnapshotError,
};
pub use pause::{Pause, PausePoint, pause};
pub use server::{ADDR, MemServer};
#[cfg(feature = "client")]
pub use wait::wait_state;
pub use wait::{WAIT_BOUND, WaitError};
pub use watches::{Notification, WatchKind, WatchTable};
