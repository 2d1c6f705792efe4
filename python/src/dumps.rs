//! Python values to JSON text, as `json.dumps(v, ensure_ascii=False,
//! separators=(",", ":"))` writes them, walked in Rust: a task dict becomes the samples
//! line the CLI would read from a file `json.dumps` wrote, several times faster than
//! calling `json.dumps`. Anything it does not know (a subclass with its own encoding,
//! a non-string key) goes through `json.dumps` itself, so the text is always the same.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting past which the walk hands over to `json.dumps` (which raises
/// `RecursionError` where Python would).
const MAX_DEPTH: usize = 200;

/// The walk met something only `json.dumps` knows how to write.
struct Fallback;

/// `obj` as one line of JSON text.
pub(crate) fn line(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(1024);
    if write(obj, &mut out, 0).is_ok() {
        return Ok(out);
    }
    let json = py.import("json")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("separators", (",", ":"))?;
    let text = json.call_method("dumps", (obj,), Some(&kwargs))?;
    Ok(text.cast::<PyString>()?.to_str()?.as_bytes().to_vec())
}

fn write(obj: &Bound<'_, PyAny>, out: &mut Vec<u8>, depth: usize) -> Result<(), Fallback> {
    if depth > MAX_DEPTH {
        return Err(Fallback);
    }
    if let Ok(s) = obj.cast_exact::<PyString>() {
        write_str(s.to_str().map_err(|_| Fallback)?, out);
    } else if let Ok(d) = obj.cast_exact::<PyDict>() {
        out.push(b'{');
        for (i, (k, v)) in d.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let k = k.cast_exact::<PyString>().map_err(|_| Fallback)?;
            write_str(k.to_str().map_err(|_| Fallback)?, out);
            out.push(b':');
            write(&v, out, depth + 1)?;
        }
        out.push(b'}');
    } else if let Ok(l) = obj.cast_exact::<PyList>() {
        write_seq(l.iter(), out, depth)?;
    } else if obj.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = obj.cast_exact::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if let Ok(i) = obj.cast_exact::<PyInt>() {
        match i.extract::<i64>() {
            Ok(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Err(_) => out.extend_from_slice(
                i.str()
                    .map_err(|_| Fallback)?
                    .to_str()
                    .map_err(|_| Fallback)?
                    .as_bytes(),
            ),
        }
    } else if let Ok(f) = obj.cast_exact::<PyFloat>() {
        write_float(f.value(), out);
    } else if let Ok(t) = obj.cast_exact::<PyTuple>() {
        write_seq(t.iter(), out, depth)?;
    } else {
        return Err(Fallback);
    }
    Ok(())
}

fn write_seq<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Fallback> {
    out.push(b'[');
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(&v, out, depth + 1)?;
    }
    out.push(b']');
    Ok(())
}

/// A string as `json.dumps(..., ensure_ascii=False)` quotes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
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
    // Rust's `{:e}` gives the same shortest round-trip digits: `-1.25e-7`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.extend_from_slice(sign.as_bytes());
    if !(-4..16).contains(&exp) {
        out.extend_from_slice(&digits.as_bytes()[..1]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        let e_sign = if exp < 0 { '-' } else { '+' };
        out.extend_from_slice(format!("e{e_sign}{:02}", exp.abs()).as_bytes());
        return;
    }
    let point = exp + 1;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', point.unsigned_abs() as usize));
        out.extend_from_slice(digits.as_bytes());
    } else if point as usize >= digits.len() {
        out.extend_from_slice(digits.as_bytes());
        out.extend(std::iter::repeat_n(b'0', point as usize - digits.len()));
        out.extend_from_slice(b".0");
    } else {
        let (int, frac) = digits.split_at(point as usize);
        out.extend_from_slice(int.as_bytes());
        out.push(b'.');
        out.extend_from_slice(frac.as_bytes());
    }
}
