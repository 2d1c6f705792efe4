//! A strict JSON reader and value model of our own, because agreement is only as good
//! as the parse under it: serde_json silently keeps the last of two duplicate keys and
//! rounds integers past 2^53, and either would merge arguments that differ.
//!
//! Numbers keep their lexeme; [`Number::decimal`] gives their exact value. Objects keep
//! input order (canonical output sorts them). Errors carry line and column.

use std::borrow::Cow;

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

/// Members past which a reader looks keys up in an index instead of scanning.
const INDEX_FROM: usize = 32;

/// A JSON object: members in input order, no key twice.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(Vec<(String, Value)>, Option<String>);

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

/// A JSON number as written. Equality here is on the lexeme; use [`Number::decimal`] or
/// the canonical form to compare values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(Box<str>);

/// The exact value of a number: `(-1)^negative * digits * 10^exponent`, with `digits`
/// free of leading and trailing zeros (empty for zero), so equal values are equal structs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    /// Sign (false for zero).
    pub negative: bool,
    /// Significant digits, ASCII, no leading or trailing zeros; empty means zero.
    pub digits: String,
    /// Power of ten applied to `digits`.
    pub exponent: i64,
}

impl Decimal {
    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }
    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.is_zero() || self.exponent >= 0
    }
}

impl Number {
    /// Wraps a lexeme the caller has checked against the JSON number grammar.
    pub(crate) fn from_lexeme(s: &str) -> Self {
        Number(s.into())
    }
    /// Builds a number from an unsigned integer.
    pub fn from_u64(n: u64) -> Self {
        Number(n.to_string().into())
    }
    /// The number as written.
    pub fn lexeme(&self) -> &str {
        &self.0
    }
    /// Whether it was written with a fraction or exponent (Python and the seed read such
    /// a lexeme as a float, whatever its value).
    pub fn written_as_float(&self) -> bool {
        Self::float_lexeme(&self.0)
    }
    /// The nearest double (correctly rounded; may be infinite).
    pub fn as_f64(&self) -> f64 {
        // The lexeme passed the JSON grammar, which Rust's float parser accepts.
        Self::f64_of_lexeme(&self.0)
    }
    /// The value as u64 when it is a non-negative integer that fits exactly.
    pub fn as_u64(&self) -> Option<u64> {
        let d = self.decimal();
        if d.negative || !d.is_integer() {
            return None;
        }
        if d.is_zero() {
            return Some(0);
        }
        let zeros = usize::try_from(d.exponent).ok()?;
        if d.digits.len() + zeros > 20 {
            return None;
        }
        let mut s = d.digits.clone();
        s.extend(std::iter::repeat_n('0', zeros));
        s.parse().ok()
    }
    /// The exact value.
    pub fn decimal(&self) -> Decimal {
        Self::decimal_of_lexeme(&self.0)
    }
    /// [`Number::decimal`] of a lexeme the grammar accepted, for printers that read
    /// numbers straight from text.
    pub(crate) fn decimal_of_lexeme(lexeme: &str) -> Decimal {
        decimal_of(lexeme).unwrap_or(Decimal {
            negative: false,
            digits: String::new(),
            exponent: 0,
        })
    }
    /// [`Number::as_f64`] of a lexeme the grammar accepted.
    pub(crate) fn f64_of_lexeme(lexeme: &str) -> f64 {
        lexeme.parse().unwrap_or(f64::NAN)
    }
    /// [`Number::written_as_float`] of a lexeme.
    pub(crate) fn float_lexeme(lexeme: &str) -> bool {
        lexeme.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
    }
}

/// Parses a number in JSON (or ECMAScript `1e+21`) form into its exact value.
pub(crate) fn decimal_of(s: &str) -> Option<Decimal> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (mantissa, exp_part) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() || !int_part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac_part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut exponent: i64 = match exp_part {
        None => 0,
        Some(e) => {
            let (neg, digits) = match e.as_bytes().first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Saturate: an exponent past i32 is absurd but must still compare exactly
            // enough (no two such inputs here come from distinct finite doubles).
            let mut v: i64 = 0;
            for b in digits.bytes() {
                v = v.saturating_mul(10).saturating_add(i64::from(b - b'0'));
            }
            v = v.min(i64::MAX / 4);
            if neg { -v } else { v }
        }
    };
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    exponent = exponent.saturating_sub(frac_part.len() as i64);
    let lead = digits.bytes().take_while(|&b| b == b'0').count();
    digits.drain(..lead);
    let trail = digits.bytes().rev().take_while(|&b| b == b'0').count();
    digits.truncate(digits.len() - trail);
    exponent = exponent.saturating_add(trail as i64);
    if digits.is_empty() {
        return Some(Decimal {
            negative: false,
            digits,
            exponent: 0,
        });
    }
    Some(Decimal {
        negative,
        digits,
        exponent,
    })
}

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
    /// it, and its exact value could not be kept (found by fuzzing:
    /// `11e18888888888888888888`).
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

