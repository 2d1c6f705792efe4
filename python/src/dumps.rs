//! Python values to JSON text, as `json.dumps(v, ensure_ascii=False,
//! separators=(",", ":"))` writes them, walked in Rust: a task dict becomes the samples
//! line the CLI would read from a file `json.dumps` wrote, several times faster than
//! calling `json.dumps`. Anything it does not know (a subclass with its own encoding,
//! a non-string key) goes through `json.dumps` itself, so the text is always the same.
//! The one module of the workspace with `unsafe` code: the walk reads objects through
//! CPython's C API, borrowed (see [`write`]).
#![expect(
    unsafe_code,
    reason = "the walk holds the GIL per object; borrowed C-API reads cost a fraction of owned handles"
)]

use std::io::Write as _;

use plangate_gate::{jcs, json};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Nesting past which the walk hands over to `json.dumps` (which raises
/// `RecursionError` where Python would).
const MAX_DEPTH: usize = 200;

/// The walk met something only `json.dumps` knows how to write.
struct Fallback;

/// `obj` as one line of JSON text.
pub(crate) fn line(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(2048);
    line_into(py, obj, &mut out)?;
    Ok(out)
}

/// Appends `obj` as one line of JSON text to `out` (a chunk of samples lines).
pub(crate) fn line_into(py: Python<'_>, obj: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let start = out.len();
    // SAFETY: the GIL is held (`py`) for the whole walk, and the walk runs no Python
    // code (only exact built-in types are read, through calls that cannot call back),
    // so every borrowed reference it follows stays alive and unchanged while it reads.
    if unsafe { write(obj.as_ptr(), out, 0) }.is_ok() {
        return Ok(());
    }
    out.truncate(start);
    let json = py.import("json")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("separators", (",", ":"))?;
    let text = json.call_method("dumps", (obj,), Some(&kwargs))?;
    out.extend_from_slice(text.cast::<PyString>()?.to_str()?.as_bytes());
    Ok(())
}

/// A string as JSON. Most need no escape (keys, IDs, names): those are copied between
/// quotes here; the rest go through the gate's writer, the one that knows the escapes
/// (`json.dumps` with `ensure_ascii=False` escapes the same bytes, the same way).
fn write_str(s: &str, out: &mut Vec<u8>) {
    if json::plain_len(s.as_bytes()) == s.len() {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let mut escaped = String::with_capacity(s.len() + 8);
        jcs::write_string(s, &mut escaped);
        out.extend_from_slice(escaped.as_bytes());
    }
}

/// Writes one value. The walk is on raw pointers, borrowed, because it is the one
/// step of `plangate.score` over dicts that holds the GIL per object (hundreds of
/// objects a task): through PyO3's owned handles each object would cost a reference
/// count taken and dropped and a chain of type casts, several times the writing itself.
///
/// # Safety
/// `obj` is a live object and the GIL is held; see [`line`].
unsafe fn write(obj: *mut ffi::PyObject, out: &mut Vec<u8>, depth: usize) -> Result<(), Fallback> {
    if depth > MAX_DEPTH {
        return Err(Fallback);
    }
    unsafe {
        if ffi::PyUnicode_CheckExact(obj) != 0 {
            write_str(utf8(obj)?, out);
        } else if ffi::PyDict_CheckExact(obj) != 0 {
            out.push(b'{');
            let (mut pos, mut key, mut value) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            let mut first = true;
            while ffi::PyDict_Next(obj, &mut pos, &mut key, &mut value) != 0 {
                if !first {
                    out.push(b',');
                }
                first = false;
                if ffi::PyUnicode_CheckExact(key) == 0 {
                    return Err(Fallback);
                }
                write_str(utf8(key)?, out);
                out.push(b':');
                write(value, out, depth + 1)?;
            }
            out.push(b'}');
        } else if ffi::PyList_CheckExact(obj) != 0 {
            write_items(obj, out, depth, ffi::PyList_Size, ffi::PyList_GetItem)?;
        } else if obj == ffi::Py_None() {
            out.extend_from_slice(b"null");
        } else if obj == ffi::Py_True() {
            out.extend_from_slice(b"true");
        } else if obj == ffi::Py_False() {
            out.extend_from_slice(b"false");
        } else if ffi::PyLong_CheckExact(obj) != 0 {
            let mut overflow = 0;
            let n = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
            if overflow != 0 || (n == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                // Past 64 bits: int's own decimal form (a C call, no Python code).
                let text = ffi::PyObject_Str(obj);
                if text.is_null() {
                    ffi::PyErr_Clear();
                    return Err(Fallback);
                }
                let written = utf8(text).map(|s| out.extend_from_slice(s.as_bytes()));
                ffi::Py_DecRef(text);
                written?;
            } else {
                let _ = write!(out, "{n}");
            }
        } else if ffi::PyFloat_CheckExact(obj) != 0 {
            write_float(ffi::PyFloat_AsDouble(obj), out);
        } else if ffi::PyTuple_CheckExact(obj) != 0 {
            write_items(obj, out, depth, ffi::PyTuple_Size, ffi::PyTuple_GetItem)?;
        } else {
            return Err(Fallback);
        }
    }
    Ok(())
}

/// A list's or a tuple's items as a JSON array, read by `len` and `item` (borrowed).
///
/// # Safety
/// `obj` is a live object of the type `len` and `item` read, and the GIL is held.
unsafe fn write_items(
    obj: *mut ffi::PyObject,
    out: &mut Vec<u8>,
    depth: usize,
    len: unsafe extern "C" fn(*mut ffi::PyObject) -> ffi::Py_ssize_t,
    item: unsafe extern "C" fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject,
) -> Result<(), Fallback> {
    out.push(b'[');
    // The length is read again each round: nothing runs that could change it, but a
    // stale length must never index past the end.
    let mut i = 0;
    while i < unsafe { len(obj) } {
        if i > 0 {
            out.push(b',');
        }
        unsafe { write(item(obj, i), out, depth + 1)? };
        i += 1;
    }
    out.push(b']');
    Ok(())
}

/// An exact `str`'s UTF-8 text, borrowed from the string (CPython keeps it with the
/// object; for ASCII text it is the object's own data). A lone surrogate has no UTF-8
/// form: `json.dumps` is left to write it.
///
/// # Safety
/// `s` is a live exact `str` and the GIL is held.
unsafe fn utf8<'a>(s: *mut ffi::PyObject) -> Result<&'a str, Fallback> {
    let mut len: ffi::Py_ssize_t = 0;
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(s, &mut len) };
    if data.is_null() {
        unsafe { ffi::PyErr_Clear() };
        return Err(Fallback);
    }
    // SAFETY: CPython returns `len` bytes of valid UTF-8 that live as long as `s`.
    Ok(unsafe {
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(data.cast::<u8>(), len as usize))
    })
}

