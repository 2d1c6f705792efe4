//! Small builders shared by the test modules.

use std::path::Path;

use plangate_sandbox::{Epoch, ModuleSpec, Sandbox, SandboxConfig, Tool};

use crate::guests::guest;

/// A sandbox whose epoch knows `names` (guests) and has no mounts, and their tools.
pub(crate) fn sandbox_with(names: &[&str]) -> (Sandbox, Vec<Tool>) {
    sandbox_configured(test_config(), names)
}

/// [`sandbox_with`] under `config` (its own module cache, say).
pub(crate) fn sandbox_configured(config: SandboxConfig, names: &[&str]) -> (Sandbox, Vec<Tool>) {
    let mut b = Epoch::builder().random_seed(7);
    for n in names {
        b = b.module(guest(n));
    }
    let sandbox = Sandbox::new(config, b.build().expect("epoch")).expect("sandbox");
    let tools = names
        .iter()
        .map(|n| {
            sandbox
                .load_tool(&ModuleSpec::new(guest(n)))
                .expect("load tool")
        })
        .collect();
    (sandbox, tools)
}

/// The default config with the module cache in the shared target directory, so test
/// runs compile each guest once across runs (the cache key keeps it honest).
pub(crate) fn test_config() -> SandboxConfig {
    SandboxConfig {
        cache_dir: Some(crate::guests::repo_root().join("target/plangate-module-cache")),
        ..SandboxConfig::default()
    }
}

/// Writes `bytes` to `path`, making parent directories.
pub(crate) fn write(path: &Path, bytes: &[u8]) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}
