//! SASL for the session: the exchange that runs after every handshake, before any other
//! request and before watches are restored (as the Java client does). The session drives
//! it with `sasl` requests (`GetSASLRequest` / `SetSASLResponse`) and knows nothing of the
//! mechanism; the mechanisms are here (DIGEST-MD5 with feature `sasl-digest`).

// Without a mechanism compiled in, only the session's tests drive an exchange.
#![cfg_attr(not(feature = "sasl-digest"), allow(dead_code))]

#[cfg(feature = "sasl-digest")]
pub(crate) mod digest;

use std::fmt;

/// A SASL mechanism with its credentials: starts one exchange per connection (the server
/// keeps authentication per connection).
pub(crate) trait Mechanism: fmt::Debug + Send + Sync {
    /// A new exchange, for a new connection.
    fn start(&self) -> Box<dyn Exchange>;
}

/// One run of a mechanism.
pub(crate) trait Exchange: Send {
    /// The first token to send (empty for mechanisms where the server speaks first, such as
    /// DIGEST-MD5).
    fn initial(&mut self) -> Vec<u8>;

    /// The server's token: answer it, or say the exchange is complete (the server proved
    /// itself where the mechanism allows). An error (a malformed challenge, a server that
    /// could not prove it knows the password) ends the session.
    fn step(&mut self, token: &[u8]) -> Result<Step, String>;
}

/// What an exchange does after a server token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send this token and wait for the server's next one.
    Respond(Vec<u8>),
    /// Authenticated.
    Done,
}
