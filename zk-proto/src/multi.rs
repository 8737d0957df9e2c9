//! `multi` and `multiRead`: [`MultiRequest`] and [`MultiResponse`].
//!
//! On the wire each op (or result) is a [`MultiHeader`] followed by its body, and the list ends
//! with the header `{type: -1, done: true, err: -1}`. There is no count, so decoding loops until
//! the end marker; every header takes 9 bytes, so the loop is bounded by the input.

use bytes::BytesMut;

use crate::records::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, ErrorResponse, GetChildrenRequest, GetChildrenResponse, GetDataRequest,
    GetDataResponse, SetDataRequest, SetDataResponse,
};
use crate::{
    Decode, DecodeError, Encode, EncodeError, ErrorCode, MultiHeader, OpCode, Reader, Visit,
    Visitor,
};

const END: MultiHeader = MultiHeader {
    op: -1,
    done: true,
    err: -1,
};

/// One operation of a multi. Writes (`create*`, `delete`, `setData`, `check`) make a
/// transaction (`OpCode::Multi`); reads (`getChildren`, `getData`) make a `OpCode::MultiRead`.
/// The two kinds cannot be mixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// `create`: the result is the path.
    Create(CreateRequest),
    /// `create2`: the result is the path and `Stat`.
    Create2(CreateRequest),
    /// `createContainer`.
    CreateContainer(CreateRequest),
    /// `createTTL`.
    CreateTtl(CreateTtlRequest),
    /// `delete`.
    Delete(DeleteRequest),
    /// `setData`.
    SetData(SetDataRequest),
    /// `check`: fails the transaction unless the node has the version.
    Check(CheckVersionRequest),
    /// `getChildren` (multiRead only).
    GetChildren(GetChildrenRequest),
    /// `getData` (multiRead only).
    GetData(GetDataRequest),
}

impl MultiOp {
    /// The op's opcode.
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create(_) => OpCode::Create,
            MultiOp::Create2(_) => OpCode::Create2,
            MultiOp::CreateContainer(_) => OpCode::CreateContainer,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
            MultiOp::GetData(_) => OpCode::GetData,
        }
    }

    /// Whether this op is a read (allowed only in a multiRead).
    pub fn is_read(&self) -> bool {
        matches!(self, MultiOp::GetChildren(_) | MultiOp::GetData(_))
    }

    /// The path the op is about.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create(r) | MultiOp::Create2(r) | MultiOp::CreateContainer(r) => &r.path,
            MultiOp::CreateTtl(r) => &r.path,
            MultiOp::Delete(r) => &r.path,
            MultiOp::SetData(r) => &r.path,
            MultiOp::Check(r) => &r.path,
            MultiOp::GetChildren(r) => &r.path,
            MultiOp::GetData(r) => &r.path,
        }
    }

    fn body(&self) -> &dyn Body {
        match self {
            MultiOp::Create(r) | MultiOp::Create2(r) | MultiOp::CreateContainer(r) => r,
            MultiOp::CreateTtl(r) => r,
            MultiOp::Delete(r) => r,
            MultiOp::SetData(r) => r,
            MultiOp::Check(r) => r,
            MultiOp::GetChildren(r) => r,
            MultiOp::GetData(r) => r,
        }
    }
}

/// A record that can be both encoded and visited, so the op and result enums can share one
/// encode and one visit loop.
trait Body: Encode + Visit {}
impl<T: Encode + Visit> Body for T {}

/// The body of a `multi` or `multiRead` request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The operations, applied in order.
    pub ops: Vec<MultiOp>,
}

impl MultiRequest {
    /// `MultiRead` when every op is a read (and there is at least one), else `Multi`.
    pub fn op_code(&self) -> OpCode {
        if !self.ops.is_empty() && self.ops.iter().all(MultiOp::is_read) {
            OpCode::MultiRead
        } else {
            OpCode::Multi
        }
    }
}

fn header(r: &mut Reader<'_>, at: &'static str) -> Result<(MultiHeader, usize), DecodeError> {
    let offset = r.offset();
    Ok((MultiHeader::decode(r.at(at))?, offset))
}

