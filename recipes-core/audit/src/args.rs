//! The command line, parsed by hand.

use std::path::PathBuf;

use crate::Error;
use crate::datadir::Start;
use crate::report::Range;

/// The usage text.
pub const USAGE: &str = "\
usage: zk-lock-audit [options] DATA_DIR...

Reconstructs every Curator-layout lock (mutex, read/write, semaphore) from a ZooKeeper
server's snapshot and transaction logs (DATA_DIR: its dataDir, or dataDir/version-2).
Several DATA_DIRs (the members of one ensemble) are merged by zxid into one history, keeping
only the transactions a majority of the ensemble logged (the committed ones); members whose
logs differ at a zxid are reported (the servers lost history there).

options:
  --lock PATH          only the locks at or under PATH (repeatable)
  --from TIME          only events at or after TIME (RFC 3339 UTC, or ms since the epoch)
  --to TIME            only events at or before TIME
  --leases PATH=N      the semaphore at PATH has N leases (judge its leases by count)
  --snapshot WHICH     oldest (default), newest, or none (the logs alone)
  --ensemble N         the ensemble has N members (default: as many as DATA_DIRs): a
                       transaction fewer than a majority of N logged is left out
  --separately         audit each DATA_DIR on its own instead of merging them
  --json               print JSON instead of text
  --timeline           text: the timeline only
  --summary            text: the summary table only
  -h, --help           this text
";

/// What to print.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Output {
    /// Timeline and table.
    #[default]
    Text,
    /// The timeline only.
    Timeline,
    /// The table only.
    Summary,
    /// JSON.
    Json,
}

/// The parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// The data directories.
    pub dirs: Vec<PathBuf>,
    /// Lock paths to audit (empty: all).
    pub locks: Vec<String>,
    /// The time range of events reported.
    pub range: Range,
    /// Semaphore sizes by base path.
    pub leases: Vec<(String, u32)>,
    /// Which snapshot to start from.
    pub start: Start,
    /// What to print.
    pub output: Output,
    /// Audit each directory on its own (else: merged, one ensemble).
    pub separately: bool,
    /// The ensemble's size (`None`: as many members as directories).
    pub ensemble: Option<usize>,
    /// `--help` was asked.
    pub help: bool,
}

/// Parses the arguments after the program's name.
///
/// # Errors
/// [`Error::Usage`] naming the argument that is wrong.
///
/// ```
/// use zk_lock_audit::args::{Output, parse};
/// let a = parse(["--lock", "/app/l", "--json", "/var/zk"].map(String::from)).unwrap();
/// assert_eq!(a.locks, ["/app/l"]);
/// assert_eq!(a.output, Output::Json);
/// assert!(parse(["--from", "yesterday", "/d"].map(String::from)).is_err());
/// let a = parse(["--ensemble", "5", "/zk1", "/zk2", "/zk3"].map(String::from)).unwrap();
/// assert_eq!(a.ensemble, Some(5));
/// assert!(parse(["--ensemble", "1", "/zk1", "/zk2"].map(String::from)).is_err());
/// ```
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, Error> {
    let mut out = Args::default();
    let mut args = args.into_iter();
    let usage = |m: String| Error::Usage(m);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "-h" | "--help" => out.help = true,
            "--json" => out.output = Output::Json,
            "--separately" => out.separately = true,
            "--timeline" => out.output = Output::Timeline,
            "--summary" => out.output = Output::Summary,
            "--lock" => out.locks.push(value("--lock")?),
            "--from" | "--to" => {
                let v = value(&arg)?;
                let t = crate::time::parse(&v).ok_or_else(|| {
                    usage(format!(
                        "{arg} {v:?}: expected YYYY-MM-DDTHH:MM:SS[.fff]Z or ms since the epoch"
                    ))
                })?;
                if arg == "--from" {
                    out.range.from = Some(t);
                } else {
                    out.range.to = Some(t);
                }
            }
            "--leases" => {
                let v = value("--leases")?;
                let parsed = v
                    .rsplit_once('=')
                    .and_then(|(p, n)| Some((p.to_owned(), n.parse().ok()?)));
                out.leases
                    .push(parsed.ok_or_else(|| usage(format!("--leases {v:?}: expected PATH=N")))?);
            }
            "--ensemble" => {
                let v = value("--ensemble")?;
                out.ensemble = Some(v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    usage(format!(
                        "--ensemble {v:?}: expected a number of members, 1 or more"
                    ))
                })?);
            }
            "--snapshot" => {
                out.start = match value("--snapshot")?.as_str() {
                    "oldest" => Start::Oldest,
                    "newest" => Start::Newest,
                    "none" => Start::LogsOnly,
                    other => {
                        return Err(usage(format!(
                            "--snapshot {other:?}: expected oldest, newest or none"
                        )));
                    }
                }
            }
            flag if flag.starts_with('-') => {
                return Err(usage(format!("unknown option {flag}")));
            }
            dir => out.dirs.push(PathBuf::from(dir)),
        }
    }
    if out.dirs.is_empty() && !out.help {
        return Err(usage("no DATA_DIR given".to_owned()));
    }
    if let Some(n) = out
        .ensemble
        .filter(|n| !out.separately && *n < out.dirs.len())
    {
        return Err(usage(format!(
            "--ensemble {n}, but {} DATA_DIRs given (one per member)",
            out.dirs.len()
        )));
    }
    Ok(out)
}