/// `input` as text, when it is UTF-8: every samples line is checked so before it is
/// read, and std's check took 3.5% of `score`'s time on the benchmark's lines.
fn utf8(input: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(input).ok()
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

type PResult<T> = Result<T, (usize, JsonErrorKind)>;

struct Parser<'a> {
    /// The input as text, so a checked run is sliced out without a second UTF-8 check.
    t: &'a str,
    s: &'a [u8],
    i: usize,
    duplicates: Duplicates,
}

/// Eight copies of a byte, for looking at eight bytes of a string at once.
const fn lanes(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// The first of eight bytes (little-endian) that ends a run of plain string text: a
/// quote, a backslash or a control character; None when all eight are plain. Each test
/// is the classic "has a byte below n" trick: a lane's borrow can only set bits above the
/// first lane that matched, so the lowest set bit is exact.
fn first_special(word: u64) -> Option<usize> {
    let below = |x: u64, n: u8| x.wrapping_sub(lanes(n)) & !x & lanes(0x80);
    let hits = below(word ^ lanes(b'"'), 1) | below(word ^ lanes(b'\\'), 1) | below(word, 0x20);
    (hits != 0).then(|| (hits.trailing_zeros() / 8) as usize)
}

/// The length of the run of plain string text `s` starts with (up to a quote, a
/// backslash or a control character: what a JSON string escapes), eight bytes at a time.
pub fn plain_len(s: &[u8]) -> usize {
    let mut i = 0;
    while let Some(w) = s.get(i..i + 8) {
        let word = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if let Some(at) = first_special(word) {
            return i + at;
        }
        i += 8;
    }
    // The last few bytes as one more word, padded with NUL, which ends a run too: the
    // first special byte is then within the tail or is the padding just past it.
    let tail = &s[i..];
    let mut w = [0u8; 8];
    w[..tail.len()].copy_from_slice(tail);
    i + first_special(u64::from_le_bytes(w)).unwrap_or(tail.len())
}

impl<'a> Parser<'a> {
    fn new(t: &'a str, duplicates: Duplicates) -> Self {
        Parser {
            t,
            s: t.as_bytes(),
            i: 0,
            duplicates,
        }
    }

    /// Moves to the end of a run of plain string text.
    fn plain_run(&mut self) {
        self.i += plain_len(&self.s[self.i..]);
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn unexpected(&self) -> (usize, JsonErrorKind) {
        match self.s.get(self.i) {
            None => (self.i, JsonErrorKind::UnexpectedEnd),
            Some(_) => {
                // The input is valid UTF-8, so decode the whole character for the message.
                let rest = self.t.get(self.i..).unwrap_or("");
                let c = rest.chars().next().unwrap_or('?');
                (self.i, JsonErrorKind::Unexpected(format!("{c:?}")))
            }
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> PResult<Value> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.unexpected())
        }
    }

    fn value(&mut self, depth: usize) -> PResult<Value> {
        match self.s.get(self.i) {
            None => Err((self.i, JsonErrorKind::UnexpectedEnd)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return Err((self.i, JsonErrorKind::TooDeep));
                }
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Array(items));
                        }
                        _ => return Err(self.unexpected()),
                    }
                }
            }
            Some(b'{') => self.object(depth),
            Some(_) => Err(self.unexpected()),
        }
    }

    /// An object after its `{`: members in input order; a repeated key is refused,
    /// kept last or flagged, as `duplicates` says.
    fn object(&mut self, depth: usize) -> PResult<Value> {
        if depth >= MAX_DEPTH {
            return Err((self.i, JsonErrorKind::TooDeep));
        }
        self.i += 1;
        let mut members: Vec<(String, Value)> = Vec::new();
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(Object(members, None)));
        }
        let mut duplicate = None;
        // Keys seen so far, once an object is large enough that scanning its
        // members for each new key would make reading it quadratic.
        let mut index: Option<std::collections::BTreeMap<String, usize>> = None;
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.unexpected());
            }
            let key_at = self.i;
            let key = self.string()?;
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.unexpected());
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            let seen = match &index {
                Some(ix) => ix.get(&key).copied(),
                None => members.iter().position(|(k, _)| *k == key),
            };
            match seen.map(|i| &mut members[i]) {
                Some(slot) => match self.duplicates {
                    Duplicates::Refuse => {
                        return Err((key_at, JsonErrorKind::DuplicateKey(key)));
                    }
                    Duplicates::LastWins => slot.1 = v,
                    Duplicates::Flag => {
                        slot.1 = v;
                        duplicate.get_or_insert(key);
                    }
                },
                None => {
                    if let Some(ix) = &mut index {
                        ix.insert(key.clone(), members.len());
                    } else if members.len() >= INDEX_FROM {
                        index = Some(
                            members
                                .iter()
                                .enumerate()
                                .map(|(i, (k, _))| (k.clone(), i))
                                .chain([(key.clone(), members.len())])
                                .collect(),
                        );
                    }
                    members.push((key, v));
                }
            }
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(Object(members, duplicate)));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> PResult<Value> {
        let start = self.i;
        self.check_number()?;
        let lexeme = self.t.get(start..self.i).unwrap_or("0");
        Ok(Value::Number(Number::from_lexeme(lexeme)))
    }

    /// Moves past one number, checking it against the grammar and the exponent bound.
    fn check_number(&mut self) -> PResult<()> {
        let start = self.i;
        let bad = |i| Err((i, JsonErrorKind::InvalidNumber));
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.s.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return bad(self.i),
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return bad(self.i);
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            let exp_at = self.i;
            if self.digits() == 0 {
                return bad(self.i);
            }
            let mut exp: u64 = 0;
            for &b in &self.s[exp_at..self.i] {
                exp = exp.saturating_mul(10).saturating_add(u64::from(b - b'0'));
            }
            // A loose bound first, so the exact value below never saturates...
            if exp > MAX_EXPONENT.saturating_mul(1_000_000) {
                return Err((exp_at, JsonErrorKind::ExponentOutOfRange));
            }
            // ...then the bound that matters: the leading digit's power of ten, which is
            // the exponent canonical output prints, so whatever is accepted reads back.
            let lexeme = self.t.get(start..self.i).unwrap_or("0");
            if let Some(d) = decimal_of(lexeme).filter(|d| !d.is_zero()) {
                let lead = d.exponent + d.digits.len() as i64 - 1;
                if lead.unsigned_abs() > MAX_EXPONENT {
                    return Err((exp_at, JsonErrorKind::ExponentOutOfRange));
                }
            }
        }
        // A number directly followed by a letter or digit (`01`, `1x`) is malformed
        // rather than "trailing characters": say so at the number.
        if self.s.get(self.i).is_some_and(u8::is_ascii_alphanumeric) {
            return bad(self.i);
        }
        Ok(())
    }

    /// Moves past one value, checking everything [`Parser::value`] checks except
    /// duplicate keys, building nothing but what `w` makes of it. Only for
    /// [`Duplicates::Flag`] or [`Duplicates::LastWins`] documents, where a repeated key
    /// is not an error.
    fn walk<W: Walk>(&mut self, depth: usize, w: &mut W) -> PResult<W::Out> {
        let object = match self.s.get(self.i) {
            Some(b'n') => return self.literal(b"null", Value::Null).map(|_| w.null()),
            Some(b't') => return self.literal(b"true", Value::Null).map(|_| w.boolean(true)),
            Some(b'f') => {
                return self
                    .literal(b"false", Value::Null)
                    .map(|_| w.boolean(false));
            }
            Some(b'"') => return self.walk_text::<W, _>(|s| w.string(s)),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                self.check_number()?;
                return Ok(w.number(self.t.get(start..self.i).unwrap_or("0")));
            }
            Some(b'[') => false,
            Some(b'{') => true,
            _ => return Err(self.unexpected()),
        };
        if depth >= MAX_DEPTH {
            return Err((self.i, JsonErrorKind::TooDeep));
        }
        let close = if object { b'}' } else { b']' };
        self.i += 1;
        let mut open = w.open(object);
        self.ws();
        if self.s.get(self.i) == Some(&close) {
            self.i += 1;
            return Ok(w.close(open));
        }
        loop {
            self.ws();
            if object {
                if let Some(k) = self.short_key() {
                    w.key(&mut open, k);
                } else {
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.unexpected());
                    }
                    self.walk_text::<W, _>(|k| w.key(&mut open, k))?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.unexpected());
                    }
                    self.i += 1;
                }
                self.ws();
            }
            let v = self.walk(depth + 1, w)?;
            w.item(&mut open, v);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(&b) if b == close => {
                    self.i += 1;
                    return Ok(w.close(open));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    /// Moves past a string, handing `use_text` its decoded text when `W` asks for it
    /// (else `""`: the string is only checked).
    fn walk_text<W: Walk, R>(&mut self, use_text: impl FnOnce(&str) -> R) -> PResult<R> {
        if !W::DECODES {
            self.string_into(&mut Discard)?;
            return Ok(use_text(""));
        }
        // Not through `Parser::text`: handing the run over without a `Cow` keeps a
        // result's walk 4M instructions cheaper on the benchmark's 20,000 tasks.
        if let Some(run) = self.plain_string() {
            return Ok(use_text(run));
        }
        let mut text = String::new();
        self.string_into(&mut text)?;
        Ok(use_text(&text))
    }

    fn hex4(&mut self) -> PResult<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.s.get(self.i) {
                Some(b) if b.is_ascii_hexdigit() => (*b as char).to_digit(16).unwrap_or(0),
                _ => return Err((self.i, JsonErrorKind::InvalidEscape)),
            };
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }

    /// [`Parser::text`], owned. Written out rather than through `Cow::into_owned`,
    /// which cost building a tree 15% more (callgrind).
    fn string(&mut self) -> PResult<String> {
        if let Some(run) = self.plain_string() {
            return Ok(run.to_string());
        }
        let mut out = String::new();
        self.string_into(&mut out)?;
        Ok(out)
    }

    /// The string at the cursor (its opening quote), decoded: borrowed from the input
    /// unless it has an escape. A string without one is a run `plain_string` finds in
    /// one scan; any other stops that scan early and is decoded by `string_into`.
    fn text(&mut self) -> PResult<Cow<'a, str>> {
        if let Some(run) = self.plain_string() {
            return Ok(Cow::Borrowed(run));
        }
        let mut out = String::new();
        self.string_into(&mut out)?;
        Ok(Cow::Owned(out))
    }

    /// The string at the cursor (its opening quote) when it has no escape, moving past
    /// it; most strings are such a run, found in one scan instead of `string_into`'s loop.
    fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.i + 1;
        let end = start + plain_len(self.s.get(start..)?);
        if self.s.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        // The run stops on an ASCII byte, so both ends are character boundaries.
        self.t.get(start..end)
    }

    /// A key at the cursor (its opening quote) of at most seven bytes, none of them to
    /// escape, followed right away by its colon, moving past both: the usual key, found
    /// from one word without the general scan's setup (reading keys was a tenth of
    /// reading a line). None, moving nowhere, for any other key.
    #[inline]
    fn short_key(&mut self) -> Option<&'a str> {
        let start = self.i + 1;
        let w = self.s.get(start..start + 8)?;
        let len = first_special(u64::from_le_bytes([
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
        ]))?;
        if self.s.get(self.i) != Some(&b'"')
            || w[len] != b'"'
            || self.s.get(start + len + 1) != Some(&b':')
        {
            return None;
        }
        self.i = start + len + 2;
        // Both ends are next to ASCII quotes, so they are character boundaries.
        self.t.get(start..start + len)
    }

    /// Reads a string into `out`; with [`Discard`] it only checks it, allocating nothing.
    fn string_into(&mut self, out: &mut impl Text) -> PResult<()> {
        self.i += 1; // opening quote
        loop {
            let run_start = self.i;
            self.plain_run();
            // We stopped on an ASCII byte (or the end), so this is a character boundary.
            out.push_run(&self.t[run_start..self.i]);
            match self.s.get(self.i) {
                None => return Err((self.i, JsonErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(&b) if b < 0x20 => {
                    return Err((self.i, JsonErrorKind::ControlCharacter(u32::from(b))));
                }
                Some(_) => {
                    let esc_at = self.i;
                    self.i += 1;
                    let c = match self.s.get(self.i) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.i += 1;
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if self.s.get(self.i) == Some(&b'\\')
                                    && self.s.get(self.i + 1) == Some(&b'u')
                                {
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return Err((esc_at, JsonErrorKind::LoneSurrogate(hi)));
                                    }
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    return Err((esc_at, JsonErrorKind::LoneSurrogate(hi)));
                                }
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err((esc_at, JsonErrorKind::LoneSurrogate(hi)));
                            } else {
                                hi
                            };
                            out.push(
                                char::from_u32(code)
                                    .ok_or((esc_at, JsonErrorKind::InvalidEscape))?,
                            );
                            continue;
                        }
                        _ => return Err((esc_at, JsonErrorKind::InvalidEscape)),
                    };
                    self.i += 1;
                    out.push(c);
                }
            }
        }
    }
}

