//! One pinned epoch for a whole catalog: every tool's module and mounts go into a single
//! epoch, so every call of a run (probes, samples, resolver look-ups) sees the same world
//! and every decision can name one epoch id.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plangate_gate::catalog::{Catalog, SourceMode};
use plangate_sandbox::{
    CallRecord, Epoch, EpochManifest, EpochMode, EpochMount, Limits, ModuleSpec, MountMismatch,
    Sandbox, SandboxConfig, Tool,
};

use crate::bridge::{epoch_mount, module_spec};
use crate::error::HarnessError;

/// How to pin the epoch.
#[derive(Debug, Clone, Default)]
pub struct WorldOptions {
    /// Replay this manifest instead of building a new epoch.
    pub manifest: Option<EpochManifest>,
    /// A new epoch's random seed.
    pub random_seed: u64,
    /// A new epoch's instant (default: the sandbox's fixed default instant).
    pub instant_unix_ns: Option<u64>,
    /// Engine settings.
    pub sandbox: SandboxConfig,
    /// Limits for every call.
    pub limits: Limits,
    /// Pin every source the catalog declares live (mounts snapshotted, clocks and
    /// randomness from the epoch): the defer path's retry epoch.
    pub pin_all: bool,
    /// The most bytes the epoch's pinned network keeps in all; none in a batch, whose
    /// manifest keeps every exchange. A server bounds it (`--max-recorded-bytes`).
    pub max_recorded_bytes: Option<u64>,
}

struct Loaded {
    tool: Tool,
    /// Guest paths of the tool's live mounts: a changed one unfixes the epoch for it.
    live: Vec<String>,
    /// Its clock, randomness and mounts are all pinned: a call is a function of the
    /// module, its stdin and the epoch.
    pinned: bool,
}

/// A catalog's tools loaded into one sandbox under one epoch. `Sync`: share it with
/// every worker thread.
pub struct World {
    sandbox: Sandbox,
    tools: BTreeMap<String, Loaded>,
    limits: Limits,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("epoch_id", &self.sandbox.epoch().id())
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn same_folder(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y)
}

/// What a catalog asks of its epoch: every tool's module, resolved against the
/// catalog's folder, and one mount per guest path with the first tool that declared it,
/// in catalog order so two runs declare them alike.
struct Declared {
    modules: Vec<PathBuf>,
    mounts: Vec<(EpochMount, String)>,
}

impl Declared {
    /// Reads tool after tool, so the first tool at fault is the one named.
    fn of(catalog: &Catalog, base_dir: &Path, pin_all: bool) -> Result<Declared, HarnessError> {
        let mut declared = Declared {
            modules: Vec::new(),
            mounts: Vec::new(),
        };
        for (index, t) in catalog.tools().iter().enumerate() {
            let module = t.module.as_ref().ok_or_else(|| HarnessError::NoModule {
                tool: t.name.clone(),
            })?;
            let path = base_dir.join(module);
            // Said here with its catalog field, before the sandbox fails to hash it.
            if !path.is_file() {
                return Err(HarnessError::ModuleMissing {
                    index,
                    tool: t.name.clone(),
                    path,
                });
            }
            declared.modules.push(path);
            for m in &t.mounts {
                let mut spec = epoch_mount(m, base_dir);
                if pin_all {
                    spec.mode = EpochMode::Pinned;
                }
                declared.mount(spec, &t.name)?;
            }
        }
        Ok(declared)
    }

    /// Adds `tool`'s mount unless an earlier tool declared the same one; an earlier
    /// tool's other folder or mode at the same guest path is a conflict.
    fn mount(&mut self, spec: EpochMount, tool: &str) -> Result<(), HarnessError> {
        match self.mounts.iter().find(|(s, _)| s.guest == spec.guest) {
            Some((s, _)) if s.mode == spec.mode && same_folder(&s.host, &spec.host) => {}
            Some((_, first)) => {
                return Err(HarnessError::MountConflict {
                    guest: spec.guest,
                    first: first.clone(),
                    second: tool.to_string(),
                });
            }
            None => self.mounts.push((spec, tool.to_string())),
        }
        Ok(())
    }

    /// Replays `manifest`, serving each of its mounts from the catalog's folder at the
    /// same guest path; the two must declare the very same guest paths.
    fn replay(&self, manifest: EpochManifest) -> Result<Epoch, HarnessError> {
        let specs: Vec<EpochMount> = self.mounts.iter().map(|(s, _)| s.clone()).collect();
        let hosts = manifest.mount_hosts(&specs).map_err(|m| {
            HarnessError::ManifestMismatch(match m {
                MountMismatch::NotGiven { guest } => {
                    format!("it mounts {guest} and no catalog tool does")
                }
                MountMismatch::NotRecorded { index } => format!(
                    "tool {:?} mounts {} and the manifest does not",
                    self.mounts[index].1, self.mounts[index].0.guest
                ),
            })
        })?;
        Ok(Epoch::from_manifest(manifest, &hosts, None)?)
    }

