//! [`Client`]'s writes: create (with its options and stat), delete, set data, set ACL.

use std::future::Future;

use bytes::Bytes;
use zk_proto::records::*;
use zk_proto::{CreateMode, Request, Response};

use super::{Client, CreateOptions, unexpected};
use crate::Error;

impl Client {
    pub(super) fn create_request(
        &self,
        path: String,
        data: &[u8],
        opts: &CreateOptions,
        with_stat: bool,
    ) -> Result<Request, Error> {
        let server_path = self.owned_path(path, opts.mode.is_sequential())?;
        self.check_data(data)?;
        if opts.acl.is_empty() {
            return Err(Error::InvalidArgument("empty ACL"));
        }
        let data = Some(Bytes::copy_from_slice(data));
        let acl = opts.acl.clone();
        match (opts.mode.is_ttl(), opts.ttl) {
            (true, Some(ttl)) => {
                let ttl = i64::try_from(ttl.as_millis())
                    .map_err(|_| Error::InvalidArgument("TTL too long"))?;
                Ok(Request::CreateTtl(CreateTtlRequest {
                    path: server_path,
                    data,
                    acl,
                    mode: opts.mode,
                    ttl,
                }))
            }
            (true, None) => Err(Error::InvalidArgument("a TTL mode needs a TTL")),
            (false, Some(_)) => Err(Error::InvalidArgument("a TTL needs a TTL mode")),
            (false, None) => {
                let body = CreateRequest {
                    path: server_path,
                    data,
                    acl,
                    mode: opts.mode,
                };
                Ok(match (opts.mode, with_stat) {
                    (CreateMode::Container, _) => Request::CreateContainer(body),
                    (_, true) => Request::Create2(body),
                    (_, false) => Request::Create(body),
                })
            }
        }
    }

    /// Creates a node and returns its path (with the sequence number for sequential modes).
    /// Container and TTL nodes are created with the opcodes they need.
    pub fn create<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        options: &'a CreateOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send + 'a {
        self.create_owned(path.into(), data, options)
    }

    async fn create_owned(
        &self,
        path: String,
        data: &[u8],
        options: &CreateOptions,
    ) -> Result<String, Error> {
        match self
            .call(self.create_request(path, data, options, false)?, None)
            .await?
        {
            Response::Create(r) => Ok(self.client_path(r.path)),
            Response::Create2(r) => Ok(self.client_path(r.path)),
            other => Err(unexpected(other)),
        }
    }

    /// Creates a node and returns its path and `Stat` (`create2`).
    pub fn create_with_stat<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        options: &'a CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat), Error>> + Send + 'a {
        self.create_with_stat_owned(path.into(), data, options)
    }

    async fn create_with_stat_owned(
        &self,
        path: String,
        data: &[u8],
        options: &CreateOptions,
    ) -> Result<(String, Stat), Error> {
        match self
            .call(self.create_request(path, data, options, true)?, None)
            .await?
        {
            Response::Create2(r) => Ok((self.client_path(r.path), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Deletes a node, only at `version` if given.
    ///
    /// The request is sent when `delete` is called, not when the future is first polled, so
    /// it keeps its place in the session's order even if the future is spawned or polled
    /// later (a guard's drop uses this to release before the next acquire).
    pub fn delete(
        &self,
        path: impl Into<String>,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let sent = self.owned_path(path.into(), false).map(|path| {
            let request = Request::Delete(DeleteRequest {
                path,
                version: version.unwrap_or(-1),
            });
            self.send(request, None)
        });
        async move { sent?.await.map(drop) }
    }

    /// Sets the node's data, only at `version` if given; returns the new `Stat`.
    pub fn set_data<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'a {
        self.set_data_owned(path.into(), data, version)
    }

    async fn set_data_owned(
        &self,
        path: String,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        self.check_data(data)?;
        let request = Request::SetData(SetDataRequest {
            path: self.owned_path(path, false)?,
            data: Some(Bytes::copy_from_slice(data)),
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::SetData(r) => Ok(r.stat),
            other => Err(unexpected(other)),
        }
    }

    /// Sets the node's ACL, only at ACL version `version` if given; returns the new `Stat`.
    pub async fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        if acl.is_empty() {
            return Err(Error::InvalidArgument("empty ACL"));
        }
        let request = Request::SetAcl(SetAclRequest {
            path: self.path(path, false)?,
            acl,
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::SetAcl(r) => Ok(r.stat),
            other => Err(unexpected(other)),
        }
    }
}
