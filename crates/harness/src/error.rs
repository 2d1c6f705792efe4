//! Why a run could not start: setup failures only. Every tool call, failing or not, is
//! an outcome and every task gets a verdict; neither is ever an error here.

use std::path::PathBuf;

/// A run that could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A catalog tool names no module, so it cannot be executed.
    #[error("tool {tool:?} has no `module`: eval and probe execute every catalog tool")]
    NoModule {
        /// The tool.
        tool: String,
    },
    /// A catalog tool's module file is not there (not built yet, or a wrong path).
    #[error(
        "tools[{index}].module: {path} does not exist (tool {tool:?}; build it first, e.g. scripts/build-tools)"
    )]
    ModuleMissing {
        /// The tool's position in the catalog.
        index: usize,
        /// The tool.
        tool: String,
        /// The module path, resolved against the catalog's folder.
        path: PathBuf,
    },
    /// Two tools mount different folders (or modes) at one guest path; an epoch has one
    /// mount per guest path.
    #[error(
        "tools {first:?} and {second:?} both mount {guest}, from different folders or modes: \
         give each folder its own guest path"
    )]
    MountConflict {
        /// The guest path.
        guest: String,
        /// A tool that mounts it one way.
        first: String,
        /// A tool that mounts it another way.
        second: String,
    },
    /// A replayed manifest and the catalog disagree on mounts.
    #[error("the epoch manifest does not fit the catalog: {0}")]
    ManifestMismatch(String),
    /// The sandbox refused to build the epoch or the engine.
    #[error(transparent)]
    Sandbox(#[from] plangate_sandbox::Error),
    /// A tool's module could not be loaded into the epoch.
    #[error("tool {tool:?}: {source}")]
    LoadTool {
        /// The tool.
        tool: String,
        /// Why.
        source: plangate_sandbox::Error,
    },
    /// A quarantine file could not be used.
    #[error("quarantine file {path}: {message}")]
    Quarantine {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A component's WIT sources could not be read.
    #[error("WIT {path}: {message}")]
    Wit {
        /// The WIT file or folder.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A Wassette `policy.yaml` could not be read.
    #[error("policy {path}: {message}")]
    Policy {
        /// The policy file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A run's journal (for `--resume`) could not be read or written.
    #[error("journal {path}: {message}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// Another run holds the journal: it writes the same `--out`.
    #[error(
        "journal {path}: another plangate run is writing the same --out (it holds this journal); wait for it, or write elsewhere"
    )]
    JournalBusy {
        /// The journal file.
        path: PathBuf,
    },
    /// Phase one's results could not be kept on disk, or read back.
    #[error("{path}: {message}")]
    Spill {
        /// The file, or the temporary folder for the run's own spill.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A shard's evidence (or the run's spill) holds an entry that cannot be read.
    #[error("{path}: entry {entry}: {message}")]
    Evidence {
        /// The file.
        path: PathBuf,
        /// The entry, counting from 1.
        entry: usize,
        /// Why.
        message: String,
    },
    /// A shard's evidence, or a set of shards, that merge cannot take (the message
    /// names the file and what is wrong).
    #[error("{0}")]
    Shard(String),
    /// An interrupt stopped the defer path before a round was decided.
    #[error("interrupted during the defer path")]
    Interrupted,
    /// The defer path could not read the deferred tasks again.
    #[error("cannot retry the deferred tasks: {0}")]
    Retry(String),
}
