//! A chunk of decision records as pickle bytes, written by a worker off the GIL, so that
//! the one step holding the GIL is `pickle.loads`, which builds the same dicts faster
//! than `json.loads` reads their text (docs/benchmarks.md, "The Python package"). A gate
//! decision is pickled from the [`Decision`] itself, field by field as
//! `gate::record::decision` writes it; any other record from its JSON text. Pickle
//! protocol 4 is documented and every later Python reads it; only plain data opcodes are
//! written (no globals, nothing to call), and a short string seen before in the chunk
//! (every key, most verdicts and reasons) is one memo reference, so the records share
//! those `str` objects as `json.loads` shares keys.

use plangate_gate::decide::{
    Agreement, Decision, DivergentPath, MalformedSample, PlanStep, SchemaViolation, StepAgreement,
};
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

/// One record as a worker has it.
pub(crate) enum Record {
    /// The gate's decision on a task.
    Decision(Box<Decision>),
    /// Any other record (a `--seed-compat` one, a line's error), as JSON text.
    Text(String),
}

impl Record {
    /// The JSON text `plangate score` writes for this record.
    fn text(&self) -> String {
        match self {
            Record::Decision(d) => plangate_gate::record::decision(d),
            Record::Text(text) => text.clone(),
        }
    }
}

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
    /// The records of one chunk.
    pub(crate) fn of(records: &[Record]) -> Encoded {
        match pickled(records) {
            Some(bytes) => Encoded::Pickle(bytes),
            None => Encoded::Json(format!(
                "[{}]",
                records
                    .iter()
                    .map(Record::text)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
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

fn pickled(records: &[Record]) -> Option<Vec<u8>> {
    let mut w = Writer {
        out: Vec::with_capacity(records.len() * 1024 + 16),
        memo: FxHashMap::default(),
    };
    w.out.extend_from_slice(&[PROTO, 4, EMPTY_LIST, MARK]);
    for record in records {
        match record {
            Record::Decision(d) => w.decision(d)?,
            Record::Text(text) => {
                w.value(&json::parse_str_with(text, Duplicates::LastWins).ok()?)?
            }
        }
    }
    w.out.extend_from_slice(&[APPENDS, STOP]);
    Some(w.out)
}

struct Writer {
    out: Vec<u8>,
    /// Short strings already written, by their memo index.
    memo: FxHashMap<Box<str>, u32>,
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
                self.list(items, |w, item| w.value(item))?;
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

    /// A dict whose keys are written here and whose values `fields` writes, in order.
    fn dict(&mut self, fields: impl FnOnce(&mut Self) -> Option<()>) -> Option<()> {
        self.out.extend_from_slice(&[EMPTY_DICT, MARK]);
        fields(self)?;
        self.out.push(SETITEMS);
        Some(())
    }

    fn list<T>(
        &mut self,
        items: &[T],
        mut item: impl FnMut(&mut Self, &T) -> Option<()>,
    ) -> Option<()> {
        self.out.push(EMPTY_LIST);
        if !items.is_empty() {
            self.out.push(MARK);
            for x in items {
                item(self, x)?;
            }
            self.out.push(APPENDS);
        }
        Some(())
    }

    fn strings(&mut self, items: &[String]) -> Option<()> {
        self.list(items, |w, s| w.string(s))
    }

    fn opt<T>(
        &mut self,
        v: Option<T>,
        write: impl FnOnce(&mut Self, T) -> Option<()>,
    ) -> Option<()> {
        match v {
            Some(v) => write(self, v),
            None => {
                self.out.push(NONE);
                Some(())
            }
        }
    }

    fn usize(&mut self, n: usize) -> Option<()> {
        self.int(i128::try_from(n).ok()?);
        Some(())
    }

    /// A float as `json.loads` reads what `gate::record` writes: the same double (its
    /// shortest form reads back exactly), `None` for the `null` of one not finite.
    fn float(&mut self, f: f64) {
        if f.is_finite() {
            self.double(f);
        } else {
            self.out.push(NONE);
        }
    }

    fn double(&mut self, f: f64) {
        self.out.push(BINFLOAT);
        self.out.extend_from_slice(&f.to_be_bytes());
    }

    /// A decision, as `json.loads` reads `gate::record::decision`'s text: the same keys
    /// in the same order (`records_equal_the_clis` in python/tests holds them equal).
    fn decision(&mut self, d: &Decision) -> Option<()> {
        self.dict(|w| {
            w.string("task_id")?;
            w.string(&d.task_id)?;
            w.string("decision")?;
            w.string(d.verdict.as_str())?;
            w.string("reasons")?;
            w.list(&d.reasons, |w, r| w.string(r.as_str()))?;
            w.string("explanation")?;
            w.strings(&d.explanation)?;
            w.string("n")?;
            w.usize(d.n)?;
            w.string("arg_agreement")?;
            w.agreement(&d.arg_agreement)?;
            w.string("result_agreement")?;
            w.opt(d.result_agreement.as_ref(), Self::agreement)?;
            w.string("modal_plan")?;
            w.opt(d.modal_plan.as_deref(), |w, plan| {
                w.list(plan, Self::plan_step)
            })?;
            w.string("divergent_paths")?;
            w.list(&d.divergent_paths, Self::divergent_path)?;
            w.string("steps")?;
            w.list(&d.steps, Self::step_agreement)?;
            w.string("first_divergent_step")?;
            w.opt(d.first_divergent_step, Self::usize)?;
            w.string("tools")?;
            w.strings(&d.tools)?;
            w.string("suspect_tools")?;
            w.strings(&d.suspect_tools)?;
            w.string("malformed")?;
            w.list(&d.malformed, Self::malformed)?;
            w.string("schema_violations")?;
            w.list(&d.schema_violations, Self::violation)?;
            w.string("warnings")?;
            w.strings(&d.warnings)?;
            w.string("label")?;
            w.opt(d.label, |w, l| w.string(l.as_str()))
        })
    }

    fn agreement(&mut self, a: &Agreement) -> Option<()> {
        self.dict(|w| {
            w.string("count")?;
            w.usize(a.count)?;
            w.string("n")?;
            w.usize(a.n)?;
            w.string("value")?;
            w.float(a.value);
            w.string("interval")?;
            w.out.extend_from_slice(&[EMPTY_LIST, MARK]);
            w.float(a.interval.0);
            w.float(a.interval.1);
            w.out.push(APPENDS);
            Some(())
        })
    }

    fn plan_step(&mut self, s: &PlanStep) -> Option<()> {
        self.dict(|w| {
            w.string("tool")?;
            w.string(&s.tool)?;
            w.string("arguments")?;
            // The canonical arguments are JSON text in the decision, as in its record.
            w.value(&json::parse_str_with(&s.arguments, Duplicates::LastWins).ok()?)
        })
    }

    fn divergent_path(&mut self, p: &DivergentPath) -> Option<()> {
        self.dict(|w| {
            w.string("path")?;
            w.string(&p.path)?;
            w.string("distinct")?;
            w.usize(p.distinct)?;
            w.string("agreement")?;
            w.agreement(&p.agreement)
        })
    }

    fn step_agreement(&mut self, s: &StepAgreement) -> Option<()> {
        self.dict(|w| {
            w.string("step")?;
            w.usize(s.step)?;
            w.string("tool")?;
            w.opt(s.tool.as_deref(), Self::string)?;
            w.string("agreement")?;
            w.agreement(&s.agreement)
        })
    }

    fn malformed(&mut self, m: &MalformedSample) -> Option<()> {
        self.dict(|w| {
            w.string("sample")?;
            w.usize(m.sample)?;
            w.string("step")?;
            w.opt(m.step, Self::usize)?;
            w.string("place")?;
            w.opt(m.place.as_deref(), Self::string)?;
            w.string("problems")?;
            w.strings(&m.problems)
        })
    }

    fn violation(&mut self, v: &SchemaViolation) -> Option<()> {
        self.dict(|w| {
            w.string("step")?;
            w.usize(v.step)?;
            w.string("tool")?;
            w.string(&v.tool)?;
            w.string("path")?;
            w.string(&v.path)?;
            w.string("keyword")?;
            w.string(&v.keyword)?;
            w.string("message")?;
            w.string(&v.message)?;
            w.string("samples")?;
            w.list(&v.samples, |w, s| w.usize(*s))
        })
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
