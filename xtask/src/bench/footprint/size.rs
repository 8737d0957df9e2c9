//! The one-lock program's size: recipe-mutex's `one_lock` example (connect, lock, fencing
//! token, release, close) built as a user builds it, in a crate of its own outside the
//! workspace (`target/bench/one-lock/`, the workspace's lock file copied in), with tokio's
//! `rt` and `macros`, in the release profile, stripped.
//!
//! Measured beside it: the same program with a second `lock()`/`release()` call site (what
//! one more call costs), with each optional feature on, and a floor program that only uses
//! tokio's runtime and a TCP connection (what any tokio network client pays). The split by
//! crate and the largest functions come from the symbol sizes (`nm`) of an unstripped build:
//! each symbol counts for the crate named first in it, drop glue and trait impls for their
//! type's crate.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Result;
use crate::paths::{target_dir, workspace_root};

/// The optional features measured, as `cargo --features` takes them.
pub const FEATURES: [(&str, &str); 3] = [
    ("tls (rustls)", "zk-client/tls"),
    ("sasl-digest", "zk-client/sasl-digest"),
    ("tracing", "recipe-mutex/tracing"),
];

/// What [`measure`] found.
#[derive(Debug, Clone, Default)]
pub struct Sizes {
    /// The stripped one-lock program, in bytes.
    pub one_lock: u64,
    /// The same with a second call site.
    pub two_call_sites: u64,
    /// A tokio program that connects and prints, nothing of ours.
    pub floor: u64,
    /// The one-lock program with each feature of [`FEATURES`] on.
    pub features: Vec<(String, u64)>,
    /// `.text` bytes by crate, largest first.
    pub by_crate: Vec<(String, u64)>,
    /// The largest functions.
    pub largest: Vec<Function>,
}

/// One function of the split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its code's size.
    pub bytes: u64,
    /// The crate it counts for ([`crate_of`]).
    pub krate: String,
    /// Its name, without a mangling hash.
    pub name: String,
}

/// Builds the programs and measures them.
///
/// # Errors
/// A build that fails, `nm` missing.
pub fn measure() -> Result<Sizes> {
    let dir = target_dir().join("bench").join("one-lock");
    write_crate(&dir)?;
    eprintln!(
        "footprint: building the one-lock program as a user would ({}): a minute the first time",
        dir.display()
    );
    build(&dir, "release", &[])?;
    let bin = |profile: &str, name: &str| dir.join("target").join(profile).join(name);
    let mut sizes = Sizes {
        one_lock: file_size(&bin("release", "one-lock"))?,
        two_call_sites: file_size(&bin("release", "two-call-sites"))?,
        floor: file_size(&bin("release", "floor"))?,
        ..Sizes::default()
    };
    for (name, feature) in FEATURES {
        eprintln!("footprint: the one-lock program with {feature}");
        build(
            &dir,
            "release",
            &["--bin", "one-lock", "--features", feature],
        )?;
        sizes
            .features
            .push((name.to_owned(), file_size(&bin("release", "one-lock"))?));
    }
    build(&dir, "split", &["--bin", "one-lock"])?;
    let symbols = nm(&bin("split", "one-lock"))?;
    let (by_crate, largest) = split(&symbols, 15);
    sizes.by_crate = by_crate;
    sizes.largest = largest;
    Ok(sizes)
}

/// Writes the crate: its manifest, the example as `one-lock`, the example with a second call
/// site as `two-call-sites`, and the floor program.
fn write_crate(dir: &Path) -> Result<()> {
    let root = workspace_root();
    let example = std::fs::read_to_string(root.join("recipe-mutex/examples/one_lock.rs"))?;
    let two = second_call_site(&example)?;
    std::fs::create_dir_all(dir.join("src"))?;
    let manifest = format!(
        "[package]\nname = \"one-lock\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [[bin]]\nname = \"one-lock\"\npath = \"src/main.rs\"\n\n\
         [[bin]]\nname = \"two-call-sites\"\npath = \"src/two.rs\"\n\n\
         [[bin]]\nname = \"floor\"\npath = \"src/floor.rs\"\n\n\
         [dependencies]\n\
         recipe-mutex = {{ path = {rm:?} }}\n\
         zk-client = {{ path = {zc:?} }}\n\
         tokio = {{ version = \"1\", default-features = false, features = [\"rt\", \"macros\"] }}\n\n\
         [profile.release]\nstrip = true\n\n\
         [profile.split]\ninherits = \"release\"\nstrip = false\ndebug = false\n\n\
         # Not a member of the repository's workspace: built as a user's program is.\n\
         [workspace]\n",
        rm = root.join("recipe-mutex").display().to_string(),
        zc = root.join("zk-client").display().to_string(),
    );
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    std::fs::write(dir.join("src/main.rs"), &example)?;
    std::fs::write(dir.join("src/two.rs"), two)?;
    std::fs::write(dir.join("src/floor.rs"), FLOOR)?;
    Ok(())
}

