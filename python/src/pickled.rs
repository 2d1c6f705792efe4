//! A chunk of decision records as pickle bytes, written by a worker off the GIL, so that
//! the one step holding the GIL is `pickle.loads`, which builds the same dicts about
//! twice as fast as `json.loads` reads their text (docs/benchmarks.md, the Python
//! section). Pickle protocol 4 is documented and every later Python reads it; only
//! plain data opcodes are written (no globals, nothing to call), and a short string
//! seen before in the chunk (every key, most verdicts and reasons) is one memo
//! reference, so the records share those `str` objects as `json.loads` shares keys.

use plangate_gate::json::{self, Duplicates, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use rustc_hash::FxHashMap;

const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const MARK: u8 = b'(';
const EMPTY_DICT: u8 = b'}';
const SETITEMS: u8 = b'u';
const EMPTY_LIST: u8 = b']';
const APPENDS: u8 = b'e';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const MEMOIZE: u8 = 0x94;
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';

/// Strings up to this many bytes go in the memo: keys, verdicts, reason codes, tool
/// names repeat from record to record; longer text rarely does.
const MEMO_MAX_LEN: usize = 40;

/// One chunk's records as a worker hands them over.
pub(crate) enum Encoded {
    /// One pickled list of the records.
    Pickle(Vec<u8>),
    /// A JSON array of the records, for a chunk with a record only `json.loads` reads
    /// as Python would: a lone surrogate escape, nesting past the gate's reader, an
    /// integer past 128 bits.
    Json(String),
}

impl Encoded {
    /// The records of one chunk, given as the JSON texts `plangate score` writes.
    pub(crate) fn of(texts: &[String]) -> Encoded {
        match pickled(texts) {
            Some(bytes) => Encoded::Pickle(bytes),
            None => Encoded::Json(format!("[{}]", texts.join(","))),
        }
    }

    /// The records as a list of dicts, equal to `json.loads` of their texts.
    pub(crate) fn load<'py>(self, py: Python<'py>, with: &Loads) -> PyResult<Bound<'py, PyList>> {
        let list = match self {
            Encoded::Pickle(bytes) => with.pickle.bind(py).call1((PyBytes::new(py, &bytes),))?,
            Encoded::Json(text) => with.json.bind(py).call1((text,))?,
        };
        Ok(list.cast_into::<PyList>()?)
    }
}

/// `pickle.loads` and `json.loads`, looked up once per run.
pub(crate) struct Loads {
    pickle: Py<PyAny>,
    json: Py<PyAny>,
}

impl Loads {
    pub(crate) fn new(py: Python<'_>) -> PyResult<Loads> {
        Ok(Loads {
            pickle: py.import("pickle")?.getattr("loads")?.unbind(),
            json: py.import("json")?.getattr("loads")?.unbind(),
        })
    }
}

fn pickled(texts: &[String]) -> Option<Vec<u8>> {
    let values = texts
        .iter()
        .map(|text| json::parse_str_with(text, Duplicates::LastWins).ok())
        .collect::<Option<Vec<Value>>>()?;
    let mut w = Writer {
        out: Vec::with_capacity(texts.iter().map(String::len).sum::<usize>() + 16),
        memo: FxHashMap::default(),
    };
    w.out.extend_from_slice(&[PROTO, 4, EMPTY_LIST, MARK]);
    for value in &values {
        w.value(value)?;
    }
    w.out.extend_from_slice(&[APPENDS, STOP]);
    Some(w.out)
}

struct Writer<'v> {
    out: Vec<u8>,
    /// Short strings already written, by their memo index.
    memo: FxHashMap<&'v str, u32>,
}

impl<'v> Writer<'v> {
    fn value(&mut self, v: &'v Value) -> Option<()> {
        match v {
            Value::Null => self.out.push(NONE),
            Value::Bool(b) => self.out.push(if *b { NEWTRUE } else { NEWFALSE }),
            // `json.loads` gives a float for a lexeme with a fraction or exponent, and
            // Python's float parsing rounds correctly, as Rust's does.
            Value::Number(n) if n.written_as_float() => {
                self.out.push(BINFLOAT);
                self.out.extend_from_slice(&n.as_f64().to_be_bytes());
            }
            Value::Number(n) => self.int(n.lexeme().parse::<i128>().ok()?),
            Value::String(s) => self.string(s)?,
            Value::Array(items) => {
                self.out.push(EMPTY_LIST);
                if !items.is_empty() {
                    self.out.push(MARK);
                    for item in items {
                        self.value(item)?;
                    }
                    self.out.push(APPENDS);
                }
            }
            Value::Object(members) => {
                self.out.push(EMPTY_DICT);
                if !members.is_empty() {
                    self.out.push(MARK);
                    for (key, item) in members.iter() {
                        self.string(key)?;
                        self.value(item)?;
                    }
                    self.out.push(SETITEMS);
                }
            }
        }
        Some(())
    }

    fn int(&mut self, i: i128) {
        if let Ok(small) = i32::try_from(i) {
            self.out.push(BININT);
            self.out.extend_from_slice(&small.to_le_bytes());
            return;
        }
        // Two's complement, little-endian, in as few bytes as keep the sign.
        let bytes = i.to_le_bytes();
        let mut len = bytes.len();
        while len > 1 {
            let (top, next) = (bytes[len - 1], bytes[len - 2]);
            let redundant = (top == 0x00 && next & 0x80 == 0) || (top == 0xff && next & 0x80 != 0);
            if !redundant {
                break;
            }
            len -= 1;
        }
        self.out.push(LONG1);
        self.out.push(len as u8);
        self.out.extend_from_slice(&bytes[..len]);
    }

    fn string(&mut self, s: &'v str) -> Option<()> {
        if let Some(&at) = self.memo.get(s) {
            match u8::try_from(at) {
                Ok(at) => self.out.extend_from_slice(&[BINGET, at]),
                Err(_) => {
                    self.out.push(LONG_BINGET);
                    self.out.extend_from_slice(&at.to_le_bytes());
                }
            }
            return Some(());
        }
        match u8::try_from(s.len()) {
            Ok(len) => self.out.extend_from_slice(&[SHORT_BINUNICODE, len]),
            Err(_) => {
                self.out.push(BINUNICODE);
                self.out
                    .extend_from_slice(&u32::try_from(s.len()).ok()?.to_le_bytes());
            }
        }
        self.out.extend_from_slice(s.as_bytes());
        if s.len() <= MEMO_MAX_LEN {
            let at = u32::try_from(self.memo.len()).ok()?;
            self.memo.insert(s, at);
            self.out.push(MEMOIZE);
        }
        Some(())
    }
}
