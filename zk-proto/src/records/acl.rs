//! `getACL` and `setACL`.

use super::data::{Acl, Stat};
use crate::codec::record;

record! {
    /// `getACL`.
    GetAclRequest "GetACLRequest" {
        /// The node.
        path: String = "path",
    }
}

record! {
    /// The reply to `getACL`.
    GetAclResponse "GetACLResponse" {
        /// The node's ACL.
        acl: Vec<Acl> = "acl",
        /// Its metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `setACL`.
    SetAclRequest "SetACLRequest" {
        /// The node.
        path: String = "path",
        /// The new ACL.
        acl: Vec<Acl> = "acl",
        /// The expected ACL version (`aversion`), or -1 for any.
        version: i32 = "version",
    }
}

record! {
    /// The reply to `setACL`.
    SetAclResponse "SetACLResponse" {
        /// The node's new metadata.
        stat: Stat = "stat",
    }
}
