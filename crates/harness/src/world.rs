//! One pinned epoch for a whole catalog: every tool's module and mounts go into a single
//! epoch, so every call of a run (probes, samples, resolver look-ups) sees the same world
//! and every decision can name one epoch id.

use std::collections::BTreeMap;
use std::path::Path;

use plangate_gate::catalog::{Catalog, SourceMode};
use plangate_sandbox::{
    CallRecord, Epoch, EpochManifest, Limits, Mode, MountMismatch, MountSpec, Sandbox,
    SandboxConfig, Tool, ToolSpec,
};

use crate::error::HarnessError;

/// How to pin the epoch.
#[derive(Debug, Clone, Default)]
pub struct WorldOptions {
    /// Replay this manifest instead of building a new epoch.
    pub manifest: Option<EpochManifest>,
    /// A new epoch's random seed.
    pub seed: u64,
    /// A new epoch's instant (default: the sandbox's fixed default instant).
    pub instant_unix_ns: Option<u64>,
    /// Engine settings.
    pub sandbox: SandboxConfig,
    /// Limits for every call.
    pub limits: Limits,
}

struct Loaded {
    tool: Tool,
    /// Guest paths of the tool's live mounts: a changed one unfixes the epoch for it.
    live: Vec<String>,
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

fn mode(m: SourceMode) -> Mode {
    match m {
        SourceMode::Pinned => Mode::Pinned,
        SourceMode::Live => Mode::Live,
    }
}

fn same_folder(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y)
}

impl World {
    /// Pins the epoch for `catalog` (whose relative paths are read against `base_dir`,
    /// the catalog file's folder) and loads every tool.
    pub fn build(
        catalog: &Catalog,
        base_dir: &Path,
        opts: WorldOptions,
    ) -> Result<World, HarnessError> {
        // One mount per guest path, in catalog order, so two runs declare them alike.
        let mut mounts: Vec<(MountSpec, String)> = Vec::new();
        let mut modules = Vec::new();
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
            modules.push(path);
            for m in &t.mounts {
                let spec = MountSpec {
                    host: base_dir.join(&m.host),
                    guest: m.guest.clone(),
                    mode: mode(m.mode),
                };
                match mounts.iter().find(|(s, _)| s.guest == spec.guest) {
                    Some((s, _)) if s.mode == spec.mode && same_folder(&s.host, &spec.host) => {}
                    Some((_, first)) => {
                        return Err(HarnessError::MountConflict {
                            guest: spec.guest,
                            first: first.clone(),
                            second: t.name.clone(),
                        });
                    }
                    None => mounts.push((spec, t.name.clone())),
                }
            }
        }
        let epoch = match opts.manifest {
            Some(manifest) => {
                let specs: Vec<MountSpec> = mounts.iter().map(|(s, _)| s.clone()).collect();
                let hosts = manifest.mount_hosts(&specs).map_err(|m| {
                    HarnessError::ManifestMismatch(match m {
                        MountMismatch::NotGiven { guest } => {
                            format!("it mounts {guest} and no catalog tool does")
                        }
                        MountMismatch::NotRecorded { index } => format!(
                            "tool {:?} mounts {} and the manifest does not",
                            mounts[index].1, mounts[index].0.guest
                        ),
                    })
                })?;
                Epoch::from_manifest(manifest, &hosts, None)?
            }
            None => {
                let mut b = Epoch::builder().seed(opts.seed);
                if let Some(ns) = opts.instant_unix_ns {
                    b = b.instant_unix_ns(ns);
                }
                for m in &modules {
                    b = b.module(m);
                }
                for (s, _) in &mounts {
                    b = b.mount(s.clone());
                }
                b.build()?
            }
        };
        tracing::info!(epoch_id = epoch.id(), "epoch pinned");
        let sandbox = Sandbox::new(opts.sandbox, epoch)?;
        let mut tools = BTreeMap::new();
        for (t, module) in catalog.tools().iter().zip(&modules) {
            let mut spec = ToolSpec::new(module)
                .clock(mode(t.clock))
                .random(mode(t.random));
            for m in &t.mounts {
                spec = spec.mount(base_dir.join(&m.host), &m.guest);
            }
            let tool = sandbox
                .load_tool(&spec)
                .map_err(|source| HarnessError::LoadTool {
                    tool: t.name.clone(),
                    source,
                })?;
            let live = t
                .mounts
                .iter()
                .filter(|m| m.mode == SourceMode::Live)
                .map(|m| m.guest.clone())
                .collect();
            tools.insert(t.name.clone(), Loaded { tool, live });
        }
        Ok(World {
            sandbox,
            tools,
            limits: opts.limits,
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

    /// Guest paths of `tool`'s live mounts.
    pub fn live_mounts(&self, tool: &str) -> &[String] {
        self.tools.get(tool).map_or(&[], |t| t.live.as_slice())
    }
}
