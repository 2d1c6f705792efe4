//! `plangate serve`: the gate kept warm behind an HTTP API (docs/serve.md). This file is
//! flags, the token from the environment, the stop signals and what is printed; the
//! server is plangate-serve.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use plangate_report::plan::OutputPlan;
use plangate_serve::{Config, OnDefer, OnReject, Server, UpstreamConfig, WarmConfig};

use crate::args::{ExecArgs, ThresholdArgs};
use crate::files::{Reads, catalog_dir, load_catalog, read_manifest};

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Tool catalog (JSON, any shape `eval` reads); module and mount paths are relative
    /// to it.
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Address to listen on. Anything but a loopback address needs --token-env.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Append every decision record answered here, one JSON line each (synced to disk
    /// at least once a second, and at a graceful stop).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The environment variable holding the bearer token clients must send
    /// (`Authorization: Bearer TOKEN`) on every endpoint but /v1/health.
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Longest request body, in bytes: beyond it the answer is 413, and the server goes on.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    max_body_bytes: u64,
    /// Requests decided at once (default: --jobs, else one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_concurrent: Option<u64>,
    /// Requests that may wait for a place; beyond them the answer is 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_queue: usize,
    #[command(flatten)]
    proxy: ProxyArgs,
    /// How the warm gate's epoch is pinned (when every catalog tool has a module);
    /// --jobs is also the default of --max-concurrent.
    #[command(flatten)]
    run: ExecArgs,
    /// Pin a fresh epoch (and probe every tool again) at the first request after this
    /// many seconds; refused with --epoch, which is never re-pinned.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    epoch_ttl_s: Option<u64>,
    /// Distinct calls whose first answer the warm gate keeps for determinism witnesses,
    /// and resolved IDs it keeps, at most; the oldest are forgotten first.
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    remember_calls: u64,
    /// Bytes of network exchanges a pinned network keeps in one epoch, at most: past it
    /// a request not yet recorded is that call's error until a fresh epoch.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    max_recorded_bytes: u64,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// The OpenAI-compatible proxy's flags.
#[derive(Debug, Args)]
struct ProxyArgs {
    /// Serve POST /v1/chat/completions as a proxy to this OpenAI-compatible base URL
    /// (as clients take it, e.g. http://127.0.0.1:8000/v1): each step with tools is
    /// sampled N times upstream and judged before it is answered.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Choices judged per step (OpenAI's `n`); below 6 the lowest agreement is 1/5 =
    /// 0.20, so nothing could ever be rejected at the default --arg-reject.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=128))]
    n: u64,
    /// How long one upstream request may take before the step is answered 504.
    #[arg(long, value_name = "MS", default_value_t = 120_000, value_parser = clap::value_parser!(u64).range(1..))]
    upstream_timeout_ms: u64,
    /// The environment variable holding the upstream's API key. Without it, a client's
    /// own Authorization header goes upstream when this server has no token.
    #[arg(long, value_name = "VAR")]
    upstream_key_env: Option<String>,
    /// Serve POST /v1/messages as a proxy to Anthropic's Messages API at this base URL
    /// (as Anthropic's SDKs take it, e.g. https://api.anthropic.com): each step with
    /// tools is asked for N times at once and judged before it is answered.
    #[arg(long, value_name = "URL")]
    anthropic_upstream: Option<String>,
    /// The environment variable holding the key sent to --anthropic-upstream as
    /// x-api-key. Without it, a client's own x-api-key goes upstream.
    #[arg(long, value_name = "VAR")]
    anthropic_key_env: Option<String>,
    /// What a rejected step answers: `refuse` (an assistant message without tool calls
    /// saying why) or `error` (422 with the record).
    #[arg(long, value_enum, value_name = "HOW", default_value = "refuse")]
    on_reject: OnRejectArg,
    /// What a deferred step answers: `pass` (the modal choice, marked
    /// x-plangate-decision: defer), `refuse` (as a reject) or `error` (409 with the record).
    #[arg(long, value_enum, value_name = "HOW", default_value = "pass")]
    on_defer: OnDeferArg,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OnRejectArg {
    Refuse,
    Error,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OnDeferArg {
    Pass,
    Refuse,
    Error,
}

impl ProxyArgs {
    /// The OpenAI-compatible upstream's configuration, with its key read from the
    /// environment.
    fn upstream(&self) -> Result<Option<UpstreamConfig>> {
        let Some(url) = &self.upstream else {
            if self.upstream_key_env.is_some() {
                bail!("--upstream-key-env needs --upstream");
            }
            return Ok(None);
        };
        self.config(url, "--upstream-key-env", self.upstream_key_env.as_deref())
    }

    /// The Anthropic upstream's configuration, with its key read from the environment.
    fn anthropic(&self) -> Result<Option<UpstreamConfig>> {
        let Some(url) = &self.anthropic_upstream else {
            if self.anthropic_key_env.is_some() {
                bail!("--anthropic-key-env needs --anthropic-upstream");
            }
            return Ok(None);
        };
        self.config(
            url,
            "--anthropic-key-env",
            self.anthropic_key_env.as_deref(),
        )
    }

    /// An upstream's configuration: the URL and key its own; N, the timeout and the
    /// policies shared.
    fn config(
        &self,
        url: &str,
        key_flag: &str,
        key_var: Option<&str>,
    ) -> Result<Option<UpstreamConfig>> {
        Ok(Some(UpstreamConfig {
            url: url.to_string(),
            n: usize::try_from(self.n).unwrap_or(128),
            timeout: std::time::Duration::from_millis(self.upstream_timeout_ms),
            key: secret(key_flag, key_var)?,
            on_reject: match self.on_reject {
                OnRejectArg::Refuse => OnReject::Refuse,
                OnRejectArg::Error => OnReject::Error,
            },
            on_defer: match self.on_defer {
                OnDeferArg::Pass => OnDefer::Pass,
                OnDeferArg::Refuse => OnDefer::Refuse,
                OnDeferArg::Error => OnDefer::Error,
            },
        }))
    }
}

/// The secret in the variable a flag names: set and not empty, or a usage error.
fn secret(flag: &str, var: Option<&str>) -> Result<Option<String>> {
    let Some(var) = var else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => Ok(Some(t.trim().to_string())),
        Ok(_) => bail!("{flag} {var}: the variable is empty"),
        Err(_) => bail!("{flag} {var}: the variable is not set (or not UTF-8)"),
    }
}

/// Completes at the first SIGTERM or Ctrl-C.
async fn stop_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!("cannot watch for SIGTERM ({e}); Ctrl-C still stops the server");
            let _ = ctrl_c.await;
        }
    }
}

