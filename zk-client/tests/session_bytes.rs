//! The session core under arbitrary server bytes and driver inputs (the `session_bytes` fuzz
//! target's body, `tests/support/session_bytes.rs`), run deterministically: on the fuzz
//! target's committed seeds, and on seeded random scripts. The fuzzer itself runs under
//! `cargo xtask fuzz` (see `zk-client/fuzz/README.md`).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "support/session_bytes.rs"]
mod session_bytes;

#[test]
fn the_committed_seeds_keep_every_promise() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/session_bytes");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let _ = session_bytes::run(&data);
        n += 1;
    }
    assert!(n > 0, "no seeds in {}", dir.display());
}

#[test]
fn seeded_random_scripts_keep_every_promise() {
    let mut reached = session_bytes::Stats::default();
    for seed in 0..20_000_u64 {
        let len = 16 + (seed % 400) as usize;
        let mut script = session_bytes::random_script(seed, len);
        script[0] &= !2;
        reached += session_bytes::run(&script);
    }
    // Deep enough to mean something: requests answered every way.
    println!("{reached:?}");
    assert!(reached.ok > 1000 && reached.connection_loss > 1000 && reached.not_sent > 100);
}

/// The checker's negative control: a driver that starts a new connection without ending the
/// last makes the session fail a written request as never sent, and the check says so.
#[test]
fn a_careless_driver_is_caught_saying_not_sent_of_a_written_request() {
    // Careless; connect, handshake, submit an exists, connect again, drop the connection.
    let mut script = vec![2, 0, 5, 0x04, 0, 7];
    script.extend([0; 17]);
    script.extend([1, 3, 7, 0, 0, 0, 2, b'/', b'a', 0, 0]);
    let exists = zk_proto::OpCode::ALL
        .iter()
        .position(|o| *o == zk_proto::OpCode::Exists)
        .unwrap();
    script[24] = u8::try_from(exists).unwrap();
    script.extend([0, 9]);
    let caught = std::panic::catch_unwind(|| session_bytes::run(&script)).unwrap_err();
    let message = caught.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("written, yet failed as not sent"),
        "{message}"
    );
    script[0] = 0;
    assert_eq!(session_bytes::run(&script).connection_loss, 1);
}
