//! The server: its configuration, binding and serving until a stop, the routes, and
//! what every request passes before its handler (the token, the queue, the timer).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use tokio::sync::Semaphore;

use crate::app::{App, error};
use crate::epochs::{Epochs, WarmConfig};
use crate::error::ServeError;
use crate::metrics::Metrics;
use crate::out::Out;

/// Everything a server is started with.
pub struct Config {
    /// The catalog, read by the caller.
    pub catalog: Arc<Catalog>,
    /// Where to listen; beyond loopback only with a token.
    pub listen: SocketAddr,
    /// The bearer token clients must send (`--token-env VAR`'s value).
    pub token: Option<String>,
    /// The gate's thresholds.
    pub decide: Options,
    /// Longest request body, in bytes (413 beyond it).
    pub max_body_bytes: usize,
    /// Requests decided at once.
    pub max_concurrent: usize,
    /// Requests waiting for one of those places; beyond them, 503 with Retry-After.
    pub max_queue: usize,
    /// Where every decision record answered is appended.
    pub out: Option<PathBuf>,
    /// The upstream model, for the OpenAI-compatible proxy.
    pub upstream: Option<crate::upstream::UpstreamConfig>,
    /// The upstream model for Anthropic's Messages API (`/v1/messages`); its `url` is
    /// the base URL as Anthropic's SDKs take it, its `key` sent as `x-api-key`.
    pub anthropic: Option<crate::upstream::UpstreamConfig>,
    /// How the warm gate's epochs are pinned and decided in; it is kept when every
    /// catalog tool has a module to execute.
    pub warm: WarmConfig,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_queue", &self.max_queue)
            .finish_non_exhaustive()
    }
}

/// A bound server, not yet serving.
#[derive(Debug)]
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    app: Arc<App>,
}

/// What a server did, once stopped.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// How long it served.
    pub elapsed: Duration,
}

impl Server {
    /// Checks the configuration, opens `--out` and binds the address.
    pub fn bind(config: Config) -> Result<Server, ServeError> {
        if !config.listen.ip().is_loopback() && config.token.is_none() {
            return Err(ServeError::NotLoopback(config.listen));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("plangate-serve")
            .build()
            .map_err(ServeError::Runtime)?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(config.listen))
            .map_err(|source| ServeError::Bind {
                addr: config.listen,
                source,
            })?;
        let out = config.out.as_deref().map(Out::open).transpose()?;
        let (epochs, cold_because) = warm_gate(&config.catalog, config.warm)?;
        let working = config.max_concurrent.max(1);
        let app = App {
            catalog: config.catalog,
            decide: config.decide,
            max_body_bytes: config.max_body_bytes,
            token: config.token,
            admitted: Arc::new(Semaphore::new(working + config.max_queue)),
            working: Arc::new(Semaphore::new(working)),
            metrics: Metrics::new(),
            out,
            upstream: config
                .upstream
                .map(crate::upstream::Upstream::new)
                .transpose()?,
            anthropic: config
                .anthropic
                .map(|c| {
                    crate::upstream::Upstream::at(c, "/v1/messages", "https://api.anthropic.com")
                })
                .transpose()?,
            epochs,
            cold_because,
        };
        Ok(Server {
            runtime,
            listener,
            app: Arc::new(app),
        })
    }

    /// The address bound (the port the system chose for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(ServeError::Serve)
    }

    /// Serves until `shutdown` completes, then stops taking connections, answers the
    /// requests in flight and syncs `--out`.
    pub fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Served, ServeError> {
        let started = Instant::now();
        let Server {
            runtime,
            listener,
            app,
        } = self;
        let router = routes(app.clone());
        let syncing = app.clone();
        runtime.spawn(async move {
            let mut every = tokio::time::interval(crate::out::SYNC_EVERY);
            loop {
                every.tick().await;
                if let Some(out) = syncing.out.as_ref()
                    && let Err(e) = out.sync()
                {
                    tracing::error!("{e}");
                }
            }
        });
        runtime
            .block_on(async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(shutdown)
                    .await
            })
            .map_err(ServeError::Serve)?;
        if let Some(out) = app.out.as_ref() {
            out.sync()?;
        }
        if let Some(epochs) = app.epochs.as_ref() {
            epochs.close()?;
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
        Ok(Served {
            elapsed: started.elapsed(),
        })
    }
}

/// The warm gate when every catalog tool has a module (its first epoch pinned and
/// probed), else none and why.
fn warm_gate(
    catalog: &Arc<Catalog>,
    warm: WarmConfig,
) -> Result<(Option<Epochs>, String), ServeError> {
    if let Some(t) = catalog.tools().iter().find(|t| t.module.is_none()) {
        let why = format!(
            "the catalog's tool {:?} has no module (every tool needs one to be executed)",
            t.name
        );
        tracing::info!("no warm gate: {why}");
        return Ok((None, why));
    }
    if catalog.tools().is_empty() {
        return Ok((None, "the catalog has no tools".into()));
    }
    Ok((Some(Epochs::start(catalog.clone(), warm)?), String::new()))
}

fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/decide", post(crate::decide::decide))
        .route("/v1/eval", post(crate::eval::eval))
        .route("/v1/epoch", post(crate::eval::epoch))
        .route("/v1/health", get(crate::decide::health))
        .route("/metrics", get(metrics))
        .route("/v1/chat/completions", post(crate::chat::chat))
        .route("/v1/messages", post(crate::messages::messages))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            gatekeeper,
        ))
        .with_state(app)
}

/// The name a path is counted under in the metrics (a bounded set of labels).
fn endpoint(path: &str) -> &'static str {
    match path {
        "/v1/decide" => "decide",
        "/v1/eval" => "eval",
        "/v1/epoch" => "epoch",
        "/v1/health" => "health",
        "/v1/chat/completions" => "chat_completions",
        "/v1/messages" => "messages",
        "/metrics" => "metrics",
        _ => "other",
    }
}

/// The token, then a place in the queue and one in the work (health and metrics skip
/// the queue, so a busy server can still be watched), then the handler, timed.
async fn gatekeeper(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let endpoint = endpoint(req.uri().path());
    let response = admit(&app, endpoint, req, next).await;
    app.metrics.request(
        endpoint,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

async fn admit(app: &App, endpoint: &'static str, req: Request, next: Next) -> Response {
    if endpoint != "health" && !app.authorized(req.headers()) {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this server needs `Authorization: Bearer TOKEN`",
        );
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    if matches!(endpoint, "health" | "metrics" | "other") {
        return next.run(req).await;
    }
    let Ok(_admitted) = app.admitted.clone().try_acquire_owned() else {
        app.metrics.busy();
        let mut r = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "every place in the queue is taken: try again shortly",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    };
    // The semaphore is never closed.
    let Ok(_working) = app.working.clone().acquire_owned().await else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the server is stopping",
        );
    };
    next.run(req).await
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    if let Some(epochs) = &app.epochs {
        app.metrics.absorb(epochs);
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        app.metrics.encode(),
    )
        .into_response()
}

/// No such endpoint, answered once the request's body is read: hyper closes a connection
/// whose request body has not all arrived when the answer is written, and a client's
/// kept-alive connection should outlive a wrong path. A body over `--max-body-bytes` is
/// not read further.
async fn not_found(State(app): State<Arc<App>>, body: Body) -> Response {
    // Read as every handler reads a body; what it holds, or why not, is not asked.
    let _ = app.body(body).await;
    error(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}
