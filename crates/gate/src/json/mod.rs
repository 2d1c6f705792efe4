//! A strict JSON reader and value model of our own, because agreement is only as good
//! as the parse under it: serde_json silently keeps the last of two duplicate keys and
//! rounds integers past 2^53, and either would merge arguments that differ.
//!
//! Numbers keep their lexeme; [`Number::decimal`] gives their exact value. Objects keep
//! input order (canonical output sorts them). Errors carry line and column.
//!
//! The value model and the entry points live here; numbers' exact values in `number`,
//! the byte-level reader in `parser`, and the partial reading that keeps text unbuilt
//! (for task lines and fingerprints) in `cursor`.

mod cursor;
mod number;
mod parser;
mod walk;

pub use number::{Decimal, Number};
pub use parser::plain_len;

pub(crate) use cursor::{Cursor, Token};
pub(crate) use number::decimal_of;
pub(crate) use walk::{Walk, walk_value};

use parser::Parser;

/// Largest exponent magnitude the reader accepts. Doubles end near 1e308; a bound far
/// past that keeps every accepted number's exact value representable, so canonical
/// output always parses back to itself.
pub const MAX_EXPONENT: u64 = 1_000_000_000;

/// Deepest nesting the reader accepts; tool arguments never need more, and a bound keeps
/// hostile input (100,000 open brackets) from exhausting the stack.
pub const MAX_DEPTH: usize = 256;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, kept exactly as written.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, in input order, keys unique.
    Object(Object),
}

/// A JSON object: members in input order, no key twice.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(Vec<(String, Value)>, Option<String>);

/// What the reader does with a key seen twice in one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Duplicates {
    /// Refuse the document (RFC 8785 / I-JSON; plangate's default).
    #[default]
    Refuse,
    /// Keep the last value, as Python's `json.loads` and so the seed's code does.
    LastWins,
    /// Keep the last value but remember the key on the object, so a caller can refuse
    /// one part of a document (one sample's arguments) and keep the rest.
    Flag,
}

/// Why a document was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at line {line}, column {column}")]
pub struct JsonError {
    /// 1-based line of the offending byte.
    pub line: usize,
    /// 1-based column (in characters) of the offending byte.
    pub column: usize,
    /// What was wrong.
    pub kind: JsonErrorKind,
}

/// The kinds of [`JsonError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// Input ended inside a value.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// A byte that cannot start or continue a value here.
    #[error("unexpected {0}")]
    Unexpected(String),
    /// Something after the one top-level value.
    #[error("trailing characters after the value")]
    Trailing,
    /// The same key twice in one object.
    #[error("duplicate key {0:?}")]
    DuplicateKey(String),
    /// A malformed number.
    #[error("invalid number")]
    InvalidNumber,
    /// A number whose leading digit sits past 10^±[`MAX_EXPONENT`]: no double comes near
    /// it, and its exact value could not be kept
    /// (`11e18888888888888888888`).
    #[error("number exponent beyond ±{MAX_EXPONENT}")]
    ExponentOutOfRange,
    /// A malformed escape sequence.
    #[error("invalid escape in string")]
    InvalidEscape,
    /// A `\uD800`-style half of a surrogate pair on its own (not allowed by I-JSON).
    #[error("lone surrogate \\u{0:04x} in string")]
    LoneSurrogate(u32),
    /// A raw control character inside a string.
    #[error("unescaped control character U+{0:04X} in string")]
    ControlCharacter(u32),
    /// Bytes that are not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
}

/// Parses one JSON document, refusing duplicate keys.
pub fn parse(input: &str) -> Result<Value, JsonError> {
    parse_str_with(input, Duplicates::Refuse)
}

/// Parses one JSON document from bytes with the given duplicate-key policy.
pub fn parse_with(input: &[u8], duplicates: Duplicates) -> Result<Value, JsonError> {
    match utf8(input) {
        Some(text) => parse_str_with(text, duplicates),
        None => {
            // Where the text stops being UTF-8, for the error; the fast check says only
            // whether it is.
            let at = std::str::from_utf8(input).map_or_else(|e| e.valid_up_to(), |_| 0);
            Err(error_at(input, at, JsonErrorKind::InvalidUtf8))
        }
    }
}