/// A tokio program with what every network client has: a runtime, a TCP connection, a
/// write, a read, a timeout, a line printed. Its size is the floor under any client's.
const FLOOR: &str = r#"//! The floor: tokio's runtime, a TCP connection and a printed line, nothing of ours.
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hosts = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let connect = tokio::net::TcpStream::connect(hosts);
    let mut stream = tokio::time::timeout(std::time::Duration::from_secs(1), connect).await??;
    stream.write_all(b"ruok").await?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await?;
    println!("{}", String::from_utf8_lossy(&reply));
    Ok(())
}
"#;

/// The example with a second `lock()` and `release()` after the first release.
pub fn second_call_site(example: &str) -> Result<String> {
    let marker = "    guard.release().await?;\n";
    if !example.contains(marker) {
        return Err("the one_lock example no longer has `    guard.release().await?;`".into());
    }
    Ok(example.replacen(
        marker,
        "    guard.release().await?;\n    let again = mutex.lock().await?;\n    println!(\"again, with fencing token {}\", again.fencing_token());\n    again.release().await?;\n",
        1,
    ))
}

fn build(dir: &Path, profile: &str, extra: &[&str]) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(dir)
        .args(["build", "--profile", profile])
        .args(extra)
        .arg("--target-dir")
        .arg(dir.join("target"))
        // The workspace's own settings (its target dir, its rustflags) stay out of it.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .stdin(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("building the one-lock program failed ({status})").into());
    }
    Ok(())
}

fn file_size(path: &PathBuf) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len())
}

/// `nm -C -S --size-sort` of `bin`: its sized symbols.
fn nm(bin: &Path) -> Result<String> {
    let out = Command::new("nm")
        .args(["-C", "-S", "--size-sort"])
        .arg(bin)
        .output()
        .map_err(|e| format!("nm (binutils) is needed for the split: {e}"))?;
    if !out.status.success() {
        return Err(format!("nm failed on {}", bin.display()).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Code symbols of `nm -C -S` output: (size, name).
pub fn code_symbols(nm: &str) -> Vec<(u64, String)> {
    nm.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(4, ' ');
            let _addr = parts.next()?;
            let size = u64::from_str_radix(parts.next()?, 16).ok()?;
            let kind = parts.next()?;
            let name = parts.next()?;
            matches!(kind, "t" | "T" | "w" | "W").then(|| (size, name.to_owned()))
        })
        .collect()
}

/// The crate a symbol counts for: the first path segment of its name, of the type for drop
/// glue (`core::ptr::drop_in_place<T>`) and trait impls (`<T as Trait>::f`); `std`, `core` and
/// `alloc` together as `std`; anything else (C symbols, `&T` impls) as `other`.
pub fn crate_of(name: &str) -> String {
    let mut n = name;
    loop {
        let before = n;
        n = n.trim_start_matches(['<', '&', '*', '(', '[']);
        n = n.strip_prefix("mut ").unwrap_or(n);
        n = n.strip_prefix("const ").unwrap_or(n);
        n = n.strip_prefix("dyn ").unwrap_or(n);
        if let Some(inner) = n.strip_prefix("core::ptr::drop_in_place<") {
            n = inner;
        }
        if n == before {
            break;
        }
    }
    let first: String = n
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let is_path = n
        .get(first.len()..)
        .is_some_and(|rest| rest.starts_with("::"));
    match first.as_str() {
        _ if !is_path || first.is_empty() => "other".to_owned(),
        "std" | "core" | "alloc" => "std".to_owned(),
        _ => first,
    }
}

/// Bytes by crate (largest first) and the `top` largest functions.
pub fn split(nm: &str, top: usize) -> (Vec<(String, u64)>, Vec<Function>) {
    let symbols = code_symbols(nm);
    let mut by_crate: BTreeMap<String, u64> = BTreeMap::new();
    for (size, name) in &symbols {
        *by_crate.entry(crate_of(name)).or_default() += size;
    }
    let mut by_crate: Vec<(String, u64)> = by_crate.into_iter().collect();
    by_crate.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut largest: Vec<Function> = symbols
        .iter()
        .map(|(size, name)| Function {
            bytes: *size,
            krate: crate_of(name),
            name: without_hash(name).to_owned(),
        })
        .collect();
    largest.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    largest.truncate(top);
    (by_crate, largest)
}

/// A legacy-mangled name without its `::h<16 hex>` suffix.
fn without_hash(name: &str) -> &str {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head
        }
        _ => name,
    }
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// The one-lock program's size against [`super::SIZE_CEILING`].
fn growth(one_lock: u64) -> String {
    let ceiling = super::SIZE_CEILING;
    if one_lock <= ceiling {
        format!("met ({} B under)", ceiling - one_lock)
    } else {
        format!("not met (+{} B)", one_lock - ceiling)
    }
}

