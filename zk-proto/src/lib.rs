//! zk-proto