/// Where [`Parser::string_into`] puts decoded text.
trait Text {
    /// A run of input text without escapes.
    fn push_run(&mut self, run: &str);
    fn push(&mut self, c: char);
}

impl Text for String {
    fn push_run(&mut self, run: &str) {
        self.push_str(run);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

/// A [`Text`] that keeps nothing: the string is checked, not built (nor its runs
/// checked as UTF-8 again); as a [`Walk`], a value is only checked.
struct Discard;

impl Text for Discard {
    fn push_run(&mut self, _: &str) {}
    fn push(&mut self, _: char) {}
}

/// What [`Cursor::walk`] makes of a value as it checks it, told its parts in order:
/// nothing ([`Discard`]), or a hash of it (`jcs`'s fingerprints, computed in the same
/// pass that checks a result). [`walk_value`] tells a tree's parts the same way.
pub(crate) trait Walk {
    /// What a value comes to.
    type Out;
    /// An array or object being read.
    type Open;
    /// Whether strings and keys are handed over decoded (else as `""`, only checked).
    const DECODES: bool;
    fn null(&mut self) -> Self::Out;
    fn boolean(&mut self, b: bool) -> Self::Out;
    /// A number's lexeme, checked against the grammar.
    fn number(&mut self, lexeme: &str) -> Self::Out;
    fn string(&mut self, s: &str) -> Self::Out;
    /// An array (`object` false) or object opened.
    fn open(&mut self, object: bool) -> Self::Open;
    /// An object's key; its value comes next, as an item.
    fn key(&mut self, open: &mut Self::Open, key: &str);
    /// An array's item or an object's member value.
    fn item(&mut self, open: &mut Self::Open, v: Self::Out);
    fn close(&mut self, open: Self::Open) -> Self::Out;
}

impl Walk for Discard {
    type Out = ();
    type Open = ();
    const DECODES: bool = false;
    fn null(&mut self) {}
    fn boolean(&mut self, _: bool) {}
    fn number(&mut self, _: &str) {}
    fn string(&mut self, _: &str) {}
    fn open(&mut self, _: bool) {}
    fn key(&mut self, _: &mut (), _: &str) {}
    fn item(&mut self, _: &mut (), _: ()) {}
    fn close(&mut self, _: ()) {}
}

/// Tells `w` the parts of `v`, at nesting `depth`, as [`Cursor::walk`] tells those of any
/// text that reads as `v`: the same calls in the same order. None where the reader would
/// refuse that text for nesting (an array or object at [`MAX_DEPTH`]).
pub(crate) fn walk_value<W: Walk>(v: &Value, depth: usize, w: &mut W) -> Option<W::Out> {
    let object = match v {
        Value::Null => return Some(w.null()),
        Value::Bool(b) => return Some(w.boolean(*b)),
        Value::Number(n) => return Some(w.number(n.lexeme())),
        Value::String(s) => return Some(w.string(s)),
        Value::Array(_) => false,
        Value::Object(_) => true,
    };
    if depth >= MAX_DEPTH {
        return None;
    }
    let mut open = w.open(object);
    match v {
        Value::Object(members) => {
            for (key, item) in members.iter() {
                w.key(&mut open, key);
                let item = walk_value(item, depth + 1, w)?;
                w.item(&mut open, item);
            }
        }
        Value::Array(items) => {
            for item in items {
                let item = walk_value(item, depth + 1, w)?;
                w.item(&mut open, item);
            }
        }
        _ => {}
    }
    Some(w.close(open))
}

/// What [`Cursor::token`] found.
pub(crate) enum Token<'a> {
    Null,
    Bool(bool),
    /// The lexeme, checked against the grammar.
    Number(&'a str),
    String(Cow<'a, str>),
    /// An array was opened: its items (or `]`) come next.
    Array,
    /// An object was opened: its members (or `}`) come next.
    Object,
}

/// A reader walking a document of known shape, for callers that build only the parts
/// they need and keep the rest as checked text (a task line keeps each call's result
/// unparsed: most results are equal byte for byte, and one parse serves them all).
///
/// Every method answers None on anything unexpected; such a caller then reads the
/// document with [`parse_with`] for the precise error.
pub(crate) struct Cursor<'a>(Parser<'a>);

impl<'a> Cursor<'a> {
    /// A cursor at the start of `input`, or None when it is not UTF-8.
    pub(crate) fn new(input: &'a [u8], duplicates: Duplicates) -> Option<Self> {
        Some(Cursor(Parser::new(utf8(input)?, duplicates)))
    }

    /// Skips whitespace, then consumes `b` if it comes next.
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        self.0.ws();
        let hit = self.0.s.get(self.0.i) == Some(&b);
        self.0.i += usize::from(hit);
        hit
    }

    /// A cursor at the start of text that is already known to be UTF-8.
    pub(crate) fn of_str(input: &'a str) -> Self {
        Cursor(Parser::new(input, Duplicates::Flag))
    }

    /// An object key and its colon; borrowed from the input unless it has escapes.
    pub(crate) fn key(&mut self) -> Option<Cow<'a, str>> {
        self.0.ws();
        if let Some(k) = self.0.short_key() {
            return Some(Cow::Borrowed(k));
        }
        let k = self.string()?;
        self.eat(b':').then_some(k)
    }