fn check_end(h: &MultiHeader, at: &'static str, offset: usize) -> Result<(), DecodeError> {
    if h.op != -1 {
        return Err(DecodeError::BadValue {
            at,
            offset,
            value: i64::from(h.op),
        });
    }
    if h.err != -1 {
        return Err(DecodeError::BadValue {
            at,
            offset: offset + 5,
            value: i64::from(h.err),
        });
    }
    Ok(())
}

fn unknown_op(at: &'static str, offset: usize, value: i32) -> DecodeError {
    DecodeError::UnknownCode { at, offset, value }
}

impl Decode for MultiRequest {
    const MIN_LEN: usize = 9;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        const AT: &str = "MultiRequest.header";
        let mut ops = Vec::new();
        loop {
            let (h, offset) = header(r, AT)?;
            if h.done {
                check_end(&h, AT, offset)?;
                return Ok(Self { ops });
            }
            if h.err != -1 {
                return Err(DecodeError::BadValue {
                    at: AT,
                    offset: offset + 5,
                    value: i64::from(h.err),
                });
            }
            let op = match OpCode::from_code(h.op) {
                Some(OpCode::Create) => MultiOp::Create(CreateRequest::decode(r)?),
                Some(OpCode::Create2) => MultiOp::Create2(CreateRequest::decode(r)?),
                Some(OpCode::CreateContainer) => {
                    MultiOp::CreateContainer(CreateRequest::decode(r)?)
                }
                Some(OpCode::CreateTtl) => MultiOp::CreateTtl(CreateTtlRequest::decode(r)?),
                Some(OpCode::Delete) => MultiOp::Delete(DeleteRequest::decode(r)?),
                Some(OpCode::SetData) => MultiOp::SetData(SetDataRequest::decode(r)?),
                Some(OpCode::Check) => MultiOp::Check(CheckVersionRequest::decode(r)?),
                Some(OpCode::GetChildren) => MultiOp::GetChildren(GetChildrenRequest::decode(r)?),
                Some(OpCode::GetData) => MultiOp::GetData(GetDataRequest::decode(r)?),
                _ => return Err(unknown_op(AT, offset, h.op)),
            };
            ops.push(op);
        }
    }
}

impl Encode for MultiRequest {
    fn encoded_len(&self) -> usize {
        9 * (self.ops.len() + 1)
            + self
                .ops
                .iter()
                .map(|op| op.body().encoded_len())
                .sum::<usize>()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        for op in &self.ops {
            MultiHeader {
                op: op.op_code().code(),
                done: false,
                err: -1,
            }
            .encode(out)?;
            op.body().encode(out)?;
        }
        END.encode(out)
    }
}

impl Visit for MultiRequest {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_record(tag);
        for op in &self.ops {
            MultiHeader {
                op: op.op_code().code(),
                done: false,
                err: -1,
            }
            .visit(tag, v);
            op.body().visit(tag, v);
        }
        END.visit(tag, v);
        v.end_record();
    }
}

/// The result of one op of a multi, in the op's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A `create` succeeded.
    Create(CreateResponse),
    /// A `create2`, `createContainer` or `createTTL` succeeded.
    Create2(Create2Response),
    /// A `delete` succeeded.
    Delete,
    /// A `setData` succeeded.
    SetData(SetDataResponse),
    /// A `check` succeeded.
    Check,
    /// A `getChildren` read.
    GetChildren(GetChildrenResponse),
    /// A `getData` read.
    GetData(GetDataResponse),
    /// The op failed, or (in a failed transaction) was rolled back: the failing op carries
    /// its own code, the others `Ok` (before it) or `RuntimeInconsistency` (after it).
    Error(ErrorCode),
}

impl MultiResult {
    fn header(&self) -> MultiHeader {
        let (op, err) = match self {
            MultiResult::Create(_) => (OpCode::Create.code(), 0),
            MultiResult::Create2(_) => (OpCode::Create2.code(), 0),
            MultiResult::Delete => (OpCode::Delete.code(), 0),
            MultiResult::SetData(_) => (OpCode::SetData.code(), 0),
            MultiResult::Check => (OpCode::Check.code(), 0),
            MultiResult::GetChildren(_) => (OpCode::GetChildren.code(), 0),
            MultiResult::GetData(_) => (OpCode::GetData.code(), 0),
            MultiResult::Error(code) => (OpCode::Error.code(), code.code()),
        };
        MultiHeader {
            op,
            done: false,
            err,
        }
    }

