//! The one place where the catalog's declarations (gate types) become what the sandbox
//! instantiates. gate and sandbox never see each other, so their twin types meet only
//! here: `SourceMode` becomes `EpochMode`, a catalog `MountSpec` an `EpochMount`, and a
//! catalog `ToolSpec` a `ModuleSpec`. `World` and `plangate call --catalog` both map
//! through it, so one catalog entry runs alike in eval and in a single call.

use std::path::{Path, PathBuf};

use plangate_gate::catalog::{Catalog, MountSpec, NetworkMode, NetworkSpec, SourceMode, ToolSpec};
use plangate_sandbox::{EpochMode, EpochMount, ModuleSpec, NetworkPolicy};

/// Whether a catalog source is pinned or live, as the sandbox says it.
pub(crate) fn epoch_mode(m: SourceMode) -> EpochMode {
    match m {
        SourceMode::Pinned => EpochMode::Pinned,
        SourceMode::Live => EpochMode::Live,
    }
}

/// A path a catalog makes a run read, named as a message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPath {
    /// What it is: `tool "NAME"'s module`, `tool "NAME"'s mount /guest`.
    pub what: String,
    /// Where it is, read against the catalog's folder.
    pub path: PathBuf,
    /// A folder read whole (a mount): everything under it is read too.
    pub folder: bool,
}

/// Every module and mount root the catalog's tools read, each once: what no output of a
/// run may overwrite or lie inside.
pub fn catalog_reads(catalog: &Catalog, base_dir: &Path) -> Vec<ReadPath> {
    let mut out: Vec<ReadPath> = Vec::new();
    for t in catalog.tools() {
        if let Some(module) = &t.module {
            out.push(ReadPath {
                what: format!("tool {:?}'s module", t.name),
                path: base_dir.join(module),
                folder: false,
            });
        }
        for m in &t.mounts {
            out.push(ReadPath {
                what: format!("tool {:?}'s mount {}", t.name, m.guest),
                path: epoch_mount(m, base_dir).host,
                folder: true,
            });
        }
    }
    out.dedup_by(|a, b| a.path == b.path);
    out
}

/// A catalog mount as the sandbox serves it; its host path, written relative to the
/// catalog file, is read against `base_dir`, the catalog file's folder.
pub fn epoch_mount(m: &MountSpec, base_dir: &Path) -> EpochMount {
    EpochMount {
        host: base_dir.join(&m.host),
        guest: m.guest.clone(),
        mode: epoch_mode(m.mode),
    }
}

/// A catalog `network` as the sandbox enforces it.
pub(crate) fn network_policy(n: &NetworkSpec) -> NetworkPolicy {
    NetworkPolicy {
        mode: match n.mode {
            NetworkMode::Denied => plangate_sandbox::NetworkMode::Denied,
            NetworkMode::Live => plangate_sandbox::NetworkMode::Live,
            NetworkMode::Pinned => plangate_sandbox::NetworkMode::Pinned,
        },
        allow: n.allow.clone(),
        secret_headers: n.secret_headers.clone(),
        max_body_bytes: n
            .max_body_bytes
            .unwrap_or(plangate_sandbox::DEFAULT_MAX_BODY_BYTES),
    }
}

/// A catalog tool as the module or component the sandbox instantiates: `module`
/// (already resolved against `base_dir`), the function it calls, the tool's mounts, its
/// clock, its randomness and its network.
pub fn module_spec(t: &ToolSpec, module: &Path, base_dir: &Path) -> ModuleSpec {
    let mut spec = ModuleSpec::new(module)
        .clock(epoch_mode(t.clock))
        .random(epoch_mode(t.random))
        .network(network_policy(&t.network));
    if let Some(export) = &t.export {
        spec = spec.export(export.clone());
    }
    for m in &t.mounts {
        let mount = epoch_mount(m, base_dir);
        spec = spec.mount(mount.host, mount.guest);
    }
    spec
}