/// The warm gate's settings, from the flags `eval` shares.
fn warm(args: &ServeArgs) -> Result<WarmConfig> {
    if args.epoch_ttl_s.is_some() && args.run.epoch.is_some() {
        bail!("--epoch-ttl-s cannot be used with --epoch: a replayed epoch is never re-pinned");
    }
    let (mut world, mut eval) = args.run.options(&args.thresholds)?;
    world.max_recorded_bytes = Some(args.max_recorded_bytes);
    eval.remember_calls = Some(usize::try_from(args.remember_calls).unwrap_or(usize::MAX));
    Ok(WarmConfig {
        base_dir: catalog_dir(&args.catalog),
        world,
        eval,
        replay: args.run.epoch.as_deref().map(read_manifest).transpose()?,
        write_epoch: args.run.write_epoch.clone(),
        ttl: args.epoch_ttl_s.map(std::time::Duration::from_secs),
    })
}

/// Refuses, before serving, an output (`--out`, `--write-epoch`) that names one of the
/// server's inputs (the catalog, its modules and mounts, `--epoch`, `--quarantine`),
/// the other output, or a place that cannot be written: as `eval` does, through the one
/// output plan.
fn check_outputs(args: &ServeArgs, catalog: &plangate_gate::catalog::Catalog) -> Result<()> {
    let plan = OutputPlan {
        decisions: args.out.clone(),
        epoch: args.run.write_epoch.clone(),
        ..OutputPlan::default()
    };
    let inputs = (args.run).reads(Reads::default().catalog("--catalog", &args.catalog, catalog));
    crate::files::check_outputs(&plan.files(), &inputs)
}

pub(crate) fn run(args: ServeArgs) -> Result<u8> {
    args.thresholds.check()?;
    let catalog = load_catalog(&args.catalog)?;
    check_outputs(&args, &catalog)?;
    let jobs = args.run.jobs.unwrap_or_else(plangate_harness::default_jobs);
    let config = Config {
        catalog: Arc::new(catalog),
        listen: args.listen,
        token: secret("--token-env", args.token_env.as_deref())?,
        decide: args.thresholds.options(),
        max_body_bytes: usize::try_from(args.max_body_bytes).unwrap_or(usize::MAX),
        max_concurrent: args
            .max_concurrent
            .map_or(jobs, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        max_queue: args.max_queue,
        out: args.out.clone(),
        upstream: args.proxy.upstream()?,
        anthropic: args.proxy.anthropic()?,
        warm: warm(&args)?,
    };
    let server = Server::bind(config)?;
    let addr = server.local_addr()?;
    eprintln!("plangate: serving on http://{addr}");
    let served = server.run(stop_signal()).context("serving stopped")?;
    eprintln!(
        "plangate: stopped after {:.1} s",
        served.elapsed.as_secs_f64()
    );
    Ok(crate::exit::OK)
}
