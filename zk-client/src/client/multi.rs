//! [`Client`]'s transactions: [`Client::multi`] (all or nothing) and [`Client::multi_read`].

use zk_proto::records::*;
use zk_proto::{MultiOp, MultiRequest, MultiResult, Request, Response};

use super::{Client, Op, OpResult, ReadOp, ReadResult, unexpected};
use crate::Error;

impl Client {
    fn multi_op(&self, op: &Op) -> Result<MultiOp, Error> {
        Ok(match op {
            Op::Create {
                path,
                data,
                options,
            } => match self.create_request(path.clone(), data, options, false)? {
                Request::Create2(r) => MultiOp::Create2(r),
                Request::CreateContainer(r) => MultiOp::CreateContainer(r),
                Request::CreateTtl(r) => MultiOp::CreateTtl(r),
                Request::Create(r) => MultiOp::Create(r),
                _ => return Err(Error::InvalidArgument("not a create")),
            },
            Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                path: self.path(path, false)?,
                version: version.unwrap_or(-1),
            }),
            Op::SetData {
                path,
                data,
                version,
            } => {
                self.check_data(data)?;
                MultiOp::SetData(SetDataRequest {
                    path: self.path(path, false)?,
                    data: Some(data.clone()),
                    version: version.unwrap_or(-1),
                })
            }
            Op::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                path: self.path(path, false)?,
                version: version.unwrap_or(-1),
            }),
        })
    }

    /// Applies `ops` as one transaction: all of them or none. On failure the error is
    /// [`Error::MultiFailed`] naming the first op that failed and why.
    pub async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, Error> {
        let ops = ops
            .iter()
            .map(|op| self.multi_op(op))
            .collect::<Result<Vec<_>, _>>()?;
        let response = match self
            .call(Request::Multi(MultiRequest { ops }), None)
            .await?
        {
            Response::Multi(r) => r,
            other => return Err(unexpected(other)),
        };
        if let Some((index, code)) = response.first_error() {
            let source = Error::from_code(code).unwrap_or(Error::Server(code));
            return Err(Error::MultiFailed {
                index,
                source: Box::new(source),
            });
        }
        response
            .results
            .into_iter()
            .map(|r| match r {
                MultiResult::Create(c) => Ok(OpResult::Created(self.client_path(c.path), None)),
                MultiResult::Create2(c) => {
                    Ok(OpResult::Created(self.client_path(c.path), Some(c.stat)))
                }
                MultiResult::Delete => Ok(OpResult::Deleted),
                MultiResult::SetData(s) => Ok(OpResult::DataSet(s.stat)),
                MultiResult::Check => Ok(OpResult::Checked),
                _ => Err(Error::Protocol(crate::ProtocolError::Unexpected(
                    "read result in a transaction",
                ))),
            })
            .collect()
    }

    /// Runs several reads in one round trip; each succeeds or fails on its own.
    pub async fn multi_read(
        &self,
        ops: &[ReadOp],
    ) -> Result<Vec<Result<ReadResult, Error>>, Error> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let ops = ops
            .iter()
            .map(|op| {
                Ok(match op {
                    ReadOp::GetChildren(p) => MultiOp::GetChildren(GetChildrenRequest {
                        path: self.path(p, false)?,
                        watch: false,
                    }),
                    ReadOp::GetData(p) => MultiOp::GetData(GetDataRequest {
                        path: self.path(p, false)?,
                        watch: false,
                    }),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        match self
            .call(Request::MultiRead(MultiRequest { ops }), None)
            .await?
        {
            Response::Multi(r) => Ok(r
                .results
                .into_iter()
                .map(|r| match r {
                    MultiResult::GetChildren(c) => Ok(ReadResult::Children(c.children)),
                    MultiResult::GetData(d) => {
                        Ok(ReadResult::Data(d.data.unwrap_or_default(), d.stat))
                    }
                    MultiResult::Error(code) => {
                        Err(Error::from_code(code).unwrap_or(Error::Server(code)))
                    }
                    _ => Err(Error::Protocol(crate::ProtocolError::Unexpected(
                        "write result in a read",
                    ))),
                })
                .collect()),
            other => Err(unexpected(other)),
        }
    }
}