/// The Markdown section.
pub fn table(s: &Sizes) -> String {
    let mut out = String::from("## The one-lock program\n\n");
    out.push_str(
        "recipe-mutex's `one_lock` example (connect, lock, fencing token, release, close) in a \
         crate of its own outside the workspace, tokio `rt` + `macros`, release profile, \
         stripped (`target/bench/one-lock/`).\n\n",
    );
    out.push_str("| program | bytes | vs the one-lock program |\n| --- | ---: | ---: |\n");
    let delta = |b: u64| {
        let d = b as i64 - s.one_lock as i64;
        format!("{d:+}")
    };
    let _ = writeln!(out, "| one-lock | {} | |", s.one_lock);
    let _ = writeln!(
        out,
        "| with a second `lock()`/`release()` call site | {} | {} |",
        s.two_call_sites,
        delta(s.two_call_sites)
    );
    for (name, bytes) in &s.features {
        let _ = writeln!(out, "| with {name} | {bytes} | {} |", delta(*bytes));
    }
    let _ = writeln!(
        out,
        "| floor: tokio runtime + one TCP connection, nothing of ours | {} | {} |",
        s.floor,
        delta(s.floor)
    );
    let _ = writeln!(
        out,
        "\nGoal: not growing past {} B (the size last reported): {}; ours adds {} B over the \
         floor.\n",
        super::SIZE_CEILING,
        growth(s.one_lock),
        s.one_lock.saturating_sub(s.floor)
    );
    out.push_str(
        "Code by crate (unstripped build, symbol sizes):\n\n| crate | code |\n| --- | ---: |\n",
    );
    for (krate, bytes) in &s.by_crate {
        let _ = writeln!(out, "| {krate} | {} |", kib(*bytes));
    }
    out.push_str("\nLargest functions:\n\n| bytes | crate | function |\n| ---: | --- | --- |\n");
    for f in &s.largest {
        let shown: String = f.name.chars().take(110).collect();
        let shown = shown.replace('|', "\\|");
        let _ = writeln!(out, "| {} | {} | `{shown}` |", f.bytes, f.krate);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn symbols_count_for_the_crate_named_first() {
        assert_eq!(
            crate_of("zk_client::io::SessionTask<C>::run::{{closure}}::h0123456789abcdef"),
            "zk_client"
        );
        assert_eq!(
            crate_of("core::ptr::drop_in_place<zk_proto::request::Request>"),
            "zk_proto"
        );
        assert_eq!(
            crate_of("<recipe_mutex::layer::driver::Run<M> as core::ops::drop::Drop>::drop"),
            "recipe_mutex"
        );
        assert_eq!(
            crate_of("core::ptr::drop_in_place<<tokio::sync::Foo as X>::Y>"),
            "tokio"
        );
        assert_eq!(crate_of("alloc::raw_vec::finish_grow"), "std");
        assert_eq!(crate_of("<&T as core::fmt::Debug>::fmt"), "other");
        assert_eq!(crate_of("main"), "other");
        assert_eq!(crate_of("_start"), "other");
    }

    #[test]
    fn the_split_sums_code_symbols_only() {
        let nm = "0000000000001000 0000000000000100 T zk_client::a::h0123456789abcdef\n\
                  0000000000002000 0000000000000020 t zk_client::b\n\
                  0000000000003000 0000000000000400 t std::rt::lang_start\n\
                  0000000000004000 0000000000009000 D some_data\n\
                  garbage line\n";
        let (by_crate, largest) = split(nm, 2);
        assert_eq!(
            by_crate,
            vec![("std".to_owned(), 0x400), ("zk_client".to_owned(), 0x120)]
        );
        assert_eq!(largest[0].bytes, 0x400);
        assert_eq!(
            largest[1],
            Function {
                bytes: 0x100,
                krate: "zk_client".to_owned(),
                name: "zk_client::a".to_owned()
            }
        );
    }

    #[test]
    fn a_second_call_site_follows_the_first_release() {
        let example = "    let guard = mutex.lock().await?;\n    guard.release().await?;\n    client.close().await?;\n";
        let two = second_call_site(example).unwrap();
        assert_eq!(two.matches("lock().await").count(), 2);
        assert_eq!(two.matches(".release().await").count(), 2);
        assert!(second_call_site("fn main() {}").is_err());
    }

    #[test]
    fn growth_is_judged_against_the_ceiling() {
        let ceiling = super::super::SIZE_CEILING;
        assert_eq!(growth(ceiling), "met (0 B under)");
        assert_eq!(growth(ceiling - 10), "met (10 B under)");
        assert_eq!(growth(ceiling + 1), "not met (+1 B)");
    }
}
