//! `cargo xtask chaos`: every recipe, ours and Curator's, on a ZooKeeper ensemble under a
//! seeded nemesis, each holder updating a protected register under its hold; a pure checker
//! ([`check`]) over what the workers recorded ([`history`]).

pub mod check;
pub mod history;
pub mod layout;
pub mod nemesis;
pub mod ours;
