//! [`Client`]'s authentication: credentials added to the session, and who the server says
//! the session is.

use bytes::Bytes;
use zk_proto::records::*;
use zk_proto::{Request, Response};

use super::{Client, unexpected};
use crate::Error;

impl Client {
    /// Adds an identity to the session (e.g. `("digest", b"user:password")`). Wrong
    /// credentials end the session with [`Error::AuthFailed`].
    pub async fn add_auth(&self, scheme: &str, credentials: impl Into<Bytes>) -> Result<(), Error> {
        let request = Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: scheme.to_owned(),
            auth: Some(credentials.into()),
        });
        self.call(request, None).await.map(drop)
    }

    /// The session's identities (ZooKeeper 3.9+; 3.8 answers [`Error::Unimplemented`]).
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, Error> {
        match self.call(Request::WhoAmI, None).await? {
            Response::WhoAmI(r) => Ok(r.client_info),
            other => Err(unexpected(other)),
        }
    }
}
