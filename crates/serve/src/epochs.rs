//! The warm gate a server holds: one pinned epoch (or a replayed one), its tools
//! probed once, deciding request after request with the health known so far. A fresh
//! epoch is pinned on `POST /v1/epoch` or when `--epoch-ttl-s` has passed; a replayed
//! epoch is never re-pinned (docs/design.md, "Serving").

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use plangate_gate::catalog::Catalog;
use plangate_harness::{EvalOptions, EvalStats, WarmGate, WorldOptions};
use plangate_sandbox::EpochManifest;

use crate::error::ServeError;

/// How the server's epochs are pinned, probed and decided in: the flags `eval` shares.
#[derive(Debug, Clone)]
pub struct WarmConfig {
    /// The folder the catalog's module and mount paths are relative to.
    pub base_dir: PathBuf,
    /// The seed, the per-call limits and the engine; the n-th epoch a server pins
    /// (counting from 0) takes the seed plus n.
    pub world: WorldOptions,
    /// Probe runs, thresholds, an earlier quarantine, jobs, `--remember-calls`.
    pub eval: EvalOptions,
    /// `--epoch`: the manifest replayed; such a server never pins another.
    pub replay: Option<EpochManifest>,
    /// `--write-epoch`: the current epoch's manifest is kept here (mode 0600); a
    /// retired epoch's is kept beside it as `FILE.<first 12 characters of its id>`.
    pub write_epoch: Option<PathBuf>,
    /// `--epoch-ttl-s`: a fresh epoch is pinned at the first request after this long.
    pub ttl: Option<Duration>,
}

/// Why no fresh epoch was pinned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenewError {
    /// The server replays `--epoch`.
    #[error("this server replays --epoch {0}: a replayed epoch is never re-pinned")]
    Replaying(String),
    /// Pinning failed; the current epoch goes on.
    #[error("{0}")]
    Failed(#[from] ServeError),
}

struct Current {
    gate: Arc<WarmGate>,
    since: Instant,
}

/// The current warm gate, and how to pin the next.
pub(crate) struct Epochs {
    catalog: Arc<Catalog>,
    config: WarmConfig,
    current: Mutex<Current>,
    /// Epochs pinned so far (the first included).
    pinned: AtomicU64,
    /// Held while a fresh epoch is pinned, so two renewals never pin at once.
    renewing: Mutex<()>,
    /// What the retired epochs' gates did, added up.
    retired: Mutex<EvalStats>,
}

