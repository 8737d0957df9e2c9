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

/// Renders `zoo.cfg` for member `index` (0-based) of an ensemble whose members listen on `all`.
///
/// One member is a standalone server; more get `server.<index + 1>=127.0.0.1:<peer>:<election>`
/// lines (the member's `myid` file must hold `index + 1`). The config always enables every
/// four-letter word, disables the admin HTTP server and dynamic reconfiguration, and lifts the
/// per-host connection limit; `opts.extra_config` comes last, so it can override any of this.
pub fn render(opts: &ZkOptions, index: usize, all: &[MemberPorts], data_dir: &Path) -> String {
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
            line(
                &format!("server.{}", i + 1),
                &format!("127.0.0.1:{}:{}", ports.peer, ports.election),
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
}
