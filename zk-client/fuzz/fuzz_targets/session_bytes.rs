//! The session core fed arbitrary server frames and driver inputs from a script (see
//! `../../tests/support/session_bytes.rs` for the format and the promises checked): nothing
//! panics, every accepted request is answered once, a written request is never failed as
//! "not sent", deadlines due settle.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/session_bytes.rs"]
mod session_bytes;

fuzz_target!(|data: &[u8]| {
    // Bit 1 of byte 0 is the checker's negative control (a careless driver): never here.
    let mut data = data.to_vec();
    if let Some(flags) = data.first_mut() {
        *flags &= !2;
    }
    let _ = session_bytes::run(&data);
});
