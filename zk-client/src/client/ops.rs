//! What a request is made of: [`CreateOptions`], a transaction's [`Op`]s and their
//! [`OpResult`]s, and [`Client::multi_read`](super::Client::multi_read)'s reads.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::CreateMode;
use zk_proto::records::*;

/// How to create a node: its mode, ACL and (for TTL modes) time to live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// The kind of node.
    pub mode: CreateMode,
    /// Its ACL (default: `world:anyone` may do everything, the constant
    /// [`Acl::OPEN_UNSAFE`], borrowed: a create allocates nothing for it).
    pub acl: Cow<'static, [Acl]>,
    /// The time to live, required for TTL modes and refused otherwise.
    pub ttl: Option<Duration>,
}

impl CreateOptions {
    /// A node of `mode` with an open ACL.
    pub const fn new(mode: CreateMode) -> Self {
        Self {
            mode,
            acl: Cow::Borrowed(Acl::OPEN_UNSAFE),
            ttl: None,
        }
    }

    /// With this ACL (a `Vec<Acl>`, or a constant slice such as [`Acl::OPEN_UNSAFE`]).
    pub fn acl(mut self, acl: impl Into<Cow<'static, [Acl]>>) -> Self {
        self.acl = acl.into();
        self
    }

    /// With this time to live (TTL modes).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// One operation of a [`Client::multi`](crate::Client::multi) transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create a node (the result has its `Stat`).
    Create {
        /// The path (prefix, for sequential modes).
        path: String,
        /// The data.
        data: Bytes,
        /// Mode, ACL, TTL.
        options: CreateOptions,
    },
    /// Delete a node, at `version` if given.
    Delete {
        /// The path.
        path: String,
        /// The expected version.
        version: Option<i32>,
    },
    /// Set a node's data, at `version` if given.
    SetData {
        /// The path.
        path: String,
        /// The data.
        data: Bytes,
        /// The expected version.
        version: Option<i32>,
    },
    /// Require that the node exists (at `version` if given).
    Check {
        /// The path.
        path: String,
        /// The expected version.
        version: Option<i32>,
    },
}

impl Op {
    /// Create `path` with `data` and `options` (mode, ACL, TTL).
    pub fn create(path: impl Into<String>, data: impl Into<Bytes>, options: CreateOptions) -> Op {
        Op::Create {
            path: path.into(),
            data: data.into(),
            options,
        }
    }

    /// Delete `path`, at `version` if given.
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Delete {
            path: path.into(),
            version,
        }
    }

    /// Set `path`'s data, at `version` if given.
    pub fn set_data(path: impl Into<String>, data: impl Into<Bytes>, version: Option<i32>) -> Op {
        Op::SetData {
            path: path.into(),
            data: data.into(),
            version,
        }
    }

    /// Require that `path` exists (at `version` if given): the transaction commits only then.
    pub fn check(path: impl Into<String>, version: Option<i32>) -> Op {
        Op::Check {
            path: path.into(),
            version,
        }
    }
}

/// The result of one [`Op`] of a committed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The created path (with its sequence number), and its `Stat` for container and TTL
    /// nodes (ZooKeeper 3.8 reports no `Stat` for plain creates in a transaction).
    Created(String, Option<Stat>),
    /// Deleted.
    Deleted,
    /// The node's new `Stat`.
    DataSet(Stat),
    /// The check passed.
    Checked,
}

/// One read of a [`Client::multi_read`](crate::Client::multi_read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOp {
    /// List a node's children.
    GetChildren(String),
    /// Read a node's data.
    GetData(String),
}

/// The result of one [`ReadOp`]: each read succeeds or fails on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadResult {
    /// The children's names.
    Children(Vec<String>),
    /// The data and `Stat`.
    Data(Bytes, Stat),
}