    /// Pins a new epoch: snapshots the pinned mounts and hashes every module.
    fn pin(&self, seed: u64, instant_unix_ns: Option<u64>) -> Result<Epoch, HarnessError> {
        let mut b = Epoch::builder().random_seed(seed);
        if let Some(ns) = instant_unix_ns {
            b = b.instant_unix_ns(ns);
        }
        for m in &self.modules {
            b = b.module(m);
        }
        for (s, _) in &self.mounts {
            b = b.mount(s.clone());
        }
        Ok(b.build()?)
    }
}

impl World {
    /// Pins the epoch for `catalog` (whose relative paths are read against `base_dir`,
    /// the catalog file's folder) and loads every tool.
    pub fn build(
        catalog: &Catalog,
        base_dir: &Path,
        opts: WorldOptions,
    ) -> Result<World, HarnessError> {
        let declared = Declared::of(catalog, base_dir, opts.pin_all)?;
        let epoch = match opts.manifest {
            Some(manifest) => declared.replay(manifest)?,
            None => declared.pin(opts.random_seed, opts.instant_unix_ns)?,
        };
        tracing::info!(epoch_id = epoch.id(), "epoch pinned");
        if let Some(bytes) = opts.max_recorded_bytes {
            epoch.bound_network(bytes);
        }
        let sandbox = Sandbox::new(opts.sandbox, epoch)?;
        let mut tools = BTreeMap::new();
        for (t, module) in catalog.tools().iter().zip(&declared.modules) {
            let mut spec = module_spec(t, module, base_dir);
            if opts.pin_all {
                spec = spec.clock(EpochMode::Pinned).random(EpochMode::Pinned);
                // A live network is recorded on first use instead: pinned like the rest.
                if spec.network.mode == plangate_sandbox::NetworkMode::Live {
                    spec.network.mode = plangate_sandbox::NetworkMode::Pinned;
                }
            }
            let tool = sandbox
                .load_tool(&spec)
                .map_err(|source| HarnessError::LoadTool {
                    tool: t.name.clone(),
                    source,
                })?;
            let live: Vec<String> = t
                .mounts
                .iter()
                .filter(|m| m.mode == SourceMode::Live && !opts.pin_all)
                .map(|m| m.guest.clone())
                .collect();
            let pinned = live.is_empty()
                && spec.clock == EpochMode::Pinned
                && spec.random == EpochMode::Pinned
                && spec.network.mode != plangate_sandbox::NetworkMode::Live;
            tools.insert(t.name.clone(), Loaded { tool, live, pinned });
        }
        Ok(World {
            sandbox,
            tools,
            limits: opts.limits,
        })
    }

    /// One tool in an epoch built for it alone (`plangate call`): `spec` loaded as it
    /// is, under `name`, with nothing else pinned or loaded. `live` are the guest paths
    /// of its live mounts.
    pub fn of_tool(
        config: SandboxConfig,
        epoch: Epoch,
        name: &str,
        spec: &ModuleSpec,
        live: Vec<String>,
        limits: Limits,
    ) -> Result<World, plangate_sandbox::Error> {
        let sandbox = Sandbox::new(config, epoch)?;
        let tool = sandbox.load_tool(spec)?;
        let pinned = live.is_empty()
            && spec.clock == EpochMode::Pinned
            && spec.random == EpochMode::Pinned
            && spec.network.mode != plangate_sandbox::NetworkMode::Live;
        let tools = BTreeMap::from([(name.to_string(), Loaded { tool, live, pinned })]);
        Ok(World {
            sandbox,
            tools,
            limits,
        })
    }

    /// The pinned epoch.
    pub fn epoch(&self) -> &Epoch {
        self.sandbox.epoch()
    }

    /// Whether the world can run `tool`.
    pub fn has(&self, tool: &str) -> bool {
        self.tools.contains_key(tool)
    }

    /// Runs one call of `tool` with `stdin` in a fresh instance; `None` when the world
    /// has no such tool. Blocks: call it from a plain thread, never a tokio worker.
    pub fn call(&self, tool: &str, stdin: &[u8]) -> Option<CallRecord> {
        let t = self.tools.get(tool)?;
        Some(self.sandbox.call(&t.tool, stdin, &self.limits))
    }

    /// Whether every source `tool` reads (clock, randomness, mounts) is pinned in this
    /// epoch.
    pub fn pinned(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| t.pinned)
    }

    /// Guest paths of `tool`'s live mounts.
    pub fn live_mounts(&self, tool: &str) -> &[String] {
        self.tools.get(tool).map_or(&[], |t| t.live.as_slice())
    }
}
