//! Every jute record a ZooKeeper 3.8 client sends or receives, one module per subject. Each is
//! a plain struct with public fields in wire order; field docs give the `zookeeper.jute` name
//! where it differs.

mod acl;
mod auth;
mod connect;
mod data;
mod node;
mod reconfig;
mod watch;

pub use acl::{GetAclRequest, GetAclResponse, SetAclRequest, SetAclResponse};
pub use auth::{AuthPacket, GetSaslRequest, SetSaslRequest, SetSaslResponse, WhoAmIResponse};
pub use connect::{ConnectRequest, ConnectResponse};
pub use data::{Acl, Buffer, ClientInfo, Id, Perms, Stat};
pub use node::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, ErrorResponse, ExistsRequest, ExistsResponse, GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse, GetChildren2Request, GetChildren2Response, GetChildrenRequest,
    GetChildrenResponse, GetDataRequest, GetDataResponse, GetEphemeralsRequest,
    GetEphemeralsResponse, SetDataRequest, SetDataResponse, SyncRequest, SyncResponse,
};
pub use reconfig::ReconfigRequest;
pub use watch::{
    AddWatchRequest, CheckWatchesRequest, RemoveWatchesRequest, SetWatches, SetWatches2,
    WatcherEvent,
};
