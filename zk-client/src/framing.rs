//! [`ZkFrames`]: zk-proto's frame splitting as a `tokio-util` decoder.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::{Error, ProtocolError};

/// Splits the byte stream from the server into frames, refusing any over `max` bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ZkFrames {
    pub max: usize,
}

impl Decoder for ZkFrames {
    type Item = BytesMut;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, Error> {
        zk_proto::split_frame(src, self.max).map_err(|e| Error::Protocol(ProtocolError::Frame(e)))
    }
}
