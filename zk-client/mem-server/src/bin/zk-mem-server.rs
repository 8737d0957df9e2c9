//! `zk-mem-server`: the in-memory ZooKeeper as a process of its own, for code in another
//! process or language that takes a connect string. It serves on one loopback port, prints
//! `zk-mem-server listening on 127.0.0.1:<port>` once it does, answers the four-letter words
//! `ruok`, `srvr`, `mntr`, `wchs`, `wchp` and `wchc`, and runs until it is killed (or, with
//! `--watch-stdin`, until its standard input closes: a test harness holding the pipe takes the
//! server with it when it dies). With `--data-dir DIR` it keeps its state in
//! `DIR/zk-mem-server.snapshot`, written after every transaction before the reply leaves
//! ([`MemServer::open`]): killed and started again on the same directory, it has every node
//! and session it acknowledged (sessions given their whole timeout again), as a ZooKeeper
//! server restarted on its data directory; without it, nothing is kept.
//!
//! ```text
//! zk-mem-server [--port P] [--seed S] [--min-session-timeout-ms MS] [--max-session-timeout-ms MS]
//!               [--container-check-ms MS] [--data-dir DIR] [--watch-stdin]
//! ```
//!
//! `--container-check-ms` is ZooKeeper's `znode.container.checkIntervalMs` (60,000 by default,
//! as ZooKeeper's): how often empty containers and expired TTL nodes are removed; `0` removes
//! them right after the write that empties them.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use zk_mem_server::{MemServer, ServerConfig};

const USAGE: &str = "usage: zk-mem-server [--port P] [--seed S] [--min-session-timeout-ms MS] \
                     [--max-session-timeout-ms MS] [--container-check-ms MS] [--data-dir DIR] \
                     [--watch-stdin]";

/// ZooKeeper's default `znode.container.checkIntervalMs`.
const CONTAINER_CHECK: Duration = Duration::from_secs(60);

/// The command line.
struct Args {
    port: u16,
    config: ServerConfig,
    data_dir: Option<std::path::PathBuf>,
    watch_stdin: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = ServerConfig::new(1);
    config.container_manager = Some(CONTAINER_CHECK);
    let mut out = Args {
        port: 0,
        config,
        data_dir: None,
        watch_stdin: false,
    };
    while let Some(flag) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let text = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            text.parse()
                .map_err(|_| format!("{name}: not a number: {text:?}"))
        };
        match flag.as_str() {
            "--port" => {
                out.port = u16::try_from(value("--port")?).map_err(|_| "--port: too large")?
            }
            "--seed" => out.config.seed = value("--seed")?,
            "--min-session-timeout-ms" => {
                out.config.min_session_timeout =
                    Duration::from_millis(value("--min-session-timeout-ms")?)
            }
            "--max-session-timeout-ms" => {
                out.config.max_session_timeout =
                    Duration::from_millis(value("--max-session-timeout-ms")?)
            }
            "--container-check-ms" => {
                out.config.container_manager =
                    Some(Duration::from_millis(value("--container-check-ms")?))
            }
            "--data-dir" => {
                let dir = args.next().ok_or("--data-dir needs a value")?;
                out.data_dir = Some(dir.into());
            }
            "--watch-stdin" => out.watch_stdin = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if out.config.min_session_timeout > out.config.max_session_timeout {
        return Err("--min-session-timeout-ms is above --max-session-timeout-ms".to_owned());
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    if args.watch_stdin {
        // The harness holds the other end: its end (or its death) ends this server.
        std::thread::spawn(|| {
            let mut sink = [0u8; 64];
            while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("zk-mem-server: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let server = match &args.data_dir {
            None => MemServer::new(args.config),
            Some(dir) => match MemServer::open(args.config, dir.join("zk-mem-server.snapshot")) {
                Ok(server) => server,
                Err(e) => {
                    eprintln!("zk-mem-server: {e}");
                    return ExitCode::FAILURE;
                }
            },
        };
        match server.listen_on(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))) {
            Ok(addr) => {
                println!("zk-mem-server listening on {addr}");
                let _ = std::io::stdout().flush();
                std::future::pending::<()>().await;
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("zk-mem-server: cannot listen on port {}: {e}", args.port);
                ExitCode::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Args, String> {
        parse(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_parse_and_bad_ones_are_refused() {
        let a = args(&["--port", "2181", "--seed", "9", "--watch-stdin"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((a.port, a.config.seed, a.watch_stdin), (2181, 9, true));
        assert_eq!(a.config.container_manager, Some(CONTAINER_CHECK));
        let a = args(&["--container-check-ms", "0"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.config.container_manager, Some(Duration::ZERO));
        let a = args(&["--data-dir", "/tmp/d"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.data_dir, Some(std::path::PathBuf::from("/tmp/d")));
        assert!(args(&["--data-dir"]).is_err());
        assert!(args(&["--port", "70000"]).is_err());
        assert!(args(&["--port"]).is_err());
        assert!(args(&["--bogus"]).is_err());
        assert!(
            args(&[
                "--min-session-timeout-ms",
                "9000",
                "--max-session-timeout-ms",
                "1000"
            ])
            .is_err()
        );
    }
}
