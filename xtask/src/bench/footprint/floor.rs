//! The transport's floor under the counted mutex cycle: the same three requests an
//! uncontended mutex cycle sends (an ephemeral sequential create named as the mutex names its
//! nodes, with the listing of the lock pipelined behind it; then the delete of the node
//! created), encoded and decoded with zk-proto and written and read with tokio on one
//! connection, by one task, and nothing else: no session task, no pending table, no timers, no
//! recipe. What any tokio ZooKeeper client pays for that cycle; the rest of ours is ours.
//! (`zk-worker count <connect> floor <path> ...` runs it.)
//!
//! [`TwoTasks`] is the same cycle as a client with a session task makes it (DESIGN.md's
//! shape: callers on their tasks, one task that owns the connection): each request goes over
//! a channel to that task, which encodes, writes, reads, decodes and answers over a oneshot,
//! and nothing else. (`zk-worker count <connect> floor-two-tasks <path> ...`.)

use std::borrow::Cow;
use std::error::Error;

use std::collections::VecDeque;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use zk_proto::records::{Acl, ConnectRequest, CreateRequest, DeleteRequest, GetChildrenRequest};
use zk_proto::{CreateMode, DEFAULT_MAX_FRAME_LEN, OpCode, Request, Response, ServerFrame};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// Either floor, by its workload name (`floor`, `floor-two-tasks`).
pub enum Transport {
    /// [`Floor`]: one task.
    OneTask(Floor),
    /// [`TwoTasks`]: through a connection task.
    TwoTasks(TwoTasks),
}

impl Transport {
    /// The floor named `workload` on `connect`, or `None` if `workload` names none.
    ///
    /// # Errors
    /// As [`Floor::connect`].
    pub async fn connect(workload: &str, connect: &str, path: &str) -> Result<Option<Self>> {
        Ok(match workload {
            "floor" => Some(Transport::OneTask(Floor::connect(connect, path).await?)),
            "floor-two-tasks" => Some(Transport::TwoTasks(TwoTasks::connect(connect, path).await?)),
            _ => None,
        })
    }

    /// Whether `workload` names a floor.
    pub fn names(workload: &str) -> bool {
        matches!(workload, "floor" | "floor-two-tasks")
    }

    /// One cycle of the floor.
    ///
    /// # Errors
    /// As [`Floor::cycle`].
    pub async fn cycle(&mut self) -> Result<()> {
        match self {
            Transport::OneTask(f) => f.cycle().await,
            Transport::TwoTasks(f) => f.cycle().await,
        }
    }
}

/// A name as long as the mutex's (`_c_<uuid>-lock-`), fixed.
const NAME: &str = "_c_00000000-0000-4000-8000-000000000000-lock-";

/// One connection with a session, the lock's path, and the next xid.
pub struct Floor {
    stream: TcpStream,
    out: BytesMut,
    inb: BytesMut,
    lock: String,
    stem: String,
    xid: i32,
}

impl Floor {
    /// Connects to `connect` (`host:port`), makes a session and the lock node `path`.
    ///
    /// # Errors
    /// No server, a refused handshake, a malformed reply.
    pub async fn connect(connect: &str, path: &str) -> Result<Floor> {
        let stream = TcpStream::connect(connect).await?;
        stream.set_nodelay(true)?;
        let mut floor = Floor {
            stream,
            out: BytesMut::with_capacity(4096),
            inb: BytesMut::with_capacity(64 * 1024),
            lock: path.to_owned(),
            stem: format!("{path}/{NAME}"),
            xid: 0,
        };
        let handshake = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 10_000,
            session_id: 0,
            passwd: Some(vec![0u8; 16].into()),
            read_only: Some(false),
        };
        zk_proto::encode_frame(&handshake, &mut floor.out, DEFAULT_MAX_FRAME_LEN)?;
        floor.flush().await?;
        floor.frame().await?;
        // The lock's node (a NodeExists from an earlier run is fine).
        floor.send(Request::Create(CreateRequest {
            path: path.to_owned(),
            data: None,
            acl: Cow::Borrowed(Acl::OPEN_UNSAFE),
            mode: CreateMode::Persistent,
        }))?;
        floor.flush().await?;
        floor.reply(OpCode::Create).await?;
        Ok(floor)
    }

    /// One cycle: create and list (pipelined), then delete what was created.
    ///
    /// # Errors
    /// A failed request, a lost connection, a malformed reply.
    pub async fn cycle(&mut self) -> Result<()> {
        self.send(Request::Create(CreateRequest {
            path: self.stem.clone(),
            data: None,
            acl: Cow::Borrowed(Acl::OPEN_UNSAFE),
            mode: CreateMode::EphemeralSequential,
        }))?;
        self.send(Request::GetChildren(GetChildrenRequest {
            path: self.lock.clone(),
            watch: false,
        }))?;
        self.flush().await?;
        let created = match self.reply(OpCode::Create).await? {
            Some(Response::Create(r)) => r.path,
            other => return Err(format!("create: {other:?}").into()),
        };
        let Some(Response::GetChildren(_)) = self.reply(OpCode::GetChildren).await? else {
            return Err("getChildren failed".into());
        };
        self.send(Request::Delete(DeleteRequest {
            path: created,
            version: -1,
        }))?;
        self.flush().await?;
        self.reply(OpCode::Delete).await?;
        Ok(())
    }

    fn send(&mut self, request: Request) -> Result<()> {
        self.xid += 1;
        request.encode_frame(self.xid, &mut self.out, DEFAULT_MAX_FRAME_LEN)?;
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        self.stream.write_all(&self.out).await?;
        self.out.clear();
        Ok(())
    }

    async fn frame(&mut self) -> Result<BytesMut> {
        loop {
            if let Some(frame) = zk_proto::split_frame(&mut self.inb, DEFAULT_MAX_FRAME_LEN)? {
                return Ok(frame);
            }
            if self.stream.read_buf(&mut self.inb).await? == 0 {
                return Err("the server closed the connection".into());
            }
        }
    }

    /// The next reply (to a request of `op`), its body when it succeeded.
    async fn reply(&mut self, op: OpCode) -> Result<Option<Response>> {
        let frame = self.frame().await?;
        match ServerFrame::decode(&frame, |_| Some(op))? {
            ServerFrame::Reply(_, body) => Ok(body),
            ServerFrame::Notification(..) => Err("an unexpected notification".into()),
        }
    }
}

