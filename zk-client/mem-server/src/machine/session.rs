//! Connections and sessions: the handshake, `addAuth`, a session's end (closed or
//! expired), and the session's own requests.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use zk_proto::records::{Buffer, ConnectRequest, ConnectResponse, Id, WhoAmIResponse};
use zk_proto::{ErrorCode, Request};

use super::{Body, Conn, ConnId, Output, ServerMachine, Session, acl, body};

impl ServerMachine {
    /// The session's own requests: `ping`, `addAuth`, `whoAmI`, `closeSession`. `None` when
    /// the request needs no reply from the dispatch: `addAuth` answered at once,
    /// `closeSession` answered as the session ended.
    pub(super) fn session_request(
        &mut self,
        now: Instant,
        conn: ConnId,
        session: i64,
        xid: i32,
        ids: &[Id],
        request: Request,
    ) -> Option<Result<Body, ErrorCode>> {
        use Request as R;
        Some(match request {
            R::Ping => Ok(None),
            R::Auth(a) => {
                self.add_auth(conn, xid, &a.scheme, &a.auth);
                return None;
            }
            R::WhoAmI => body(WhoAmIResponse {
                client_info: acl::client_infos(ids),
            }),
            R::CloseSession => {
                self.end_session(now, session, Some(xid));
                return None;
            }
            _ => Err(ErrorCode::Unimplemented),
        })
    }

    /// Forgets `conn` (detaching it from its session, whose watches go), then emits `how`.
    pub(super) fn drop_conn(&mut self, conn: ConnId, how: Option<Output>) {
        self.idents.remove(&conn);
        if let Some(Conn::Open(session)) = self.conns.remove(&conn) {
            let attached = self
                .sessions
                .get_mut(&session)
                .filter(|s| s.conn == Some(conn));
            if let Some(s) = attached {
                s.conn = None;
                self.watches.remove_session(session);
            }
        }
        if let Some(out) = how {
            self.out.push_back(out);
        }
    }

    pub(super) fn handshake(&mut self, now: Instant, conn: ConnId, req: &ConnectRequest) {
        if req.last_zxid_seen > self.zxid {
            // "Refusing session request for client as it has seen zxid ... our last zxid is
            // ...": the client has seen a newer server than this one, and must go elsewhere.
            self.drop_conn(conn, Some(Output::Cut(conn)));
            return;
        }
        let asked = Duration::from_millis(u64::try_from(req.time_out).unwrap_or(0));
        let timeout = asked.clamp(
            self.config.min_session_timeout,
            self.config
                .max_session_timeout
                .max(self.config.min_session_timeout),
        );
        let deadline = now.checked_add(timeout).unwrap_or(now);
        let id = if req.session_id == 0 {
            self.next_zxid(); // createSession is a transaction
            let id = self.next_session;
            self.next_session += 1;
            let mut passwd = BytesMut::with_capacity(16);
            passwd.put_u64(self.rng.next_u64());
            passwd.put_u64(self.rng.next_u64());
            self.sessions.insert(
                id,
                Session {
                    passwd: passwd.freeze(),
                    timeout,
                    deadline,
                    conn: None,
                },
            );
            id
        } else {
            match self.sessions.get_mut(&req.session_id) {
                Some(s) if req.passwd.as_deref() == Some(&s.passwd[..]) => {
                    s.timeout = timeout;
                    s.deadline = deadline;
                    req.session_id
                }
                _ => {
                    // Expired, unknown, or the wrong password: timeout 0, then close.
                    let refusal = ConnectResponse {
                        protocol_version: 0,
                        time_out: 0,
                        session_id: 0,
                        passwd: Some(Bytes::from_static(&[0; 16])),
                        read_only: Some(false),
                    };
                    self.send_record(conn, &refusal);
                    self.drop_conn(conn, Some(Output::Close(conn)));
                    return;
                }
            }
        };
        // A session moving to a new connection leaves its old one (and its watches).
        if let Some(old) = self.conn_of(id).filter(|&old| old != conn) {
            self.drop_conn(old, Some(Output::Cut(old)));
        }
        if let Some(s) = self.sessions.get_mut(&id) {
            s.conn = Some(conn);
        }
        self.conns.insert(conn, Conn::Open(id));
        let passwd = self.sessions.get(&id).map(|s| s.passwd.clone());
        let granted = ConnectResponse {
            protocol_version: 0,
            time_out: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: id,
            passwd,
            read_only: Some(false),
        };
        self.send_record(conn, &granted);
    }

    /// Ends `session` (closed, or expired): one transaction deletes its ephemerals, watches
    /// fire for the others, its connection is closed after `reply` (a `closeSession` xid) or
    /// cut (expiry).
    pub(super) fn end_session(&mut self, now: Instant, session: i64, reply: Option<i32>) {
        let zxid = self.next_zxid();
        self.watches.remove_session(session);
        let mut changes = Vec::new();
        self.tree.kill_session(session, zxid, &mut changes);
        self.notify(zxid, &changes);
        if let Some(conn) = self.sessions.remove(&session).and_then(|s| s.conn) {
            self.conns.remove(&conn);
            self.idents.remove(&conn);
            match reply {
                Some(xid) => {
                    self.send_reply(conn, xid, zxid, Ok(None));
                    self.out.push_back(Output::Close(conn));
                }
                None => self.out.push_back(Output::Cut(conn)),
            }
        }
        self.sweep_containers(now);
    }

    /// `addAuth`: answered at once with zxid 0, as ZooKeeper does (not a transaction). A
    /// scheme no provider serves is `AuthFailed`, and the connection is closed after the reply.
    pub(super) fn add_auth(&mut self, conn: ConnId, xid: i32, scheme: &str, auth: &Buffer) {
        let auth = auth.as_deref().unwrap_or_default();
        match acl::authenticate(scheme, auth) {
            Ok(id) => {
                let ids = self.idents.entry(conn).or_insert_with(acl::new_connection);
                if !ids.contains(&id) {
                    ids.push(id);
                }
                self.send_reply(conn, xid, 0, Ok(None));
            }
            Err(code) => {
                self.send_reply(conn, xid, 0, Err(code));
                self.drop_conn(conn, Some(Output::Close(conn)));
            }
        }
    }
}
