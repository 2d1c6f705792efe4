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

use plangate_gate::jcs;
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
    let mut out = String::with_capacity(1024);
    // SAFETY: the GIL is held (`py`) for the whole walk, and the walk runs no Python
    // code (only exact built-in types are read, through calls that cannot call back),
    // so every borrowed reference it follows stays alive and unchanged while it reads.
    if unsafe { write(obj.as_ptr(), &mut out, 0) }.is_ok() {
        return Ok(out.into_bytes());
    }
    let json = py.import("json")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("separators", (",", ":"))?;
    let text = json.call_method("dumps", (obj,), Some(&kwargs))?;
    Ok(text.cast::<PyString>()?.to_str()?.as_bytes().to_vec())
}

/// Writes one value. The walk is on raw pointers, borrowed, because it is the one
/// step of `plangate.score` over dicts that holds the GIL per object (about 220
/// objects a task): through PyO3's owned handles each object cost a reference count
/// taken and dropped and a chain of type casts, several times the writing itself.
///
/// # Safety
/// `obj` is a live object and the GIL is held; see [`line`].
unsafe fn write(obj: *mut ffi::PyObject, out: &mut String, depth: usize) -> Result<(), Fallback> {
    if depth > MAX_DEPTH {
        return Err(Fallback);
    }
    unsafe {
        if ffi::PyUnicode_CheckExact(obj) != 0 {
            jcs::write_string(utf8(obj)?, out);
        } else if ffi::PyDict_CheckExact(obj) != 0 {
            out.push('{');
            let (mut pos, mut key, mut value) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            let mut first = true;
            while ffi::PyDict_Next(obj, &mut pos, &mut key, &mut value) != 0 {
                if !first {
                    out.push(',');
                }
                first = false;
                if ffi::PyUnicode_CheckExact(key) == 0 {
                    return Err(Fallback);
                }
                jcs::write_string(utf8(key)?, out);
                out.push(':');
                write(value, out, depth + 1)?;
            }
            out.push('}');
        } else if ffi::PyList_CheckExact(obj) != 0 {
            out.push('[');
            // The length is read again each round: nothing runs that could change it,
            // but a stale length must never index past the end.
            let mut i = 0;
            while i < ffi::PyList_Size(obj) {
                if i > 0 {
                    out.push(',');
                }
                write(ffi::PyList_GetItem(obj, i), out, depth + 1)?;
                i += 1;
            }
            out.push(']');
        } else if obj == ffi::Py_None() {
            out.push_str("null");
        } else if obj == ffi::Py_True() {
            out.push_str("true");
        } else if obj == ffi::Py_False() {
            out.push_str("false");
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
                let written = utf8(text).map(|s| out.push_str(s));
                ffi::Py_DecRef(text);
                written?;
            } else {
                let _ = std::fmt::Write::write_fmt(out, format_args!("{n}"));
            }
        } else if ffi::PyFloat_CheckExact(obj) != 0 {
            write_float(ffi::PyFloat_AsDouble(obj), out);
        } else if ffi::PyTuple_CheckExact(obj) != 0 {
            out.push('[');
            let mut i = 0;
            while i < ffi::PyTuple_Size(obj) {
                if i > 0 {
                    out.push(',');
                }
                write(ffi::PyTuple_GetItem(obj, i), out, depth + 1)?;
                i += 1;
            }
            out.push(']');
        } else {
            return Err(Fallback);
        }
    }
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
fn write_float(x: f64, out: &mut String) {
    use std::io::Write as _;
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: `-1.25e-7`. At most 17
    // digits, a sign, a point and `e-324`: 32 bytes hold it.
    let mut buf = [0u8; 32];
    let len = {
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        // A float's `{:e}` always fits, so this cannot fail.
        let _ = write!(cursor, "{x:e}");
        cursor.position() as usize
    };
    let sci = &buf[..len];
    let e_at = sci.iter().position(|&b| b == b'e').unwrap_or(len);
    let exp: i32 = std::str::from_utf8(&sci[(e_at + 1).min(len)..])
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let mantissa = &sci[..e_at];
    let mantissa = match mantissa.strip_prefix(b"-") {
        Some(m) => {
            out.push('-');
            m
        }
        None => mantissa,
    };
    let mut digits = [0u8; 20];
    let mut n = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        digits[n] = b;
        n += 1;
    }
    let digits = std::str::from_utf8(&digits[..n]).unwrap_or("0");
    if !(-4..16).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        let _ = std::fmt::Write::write_fmt(out, format_args!("{e}"));
        return;
    }
    let point = exp + 1;
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(digits);
    } else if point as usize >= digits.len() {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
        out.push_str(".0");
    } else {
        let (int, frac) = digits.split_at(point as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}
