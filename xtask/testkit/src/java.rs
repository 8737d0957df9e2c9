//! Java helpers: classpaths over Debian's `/usr/share/java` jars, and a cached `javac` compile of
//! the small Java programs kept in `xtask/java/`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::paths::target_dir;

/// Where Debian installs Java libraries.
pub const SYSTEM_JAR_DIR: &str = "/usr/share/java";

/// Name of the file written into an output directory after `javac` succeeded there.
const MARKER: &str = ".xtask-compiled";

/// The path of `/usr/share/java/<name>.jar`.
pub fn jar(name: &str) -> PathBuf {
    Path::new(SYSTEM_JAR_DIR).join(format!("{name}.jar"))
}

/// A classpath (`:`-separated) of `/usr/share/java/<name>.jar` for each name, in order.
///
/// `jars(&["zookeeper", "slf4j-api"])` gives
/// `/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar`.
pub fn jars(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| jar(name).display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// The directory holding xtask's Java sources (`xtask/java`).
pub fn java_dir() -> PathBuf {
    crate::paths::xtask_dir().join("java")
}

/// Compiles `sources` with `javac` against `classpath` and returns the directory of the classes.
///
/// The directory is `<target dir>/xtask-java/<name>-<hash>/`, where the hash covers `name`, the
/// classpath and every source's file name and contents; when that directory already holds the
/// marker of a successful compile, `javac` is not run again. Concurrent callers (test threads,
/// test processes) are safe: each compiles into a private directory and renames it into place,
/// and a loser of that race uses the winner's classes.
///
/// # Errors
/// A source cannot be read, `javac` cannot be run or reports errors (its output is in the
/// message), or the target directory cannot be written.
pub fn compile(name: &str, sources: &[PathBuf], classpath: &str) -> io::Result<PathBuf> {
    let mut hash = Fnv64::new();
    hash.write(name.as_bytes());
    hash.write(&[0]);
    hash.write(classpath.as_bytes());
    hash.write(&[0]);
    for source in sources {
        let text = fs::read(source)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", source.display())))?;
        hash.write(source.file_name().map_or(&[][..], |n| n.as_encoded_bytes()));
        hash.write(&[0]);
        hash.write(&text);
        hash.write(&[0]);
    }
    let base = target_dir().join("xtask-java");
    let out = base.join(format!("{name}-{:016x}", hash.finish()));
    if out.join(MARKER).is_file() {
        return Ok(out);
    }

    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let scratch = base.join(format!(
        ".{name}-tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch)?;
    let result = run_javac(&scratch, sources, classpath).and_then(|()| {
        fs::write(scratch.join(MARKER), b"ok\n")?;
        match fs::rename(&scratch, &out) {
            Ok(()) => Ok(()),
            // Someone else finished first: their classes are the same.
            Err(_) if out.join(MARKER).is_file() => Ok(()),
            Err(_) => {
                // A stale, unfinished output directory: replace it.
                let _ = fs::remove_dir_all(&out);
                fs::rename(&scratch, &out)
            }
        }
    });
    let _ = fs::remove_dir_all(&scratch);
    result.map(|()| out)
}

/// Runs `javac -d <out> [-cp <classpath>] <sources>`, turning a failure into an error holding
/// javac's output.
fn run_javac(out: &Path, sources: &[PathBuf], classpath: &str) -> io::Result<()> {
    let mut cmd = Command::new("javac");
    cmd.arg("-encoding")
        .arg("UTF-8")
        .arg("-nowarn")
        .arg("-d")
        .arg(out);
    if !classpath.is_empty() {
        cmd.arg("-cp").arg(classpath);
    }
    cmd.args(sources);
    let output = cmd
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running javac: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let mut message = format!("javac failed ({})", output.status);
    for stream in [&output.stdout, &output.stderr] {
        let text = String::from_utf8_lossy(stream);
        if !text.trim().is_empty() {
            message.push('\n');
            message.push_str(text.trim_end());
        }
    }
    Err(io::Error::other(message))
}

/// FNV-1a, 64 bits: a hash that stays the same across Rust releases, for cache directory names.
struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
