//! Why a server could not start or stop cleanly: setup and output failures only. A
//! request that cannot be judged is an HTTP answer, never one of these.

use std::path::PathBuf;

/// A server that could not be set up, or whose outputs failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A listening address beyond loopback without a token.
    #[error(
        "--listen {0} is not a loopback address: serving beyond this machine needs --token-env VAR, a bearer token every client must send"
    )]
    NotLoopback(std::net::SocketAddr),
    /// The async runtime could not start.
    #[error("cannot start the server's runtime: {0}")]
    Runtime(std::io::Error),
    /// `--out` could not be opened, written or synced.
    #[error("--out {path}: {source}")]
    Out {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The upstream model's client could not be built.
    #[error("--upstream: {0}")]
    Upstream(String),
    /// The warm gate's epoch could not be pinned, replayed or loaded.
    #[error("cannot pin the epoch: {0}")]
    Epoch(plangate_harness::HarnessError),
    /// `--write-epoch` could not be written.
    #[error("--write-epoch: {0}")]
    WriteEpoch(#[source] plangate_report::files::OutputError),
    /// Serving stopped on an I/O error.
    #[error("serving failed: {0}")]
    Serve(std::io::Error),
}