    fn with_body<R>(&self, f: impl FnOnce(Option<&dyn Body>) -> R) -> R {
        match self {
            MultiResult::Create(r) => f(Some(r)),
            MultiResult::Create2(r) => f(Some(r)),
            MultiResult::SetData(r) => f(Some(r)),
            MultiResult::GetChildren(r) => f(Some(r)),
            MultiResult::GetData(r) => f(Some(r)),
            MultiResult::Error(err) => f(Some(&ErrorResponse { err: *err })),
            MultiResult::Delete | MultiResult::Check => f(None),
        }
    }
}

/// The body of the reply to a `multi` or `multiRead`: one result per op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// The results, in op order.
    pub results: Vec<MultiResult>,
}

impl MultiResponse {
    /// The first failing op's index and code: in a failed transaction, the op whose code is
    /// neither `Ok` nor `RuntimeInconsistency`.
    pub fn first_error(&self) -> Option<(usize, ErrorCode)> {
        self.results.iter().enumerate().find_map(|(i, r)| match r {
            MultiResult::Error(code)
                if !matches!(code, ErrorCode::Ok | ErrorCode::RuntimeInconsistency) =>
            {
                Some((i, *code))
            }
            _ => None,
        })
    }
}

impl Decode for MultiResponse {
    const MIN_LEN: usize = 9;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        const AT: &str = "MultiResponse.header";
        let mut results = Vec::new();
        loop {
            let (h, offset) = header(r, AT)?;
            if h.done {
                check_end(&h, AT, offset)?;
                return Ok(Self { results });
            }
            let is_error = h.op == OpCode::Error.code();
            if !is_error && h.err != 0 {
                return Err(DecodeError::BadValue {
                    at: AT,
                    offset: offset + 5,
                    value: i64::from(h.err),
                });
            }
            let result = match OpCode::from_code(h.op) {
                Some(OpCode::Create) => MultiResult::Create(CreateResponse::decode(r)?),
                Some(OpCode::Create2) => MultiResult::Create2(Create2Response::decode(r)?),
                Some(OpCode::Delete) => MultiResult::Delete,
                Some(OpCode::SetData) => MultiResult::SetData(SetDataResponse::decode(r)?),
                Some(OpCode::Check) => MultiResult::Check,
                Some(OpCode::GetChildren) => {
                    MultiResult::GetChildren(GetChildrenResponse::decode(r)?)
                }
                Some(OpCode::GetData) => MultiResult::GetData(GetDataResponse::decode(r)?),
                Some(OpCode::Error) => {
                    let body_offset = r.offset();
                    let body = ErrorResponse::decode(r)?;
                    if body.err.code() != h.err {
                        return Err(DecodeError::BadValue {
                            at: "MultiResponse.ErrorResponse.err",
                            offset: body_offset,
                            value: i64::from(body.err.code()),
                        });
                    }
                    MultiResult::Error(body.err)
                }
                _ => return Err(unknown_op(AT, offset, h.op)),
            };
            results.push(result);
        }
    }
}

impl Encode for MultiResponse {
    fn encoded_len(&self) -> usize {
        9 * (self.results.len() + 1)
            + self
                .results
                .iter()
                .map(|res| res.with_body(|b| b.map_or(0, Encode::encoded_len)))
                .sum::<usize>()
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        for res in &self.results {
            res.header().encode(out)?;
            res.with_body(|b| b.map_or(Ok(()), |b| b.encode(out)))?;
        }
        END.encode(out)
    }
}

impl Visit for MultiResponse {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_record(tag);
        for res in &self.results {
            res.header().visit(tag, v);
            res.with_body(|b| {
                if let Some(b) = b {
                    b.visit(tag, v);
                }
            });
        }
        END.visit(tag, v);
        v.end_record();
    }
}
