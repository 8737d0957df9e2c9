//! The `org.apache.zookeeper.data` records: [`Id`], [`Acl`], [`Stat`], [`ClientInfo`].

use std::borrow::Cow;

use bytes::Bytes;

use crate::codec::record;

/// ACL permission bits (`ZooDefs.Perms`), carried as an `int`.
///
/// Any bit pattern decodes: the server defines the meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms(pub i32);

impl Perms {
    /// Read the node's data and list its children.
    pub const READ: Perms = Perms(1);
    /// Set the node's data.
    pub const WRITE: Perms = Perms(1 << 1);
    /// Create children.
    pub const CREATE: Perms = Perms(1 << 2);
    /// Delete children.
    pub const DELETE: Perms = Perms(1 << 3);
    /// Set the node's ACL.
    pub const ADMIN: Perms = Perms(1 << 4);
    /// Every permission.
    pub const ALL: Perms = Perms(31);

    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

impl crate::Decode for Perms {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut crate::Reader<'_>) -> Result<Self, crate::DecodeError> {
        r.i32().map(Perms)
    }
}

impl crate::Encode for Perms {
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, out: &mut bytes::BytesMut) -> Result<(), crate::EncodeError> {
        self.0.encode(out)
    }
}

impl crate::Visit for Perms {
    fn visit(&self, tag: &str, v: &mut dyn crate::Visitor) {
        v.int(tag, self.0);
    }
}

record! {
    /// An identity: a scheme (`world`, `auth`, `digest`, `ip`, ...) and an id in it.
    Id "Id" {
        /// The scheme (borrowed for the constants, so that an open ACL's clone costs one
        /// allocation, not three).
        scheme: Cow<'static, str> = "scheme",
        /// The id, in the scheme's format.
        id: Cow<'static, str> = "id",
    }
}

impl Id {
    /// An identity from two string slices.
    pub fn new(scheme: &str, id: &str) -> Self {
        Self {
            scheme: Cow::Owned(scheme.to_owned()),
            id: Cow::Owned(id.to_owned()),
        }
    }

    /// An identity from two constants, without allocating.
    pub const fn from_static(scheme: &'static str, id: &'static str) -> Self {
        Self {
            scheme: Cow::Borrowed(scheme),
            id: Cow::Borrowed(id),
        }
    }
}

record! {
    /// One ACL entry: what `id` may do.
    Acl "ACL" {
        /// The permitted operations.
        perms: Perms = "perms",
        /// Who.
        id: Id = "id",
    }
}

impl Acl {
    /// `world:anyone` with every permission (`ZooDefs.Ids.OPEN_ACL_UNSAFE`), as a constant: a
    /// create given it borrows it.
    pub const OPEN_UNSAFE: &'static [Acl] = &[Acl {
        perms: Perms::ALL,
        id: Id::from_static("world", "anyone"),
    }];

    /// `world:anyone` with every permission (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open_unsafe() -> Vec<Acl> {
        Self::OPEN_UNSAFE.to_vec()
    }

    /// Every permission for the identities the session authenticated with
    /// (`ZooDefs.Ids.CREATOR_ALL_ACL`).
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::ALL,
            id: Id::from_static("auth", ""),
        }]
    }

    /// `world:anyone` may read (`ZooDefs.Ids.READ_ACL_UNSAFE`).
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::READ,
            id: Id::from_static("world", "anyone"),
        }]
    }
}

record! {
    /// A node's metadata, as the server reports it.
    Stat "Stat" {
        /// The zxid of the create.
        czxid: i64 = "czxid",
        /// The zxid of the last data change.
        mzxid: i64 = "mzxid",
        /// Creation time, ms since the epoch.
        ctime: i64 = "ctime",
        /// Last modification time, ms since the epoch.
        mtime: i64 = "mtime",
        /// Number of data changes.
        version: i32 = "version",
        /// Number of child changes.
        cversion: i32 = "cversion",
        /// Number of ACL changes.
        aversion: i32 = "aversion",
        /// The owning session for an ephemeral node, else 0.
        ephemeral_owner: i64 = "ephemeralOwner",
        /// Length of the data.
        data_length: i32 = "dataLength",
        /// Number of children.
        num_children: i32 = "numChildren",
        /// The zxid of the last child change.
        pzxid: i64 = "pzxid",
    }
}

record! {
    /// One identity of a session, as `whoAmI` reports it.
    ClientInfo "ClientInfo" {
        /// The authentication scheme.
        auth_scheme: String = "authScheme",
        /// The user name or other id (for example an IP address).
        user: String = "user",
    }
}

/// Shorthand used by records holding nullable data.
pub type Buffer = Option<Bytes>;
