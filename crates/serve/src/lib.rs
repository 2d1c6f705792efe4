//! `plangate serve` as a library (docs/serve.md): a gate behind a JSON API
//! (`/v1/decide`, `/v1/health`, `/metrics`), a warm gate that executes calls in one
//! pinned epoch (`/v1/eval`, `/v1/epoch`) and, with an upstream model, an
//! OpenAI-compatible proxy that asks for N choices, executes and judges them as one
//! task's samples and answers with one step, or none; with an Anthropic upstream, the same for
//! Anthropic's Messages API.
//!
//! The HTTP side runs on tokio (axum over hyper); executing and deciding run on
//! blocking threads, never on the runtime's workers, but for a small `/v1/decide` line
//! (`decide`). The crate prints nothing and picks no exit code: it
//! logs through `tracing` and returns [`ServeError`].

mod anthropic;
mod app;
mod chat;
mod decide;
mod epochs;
mod error;
mod eval;
mod judge;
mod messages;
mod metrics;
mod out;
mod reply;
mod server;
mod step;
mod upstream;

pub use epochs::WarmConfig;
pub use error::ServeError;
pub use out::SYNC_EVERY;
pub use server::{Config, Served, Server};
pub use upstream::{OnDefer, OnReject, UpstreamConfig};
