//! `plangate serve` as a library (docs/serve.md): a gate behind a JSON API
//! (`/v1/decide`, `/v1/health`, `/metrics`) and, with an upstream model, an
//! OpenAI-compatible proxy that asks for N choices, judges them as one task's samples
//! and answers with one step, or none; with an Anthropic upstream, the same for
//! Anthropic's Messages API.
//!
//! The HTTP side runs on tokio (axum over hyper); deciding runs on blocking threads,
//! never on the runtime's workers. The crate prints nothing and picks no exit code: it
//! logs through `tracing` and returns [`ServeError`].

mod anthropic;
mod app;
mod chat;
mod decide;
mod error;
mod judge;
mod messages;
mod metrics;
mod out;
mod reply;
mod server;
mod step;
mod upstream;

pub use error::ServeError;
pub use out::SYNC_EVERY;
pub use server::{Config, Served, Server};
pub use upstream::{OnDefer, OnReject, UpstreamConfig};
