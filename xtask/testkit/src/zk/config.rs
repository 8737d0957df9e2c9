//! Rendering a member's `zoo.cfg`, and the ports each member listens on.

use std::fmt::Write as _;
use std::path::Path;

use super::ZkOptions;

/// The ports one member listens on, all on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberPorts {
    /// The client port (clients and four-letter words).
    pub client: u16,
    /// The quorum port followers connect to when this member leads (ensembles only).
    pub peer: u16,
    /// The leader-election port (ensembles only).
    pub election: u16,
}

/// The ports on 127.0.0.1 where one member dials another member's quorum and election ports
/// when its links go through proxies (see [`render_routed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerRoute {
    /// Dialed for the other member's quorum (peer) port.
    pub quorum: u16,
    /// Dialed for the other member's election port.
    pub election: u16,
}

/// Renders `zoo.cfg` for member `index` (0-based) of an ensemble whose members listen on `all`.
///
/// One member is a standalone server; more get `server.<index + 1>=127.0.0.1:<peer>:<election>`
/// lines (the member's `myid` file must hold `index + 1`). The config always enables every
/// four-letter word, disables the admin HTTP server and dynamic reconfiguration, and lifts the
/// per-host connection limit; `opts.extra_config` comes last, so it can override any of this.
pub fn render(opts: &ZkOptions, index: usize, all: &[MemberPorts], data_dir: &Path) -> String {
    render_routed(opts, index, all, None, data_dir)
}

/// As [`render`], but with `routes` (one per member, the member's own entry ignored) member
/// `index` dials each other member `j` at `routes[j]` instead of its real ports:
/// `server.<j + 1>=127.0.0.1:<quorum route>:<election route>` (a member without a route is
/// dialed directly).
///
/// The member's own line is then `server.<index + 1>=0.0.0.0:<peer>:<election>`. A member
/// binds the ports of its own line, and when it dials a peer's election port it sends that
/// line's election address; the peer, when it has the higher id, drops the connection and
/// dials back to the address it was sent (ZooKeeper 3.8 `QuorumCnxManager.handleConnection`),
/// which would bypass the proxies. A wildcard address is not sent on (ZOOKEEPER-2164), so the
/// peer dials back by its own config, through its proxy. The price: the member's quorum and
/// election ports listen on every interface, not only loopback (the client port stays on
/// 127.0.0.1).
pub fn render_routed(
    opts: &ZkOptions,
    index: usize,
    all: &[MemberPorts],
    routes: Option<&[Option<PeerRoute>]>,
    data_dir: &Path,
) -> String {
    let mut cfg = String::new();
    let mut line = |key: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(cfg, "{key}={value}");
    };
    let client = all.get(index).map_or(0, |ports| ports.client);
    line("tickTime", &opts.tick_time_ms);
    line("dataDir", &data_dir.display());
    line("clientPort", &client);
    line("clientPortAddress", &"127.0.0.1");
    line("initLimit", &20);
    line("syncLimit", &10);
    line("maxClientCnxns", &0);
    line("4lw.commands.whitelist", &"*");
    line("admin.enableServer", &false);
    line("reconfigEnabled", &false);
    line("forceSync", &if opts.force_sync { "yes" } else { "no" });
    if let Some(ms) = opts.min_session_timeout_ms {
        line("minSessionTimeout", &ms);
    }
    if let Some(ms) = opts.max_session_timeout_ms {
        line("maxSessionTimeout", &ms);
    }
    if all.len() <= 1 {
        line("standaloneEnabled", &true);
    } else {
        for (i, ports) in all.iter().enumerate() {
            let (host, peer, election) = match routes {
                Some(_) if i == index => ("0.0.0.0", ports.peer, ports.election),
                Some(routes) => match routes.get(i).copied().flatten() {
                    Some(route) => ("127.0.0.1", route.quorum, route.election),
                    None => ("127.0.0.1", ports.peer, ports.election),
                },
                None => ("127.0.0.1", ports.peer, ports.election),
            };
            line(
                &format!("server.{}", i + 1),
                &format!("{host}:{peer}:{election}"),
            );
        }
    }
    for (key, value) in &opts.extra_config {
        line(key, value);
    }
    cfg
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn ports(client: u16) -> MemberPorts {
        MemberPorts {
            client,
            peer: client + 1,
            election: client + 2,
        }
    }

    #[test]
    fn standalone_has_no_server_lines() {
        let cfg = render(&ZkOptions::default(), 0, &[ports(2181)], Path::new("/d"));
        assert!(cfg.contains("clientPort=2181\n"));
        assert!(cfg.contains("dataDir=/d\n"));
        assert!(cfg.contains("standaloneEnabled=true\n"));
        assert!(cfg.contains("forceSync=yes\n"));
        assert!(!cfg.contains("server."));
        assert!(!cfg.contains("SessionTimeout"));
    }

    #[test]
    fn ensemble_lists_every_member_and_extras_come_last() {
        let opts = ZkOptions::default()
            .force_sync(false)
            .session_timeouts_ms(1000, 9000)
            .config("snapCount", "10");
        let all = [ports(3000), ports(3010), ports(3020)];
        let cfg = render(&opts, 1, &all, Path::new("/d1"));
        assert!(cfg.contains("clientPort=3010\n"));
        assert!(cfg.contains("server.1=127.0.0.1:3001:3002\n"));
        assert!(cfg.contains("server.3=127.0.0.1:3021:3022\n"));
        assert!(cfg.contains("minSessionTimeout=1000\nmaxSessionTimeout=9000\n"));
        assert!(cfg.contains("forceSync=no\n"));
        assert!(cfg.ends_with("snapCount=10\n"));
        assert!(!cfg.contains("standaloneEnabled"));
    }

    #[test]
    fn routed_member_binds_its_own_ports_on_the_wildcard_and_dials_the_routes() {
        let all = [ports(3000), ports(3010), ports(3020)];
        let routes = [
            Some(PeerRoute {
                quorum: 4001,
                election: 4002,
            }),
            None,
            Some(PeerRoute {
                quorum: 4021,
                election: 4022,
            }),
        ];
        let cfg = render_routed(
            &ZkOptions::default(),
            1,
            &all,
            Some(&routes),
            Path::new("/d"),
        );
        assert!(cfg.contains("server.1=127.0.0.1:4001:4002\n"), "{cfg}");
        assert!(cfg.contains("server.2=0.0.0.0:3011:3012\n"), "{cfg}");
        assert!(cfg.contains("server.3=127.0.0.1:4021:4022\n"), "{cfg}");
        assert!(cfg.contains("clientPortAddress=127.0.0.1\n"));
        assert!(cfg.contains("reconfigEnabled=false\n"));
    }
}
