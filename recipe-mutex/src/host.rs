//! [`host_address`]: what our lock nodes carry by default, so that "who holds this lock?" names
//! a machine (Curator writes its host's address too).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::OnceLock;

use bytes::Bytes;
use zk_client::Client;

/// This host's address as text (`10.0.0.5`): the local address of this machine's route to the
/// server `client` is connected to, found once per process (a UDP socket connected to the
/// server: no packet is sent). Curator writes `InetAddress.getLocalHost()`'s address, which on
/// many machines is a loopback alias; the route's address is the one other machines know.
/// Empty when the client is not connected the first time it is asked (asked again later) or
/// no route is found.
pub fn host_address(client: &Client) -> Bytes {
    static FOUND: OnceLock<Bytes> = OnceLock::new();
    if let Some(found) = FOUND.get() {
        return found.clone();
    }
    match client.server_addr().and_then(route_address) {
        Some(ip) => FOUND.get_or_init(|| Bytes::from(ip.to_string())).clone(),
        None => Bytes::new(),
    }
}

/// The local address a packet to `server` would leave from.
fn route_address(server: SocketAddr) -> Option<IpAddr> {
    let any: SocketAddr = match server {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(any).ok()?;
    socket.connect(server).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_route_to_a_loopback_server_leaves_from_loopback() {
        let ip = route_address("127.0.0.1:2181".parse().unwrap());
        assert_eq!(ip, Some(IpAddr::from([127, 0, 0, 1])));
    }
}