/// Parses one JSON document from text (already UTF-8: not checked again) with the given
/// duplicate-key policy.
pub fn parse_str_with(input: &str, duplicates: Duplicates) -> Result<Value, JsonError> {
    let mut p = Parser::new(input, duplicates);
    let input = input.as_bytes();
    p.ws();
    let v = p.value(0).map_err(|(at, kind)| error_at(input, at, kind))?;
    p.ws();
    if p.i != input.len() {
        return Err(error_at(input, p.i, JsonErrorKind::Trailing));
    }
    Ok(v)
}

impl Value {
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The number as a u64, when it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }
    /// A short name of the JSON type, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl Object {
    /// An empty object.
    pub fn new() -> Self {
        Self(Vec::new(), None)
    }
    /// An empty object with room for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n), None)
    }
    /// The first key the input repeated, when read with [`Duplicates::Flag`] (the
    /// object then holds the last value, as [`Duplicates::LastWins`] would).
    pub fn duplicate_key(&self) -> Option<&str> {
        self.1.as_deref()
    }
    /// The value under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// A mutable reference to the value under `key`, if any.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// Sets `key`, replacing its value in place when present.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        match self.get_mut(&key) {
            Some(slot) => *slot = value,
            None => self.0.push((key, value)),
        }
    }
    /// Appends a member whose key the caller knows is new (it comes from another
    /// object's members), without the scan `insert` does.
    pub(crate) fn push_new(&mut self, key: String, value: Value) {
        debug_assert!(self.get(&key).is_none(), "push_new with a present key");
        self.0.push((key, value));
    }
    /// An object of `members`, whose keys are known to be distinct (those of one object).
    pub(crate) fn of_distinct(members: Vec<(String, Value)>) -> Self {
        Self(members, None)
    }
    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    /// Members in input order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
    /// Members, values mutable, in input order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Value)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }
    /// Removes `key`, keeping the other members' order; its value, if it was there.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }
    /// Member values, mutably, in input order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        self.0.iter_mut().map(|(_, v)| v)
    }
    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Members, in input order.
    pub(crate) fn members(&self) -> &[(String, Value)] {
        &self.0
    }
    /// Members' keys, in input order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl FromIterator<(String, Value)> for Object {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        let mut o = Object::new();
        for (k, v) in iter {
            o.insert(k, v);
        }
        o
    }
}

/// `input` as text, when it is UTF-8: every samples line is checked so before it is
/// read, so the check uses SIMD where the CPU has it rather than std's.
fn utf8(input: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(input).ok()
}

fn error_at(input: &[u8], at: usize, kind: JsonErrorKind) -> JsonError {
    let before = &input[..at.min(input.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    JsonError { line, column, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_duplicate_keys_with_position() {
        let e = parse("{\"a\":1,\n \"a\":2}").unwrap_err();
        assert_eq!(e.kind, JsonErrorKind::DuplicateKey("a".into()));
        assert_eq!((e.line, e.column), (2, 2));
    }

    #[test]
    fn last_wins_keeps_last_value() {
        let v = parse_with(br#"{"a":1,"a":2}"#, Duplicates::LastWins).unwrap();
        assert_eq!(v.as_object().unwrap().get("a").unwrap().as_u64(), Some(2));
    }

    /// `Cursor::raw` must accept exactly what the building reader accepts under
    /// `Flag`, or a task line would read differently through its fast path.
    pub(super) fn skip_agrees(input: &[u8]) {
        let built = parse_with(input, Duplicates::Flag);
        let skipped = Cursor::new(input, Duplicates::Flag)
            .and_then(|mut c| c.raw(0).map(str::len).filter(|_| c.at_end()));
        assert_eq!(
            built.is_ok(),
            skipped.is_some(),
            "{:?}: {built:?}",
            String::from_utf8_lossy(input)
        );
    }
}
