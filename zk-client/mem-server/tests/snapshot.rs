//! `MemServer::open`: a server started again on its snapshot file has what it acknowledged.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use zk_client::{Client, CreateMode, CreateOptions};
use zk_mem_server::{MemServer, ServerConfig};

#[tokio::test(start_paused = true)]
async fn a_server_opened_again_on_its_snapshot_has_its_nodes_and_sessions() {
    let dir = std::env::temp_dir().join(format!("zk-mem-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.snapshot");
    let _ = std::fs::remove_file(&path);

    let (session, zxid) = {
        let server = MemServer::open(ServerConfig::new(1), &path).unwrap();
        let client = server
            .client(
                Client::builder().session_timeout(Duration::from_secs(10)),
                1,
            )
            .await
            .unwrap();
        client
            .create("/kept", b"v", &CreateOptions::new(CreateMode::Persistent))
            .await
            .unwrap();
        client
            .create("/kept/e", b"", &CreateOptions::new(CreateMode::Ephemeral))
            .await
            .unwrap();
        (client.session_id(), server.zxid())
        // The server goes here as a killed process would: nothing more is written.
    };

    let again = MemServer::open(ServerConfig::new(1), &path).unwrap();
    assert_eq!(again.zxid(), zxid);
    assert_eq!(again.data("/kept").as_deref(), Some(&b"v"[..]));
    assert_eq!(again.children("/kept"), Some(vec!["e".to_owned()]));
    assert!(again.sessions().iter().any(|s| s.id == session));
    assert_eq!(again.snapshot_failure(), None);

    // Not a snapshot: refused, saying so.
    std::fs::write(&path, b"junk").unwrap();
    let err = MemServer::open(ServerConfig::new(1), &path).err().unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot that cannot be written stops the server serving: nothing it could not keep is
/// acknowledged.
#[tokio::test(start_paused = true)]
async fn a_snapshot_that_cannot_be_written_stops_the_server() {
    let dir = std::env::temp_dir().join(format!("zk-mem-unwritable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.snapshot");
    // The file the snapshot is written to before its rename is a directory.
    std::fs::create_dir_all(path.with_extension("tmp")).unwrap();

    let server = MemServer::open(ServerConfig::new(1), &path).unwrap();
    assert!(server.snapshot_failure().is_some());
    let connect = server.client(
        Client::builder().session_timeout(Duration::from_secs(10)),
        1,
    );
    let outcome = tokio::time::timeout(Duration::from_secs(60), connect).await;
    assert!(
        !matches!(outcome, Ok(Ok(_))),
        "a session was granted by a server that cannot keep it"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
