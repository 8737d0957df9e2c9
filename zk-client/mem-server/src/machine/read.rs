//! The reads: each answered from the tree as it stands, setting the watch it asks for.

use zk_proto::records::{
    ExistsResponse, GetAclResponse, GetAllChildrenNumberResponse, GetChildren2Response,
    GetChildrenResponse, GetDataResponse, GetEphemeralsResponse, Id, Perms, SyncResponse,
};
use zk_proto::{ErrorCode, MultiOp, MultiRequest, MultiResponse, MultiResult, Request};

use super::{Body, ServerMachine, acl, body};
use crate::watches::WatchKind;

impl ServerMachine {
    /// The reads: `exists`, `getData`, `getChildren`, `getChildren2`, `getACL`, `sync`,
    /// `getEphemerals`, `getAllChildrenNumber`, `multiRead`.
    pub(super) fn read_request(
        &mut self,
        session: i64,
        ids: &[Id],
        request: Request,
    ) -> Result<Body, ErrorCode> {
        use Request as R;
        match request {
            R::Exists(r) => self.exists(session, &r.path, r.watch),
            R::GetData(r) => self.get_data(session, ids, &r.path, r.watch),
            R::GetChildren(r) => self
                .children(session, ids, &r.path, r.watch)
                .and_then(|(children, _)| body(GetChildrenResponse { children })),
            R::GetChildren2(r) => self
                .children(session, ids, &r.path, r.watch)
                .and_then(|(children, stat)| body(GetChildren2Response { children, stat })),
            R::GetAcl(r) => match self.tree.get(&r.path) {
                Some(n) => {
                    let both = Perms(Perms::READ.0 | Perms::ADMIN.0);
                    acl::check(&n.acl, both, ids).and_then(|()| {
                        // Without ADMIN, digest ids are shown as `user:x`.
                        let acl = match acl::check(&n.acl, Perms::ADMIN, ids) {
                            Ok(()) => n.acl.clone(),
                            Err(_) => acl::redacted(&n.acl),
                        };
                        body(GetAclResponse {
                            acl,
                            stat: n.stat(),
                        })
                    })
                }
                None => Err(ErrorCode::NoNode),
            },
            R::Sync(r) => body(SyncResponse { path: r.path }),
            R::GetEphemerals(r) => {
                let prefix = r.prefix_path.trim();
                let all = prefix.is_empty() || prefix == "/";
                let ephemerals = self
                    .tree
                    .ephemerals()
                    .filter(|(p, owner)| *owner == session && (all || p.starts_with(prefix)))
                    .map(|(p, _)| p.to_owned())
                    .collect();
                body(GetEphemeralsResponse { ephemerals })
            }
            R::GetAllChildrenNumber(r) => match self.tree.get(&r.path) {
                Some(n) => acl::check(&n.acl, Perms::READ, ids).and_then(|()| {
                    body(GetAllChildrenNumberResponse {
                        total_number: i32::try_from(self.tree.descendants(&r.path))
                            .unwrap_or(i32::MAX),
                    })
                }),
                None => Err(ErrorCode::NoNode),
            },
            R::MultiRead(m) => self.multi_read(session, ids, &m),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    pub(super) fn exists(
        &mut self,
        session: i64,
        path: &str,
        watch: bool,
    ) -> Result<Body, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        if watch {
            self.watches.add(WatchKind::Data, path, session);
        }
        match self.tree.get(path) {
            Some(n) => body(ExistsResponse { stat: n.stat() }),
            None => Err(ErrorCode::NoNode),
        }
    }

    pub(super) fn get_data(
        &mut self,
        session: i64,
        ids: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<Body, ErrorCode> {
        let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, Perms::READ, ids)?;
        let reply = GetDataResponse {
            data: n.data.clone(),
            stat: n.stat(),
        };
        if watch {
            self.watches.add(WatchKind::Data, path, session);
        }
        body(reply)
    }

    pub(super) fn children(
        &mut self,
        session: i64,
        ids: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, zk_proto::records::Stat), ErrorCode> {
        let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, Perms::READ, ids)?;
        let mut children: Vec<String> = n.children.iter().cloned().collect();
        let stat = n.stat();
        if self.config.shuffle_children {
            for i in (1..children.len()).rev() {
                let j = self.rng.index(i + 1);
                children.swap(i, j);
            }
        }
        if watch {
            self.watches.add(WatchKind::Child, path, session);
        }
        Ok((children, stat))
    }

    pub(super) fn multi_read(
        &mut self,
        session: i64,
        ids: &[Id],
        m: &MultiRequest,
    ) -> Result<Body, ErrorCode> {
        let mut results = Vec::with_capacity(m.ops.len());
        for op in &m.ops {
            let result = match op {
                MultiOp::GetChildren(r) => {
                    self.children(session, ids, &r.path, r.watch)
                        .map(|(children, _)| {
                            MultiResult::GetChildren(GetChildrenResponse { children })
                        })
                }
                MultiOp::GetData(r) => match self.tree.get(&r.path) {
                    Some(n) if acl::check(&n.acl, Perms::READ, ids).is_err() => {
                        Err(ErrorCode::NoAuth)
                    }
                    Some(n) => {
                        let data = GetDataResponse {
                            data: n.data.clone(),
                            stat: n.stat(),
                        };
                        if r.watch {
                            self.watches.add(WatchKind::Data, &r.path, session);
                        }
                        Ok(MultiResult::GetData(data))
                    }
                    None => Err(ErrorCode::NoNode),
                },
                _ => Err(ErrorCode::BadArguments),
            };
            results.push(result.unwrap_or_else(MultiResult::Error));
        }
        body(MultiResponse { results })
    }
}