    /// The next value when it is a string, decoded; borrowed from the input unless it
    /// has escapes. None for any other value.
    pub(crate) fn string_value(&mut self) -> Option<Cow<'a, str>> {
        self.0.ws();
        self.string()
    }

    /// A string at the cursor (no whitespace before it), decoded; borrowed from the input
    /// unless it has escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.0.s.get(self.0.i) != Some(&b'"') {
            return None;
        }
        self.0.text().ok()
    }

    /// The next scalar, or the opening of an array or object (consumed), checked but
    /// not built: for printing a value straight from its text.
    pub(crate) fn token(&mut self) -> Option<Token<'a>> {
        self.0.ws();
        let p = &mut self.0;
        let token = match p.s.get(p.i)? {
            b'n' => p.literal(b"null", Value::Null).map(|_| Token::Null).ok()?,
            b't' => p
                .literal(b"true", Value::Null)
                .map(|_| Token::Bool(true))
                .ok()?,
            b'f' => p
                .literal(b"false", Value::Null)
                .map(|_| Token::Bool(false))
                .ok()?,
            b'"' => return self.string().map(Token::String),
            b'-' | b'0'..=b'9' => {
                let start = p.i;
                p.check_number().ok()?;
                Token::Number(p.t.get(start..p.i)?)
            }
            b'[' => {
                p.i += 1;
                Token::Array
            }
            b'{' => {
                p.i += 1;
                Token::Object
            }
            _ => return None,
        };
        Some(token)
    }

    /// The next value, built, at nesting `depth` of the whole document.
    pub(crate) fn value(&mut self, depth: usize) -> Option<Value> {
        self.0.ws();
        self.0.value(depth).ok()
    }

    /// The next value as the text it was written with, checked but not built.
    pub(crate) fn raw(&mut self, depth: usize) -> Option<&'a str> {
        self.walk(depth, &mut Discard).map(|(text, ())| text)
    }

    /// The next value as the text it was written with, checked, and what `w` made of it
    /// on the way, at nesting `depth` of the whole document.
    pub(crate) fn walk<W: Walk>(&mut self, depth: usize, w: &mut W) -> Option<(&'a str, W::Out)> {
        self.0.ws();
        let start = self.0.i;
        let out = self.0.walk(depth, w).ok()?;
        // A value begins and ends on ASCII, so these are character boundaries.
        Some((self.0.t.get(start..self.0.i)?, out))
    }

    /// The text of what `read` moves past (after whitespace), for a caller that looks
    /// inside a value without building it.
    pub(crate) fn spanned(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<&'a str> {
        self.0.ws();
        let start = self.0.i;
        read(self)?;
        self.0.t.get(start..self.0.i)
    }

    /// Moves past `text` if it comes next, after whitespace.
    pub(crate) fn skip_text(&mut self, text: &str) -> bool {
        self.0.ws();
        let hit = self.0.s[self.0.i..].starts_with(text.as_bytes());
        self.0.i += if hit { text.len() } else { 0 };
        hit
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.0.ws();
        self.0.i == self.0.s.len()
    }
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

    #[test]
    fn integers_stay_exact() {
        let a = parse("9007199254740993").unwrap();
        let b = parse("9007199254740992").unwrap();
        let (Value::Number(a), Value::Number(b)) = (a, b) else {
            panic!("numbers expected")
        };
        assert_ne!(a.decimal(), b.decimal());
        assert_eq!(a.as_f64(), b.as_f64());
    }

    #[test]
    fn decimal_normalizes() {
        let one = decimal_of("1").unwrap();
        for s in ["1.0", "1.000", "10e-1", "0.1e1", "1E0", "1e+0"] {
            assert_eq!(decimal_of(s).unwrap(), one, "{s}");
        }
        assert_eq!(decimal_of("-0.0").unwrap(), decimal_of("0").unwrap());
        assert!(!decimal_of("1.5").unwrap().is_integer());
        assert!(decimal_of("1.5e300").unwrap().is_integer());
    }

    #[test]
    fn refuses_lone_surrogates_and_control_characters() {
        assert!(matches!(
            parse(r#""\ud800""#).unwrap_err().kind,
            JsonErrorKind::LoneSurrogate(0xd800)
        ));
        assert!(matches!(
            parse("\"a\u{1}\"").unwrap_err().kind,
            JsonErrorKind::ControlCharacter(1)
        ));
        assert_eq!(
            parse(r#""\ud83d\ude02""#).unwrap(),
            Value::String("😂".into())
        );
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(100_000);
        assert_eq!(parse(&deep).unwrap_err().kind, JsonErrorKind::TooDeep);
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
    }

    /// Regression, found by `cargo fuzz run json_reader`: a saturated exponent broke the
    /// canonical fixed point (1.1e+2305843009213693952 read back as ...951).
    #[test]
    fn huge_exponents_are_refused() {
        assert_eq!(
            parse("11e18888888888888888888").unwrap_err().kind,
            JsonErrorKind::ExponentOutOfRange
        );
        assert_eq!(
            parse("1e-1000000001").unwrap_err().kind,
            JsonErrorKind::ExponentOutOfRange
        );
        assert_eq!(
            parse("11000e999999999").unwrap_err().kind,
            JsonErrorKind::ExponentOutOfRange
        );
    }

    /// Past `INDEX_FROM` members keys are found through an index: a repeat there is
    /// still refused, kept last or flagged exactly as a repeat among the first few.
    #[test]
    fn repeated_keys_in_large_objects_are_caught() {
        let members: Vec<String> = (0..100).map(|i| format!("\"k{i}\":{i}")).collect();
        for at in [3, 40, 99] {
            let doc = format!("{{{},\"k{at}\":\"again\"}}", members.join(","));
            let e = parse_with(doc.as_bytes(), Duplicates::Refuse).unwrap_err();
            assert_eq!(e.kind, JsonErrorKind::DuplicateKey(format!("k{at}")));
            let v = parse_with(doc.as_bytes(), Duplicates::Flag).unwrap();
            let o = v.as_object().unwrap();
            assert_eq!(o.duplicate_key(), Some(format!("k{at}").as_str()));
            assert_eq!(o.len(), 100);
            assert_eq!(
                o.get(&format!("k{at}")),
                Some(&Value::String("again".into()))
            );
            let keys: Vec<&String> = o.keys().collect();
            assert_eq!(keys[at], &format!("k{at}"), "input order kept");
        }
        let doc = format!("{{{}}}", members.join(","));
        assert_eq!(
            parse(&doc).unwrap().as_object().unwrap().duplicate_key(),
            None
        );
    }

    /// `Cursor::raw` must accept exactly what the building reader accepts under
    /// `Flag`, or a task line would read differently through its fast path.
    fn skip_agrees(input: &[u8]) {
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

    /// JSONTestSuite goes through the same check in `tests/readers.rs`, as task lines.
    #[test]
    fn skipping_checks_what_building_checks() {
        let deep = |n| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for s in [
            deep(MAX_DEPTH),
            deep(MAX_DEPTH + 1),
            r#"{"a":1,"a":2}"#.into(),
            "1e999999999".into(),
            "11e18888888888888888888".into(),
            r#""\ud800""#.into(),
            r#"{"a":[1,{"b":"\u00e9\ud83d\ude00"}],"c":-0.5e-3}"#.into(),
            "[1,]".into(),
            "{\"a\" 1}".into(),
        ] {
            skip_agrees(s.as_bytes());
        }
        // The text handed back is the value exactly, whitespace around it excluded.
        let mut c = Cursor::new(b" [1, {\"a\": true}] ", Duplicates::Flag).unwrap();
        assert_eq!(c.raw(0), Some(r#"[1, {"a": true}]"#));
    }

    /// Strings are scanned eight bytes at a time: a quote, backslash, control or
    /// multi-byte character at every offset of a word, and near the end of the input,
    /// must read as it does byte by byte.
    #[test]
    fn strings_read_the_same_at_every_offset() {
        for len in 0..20 {
            for at in 0..=len {
                for special in [
                    "\\\"", "\\\\", "\\n", "\\u00e9", "é", "😀", "\u{1}", "\u{1f}",
                ] {
                    let body: String = "a".repeat(at) + special + &"b".repeat(len - at);
                    let doc = format!("\"{body}\"");
                    let want = if special.starts_with('\\') || special.chars().all(|c| c >= ' ') {
                        Some(serde_json::from_str::<String>(&doc).unwrap())
                    } else {
                        None
                    };
                    let got = parse(&doc).ok().map(|v| v.as_str().unwrap().to_string());
                    assert_eq!(got, want, "{doc:?}");
                    skip_agrees(doc.as_bytes());
                    // Unterminated: the scan runs off the end and must say so.
                    assert!(parse(&doc[..doc.len() - 1]).is_err(), "{doc:?}");
                }
            }
        }
        assert!(first_special(lanes(b'a')).is_none());
        assert_eq!(
            first_special(u64::from_le_bytes(*b"abc\"\\\x01\xc3\xa9")),
            Some(3)
        );
    }

    /// A key read from one word reads as the general path reads it (a string, then
    /// its colon): every length around the word, with the colon right after it or
    /// after a space, with escapes, control and multi-byte characters, and near the end.
    #[test]
    fn short_keys_read_as_keys() {
        let next = |c: &mut Cursor<'_>| c.raw(0).map(str::to_string);
        for len in 0..12 {
            for at in 0..=len {
                for special in [
                    "", "\\\"", "\\n", "\\u0041", "é", "\u{1}", "\"", "\u{1}:", "\\:",
                ] {
                    let key: String = "k".repeat(at) + special + &"y".repeat(len - at);
                    for after in [":1", " :1", ":", ": 1 ", ":1234567"] {
                        let doc = format!("\"{key}\"{after}");
                        let mut general = Cursor::of_str(&doc);
                        let want = general.string_value().filter(|_| general.eat(b':'));
                        let mut c = Cursor::of_str(&doc);
                        assert_eq!(c.key(), want, "{doc:?}");
                        assert_eq!(next(&mut c), next(&mut general), "{doc:?}");
                        // And inside a value walked whole.
                        let doc = format!("{{{doc}}}");
                        let mut c = Cursor::of_str(&doc);
                        assert_eq!(
                            c.raw(0).is_some(),
                            parse_with(doc.as_bytes(), Duplicates::Flag).is_ok(),
                            "{doc:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn plain_len_stops_at_the_first_byte_to_escape() {
        // Every length across two words and a tail, with each special byte (and the
        // bytes beside them: space, DEL, a UTF-8 lead) at every place.
        for len in 0..20 {
            for at in 0..=len {
                for b in [b'"', b'\\', 0x00, 0x1f, b'\n', b' ', 0x7f, 0xc3] {
                    let mut s = vec![b'a'; len];
                    if at < len {
                        s[at] = b;
                    }
                    let want = s
                        .iter()
                        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                        .unwrap_or(len);
                    assert_eq!(plain_len(&s), want, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn malformed_numbers() {
        for s in [
            "01", "1.", ".1", "-", "1e", "1e+", "+1", "0x1", "1.e3", "Infinity", "NaN",
        ] {
            assert!(parse(s).is_err(), "{s} should be refused");
        }
    }
}