/// A request for [`TwoTasks`]'s connection task, and where its reply goes.
type Call = (Request, oneshot::Sender<Option<Response>>);

/// The floor's cycle through a second task: a channel in, a oneshot out.
pub struct TwoTasks {
    tx: mpsc::UnboundedSender<Call>,
    lock: String,
    stem: String,
}

impl TwoTasks {
    /// Connects as [`Floor::connect`] and hands the connection to its own task.
    ///
    /// # Errors
    /// As [`Floor::connect`].
    pub async fn connect(connect: &str, path: &str) -> Result<TwoTasks> {
        let floor = Floor::connect(connect, path).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (lock, stem) = (floor.lock.clone(), floor.stem.clone());
        tokio::spawn(connection(floor, rx));
        Ok(TwoTasks { tx, lock, stem })
    }

    /// One cycle, as [`Floor::cycle`], the create and the listing sent before either is
    /// awaited.
    ///
    /// # Errors
    /// A failed request, the connection's task gone.
    pub async fn cycle(&self) -> Result<()> {
        let create = self.call(Request::Create(CreateRequest {
            path: self.stem.clone(),
            data: None,
            acl: Cow::Borrowed(Acl::OPEN_UNSAFE),
            mode: CreateMode::EphemeralSequential,
        }))?;
        let children = self.call(Request::GetChildren(GetChildrenRequest {
            path: self.lock.clone(),
            watch: false,
        }))?;
        let created = match create.await? {
            Some(Response::Create(r)) => r.path,
            other => return Err(format!("create: {other:?}").into()),
        };
        let Some(Response::GetChildren(_)) = children.await? else {
            return Err("getChildren failed".into());
        };
        self.call(Request::Delete(DeleteRequest {
            path: created,
            version: -1,
        }))?
        .await?;
        Ok(())
    }

    fn call(&self, request: Request) -> Result<oneshot::Receiver<Option<Response>>> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send((request, tx))
            .map_err(|_| "the connection's task is gone")?;
        Ok(rx)
    }
}

/// The connection's task: requests in from the channel (every one queued, then one write),
/// replies matched in order and answered.
async fn connection(mut floor: Floor, mut rx: mpsc::UnboundedReceiver<Call>) {
    let mut pending: VecDeque<(OpCode, oneshot::Sender<Option<Response>>)> = VecDeque::new();
    loop {
        tokio::select! {
            biased;
            read = floor.stream.read_buf(&mut floor.inb) => {
                if !matches!(read, Ok(n) if n > 0) {
                    return;
                }
                while let Ok(Some(frame)) = zk_proto::split_frame(&mut floor.inb, DEFAULT_MAX_FRAME_LEN) {
                    let Some((op, reply)) = pending.pop_front() else { return };
                    let Ok(ServerFrame::Reply(_, body)) = ServerFrame::decode(&frame, |_| Some(op)) else {
                        return;
                    };
                    let _ = reply.send(body);
                }
            }
            call = rx.recv() => {
                let Some(mut call) = call else { return };
                loop {
                    let (request, reply) = call;
                    let op = request.op_code();
                    if floor.send(request).is_err() {
                        return;
                    }
                    pending.push_back((op, reply));
                    match rx.try_recv() {
                        Ok(next) => call = next,
                        Err(_) => break,
                    }
                }
                if floor.flush().await.is_err() {
                    return;
                }
            }
        }
    }
}
