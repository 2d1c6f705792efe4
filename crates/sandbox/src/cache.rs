//! The on-disk cache of precompiled modules. Compiling a 100 KiB guest takes ~100 ms and
//! loading its artifact ~0.1 ms, so a run compiles each module once, ever, per engine
//! configuration. The key names everything that makes an artifact loadable: the module
//! bytes, the wasmtime release, and the engine's compatibility hash.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, Module};

use crate::epoch::{WASMTIME_VERSION, hex};
use crate::error::{Error, Result, io};

/// Feeds `Hash` output into SHA-256, so the key is the same in every process (std's
/// `DefaultHasher` promises no stability across releases).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let d = self.0.clone().finalize();
        u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// The engine's compile-compatibility hash, hex.
pub(crate) fn engine_hash(engine: &Engine) -> String {
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finalize()[..16])
}

pub(crate) fn artifact_path(dir: &Path, engine: &Engine, sha256: &str) -> PathBuf {
    dir.join(format!(
        "{sha256}-wasmtime{WASMTIME_VERSION}-{}.cwasm",
        engine_hash(engine)
    ))
}

/// Loads the module's artifact if this cache made one, else compiles and stores it.
pub(crate) fn load_or_compile(
    engine: &Engine,
    cache_dir: Option<&Path>,
    path: &Path,
    sha256: &str,
    bytes: &[u8],
) -> Result<Module> {
    let Some(dir) = cache_dir else {
        return compile(engine, path, bytes);
    };
    let artifact = artifact_path(dir, engine, sha256);
    // A truncated or foreign file fails to load: compile again and replace it below.
    if artifact.is_file()
        && let Ok(m) = deserialize(engine, &artifact)
    {
        return Ok(m);
    }
    let module = compile(engine, path, bytes)?;
    let serialized = module.serialize().map_err(|e| Error::Compile {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })?;
    std::fs::create_dir_all(dir).map_err(io("create module cache directory", dir))?;
    // Write then rename, so a concurrent reader sees a whole artifact or none.
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(io("create a temp file in", dir))?;
    std::fs::write(tmp.path(), &serialized).map_err(io("write module artifact", tmp.path()))?;
    tmp.persist(&artifact)
        .map_err(|e| e.error)
        .map_err(io("store module artifact", &artifact))?;
    Ok(module)
}

fn compile(engine: &Engine, path: &Path, bytes: &[u8]) -> Result<Module> {
    Module::new(engine, bytes).map_err(|e| Error::Compile {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })
}

#[expect(
    unsafe_code,
    reason = "deserializing runs native code from the file; only artifacts this cache wrote, under a key that pins the module bytes, wasmtime release and engine config, are loaded"
)]
fn deserialize(engine: &Engine, artifact: &Path) -> wasmtime::Result<Module> {
    // SAFETY: the file is one `load_or_compile` wrote (atomically, via rename) into the
    // harness's own cache directory, named by the module sha256, the wasmtime version
    // and the engine's compatibility hash; wasmtime also checks the header and refuses
    // an artifact from another engine configuration.
    unsafe { Module::deserialize_file(engine, artifact) }
}
