//! The arguments `score` and `eval` share, read from Python values: the catalog (a
//! path, JSON text or a dict), the samples (a path or an iterable) and the thresholds,
//! named and checked as the CLI's flags are; and the warnings reading them gives.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use plangate_gate::stats::Ratio;
use plangate_gate::task::RunNotes;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use plangate_harness::{EvalOptions, LimitsGiven, WorldOptions};
use plangate_sandbox::EpochManifest;

use crate::{CatalogError, PlangateError, dumps};

/// The catalog as given, and the folder its relative module paths are read against
/// (a file's own folder; else the current one).
pub(crate) struct LoadedCatalog {
    pub(crate) catalog: Catalog,
    pub(crate) dir: PathBuf,
    /// How messages name it: its path, or `<string>`, `<bytes>`, `<dict>`.
    pub(crate) name: String,
}

/// Reads the catalog from a path, JSON text (a string starting with `{` or `[`), bytes,
/// or a dict or list. A catalog that cannot be used raises `CatalogError` with the
/// message `plangate` prints; its warnings become Python warnings.
pub(crate) fn catalog(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<LoadedCatalog> {
    let text: Option<(&str, Vec<u8>)> = if let Ok(s) = value.cast::<PyString>() {
        let s = s.to_str()?;
        let t = s.trim_start();
        (t.starts_with('{') || t.starts_with('[')).then(|| ("<string>", s.as_bytes().to_vec()))
    } else if let Ok(b) = value.cast::<PyBytes>() {
        Some(("<bytes>", b.as_bytes().to_vec()))
    } else if value.cast::<PyDict>().is_ok() || value.cast::<PyList>().is_ok() {
        Some(("<dict>", dumps::line(py, value)?))
    } else {
        None
    };
    let (catalog, dir, name) = match text {
        Some((name, bytes)) => (
            py.detach(|| plangate_harness::parse_catalog(name, &bytes)),
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            name.to_string(),
        ),
        None => {
            let path = path_of(value, "catalog")?;
            (
                py.detach(|| plangate_harness::read_catalog(&path)),
                plangate_harness::catalog_dir(&path),
                path.display().to_string(),
            )
        }
    };
    let catalog = catalog.map_err(|e| CatalogError::new_err(chain(&e)))?;
    for w in catalog.warnings() {
        warn(py, &format!("catalog {name}: {w}"))?;
    }
    Ok(LoadedCatalog { catalog, dir, name })
}

/// Says what reading a call's samples noted, once for the call (not once per line),
/// each worded as `plangate score` words it on stderr.
pub(crate) fn warn_notes(py: Python<'_>, call: &str, notes: &RunNotes) -> PyResult<()> {
    for w in notes.warnings() {
        warn(py, &format!("{call}: {w}"))?;
    }
    Ok(())
}

/// A Python `UserWarning`.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let message = std::ffi::CString::new(message).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &message,
        1,
    )
}
/// A path from a `str` or an `os.PathLike`.
pub(crate) fn path_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<PathBuf> {
    value.extract::<PathBuf>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a path, got {}",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// An error and its causes on one line, as `plangate` prints them (anyhow's `{:#}`).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// The thresholds as given (None: the CLI's default), as the gate's options. A ratio
/// may be a number or a string, read as `--arg-accept` reads it ("0.80").
pub(crate) struct Thresholds<'py> {
    pub(crate) arg_accept: Option<Bound<'py, PyAny>>,
    pub(crate) arg_reject: Option<Bound<'py, PyAny>>,
    pub(crate) result_accept: Option<Bound<'py, PyAny>>,
    pub(crate) result_suspect: Option<Bound<'py, PyAny>>,
    pub(crate) min_samples: Option<usize>,
}

impl Thresholds<'_> {
    pub(crate) fn options(&self) -> PyResult<Options> {
        let mut opts = Options::default();
        for (name, given, into) in [
            ("arg_accept", &self.arg_accept, &mut opts.arg_accept),
            ("arg_reject", &self.arg_reject, &mut opts.arg_reject),
            (
                "result_accept",
                &self.result_accept,
                &mut opts.result_accept,
            ),
            (
                "result_suspect",
                &self.result_suspect,
                &mut opts.result_suspect,
            ),
        ] {
            if let Some(v) = given {
                *into = ratio(name, v)?;
            }
        }
        if let Some(n) = self.min_samples {
            opts.min_samples = n;
        }
        opts.check()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(opts)
    }
}

