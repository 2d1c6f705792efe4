//! A chunk of records as pickle bytes, written by a worker off the GIL, so that the one
//! step holding the GIL is `pickle.loads`, which builds the same dicts faster than
//! `json.loads` reads their text (docs/benchmarks.md, "The Python package"). The pickle
//! is a [`Sink`] of the records' one declaration (`plangate_gate::record`), so a dict
//! holds what the CLI's line holds, field for field. Pickle protocol 4 is documented and
//! every later Python reads it; only plain data opcodes are written (no globals,
//! nothing to call), and a short string seen before in the chunk (every key, most
//! verdicts and reasons) is one memo reference, so the records share those `str`
//! objects as `json.loads` shares keys.

use plangate_gate::json::{self, Duplicates, Value};
use plangate_gate::record::{Record, Sink};
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

/// One chunk's records as a worker hands them over: one pickled list, in which a record
/// a pickle cannot carry as `json.loads` would read it (canonical arguments holding an
/// integer past 128 bits) is `None`, its JSON text beside the list.
pub(crate) struct Encoded {
    pickle: Vec<u8>,
    /// (index in the list, the record's JSON text).
    texts: Vec<(usize, String)>,
}

/// A record given as its JSON text: pickled as the value it is.
pub(crate) struct JsonText<'a>(pub(crate) &'a str);

impl Record for JsonText<'_> {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.json(self.0);
    }
}

/// Pickles a chunk's records, one after another.
pub(crate) struct Pickler {
    w: Writer,
    count: usize,
    texts: Vec<(usize, String)>,
}

impl Pickler {
    /// An empty chunk, with room for about `records` records.
    pub(crate) fn new(records: usize) -> Pickler {
        let mut w = Writer {
            out: Vec::with_capacity(records * 1024 + 16),
            memo: FxHashMap::default(),
            failed: false,
        };
        w.out.extend_from_slice(&[PROTO, 4, EMPTY_LIST, MARK]);
        Pickler {
            w,
            count: 0,
            texts: Vec::new(),
        }
    }

    /// Adds `record`: pickled, or, when the pickle cannot carry it, its JSON text.
    pub(crate) fn push<R: Record + ?Sized>(&mut self, record: &R) {
        let (start, memo) = (self.w.out.len(), self.w.memo.len());
        record.emit(&mut self.w);
        if std::mem::take(&mut self.w.failed) {
            // Taken back whole, its memo entries too: the loader numbers them as it
            // meets them.
            self.w.out.truncate(start);
            let memo = u32::try_from(memo).unwrap_or(u32::MAX);
            self.w.memo.retain(|_, at| *at < memo);
            self.w.out.push(NONE);
            self.texts
                .push((self.count, plangate_gate::record::json(record)));
        }
        self.count += 1;
    }

    /// The chunk, ready to be loaded.
    pub(crate) fn finish(mut self) -> Encoded {
        self.w.out.extend_from_slice(&[APPENDS, STOP]);
        Encoded {
            pickle: self.w.out,
            texts: self.texts,
        }
    }
}

impl Encoded {
    /// The records as a list of dicts, equal to `json.loads` of their texts.
    pub(crate) fn load<'py>(self, py: Python<'py>, with: &Loads) -> PyResult<Bound<'py, PyList>> {
        let list = with
            .pickle
            .bind(py)
            .call1((PyBytes::new(py, &self.pickle),))?
            .cast_into::<PyList>()?;
        for (at, text) in self.texts {
            list.set_item(at, with.json.bind(py).call1((text,))?)?;
        }
        Ok(list)
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

struct Writer {
    out: Vec<u8>,
    /// Short strings already written, by their memo index.
    memo: FxHashMap<Box<str>, u32>,
    /// The record being written holds what the pickle cannot carry.
    failed: bool,
}

impl Sink for Writer {
    fn object(&mut self) {
        self.out.extend_from_slice(&[EMPTY_DICT, MARK]);
    }

    fn end_object(&mut self) {
        self.out.push(SETITEMS);
    }

    fn list(&mut self) {
        self.out.extend_from_slice(&[EMPTY_LIST, MARK]);
    }

    fn end_list(&mut self) {
        self.out.push(APPENDS);
    }

    fn key(&mut self, key: &'static str) {
        self.str(key);
    }

    fn str(&mut self, s: &str) {
        if self.string(s).is_none() {
            self.failed = true;
        }
    }

    fn usize(&mut self, n: usize) {
        match i128::try_from(n) {
            Ok(n) => self.int(n),
            Err(_) => self.failed = true,
        }
    }

    /// A float as `json.loads` reads what the JSON sink writes: the same double (its
    /// shortest form reads back exactly), `None` for the `null` of one not finite.
    fn f64(&mut self, f: f64) {
        if f.is_finite() {
            self.double(f);
        } else {
            self.out.push(NONE);
        }
    }

    fn null(&mut self) {
        self.out.push(NONE);
    }

    fn json(&mut self, text: &str) {
        match json::parse_str_with(text, Duplicates::LastWins) {
            Ok(v) => {
                if self.value(&v).is_none() {
                    self.failed = true;
                }
            }
            Err(_) => self.failed = true,
        }
    }
}

impl Writer {
    fn value(&mut self, v: &Value) -> Option<()> {
        match v {
            Value::Null => self.out.push(NONE),
            Value::Bool(b) => self.out.push(if *b { NEWTRUE } else { NEWFALSE }),
            // `json.loads` gives a float for a lexeme with a fraction or exponent, and
            // Python's float parsing rounds correctly, as Rust's does.
            // `1e400` reads as `inf`, so here every double is written, finite or not.
            Value::Number(n) if n.written_as_float() => self.double(n.as_f64()),
            Value::Number(n) => self.int(n.lexeme().parse::<i128>().ok()?),
            Value::String(s) => self.string(s)?,
            Value::Array(items) => {
                Sink::list(self);
                for item in items {
                    self.value(item)?;
                }
                self.end_list();
            }
            Value::Object(members) => {
                self.object();
                for (key, item) in members.iter() {
                    self.string(key)?;
                    self.value(item)?;
                }
                self.end_object();
            }
        }
        Some(())
    }

    fn double(&mut self, f: f64) {
        self.out.push(BINFLOAT);
        self.out.extend_from_slice(&f.to_be_bytes());
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

    fn string(&mut self, s: &str) -> Option<()> {
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
            self.memo.insert(s.into(), at);
            self.out.push(MEMOIZE);
        }
        Some(())
    }
}