impl std::fmt::Debug for Epochs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epochs")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Epochs {
    /// Pins (or replays) the first epoch and probes its tools. Blocks.
    pub(crate) fn start(catalog: Arc<Catalog>, config: WarmConfig) -> Result<Epochs, ServeError> {
        let gate = pin(&catalog, &config, 0)?;
        let epochs = Epochs {
            current: Mutex::new(Current {
                gate: Arc::new(gate),
                since: Instant::now(),
            }),
            pinned: AtomicU64::new(1),
            renewing: Mutex::new(()),
            retired: Mutex::new(EvalStats::default()),
            catalog,
            config,
        };
        epochs.write_current(None)?;
        Ok(epochs)
    }

    /// The settings the epochs are pinned and decided with.
    pub(crate) fn config(&self) -> &WarmConfig {
        &self.config
    }

    /// The catalog, shared.
    pub(crate) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Epochs pinned so far.
    pub(crate) fn pinned(&self) -> u64 {
        self.pinned.load(Ordering::Relaxed)
    }

    /// What every epoch's gate did so far, the current one's included (a request still
    /// running in a retired gate adds to it after it was retired, and is not counted).
    pub(crate) fn stats(&self) -> EvalStats {
        let mut all = lock(&self.retired).clone();
        all.add(&self.peek().stats());
        all
    }

    /// The current gate without renewing it (health, metrics).
    pub(crate) fn peek(&self) -> Arc<WarmGate> {
        lock(&self.current).gate.clone()
    }

    /// The gate a request runs in: the current one, or a fresh one when the epoch's
    /// time to live has passed (a failed pin is logged, and the current one goes on).
    /// Blocks when it pins: call it from a blocking thread.
    pub(crate) fn gate(&self) -> Arc<WarmGate> {
        let expired = {
            let c = lock(&self.current);
            self.config.ttl.is_some_and(|ttl| c.since.elapsed() >= ttl)
        };
        if expired && let Err(e) = self.renew_if(true) {
            tracing::error!("the epoch's time to live passed, but {e}");
        }
        self.peek()
    }

    /// Pins a fresh epoch and probes its tools (`POST /v1/epoch`). Blocks.
    pub(crate) fn renew(&self) -> Result<Arc<WarmGate>, RenewError> {
        self.renew_if(false)?;
        Ok(self.peek())
    }

    /// Pins a fresh epoch unless `only_expired` and another request renewed it while
    /// this one waited.
    fn renew_if(&self, only_expired: bool) -> Result<(), RenewError> {
        if self.config.replay.is_some() {
            return Err(RenewError::Replaying(self.peek().epoch_id().to_string()));
        }
        let _one_at_a_time = lock(&self.renewing);
        if only_expired
            && let Some(ttl) = self.config.ttl
            && lock(&self.current).since.elapsed() < ttl
        {
            return Ok(());
        }
        let n = self.pinned.load(Ordering::Relaxed);
        let gate = Arc::new(pin(&self.catalog, &self.config, n)?);
        let old = std::mem::replace(
            &mut *lock(&self.current),
            Current {
                gate,
                since: Instant::now(),
            },
        );
        self.pinned.fetch_add(1, Ordering::Relaxed);
        lock(&self.retired).add(&old.gate.stats());
        tracing::info!(
            retired = old.gate.epoch_id(),
            epoch_id = self.peek().epoch_id(),
            "a fresh epoch pinned"
        );
        self.write_current(Some(&old.gate))?;
        Ok(())
    }

    /// `--write-epoch`: the retired epoch's manifest as it ended (with the network
    /// exchanges it recorded) beside the file, then the current one's in it.
    fn write_current(&self, retired: Option<&WarmGate>) -> Result<(), ServeError> {
        let Some(path) = &self.config.write_epoch else {
            return Ok(());
        };
        if let Some(old) = retired {
            let beside = retired_path(path, old.epoch_id());
            write_manifest(&beside, &old.world().epoch().manifest_now())?;
        }
        write_manifest(path, &self.peek().world().epoch().manifest_now())
    }

    /// At a stop: the current manifest again, with what its network recorded.
    pub(crate) fn close(&self) -> Result<(), ServeError> {
        self.write_current(None)
    }
}

/// The n-th epoch: `--epoch`'s manifest replayed, else a fresh one with seed + n.
fn pin(catalog: &Arc<Catalog>, config: &WarmConfig, n: u64) -> Result<WarmGate, ServeError> {
    let opts = WorldOptions {
        manifest: config.replay.clone(),
        random_seed: config.world.random_seed.wrapping_add(n),
        ..config.world.clone()
    };
    WarmGate::pin(catalog, &config.base_dir, opts, config.eval.clone()).map_err(ServeError::Epoch)
}

/// Where a retired epoch's manifest is kept: `FILE.<first 12 characters of its id>`.
fn retired_path(path: &Path, epoch_id: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{}", &epoch_id[..epoch_id.len().min(12)]));
    PathBuf::from(name)
}

/// Writes a manifest as `plangate eval --write-epoch` does: whole or not at all, readable
/// by its owner only (it records what the epoch's network answered).
fn write_manifest(path: &Path, manifest: &EpochManifest) -> Result<(), ServeError> {
    plangate_report::files::write_manifest(path, manifest).map_err(ServeError::WriteEpoch)
}
