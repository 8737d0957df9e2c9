//! The writes: each a transaction under its own zxid (a multi's ops under one), with the
//! ACL checks in ZooKeeper's order, then the watches it fires; and the container manager's
//! deletes.

use std::time::Instant;

use zk_proto::records::{
    Acl, Buffer, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, Id, Perms,
    SetAclResponse, SetDataResponse,
};
use zk_proto::{CreateMode, ErrorCode, MultiOp, MultiRequest, MultiResponse, MultiResult, Request};

use super::{Body, ServerMachine, acl, body};
use crate::data_tree::{Change, DataTree, split_path, validate_create};

impl ServerMachine {
    /// The writes: `create`, `create2`, `createContainer`, `createTTL`, `delete`, `setData`,
    /// `setACL`, `check`, `multi`.
    pub(super) fn write_request(
        &mut self,
        now: Instant,
        session: i64,
        ids: &[Id],
        request: Request,
    ) -> Result<Body, ErrorCode> {
        use Request as R;
        match request {
            R::Create(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), ids, session, zxid, time, ch)
                })
                .and_then(|(path, _)| body(CreateResponse { path })),
            R::Create2(r) | R::CreateContainer(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), ids, session, zxid, time, ch)
                })
                .and_then(|(path, stat)| body(Create2Response { path, stat })),
            R::CreateTtl(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), ids, session, zxid, time, ch)
                })
                .and_then(|(path, stat)| body(Create2Response { path, stat })),
            R::Delete(r) => self
                .write(now, |t, zxid, _, ch| {
                    delete(t, &r.path, r.version, ids, zxid, ch)
                })
                .map(|()| None),
            R::SetData(r) => self
                .write(now, |t, zxid, time, ch| {
                    permitted(t, &r.path, Perms::WRITE, ids)?;
                    t.set_data(&r.path, r.data.clone(), r.version, zxid, time, ch)
                })
                .and_then(|stat| body(SetDataResponse { stat })),
            R::SetAcl(r) => self
                .write(now, |t, _, _, _| {
                    set_acl(t, &r.path, &r.acl, r.version, ids)
                })
                .and_then(|stat| body(SetAclResponse { stat })),
            R::Check(r) => self
                .write(now, |t, _, _, _| {
                    permitted(t, &r.path, Perms::READ, ids)?;
                    t.check(&r.path, r.version)
                })
                .and_then(|stat| body(SetDataResponse { stat })),
            R::Multi(m) => self.multi(now, session, ids, &m),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    /// Runs one write as a transaction: a zxid (taken even when it fails, as ZooKeeper logs
    /// an error transaction), then the watches it fires.
    pub(super) fn write<T>(
        &mut self,
        now: Instant,
        op: impl FnOnce(&mut DataTree, i64, i64, &mut Vec<Change>) -> Result<T, ErrorCode>,
    ) -> Result<T, ErrorCode> {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let mut changes = Vec::new();
        let result = op(&mut self.tree, zxid, time, &mut changes);
        self.notify(zxid, &changes);
        result
    }

    /// A transaction: every op applies, under one zxid, or none does. On failure the ops
    /// before the failing one answer `Ok`, it answers its code, the later ones
    /// `RuntimeInconsistency` (ZooKeeper's `DataTree.processTxn`).
    pub(super) fn multi(
        &mut self,
        now: Instant,
        session: i64,
        ids: &[Id],
        m: &MultiRequest,
    ) -> Result<Body, ErrorCode> {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let mut scratch = self.tree.clone();
        let mut changes = Vec::new();
        let mut results = Vec::with_capacity(m.ops.len());
        let mut failed = None;
        for (i, op) in m.ops.iter().enumerate() {
            let ch = &mut changes;
            let result = match op {
                MultiOp::Create(r) => create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                    .map(|(path, _)| MultiResult::Create(CreateResponse { path })),
                MultiOp::Create2(r) | MultiOp::CreateContainer(r) => {
                    create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::Delete(r) => delete(&mut scratch, &r.path, r.version, ids, zxid, ch)
                    .map(|()| MultiResult::Delete),
                MultiOp::SetData(r) => permitted(&scratch, &r.path, Perms::WRITE, ids)
                    .and_then(|()| {
                        scratch.set_data(&r.path, r.data.clone(), r.version, zxid, time, ch)
                    })
                    .map(|stat| MultiResult::SetData(SetDataResponse { stat })),
                MultiOp::Check(r) => permitted(&scratch, &r.path, Perms::READ, ids)
                    .and_then(|()| scratch.check(&r.path, r.version))
                    .map(|_| MultiResult::Check),
                MultiOp::CreateTtl(r) => {
                    create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::GetChildren(_) | MultiOp::GetData(_) => Err(ErrorCode::BadArguments),
            };
            match result {
                Ok(r) => results.push(r),
                Err(code) => {
                    failed = Some((i, code));
                    break;
                }
            }
        }
        let results = match failed {
            None => {
                self.tree = scratch;
                self.notify(zxid, &changes);
                results
            }
            Some((at, code)) => (0..m.ops.len())
                .map(|i| {
                    MultiResult::Error(match i.cmp(&at) {
                        std::cmp::Ordering::Less => ErrorCode::Ok,
                        std::cmp::Ordering::Equal => code,
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency,
                    })
                })
                .collect(),
        };
        body(MultiResponse { results })
    }

    /// Removes every container that had a child and has none now, and every TTL node past
    /// its TTL with no children, each in its own transaction (ZooKeeper's container manager
    /// sends `deleteContainer` for each), when [`ServerConfig::container_manager`] says it is
    /// time.
    pub(super) fn sweep_containers(&mut self, now: Instant) {
        let Some(interval) = self.config.container_manager else {
            return;
        };
        if now.saturating_duration_since(self.last_sweep) < interval {
            return;
        }
        self.last_sweep = now;
        let now_ms = self.wall_ms(now);
        loop {
            let due = self.tree.due_for_removal(now_ms);
            if due.is_empty() {
                return;
            }
            for path in due {
                let zxid = self.next_zxid();
                let mut changes = Vec::new();
                self.tree
                    .delete_container(&path, now_ms, zxid, &mut changes);
                self.notify(zxid, &changes);
            }
        }
    }
}

/// What a create asks for: a `create`/`create2`/`createContainer` (no TTL) or a `createTTL`.
struct NewNode<'a> {
    path: &'a str,
    data: &'a Buffer,
    acl: &'a [Acl],
    mode: CreateMode,
    ttl: i64,
}

