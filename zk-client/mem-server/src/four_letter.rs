//! ZooKeeper's four-letter words on the client port: a connection whose first four bytes
//! are `ruok`, `srvr`, `mntr`, `wchs`, `wchp` or `wchc` is answered in ZooKeeper 3.8's format
//! and closed, so tools and tests that probe a server with them (the test kit waits on
//! `srvr`) work against this one too. ZooKeeper's other words are answered as a server whose
//! whitelist leaves them out; any other four bytes are a frame length, as on a real server.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::machine::ServerMachine;
use crate::watches::WatchKind;

/// The version the answers give.
const VERSION: &str = "3.8.0-zk-mem-server";

/// The words ZooKeeper 3.8 knows, served here or not.
const KNOWN: [&[u8; 4]; 19] = [
    b"conf", b"cons", b"crst", b"dump", b"envi", b"gtmk", b"ruok", b"stmk", b"srst", b"srvr",
    b"stat", b"wchc", b"wchp", b"wchs", b"mntr", b"isro", b"hash", b"dirs", b"whoa",
];

/// The answer to `word`, or `None` when it is not one of ZooKeeper's words (the bytes are
/// then a frame length).
pub(crate) fn answer(machine: &ServerMachine, word: &[u8; 4]) -> Option<String> {
    if !KNOWN.contains(&word) {
        return None;
    }
    let word = String::from_utf8_lossy(word).into_owned();
    let mut out = String::new();
    match word.as_str() {
        "ruok" => out.push_str("imok"),
        "srvr" => {
            let (received, sent) = machine.packets();
            let _ = write!(
                out,
                "Zookeeper version: {VERSION}\nLatency min/avg/max: 0/0.0/0\nReceived: {received}\n\
                 Sent: {sent}\nConnections: {}\nOutstanding: 0\nZxid: {:#x}\nMode: standalone\n\
                 Node count: {}\n",
                machine.connection_count(),
                machine.zxid(),
                machine.tree().len()
            );
        }
        "mntr" => {
            let (received, sent) = machine.packets();
            let tree = machine.tree();
            let rows: [(&str, String); 14] = [
                ("zk_version", VERSION.to_owned()),
                ("zk_server_state", "standalone".to_owned()),
                ("zk_avg_latency", "0.0".to_owned()),
                ("zk_max_latency", "0".to_owned()),
                ("zk_min_latency", "0".to_owned()),
                ("zk_packets_received", received.to_string()),
                ("zk_packets_sent", sent.to_string()),
                (
                    "zk_num_alive_connections",
                    machine.connection_count().to_string(),
                ),
                ("zk_outstanding_requests", "0".to_owned()),
                ("zk_znode_count", tree.len().to_string()),
                ("zk_watch_count", machine.watch_count().to_string()),
                ("zk_ephemerals_count", tree.ephemerals().count().to_string()),
                ("zk_approximate_data_size", tree.data_size().to_string()),
                ("zk_global_sessions", machine.sessions().len().to_string()),
            ];
            for (key, value) in rows {
                let _ = writeln!(out, "{key}\t{value}");
            }
        }
        "wchs" => {
            let watches = machine.watches();
            let mut sessions = BTreeSet::new();
            let mut paths = 0;
            for kind in WatchKind::ALL {
                for (_, watching) in watches.watched(kind) {
                    paths += 1;
                    sessions.extend(watching.iter().copied());
                }
            }
            let _ = write!(
                out,
                "{} connections watching {paths} paths\nTotal watches:{}\n",
                sessions.len(),
                watches.len()
            );
        }
        // By path, then by session: each table in turn, as ZooKeeper dumps its data and
        // child watch managers one after the other.
        "wchp" | "wchc" => {
            for kind in WatchKind::ALL {
                let watched = machine.watches().watched(kind);
                if word == "wchp" {
                    for (path, sessions) in watched {
                        let _ = writeln!(out, "{path}");
                        for s in sessions {
                            let _ = writeln!(out, "\t0x{s:x}");
                        }
                    }
                } else {
                    let mut by_session = std::collections::BTreeMap::<i64, Vec<&str>>::new();
                    for (path, sessions) in watched {
                        for &s in sessions {
                            by_session.entry(s).or_default().push(path);
                        }
                    }
                    for (s, paths) in by_session {
                        let _ = writeln!(out, "0x{s:x}");
                        for path in paths {
                            let _ = writeln!(out, "\t{path}");
                        }
                    }
                }
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "{word} is not executed because it is not in the whitelist."
            );
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::machine::ServerConfig;
    use std::time::Instant;

    #[test]
    fn words_answer_as_zookeeper_and_other_bytes_are_a_length() {
        let machine = ServerMachine::new(ServerConfig::new(1), Instant::now());
        assert_eq!(answer(&machine, b"ruok").as_deref(), Some("imok"));
        let srvr = answer(&machine, b"srvr").unwrap();
        assert!(srvr.contains("\nMode: standalone\n"), "{srvr}");
        assert!(srvr.contains("\nZxid: 0x0\n"), "{srvr}");
        let mntr = answer(&machine, b"mntr").unwrap();
        assert!(mntr.contains("zk_packets_received\t0\n"), "{mntr}");
        assert!(mntr.contains("zk_znode_count\t4\n"), "{mntr}");
        assert_eq!(
            answer(&machine, b"wchs").as_deref(),
            Some("0 connections watching 0 paths\nTotal watches:0\n")
        );
        assert!(
            answer(&machine, b"dump")
                .unwrap()
                .contains("not in the whitelist")
        );
        // A connect request's length prefix is not a word.
        assert_eq!(answer(&machine, &[0, 0, 0, 44]), None);
    }
}
