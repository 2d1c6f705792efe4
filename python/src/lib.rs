//! `plangate._plangate`, the native half of the `plangate` Python package: the gate's
//! `score` over an iterator of records, the harness's whole `eval` run, and a warm
//! `Gate` deciding task after task in one epoch, called in-process. The public names, docstrings and stubs are in `python/plangate/`.

use mimalloc::MiMalloc;
use pyo3::prelude::*;

mod args;
mod dumps;
mod eval;
mod gate;
mod pickled;
mod samples;
mod score;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

pyo3::create_exception!(
    _plangate,
    PlangateError,
    pyo3::exceptions::PyException,
    "A run could not start: the message is the one `plangate` prints."
);
pyo3::create_exception!(
    _plangate,
    CatalogError,
    PlangateError,
    "The catalog could not be read, parsed or accepted."
);

/// The compact JSON text of `obj`, as `json.dumps(obj, ensure_ascii=False,
/// separators=(",", ":"))` writes it: how task dicts become samples lines.
#[pyfunction]
#[pyo3(name = "dumps")]
fn dumps_text(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let bytes = dumps::line(py, obj)?;
    String::from_utf8(bytes).map_err(|e| PlangateError::new_err(e.to_string()))
}

/// Decision records given as JSON texts, read back the way `score` reads its workers'
/// records (pickled, or by `json.loads` when pickling refuses): for tests that hold
/// that path equal to `json.loads` on values no generated task reaches.
#[pyfunction]
#[pyo3(name = "_load_records")]
fn load_records<'py>(py: Python<'py>, texts: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
    let loads = pickled::Loads::new(py)?;
    let mut records = pickled::Pickler::new(texts.len());
    for text in &texts {
        records.push(&pickled::JsonText(text));
    }
    Ok(records.finish().load(py, &loads)?.into_any())
}

#[pymodule]
fn _plangate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PlangateError", m.py().get_type::<PlangateError>())?;
    m.add("CatalogError", m.py().get_type::<CatalogError>())?;
    m.add_class::<score::Scores>()?;
    m.add_class::<gate::Gate>()?;
    m.add_function(wrap_pyfunction!(dumps_text, m)?)?;
    m.add_function(wrap_pyfunction!(load_records, m)?)?;
    m.add_function(wrap_pyfunction!(eval::eval, m)?)?;
    Ok(())
}
