//! An async ZooKeeper client for ZooKeeper 3.8: one session over one TCP connection, shared by
//! any number of tasks.
//!
//! The session logic — xids, the FIFO of pending requests, the watch table, ping and read
//! deadlines, the state machine — is plain data in [`session`], driven by events and tested
//! without a network. A thin tokio task moves frames between it and the socket. The wire
//! format is `zk-proto`'s.
//!
//! It is **not** a recipe library: locks live in the `recipe-*` crates, built on this one.
//!
//! # Features
//!
//! All off by default (the default dependency tree is `bytes`, `tokio`, `tokio-util`,
//! `thiserror` and `zk-proto`):
//! - `tls`: TLS to servers' secure client port, with rustls (`ring` provider) through
//!   tokio-rustls; see `ClientBuilder::tls` and `tls::TlsConfig`.
//! - `sasl-digest`: SASL DIGEST-MD5 authentication after every handshake; see
//!   `ClientBuilder::sasl_digest`.
//! - `transport`: `ClientBuilder::connect_over`, a session over byte streams the caller
//!   opens (an in-memory server, a simulator on tokio's paused clock) instead of TCP.
//! - `tracing`: events through [`tracing`](https://docs.rs/tracing), with targets under
//!   `zk_client`: `info` for session state changes and reconnect decisions (with the
//!   session id and server), `warn` for failed attempts and a session's end, `debug` for
//!   every connection attempt, request, reply, credential replay and watch restore.
//!
//! # Examples
//!
//! ```no_run
//! use zk_client::{Client, CreateMode, CreateOptions, Op};
//!
//! # async fn f() -> Result<(), zk_client::Error> {
//! let client = Client::builder().hosts("127.0.0.1:2181").connect().await?;
//! client.create("/app", b"", &CreateOptions::new(CreateMode::Persistent)).await?;
//! let (children, watcher) = client.get_children_and_watch("/app").await?;
//! let c2 = client.clone(); // clones share the session; requests are pipelined
//! tokio::spawn(async move { c2.create("/app/a", b"1", &CreateOptions::new(CreateMode::Ephemeral)).await });
//! let event = watcher.await; // NodeChildrenChanged on /app
//! // A transaction: all or nothing.
//! client.multi(&[Op::check("/app", None), Op::set_data("/app", "v2", None)]).await?;
//! client.close().await?; // always closes; on the server too when one answers in time
//! # Ok(()) }
//! ```

mod chroot;
mod client;
mod command;
mod dial;
mod error;
mod framing;
mod hosts;
mod io;
mod log;
mod loom;
mod outage;
mod reply;
mod sasl;
pub mod session;
#[cfg(feature = "tls")]
pub mod tls;
mod watcher;

pub use bytes::Bytes;
pub use client::{
    CONFIG_NODE, Client, ClientBuilder, ClientId, CreateOptions, DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_DATA_LEN, DEFAULT_MAX_REQUEST_LEN, Op, OpResult, ReadOp, ReadResult, StateStream,
};
pub use command::WatchHandler;
pub use error::{Error, IoError, ProtocolError, TlsFailure};
pub use hosts::ConnectString;
pub use outage::Outage;
pub use session::WatcherId;
pub use session::{SessionState, WatchedEvent};
pub use watcher::{OneshotWatcher, PersistentWatcher};
pub use zk_proto::PathError;
pub use zk_proto::records::{Acl, ClientInfo, Id, Perms, Stat};
pub use zk_proto::{AddWatchMode, CreateMode, EventType, KeeperState, WatcherType};
