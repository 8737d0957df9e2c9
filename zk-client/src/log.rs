//! Events for `tracing` (feature `tracing`, off by default). Without the feature the macros
//! expand to nothing: their arguments are not evaluated and the crate does not depend on
//! `tracing`.
//!
//! Levels, as a user would keep them in production: `info` for what changes the session
//! (connected, lost, expired, closed; a reconnect's decision), `warn` for failures a user
//! should see (an attempt that failed, a session that ended), `debug` for each request,
//! reply, attempt and restore.

#[cfg(feature = "tracing")]
macro_rules! debug {
    ($($t:tt)*) => { ::tracing::debug!($($t)*) };
}
#[cfg(not(feature = "tracing"))]
macro_rules! debug {
    ($($t:tt)*) => {{}};
}

#[cfg(feature = "tracing")]
macro_rules! info {
    ($($t:tt)*) => { ::tracing::info!($($t)*) };
}
#[cfg(not(feature = "tracing"))]
macro_rules! info {
    ($($t:tt)*) => {{}};
}

#[cfg(feature = "tracing")]
macro_rules! warning {
    ($($t:tt)*) => { ::tracing::warn!($($t)*) };
}
#[cfg(not(feature = "tracing"))]
macro_rules! warning {
    ($($t:tt)*) => {{}};
}

pub(crate) use {debug, info, warning};