impl<'a> From<&'a CreateRequest> for NewNode<'a> {
    fn from(r: &'a CreateRequest) -> Self {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            mode: r.mode,
            ttl: -1,
        }
    }
}

impl<'a> From<&'a CreateTtlRequest> for NewNode<'a> {
    fn from(r: &'a CreateTtlRequest) -> Self {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            mode: r.mode,
            ttl: r.ttl,
        }
    }
}

/// A create with its ACL checks in ZooKeeper's order (`PrepRequestProcessor`): the TTL and
/// the path, the new ACL's fix-up (`InvalidAcl`), the parent (`NoNode`), `CREATE` on the
/// parent (`NoAuth`), then the tree's own checks (`NodeExists`, ...).
fn create(
    tree: &mut DataTree,
    new: NewNode<'_>,
    ids: &[Id],
    session: i64,
    zxid: i64,
    time: i64,
    changes: &mut Vec<Change>,
) -> Result<(String, zk_proto::records::Stat), ErrorCode> {
    validate_create(new.path, new.mode, new.ttl)?;
    let fixed = acl::fixup(new.acl, ids)?;
    if let Some(parent) = split_path(new.path).and_then(|(parent, _)| tree.get(parent)) {
        acl::check(&parent.acl, Perms::CREATE, ids)?;
    }
    tree.create(
        new.path,
        new.data.clone(),
        &fixed,
        new.mode,
        new.ttl,
        session,
        zxid,
        time,
        changes,
    )
}

/// `delete` with `DELETE` checked on the parent, after the parent's `NoNode` and before the
/// node's.
fn delete(
    tree: &mut DataTree,
    path: &str,
    version: i32,
    ids: &[Id],
    zxid: i64,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorCode> {
    if zk_proto::validate_path(path, false).is_ok() {
        if let Some(parent) = split_path(path).and_then(|(parent, _)| tree.get(parent)) {
            acl::check(&parent.acl, Perms::DELETE, ids)?;
        }
    }
    tree.delete(path, version, zxid, changes)
}

/// `setACL`: the new ACL's fix-up (`InvalidAcl`), then the node (`NoNode`), `ADMIN` on it
/// (`NoAuth`), its `aversion` (`BadVersion`).
fn set_acl(
    tree: &mut DataTree,
    path: &str,
    new: &[Acl],
    version: i32,
    ids: &[Id],
) -> Result<zk_proto::records::Stat, ErrorCode> {
    zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
    let fixed = acl::fixup(new, ids)?;
    permitted(tree, path, Perms::ADMIN, ids)?;
    tree.set_acl(path, &fixed, version)
}

/// `perm` on the node at `path` for `ids`; a missing node passes (its `NoNode` comes from the
/// operation itself, before `NoAuth` as in ZooKeeper).
fn permitted(tree: &DataTree, path: &str, perm: Perms, ids: &[Id]) -> Result<(), ErrorCode> {
    match tree.get(path) {
        Some(node) => acl::check(&node.acl, perm, ids),
        None => Ok(()),
    }
}
