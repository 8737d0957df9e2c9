//! Where the workspace, the xtask directory and the Cargo target directory are, as seen by
//! xtask and the tests.

use std::path::{Path, PathBuf};

/// The xtask directory (this crate is `xtask/testkit`): it holds the Java and Python sources.
pub fn xtask_dir() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.to_path_buf(), Path::to_path_buf)
}

/// The workspace root: the parent of the xtask directory.
pub fn workspace_root() -> PathBuf {
    let xtask = xtask_dir();
    xtask
        .parent()
        .map_or_else(|| xtask.clone(), Path::to_path_buf)
}

/// The Cargo target directory: `CARGO_TARGET_DIR` when set (a relative value is taken from the
/// workspace root), else `<workspace root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}