fn ratio(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Ratio> {
    let text = v.str()?.to_string();
    Ratio::from_str(&text).map_err(|e| PyValueError::new_err(format!("{name}: {e}")))
}

/// Worker threads: as asked (1 to the harness's most), else one per core.
pub(crate) fn jobs(asked: Option<usize>) -> PyResult<usize> {
    plangate_harness::jobs(asked).map_err(|e| PyValueError::new_err(format!("jobs: {e}")))
}

/// Whether `value` names a file (a `str` or `os.PathLike`) rather than holding items.
pub(crate) fn is_path(value: &Bound<'_, PyAny>) -> bool {
    value.cast::<PyString>().is_ok() || value.hasattr("__fspath__").unwrap_or(false)
}

/// Opens a samples file.
pub(crate) fn open_samples(path: &Path) -> PyResult<std::io::BufReader<std::fs::File>> {
    let f = std::fs::File::open(path).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!(
            "failed to open samples {}: {e}",
            path.display()
        ))
    })?;
    Ok(std::io::BufReader::with_capacity(1 << 16, f))
}

/// The keywords every call that executes tools shares (`plangate.eval`, `plangate.Gate`),
/// as the CLI's `eval` flags are: where the catalog's paths are read from, the epoch to
/// replay, an earlier quarantine, the seed, probes, jobs, thresholds and limits.
pub(crate) struct RunArgs<'a, 'py> {
    pub(crate) base_dir: Option<&'a Bound<'py, PyAny>>,
    pub(crate) epoch: Option<&'a Bound<'py, PyAny>>,
    pub(crate) quarantine: Option<&'a Bound<'py, PyAny>>,
    pub(crate) seed: u64,
    pub(crate) probe_runs: usize,
    pub(crate) jobs: Option<usize>,
    pub(crate) thresholds: Thresholds<'py>,
    pub(crate) limits: LimitsGiven,
}

/// [`RunArgs`] read and checked.
pub(crate) struct Settled {
    /// The folder the catalog's module and mount paths are read against.
    pub(crate) base: PathBuf,
    /// The epoch to replay, if any.
    pub(crate) manifest: Option<EpochManifest>,
    pub(crate) world: WorldOptions,
    pub(crate) eval: EvalOptions,
}

impl RunArgs<'_, '_> {
    /// Reads and checks every keyword, as the CLI reads its flags.
    pub(crate) fn settle(self, py: Python<'_>, loaded: &LoadedCatalog) -> PyResult<Settled> {
        let decide = self.thresholds.options()?;
        let limits = self
            .limits
            .limits()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let base = match self.base_dir {
            Some(d) => path_of(d, "base_dir")?,
            None => loaded.dir.clone(),
        };
        let manifest = self.epoch.map(|e| manifest_of(py, e)).transpose()?;
        let quarantine = match self.quarantine {
            Some(q) => {
                let path = path_of(q, "quarantine")?;
                Some(
                    plangate_harness::read_quarantine(&path)
                        .map_err(|e| PlangateError::new_err(chain(&e)))?,
                )
            }
            None => None,
        };
        let mut eval = EvalOptions {
            probe_runs: self.probe_runs,
            decide,
            quarantine,
            ..EvalOptions::default()
        };
        if let Some(j) = self.jobs {
            eval.jobs = jobs(Some(j))?;
        }
        let world = WorldOptions {
            random_seed: self.seed,
            limits,
            ..WorldOptions::default()
        };
        Ok(Settled {
            base,
            manifest,
            world,
            eval,
        })
    }
}

/// An epoch manifest from a dict, JSON text or a file (what `--write-epoch` wrote).
fn manifest_of(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<EpochManifest> {
    let (name, bytes) = if value.cast::<pyo3::types::PyDict>().is_ok() {
        ("<dict>".to_string(), dumps::line(py, value)?)
    } else {
        let path: PathBuf = path_of(value, "epoch")?;
        let bytes = std::fs::read(&path).map_err(|e| {
            PlangateError::new_err(format!(
                "failed to read epoch manifest {}: {e}",
                path.display()
            ))
        })?;
        (path.display().to_string(), bytes)
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| PlangateError::new_err(format!("failed to parse epoch manifest {name}: {e}")))
}
