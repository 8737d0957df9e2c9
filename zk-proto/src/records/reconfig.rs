//! `reconfig`.

use crate::codec::record;

record! {
    /// `reconfig`: change the ensemble's membership. The reply is a `GetDataResponse` holding
    /// the new configuration.
    ReconfigRequest "ReconfigRequest" {
        /// Servers to add (incremental mode).
        joining_servers: String = "joiningServers",
        /// Server ids to remove (incremental mode).
        leaving_servers: String = "leavingServers",
        /// The whole new membership (non-incremental mode).
        new_members: String = "newMembers",
        /// The expected current config version, or -1.
        cur_config_id: i64 = "curConfigId",
    }
}