/// A float as Python's `repr` writes it (which `json.dumps` uses): the shortest digits
/// that read back the same, in positional form from 1e-4 up to 1e16 (with `.0` when
/// whole), else as `d.ddde±XX`.
fn write_float(x: f64, out: &mut Vec<u8>) {
    if x.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
        return;
    }
    if x < 0.0 {
        out.push(b'-');
    }
    // The shortest digits that read back the same, as ryu prints them in ECMAScript's
    // layout (`1.5`, `100`, `1e+21`, `1.5e-7`); Python's repr picks the same digits and
    // lays them out its own way below.
    let mut buf = ryu_js::Buffer::new();
    let text = buf.format_finite(x.abs()).as_bytes();
    let (mantissa, e) = match text.iter().position(|&b| b == b'e') {
        Some(at) => (
            &text[..at],
            std::str::from_utf8(&text[at + 1..])
                .ok()
                .and_then(|e| e.trim_start_matches('+').parse::<i32>().ok())
                .unwrap_or(0),
        ),
        None => (text, 0),
    };
    let int_len = mantissa
        .iter()
        .position(|&b| b == b'.')
        .unwrap_or(mantissa.len());
    let mut all = [0u8; 32];
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        all[n] = b;
        n += 1;
    }
    let lead = all[..n].iter().take_while(|&&b| b == b'0').count();
    let end = n - all[..n].iter().rev().take_while(|&&b| b == b'0').count();
    let digits = &all[lead..end.max(lead + 1)];
    let exp = int_len as i32 - 1 - lead as i32 + e;
    if !(-4..16).contains(&exp) {
        out.extend_from_slice(&digits[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let _ = write!(out, "{:02}", exp.unsigned_abs());
        return;
    }
    let point = exp + 1;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', point.unsigned_abs() as usize));
        out.extend_from_slice(digits);
    } else if point as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', point as usize - digits.len()));
        out.extend_from_slice(b".0");
    } else {
        let (int, frac) = digits.split_at(point as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    }
}
