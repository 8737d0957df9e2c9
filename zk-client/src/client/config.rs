//! [`Client`]'s ensemble configuration: the host list changed, the config node read (and
//! watched), and a reconfiguration asked for.

use bytes::Bytes;
use zk_proto::records::*;
use zk_proto::{Request, Response};

use super::{CONFIG_NODE, Client, ended, unexpected};
use crate::command::Command;
use crate::watcher::OneshotWatcher;
use crate::{ConnectString, Error};

impl Client {
    /// Replaces the list of servers, keeping the session (Java's `updateServerList`): for an
    /// ensemble that grew, shrank or moved. `hosts` is a connect string; its chroot, if any,
    /// must be the client's. If the server of the current connection is no longer listed,
    /// the client moves to one that is; otherwise it stays where it is.
    pub fn update_server_list(&self, hosts: &str) -> Result<(), Error> {
        let cs = ConnectString::parse(hosts)?;
        if cs.chroot.is_some() && self.inner.chroot.to_server("/") != cs.chroot {
            return Err(Error::InvalidHosts {
                input: hosts.to_owned(),
                reason: "the chroot cannot change",
            });
        }
        self.inner
            .tx
            .send(Command::UpdateHosts { hosts: cs.hosts })
            .map_err(|_| ended(self.state()))
    }

    /// The ensemble's dynamic configuration, as `/zookeeper/config` holds it (`server.N=...`
    /// lines and `version=...`; empty on a standalone server), and its `Stat`. Never under
    /// the chroot (as the Java client's `getConfig`).
    pub async fn get_config(&self) -> Result<(Bytes, Stat), Error> {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Like [`Client::get_config`], leaving a watch that fires when the configuration
    /// changes (a `reconfig`). Without a chroot: with one, the watcher is kept until it fires
    /// or the session ends, even if dropped.
    pub async fn get_config_and_watch(&self) -> Result<(Bytes, Stat, OneshotWatcher), Error> {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: true,
        });
        match self.call_watching(request, CONFIG_NODE.to_owned()).await {
            Ok((Response::GetData(r), w)) => Ok((r.data.unwrap_or_default(), r.stat, w)),
            Ok((other, _)) => Err(unexpected(other)),
            Err(e) => Err(e),
        }
    }

    /// Changes the ensemble's membership (ZooKeeper's `reconfig`; the servers need
    /// `reconfigEnabled=true`, and the session must be allowed to: a super user, or servers
    /// with `zookeeper.skipACL`). Incremental: `joining` servers (`server.N=host:peer:election;
    /// client`, comma-separated) and `leaving` server ids (`"3,4"`); or the whole
    /// `new_members`. `from_config`: the configuration version it must replace (`-1`/`None`:
    /// any). Returns the new configuration and its `Stat`, as [`Client::get_config`].
    pub async fn reconfig(
        &self,
        joining: Option<&str>,
        leaving: Option<&str>,
        new_members: Option<&str>,
        from_config: Option<i64>,
    ) -> Result<(Bytes, Stat), Error> {
        if joining.is_none() && leaving.is_none() && new_members.is_none() {
            return Err(Error::InvalidArgument(
                "reconfig needs joining, leaving or new members",
            ));
        }
        let request = Request::Reconfig(ReconfigRequest {
            joining_servers: joining.map(str::to_owned),
            leaving_servers: leaving.map(str::to_owned),
            new_members: new_members.map(str::to_owned),
            cur_config_id: from_config.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other)),
        }
    }
}
