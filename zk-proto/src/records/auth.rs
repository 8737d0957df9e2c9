//! Authentication records: `addAuth`, SASL tokens, `whoAmI`.

use super::data::{Buffer, ClientInfo};
use crate::codec::record;

record! {
    /// `addAuth` (xid -4): adds an identity to the session.
    AuthPacket "AuthPacket" {
        /// Always 0.
        auth_type: i32 = "type",
        /// The scheme, e.g. `digest`.
        scheme: String = "scheme",
        /// The credentials, e.g. `user:password`.
        auth: Buffer = "auth",
    }
}

record! {
    /// A SASL token from the client.
    GetSaslRequest "GetSASLRequest" {
        /// The token.
        token: Buffer = "token",
    }
}

record! {
    /// A SASL token (server-side request record).
    SetSaslRequest "SetSASLRequest" {
        /// The token.
        token: Buffer = "token",
    }
}

record! {
    /// The server's SASL token.
    SetSaslResponse "SetSASLResponse" {
        /// The token.
        token: Buffer = "token",
    }
}

record! {
    /// The reply to `whoAmI` (3.9+ servers).
    WhoAmIResponse "WhoAmIResponse" {
        /// The session's identities.
        client_info: Vec<ClientInfo> = "clientInfo",
    }
}
