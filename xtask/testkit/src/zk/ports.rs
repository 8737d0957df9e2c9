//! Picking free TCP ports on 127.0.0.1 for ZooKeeper's client, peer and election listeners.

use std::io;
use std::net::{Ipv4Addr, TcpListener};

/// Picks `count` distinct ports that are free on 127.0.0.1 right now.
///
/// Each comes from binding `127.0.0.1:0`; all the listeners stay open until every port is
/// picked, so the ports differ from each other. Another process may still take one before
/// ZooKeeper binds it; the caller retries the start when that happens.
///
/// # Errors
/// Binding a listener fails (for example when the process is out of file descriptors).
pub fn free_ports(count: usize) -> io::Result<Vec<u16>> {
    let mut listeners = Vec::with_capacity(count);
    let mut ports = Vec::with_capacity(count);
    for _ in 0..count {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        ports.push(listener.local_addr()?.port());
        listeners.push(listener);
    }
    Ok(ports)
}
