//! `reconfig`.

use crate::codec::record;

record! {
    /// `reconfig`: change the ensemble's membership. The reply is a `GetDataResponse` holding
    /// the new configuration.
    ReconfigRequest "ReconfigRequest" {
        /// Servers to add (incremental mode), comma-separated; null for none.
        joining_servers: Option<String> = "joiningServers",
        /// Server ids to remove (incremental mode), comma-separated; null for none.
        leaving_servers: Option<String> = "leavingServers",
        /// The whole new membership (non-incremental mode); null in incremental mode.
        new_members: Option<String> = "newMembers",
        /// The expected current config version, or -1.
        cur_config_id: i64 = "curConfigId",
    }
}
