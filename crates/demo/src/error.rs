//! Why a demo could not run, each error naming the file or step it failed at, so the
//! command line can say it in one line without the library printing anything.

use std::io;
use std::path::PathBuf;

use plangate_gate::catalog::CatalogErrors;
use plangate_gate::json::JsonError;
use plangate_harness::HarnessError;

/// A demo that could not run (or could not be summed up).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The world folder has no catalog.
    #[error(
        "{} is not a seed-world folder (no catalog.json); run from the repository root or pass --world",
        .0.display()
    )]
    NotAWorld(PathBuf),
    /// The world's data lacks what the generator draws from.
    #[error(
        "{} does not look like the seed world (users, orders, products, rates, files)",
        .0.display()
    )]
    NotTheSeedWorld(PathBuf),
    /// A world file that could not be read.
    #[error("failed to read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A data file that is not JSON.
    #[error("failed to parse {}", path.display())]
    Data {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The world's catalog is not JSON.
    #[error("failed to parse {}", path.display())]
    CatalogJson {
        /// The catalog.
        path: PathBuf,
        /// Why.
        #[source]
        source: JsonError,
    },
    /// The world's catalog is JSON but not the shape the private copy is made from.
    #[error("{}: {problem}", path.display())]
    CatalogShape {
        /// The catalog.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The world's catalog, pointed at the private live state, is not a valid catalog.
    #[error("invalid catalog {}", path.display())]
    Catalog {
        /// The catalog.
        path: PathBuf,
        /// Every problem in it.
        #[source]
        source: CatalogErrors,
    },
    /// A folder that could not be listed.
    #[error("failed to list {}", path.display())]
    List {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A folder of the private live state that could not be made.
    #[error("failed to create {}", path.display())]
    Create {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A live-state file that could not be copied.
    #[error("failed to copy {}", path.display())]
    Copy {
        /// The file copied from.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// No scratch folder for the private live state.
    #[error("failed to make a scratch folder")]
    Scratch(#[source] io::Error),
    /// The epoch could not be pinned, most often because the tools were never built.
    #[error("failed to pin the epoch (did scripts/build-tools run?)")]
    Pin(#[source] HarnessError),
    /// The run itself failed.
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// A reason code or evidence that did not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Any other I/O on the world folder or the private live state.
    #[error(transparent)]
    Io(#[from] io::Error),
}
