//! RFC 8785 (JSON Canonicalization Scheme) serialization: the one byte form in which two
//! arguments are compared. Byte-exact on the RFC's vectors, with one deliberate
//! departure for integers a double cannot hold (see [`write_number`]).

use std::borrow::Cow;

use crate::json::{
    Cursor, Decimal, MAX_DEPTH, Number, Token, Value, Walk, decimal_of, plain_len, walk_value,
};

/// The canonical form of `value`.
pub fn to_string(value: &Value) -> String {
    // Most forms are short; starting with room for one spares the string's first
    // reallocations, which cost more than printing it.
    let mut out = String::with_capacity(64);
    write(value, &mut out);
    out
}

/// Appends the canonical form of `value` to `out`.
pub fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(v, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            // Members already in order (one member, or canonical arguments printed
            // again) are written as they are: the sorted copy is what a short object's
            // print cost most.
            let keys = || o.keys();
            let in_order = keys()
                .zip(keys().skip(1))
                .all(|(a, b)| utf16_cmp(a, b).is_le());
            if in_order {
                write_members(o.iter(), out);
            } else {
                let mut members: Vec<(&String, &Value)> = o.iter().collect();
                members.sort_by(|a, b| utf16_cmp(a.0, b.0));
                write_members(members.into_iter(), out);
            }
        }
    }
}

fn write_members<'v>(members: impl Iterator<Item = (&'v String, &'v Value)>, out: &mut String) {
    out.push('{');
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(k, out);
        out.push(':');
        write(v, out);
    }
    out.push('}');
}

/// Orders strings by their UTF-16 code units, as RFC 8785 section 3.2.3 requires (this
/// differs from byte or code point order for keys above U+FFFF).
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    // UTF-16 order is byte order up to the first byte that differs, and from there on
    // too unless that byte is part of a multi-byte character (only U+E000..U+FFFF
    // against a supplementary character order differently). Keys are nearly always
    // ASCII: transcoding, or even checking both keys whole, would be a measurable share
    // of canonicalizing a task.
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) if x[i].is_ascii() && y[i].is_ascii() => x[i].cmp(&y[i]),
        Some(_) => a.encode_utf16().cmp(b.encode_utf16()),
    }
}

/// Appends an integer's decimal digits, without the formatting machinery (records and
/// explanations print several a task).
pub fn write_usize(n: usize, out: &mut String) {
    if n < 10 {
        // Most counts, steps and sample numbers.
        out.push(char::from(b'0' + n as u8));
        return;
    }
    let mut buf = [0u8; 20];
    let i = digits_before(n as u64, &mut buf, 20);
    // Digit by digit: a few pushes cost less than checking the digits are text.
    out.reserve(20 - i);
    for &d in &buf[i..] {
        out.push(char::from(d));
    }
}

/// Writes `n`'s decimal digits into `buf` so that they end before `end`, and returns
/// where they start (`buf` must have room: 20 bytes hold any `u64`).
pub(crate) fn digits_before(mut n: u64, buf: &mut [u8], end: usize) -> usize {
    let mut at = end;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// Appends a string with RFC 8785's minimal escapes.
#[inline]
pub fn write_string(s: &str, out: &mut String) {
    // Nearly every string needs no escape: one scan, and the whole of it copied, with
    // none of the escaping loop's setup.
    let plain = plain_len(s.as_bytes());
    out.reserve(s.len() + 2);
    out.push('"');
    out.push_str(&s[..plain]);
    if plain < s.len() {
        write_escaped(s, plain, out);
    }
    out.push('"');
}

/// The rest of [`write_string`] from byte `run`, an escape, on.
#[inline(never)]
fn write_escaped(s: &str, mut run: usize, out: &mut String) {
    // Copies runs of bytes that need no escape in one go, found eight bytes at a time:
    // results carry long strings (file contents). Every byte that needs an escape is
    // ASCII, so each cut is on a char boundary.
    loop {
        let i = run + plain_len(&s.as_bytes()[run..]);
        out.push_str(&s[run..i]);
        let Some(&b) = s.as_bytes().get(i) else {
            break;
        };
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            _ => "",
        };
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
}

/// Appends a number in canonical form.
///
/// RFC 8785 prints the ECMAScript form of the nearest double. That would merge
/// `9007199254740993` with `9007199254740992`, two different IDs; docs/design.md, "Canonical arguments"
/// forbids it. So an *integer* whose exact value differs from the value the ECMAScript
/// form denotes is printed exactly instead (plain digits up to 21 of them, else
/// `d.ddde+N`). Every RFC vector is unaffected: their integers are exact doubles, and
/// non-integers keep double semantics. Values outside the double range, which I-JSON
/// excludes, are printed exactly rather than as infinity or zero.
pub fn write_number(n: &Number, out: &mut String) {
    write_lexeme(n.lexeme(), out);
}

/// [`write_number`] of a lexeme the JSON grammar accepted.
fn write_lexeme(lex: &str, out: &mut String) {
    if !write_short(lex, out) {
        write_general(lex, out);
    }
}

/// [`write_lexeme`] of any lexeme, through the exact value and the nearest double.
fn write_general(lex: &str, out: &mut String) {
    let exact = Number::decimal_of_lexeme(lex);
    if exact.is_zero() {
        out.push('0');
        return;
    }
    let f = Number::f64_of_lexeme(lex);
    if f.is_finite() && f != 0.0 {
        let mut buf = ryu_js::Buffer::new();
        let es = buf.format_finite(f);
        if !exact.is_integer() || decimal_of(es).as_ref() == Some(&exact) {
            out.push_str(es);
            return;
        }
    }
    write_exact(&exact, out);
}

/// Significant digits a decimal may have for [`write_short`]: a double keeps every
/// decimal of at most 15 (DBL_DIG), so two such decimals are never one double, and the
/// shortest digits that read back as the double are the decimal's own.
const SHORT_DIGITS: usize = 15;

/// The common number without parsing a double or formatting one: a nonzero decimal of
/// at most [`SHORT_DIGITS`] significant digits whose ECMAScript form has no exponent
/// (1e-6 <= |x| < 1e21). Its form is then its own digits, placed as ECMAScript places
/// them (Number::toString, steps 6-8). False, writing nothing, for any other lexeme.
fn write_short(lex: &str, out: &mut String) -> bool {
    let b = lex.as_bytes();
    let negative = b.first() == Some(&b'-');
    let mut i = usize::from(negative);
    // The significant digits (at most SHORT_DIGITS, zeros after the last nonzero one
    // counted in `zeros` until a nonzero digit follows), and the decimal point's
    // position among them.
    let mut digits = [0u8; SHORT_DIGITS];
    let (mut len, mut zeros, mut point) = (0usize, 0usize, 0i64);
    let mut in_fraction = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                if c == b'0' && len == 0 {
                    // A leading zero: before the point it is not a digit at all; after
                    // it, it moves the point.
                    point -= i64::from(in_fraction);
                } else if c == b'0' {
                    zeros += 1;
                    point += i64::from(!in_fraction);
                } else {
                    if len + zeros >= SHORT_DIGITS {
                        return false;
                    }
                    len += zeros;
                    zeros = 0;
                    digits[len] = c;
                    len += 1;
                    point += i64::from(!in_fraction);
                }
            }
            b'.' => in_fraction = true,
            _ => break,
        }
        i += 1;
    }
    if len == 0 {
        return false;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        let exp = &lex[i + 1..];
        let (sign, exp) = match exp.as_bytes().first() {
            Some(b'-') => (-1, &exp[1..]),
            Some(b'+') => (1, &exp[1..]),
            _ => (1, exp),
        };
        // A longer exponent is out of the range below whatever the digits.
        if exp.len() > 4 {
            return false;
        }
        point += sign * exp.parse::<i64>().unwrap_or(i64::MAX / 2);
    }
    // Zeros between digits were filled in as they were met; the ones never followed
    // by a nonzero digit are not significant.
    for d in digits.iter_mut().take(len) {
        if *d == 0 {
            *d = b'0';
        }
    }
    if !(-5..=21).contains(&point) {
        return false;
    }
    let digits = std::str::from_utf8(&digits[..len]).unwrap_or("0");
    if negative {
        out.push('-');
    }
    let n = point;
    if n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', n.unsigned_abs() as usize));
        out.push_str(digits);
    } else if n as usize >= len {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', n as usize - len));
    } else {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    }
    true
}

fn write_exact(d: &Decimal, out: &mut String) {
    if d.negative {
        out.push('-');
    }
    let len = d.digits.len() as i64;
    if d.exponent >= 0 && len + d.exponent <= 21 {
        out.push_str(&d.digits);
        out.extend(std::iter::repeat_n('0', d.exponent as usize));
        return;
    }
    let (first, rest) = d.digits.split_at(1);
    out.push_str(first);
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    let e = d.exponent + len - 1;
    out.push_str(if e >= 0 { "e+" } else { "e-" });
    out.push_str(&e.unsigned_abs().to_string());
}

/// How a printer of JSON text orders an object's keys and writes numbers: RFC 8785
/// here, the seed's `json.dumps` in [`crate::seed`].
pub(crate) struct Style {
    /// The order of an object's keys (equal only for equal keys).
    pub(crate) order: fn(&str, &str) -> std::cmp::Ordering,
    /// Writes a number from its lexeme.
    pub(crate) number: fn(&str, &mut String),
}

/// RFC 8785, for [`print_text`].
pub(crate) const JCS: Style = Style {
    order: utf16_cmp,
    number: write_lexeme,
};

/// The form `style` gives JSON text the reader has checked, printed from the text
/// without building its tree (a result is built only to be printed, once per distinct
/// text, and building it cost more than printing), and whether a number in it is
/// written as a float. Equal to printing the value the text parses to (with a repeated
/// key's last value kept); None for text that is not one JSON value.
pub(crate) fn print_text(text: &str, style: &Style) -> Option<(String, bool)> {
    let mut p = TextPrinter {
        style,
        out: String::with_capacity(text.len()),
        floats: false,
    };
    let mut c = Cursor::of_str(text);
    p.one(&mut c, 0)?;
    c.at_end().then_some((p.out, p.floats))
}

struct TextPrinter<'s> {
    style: &'s Style,
    out: String,
    floats: bool,
}

impl TextPrinter<'_> {
    fn one<'a>(&mut self, c: &mut Cursor<'a>, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let out = &mut self.out;
        match c.token()? {
            Token::Null => out.push_str("null"),
            Token::Bool(true) => out.push_str("true"),
            Token::Bool(false) => out.push_str("false"),
            Token::Number(lex) => {
                self.floats |= Number::float_lexeme(lex);
                (self.style.number)(lex, out);
            }
            Token::String(s) => quoted(&s, matches!(s, Cow::Borrowed(_)), out),
            Token::Array => self.array(c, depth)?,
            Token::Object => self.object(c, depth)?,
        }
        Some(())
    }

    fn array<'a>(&mut self, c: &mut Cursor<'a>, depth: usize) -> Option<()> {
        self.out.push('[');
        each_item(c, |i, c| {
            if i > 0 {
                self.out.push(',');
            }
            self.one(c, depth + 1)
        })?;
        self.out.push(']');
        Some(())
    }

    /// Each value is printed where it falls, then the members are put in order.
    fn object<'a>(&mut self, c: &mut Cursor<'a>, depth: usize) -> Option<()> {
        let start = self.out.len();
        let mut members: Vec<(Cow<'a, str>, std::ops::Range<usize>)> = Vec::new();
        each_member(c, |key, c| {
            let at = self.out.len() - start;
            self.one(c, depth + 1)?;
            members.push((key, at..self.out.len() - start));
            Some(())
        })?;
        let values = self.out.split_off(start);
        // Stable: of a key written twice, the last comes last, and it is the one kept.
        members.sort_by(|a, b| (self.style.order)(&a.0, &b.0));
        let out = &mut self.out;
        out.push('{');
        let mut first = true;
        for (i, (key, range)) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            quoted(key, matches!(key, Cow::Borrowed(_)), out);
            out.push(':');
            out.push_str(&values[range.clone()]);
        }
        out.push('}');
        Some(())
    }
}

/// A string read from text as [`write_string`] writes it: text the reader borrowed had
/// no escapes, so it has nothing to escape either and is copied between quotes.
fn quoted(s: &str, borrowed: bool, out: &mut String) {
    if borrowed {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        write_string(s, out);
    }
}

/// Reads an array's items after its `[` (through its `]`), `item` reading each one
/// (with its index): the one walk of an array's text, for printing and fingerprinting.
fn each_item<'a>(
    c: &mut Cursor<'a>,
    mut item: impl FnMut(usize, &mut Cursor<'a>) -> Option<()>,
) -> Option<()> {
    if c.eat(b']') {
        return Some(());
    }
    for i in 0.. {
        item(i, c)?;
        if c.eat(b']') {
            break;
        }
        if !c.eat(b',') {
            return None;
        }
    }
    Some(())
}

/// Reads an object's members after its `{` (through its `}`), `member` reading each
/// value after its key.
fn each_member<'a>(
    c: &mut Cursor<'a>,
    mut member: impl FnMut(Cow<'a, str>, &mut Cursor<'a>) -> Option<()>,
) -> Option<()> {
    if c.eat(b'}') {
        return Some(());
    }
    loop {
        let key = c.key()?;
        member(key, c)?;
        if c.eat(b'}') {
            return Some(());
        }
        if !c.eat(b',') {
            return None;
        }
    }
}

/// A hash of the forms both [`JCS`] and the seed's `json.dumps` style print for a JSON
/// text, computed from the text in one pass without printing it, and whether a number
/// in it is written as a float (as [`print_text`] says).
///
/// Equal forms in either style have equal fingerprints, so different fingerprints
/// prove different forms and a text can be told apart from others without printing
/// it; equal fingerprints prove nothing (two texts are then printed and compared: a
/// hash is never trusted for equality). Why equal forms hash alike: strings are hashed
/// by their decoded content (both styles escape alike, and injectively); an object's
/// members are folded in commutatively (both styles sort keys, in different orders);
/// and a number is hashed by its nearest double, with -0 taken as 0: numbers RFC 8785
/// prints alike denote one double (its form is the double's shortest form, or the
/// exact value), and so do numbers `json.dumps` prints alike (an int's digits, a
/// float's double). A fingerprint is coarser than either equality (`1.0` and `1`, or
/// `1e400` and `2e400`, hash alike), never finer.
///
/// Printing a form again gives its fingerprint too (a printed number reads back as the
/// same double), which is how [`crate::task`] fingerprints keys it was handed printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// The hash of the form.
    pub(crate) hash: u64,
    /// Whether a number in the text is written as a float.
    pub(crate) float: bool,
}

/// The [`Fingerprint`] of JSON text; None for text that is not one JSON value, nests
/// deeper than the reader reads, or writes a key twice in one object (each printer
/// keeps the last value, which a commutative fold cannot tell): such text is printed
/// instead.
pub(crate) fn fingerprint(text: &str) -> Option<Fingerprint> {
    let mut c = Cursor::of_str(text);
    let (_, f) = checked_fingerprint(&mut c, 0, |_| {})?;
    if c.at_end() { f } else { None }
}

/// The next value's text, checked as [`Cursor::raw`] checks it (at nesting `depth` of
/// the whole document), with its [`Fingerprint`] computed in the same pass: a result
/// is read once, not once to check it and again to fingerprint it. When the value is an
/// object, `top_key` is told each of its own keys (not those of values inside it),
/// decoded, however they were escaped.
pub(crate) fn checked_fingerprint<'a>(
    c: &mut Cursor<'a>,
    depth: usize,
    top_key: impl FnMut(&str),
) -> Option<(&'a str, Option<Fingerprint>)> {
    let mut f = TopKeys {
        inner: Fingerprinter::new(),
        open: 0,
        top_key,
    };
    let (text, hash) = c.walk(depth, &mut f)?;
    Some((text, f.inner.fingerprint(hash)))
}

/// A [`Fingerprinter`] that also tells `top_key` the keys of the outermost value.
struct TopKeys<F> {
    inner: Fingerprinter,
    /// Arrays and objects open: the outermost value's keys come at one.
    open: usize,
    top_key: F,
}

impl<F: FnMut(&str)> Walk for TopKeys<F> {
    type Out = u64;
    type Open = OpenValue;
    const DECODES: bool = true;
    fn null(&mut self) -> u64 {
        self.inner.null()
    }
    fn boolean(&mut self, b: bool) -> u64 {
        self.inner.boolean(b)
    }
    fn number(&mut self, lexeme: &str) -> u64 {
        self.inner.number(lexeme)
    }
    fn string(&mut self, s: &str) -> u64 {
        self.inner.string(s)
    }
    fn open(&mut self, object: bool) -> OpenValue {
        self.open += 1;
        self.inner.open(object)
    }
    fn key(&mut self, open: &mut OpenValue, key: &str) {
        if self.open == 1 {
            (self.top_key)(key);
        }
        self.inner.key(open, key);
    }
    fn item(&mut self, open: &mut OpenValue, v: u64) {
        self.inner.item(open, v);
    }
    fn close(&mut self, open: OpenValue) -> u64 {
        self.open -= 1;
        self.inner.close(open)
    }
}

struct Fingerprinter {
    float: bool,
    /// Whether an object of a text wrote a key twice (its text then has no fingerprint).
    twice: bool,
    /// The key hashes of the objects being read, innermost last, to find a key written
    /// twice. Kept on the stack up to [`KEYS`] of them: an allocation per text or value
    /// fingerprinted cost more than the hashing of most of them.
    keys: smallvec::SmallVec<[u64; KEYS]>,
}

/// Object keys a [`Fingerprinter`] holds without allocating: a result's objects have a
/// few each, an argument's fewer.
const KEYS: usize = 2 * SHORT_OBJECT;

/// Members up to which an object's keys are checked for one written twice as they are
/// read, each against those before it (results are mostly short objects).
const SHORT_OBJECT: usize = 16;

/// Starting values that keep the kinds of value apart.
const NULL: u64 = 0x9e37_79b9_7f4a_7c15;
const BOOL: u64 = 0xc2b2_ae3d_27d4_eb4f;
const NUMBER: u64 = 0x1656_67b1_9e37_79f9;
const STRING: u64 = 0x85eb_ca77_c2b2_ae63;
const ARRAY: u64 = 0x27d4_eb2f_1656_67c5;
const OBJECT: u64 = 0x94d0_49bb_1331_11eb;

/// An array or object of a text being fingerprinted.
struct OpenValue {
    /// An array's fold so far; an object's last key's hash.
    hash: u64,
    /// The object, None for an array.
    object: Option<OpenObject>,
}

/// A fingerprint, folded as the reader walks a text or [`walk_value`] a tree: one fold
/// for both, so a tree and any text that reads as it fingerprint alike.
impl Walk for Fingerprinter {
    type Out = u64;
    type Open = OpenValue;
    const DECODES: bool = true;
    fn null(&mut self) -> u64 {
        NULL
    }
    fn boolean(&mut self, b: bool) -> u64 {
        mix(BOOL, u64::from(b))
    }
    fn number(&mut self, lexeme: &str) -> u64 {
        self.number_hash(lexeme)
    }
    fn string(&mut self, s: &str) -> u64 {
        hash_bytes(STRING, s.as_bytes())
    }
    fn open(&mut self, object: bool) -> OpenValue {
        OpenValue {
            hash: ARRAY,
            object: object.then(|| self.open_object()),
        }
    }
    fn key(&mut self, open: &mut OpenValue, key: &str) {
        if let Some(o) = &mut open.object {
            open.hash = self.object_key(o, key);
        }
    }
    fn item(&mut self, open: &mut OpenValue, v: u64) {
        match &mut open.object {
            Some(o) => o.sum = o.sum.wrapping_add(mix(open.hash, v)),
            None => open.hash = mix(open.hash, v),
        }
    }
    fn close(&mut self, open: OpenValue) -> u64 {
        let Some(o) = open.object else {
            return open.hash;
        };
        self.close_object(o).unwrap_or_else(|| {
            self.twice = true;
            0
        })
    }
}

impl Fingerprinter {
    fn new() -> Self {
        Fingerprinter {
            float: false,
            twice: false,
            keys: smallvec::SmallVec::new(),
        }
    }

    /// The fingerprint of what was walked to `hash`: none when a key came twice.
    fn fingerprint(&self, hash: u64) -> Option<Fingerprint> {
        (!self.twice).then_some(Fingerprint {
            hash,
            float: self.float,
        })
    }

    fn number_hash(&mut self, lex: &str) -> u64 {
        self.float |= Number::float_lexeme(lex);
        mix(NUMBER, double_bits(lex))
    }

    /// An object begun: its members are folded into it as they come.
    fn open_object(&self) -> OpenObject {
        OpenObject {
            start: self.keys.len(),
            sum: 0,
            twice: false,
        }
    }

    /// A member's key, noted in `o`; its hash, for folding in the member's value.
    fn object_key(&mut self, o: &mut OpenObject, key: &str) -> u64 {
        let k = hash_bytes(STRING, key.as_bytes());
        // Keys that hash alike are taken for one key written twice; a short object is
        // checked as it is read, a long one sorted when it closes.
        let seen = &self.keys[o.start..];
        o.twice |= seen.len() < SHORT_OBJECT && seen.contains(&k);
        self.keys.push(k);
        k
    }

    /// The object's hash, None when a key was written twice.
    fn close_object(&mut self, mut o: OpenObject) -> Option<u64> {
        let keys = &mut self.keys[o.start..];
        let n = keys.len() as u64;
        if keys.len() > SHORT_OBJECT {
            keys.sort_unstable();
            o.twice |= keys.windows(2).any(|w| w[0] == w[1]);
        }
        self.keys.truncate(o.start);
        (!o.twice).then(|| mix(OBJECT ^ n, o.sum))
    }
}

/// An object being fingerprinted: where its keys start on the stack, the fold of its
/// members so far, and whether a key came twice.
struct OpenObject {
    start: usize,
    sum: u64,
    twice: bool,
}

/// The [`Fingerprint`] of a value: the one [`fingerprint`] gives any text that reads as
/// it, computed from the tree without printing it. None where the text's would be none
/// (a key written twice, keys that hash alike, nesting past the reader's depth).
pub(crate) fn fingerprint_value(v: &Value) -> Option<Fingerprint> {
    let mut f = Fingerprinter::new();
    let hash = walk_value(v, 0, &mut f)?;
    f.fingerprint(hash)
}

/// A call's key: the RFC 8785 form of `{"arguments": args, "tool": tool}`, with
/// `"violates": true` for arguments that break the schema, which keeps them apart from
/// every canonical form.
pub(crate) fn call_key(tool: &str, args: &Value, violates: bool) -> String {
    let mut key = String::with_capacity(96);
    key.push_str("{\"arguments\":");
    write(args, &mut key);
    key.push_str(",\"tool\":");
    write_string(tool, &mut key);
    if violates {
        key.push_str(",\"violates\":true");
    }
    key.push('}');
    key
}

/// The [`Fingerprint`] of a call's key ([`call_key`], not violating): the object's,
/// folded from its two members as [`fingerprint`] folds the printed key.
pub(crate) fn fingerprint_call(tool: &str, args: &Value) -> Option<Fingerprint> {
    let mut f = Fingerprinter::new();
    let mut call = f.open(true);
    f.key(&mut call, "arguments");
    let args = walk_value(args, 1, &mut f)?;
    f.item(&mut call, args);
    f.key(&mut call, "tool");
    let tool = f.string(tool);
    f.item(&mut call, tool);
    let hash = f.close(call);
    f.fingerprint(hash)
}

/// The bits of a number lexeme's nearest double, -0 as 0; an integer that an `i64`
/// holds is converted without parsing a float (`as` rounds to nearest, ties to even,
/// as the parser does).
fn double_bits(lex: &str) -> u64 {
    let b = lex.as_bytes();
    let negative = b.first() == Some(&b'-');
    let digits = &b[usize::from(negative)..];
    let f = if digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
        let n = digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        (if negative { -n } else { n }) as f64
    } else {
        Number::f64_of_lexeme(lex)
    };
    // Adding +0 turns -0 into +0 and leaves every other double as it is.
    (f + 0.0).to_bits()
}

/// A folded 128-bit multiply: every bit of either input reaches the result.
fn mix(a: u64, b: u64) -> u64 {
    let p = u128::from(a ^ 0x243f_6a88_85a3_08d3) * u128::from(b ^ 0x1319_8a2e_0370_7344);
    (p as u64) ^ ((p >> 64) as u64)
}

/// A hash of the bytes of a `kind` of value, eight at a time, their length included.
fn hash_bytes(kind: u64, bytes: &[u8]) -> u64 {
    let mut h = mix(kind, bytes.len() as u64);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = mix(h ^ u64::from_le_bytes(word), NULL);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(word), NULL);
    }
    h
}

impl std::fmt::Display for Value {
    /// Writes the RFC 8785 canonical form.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_string(self))
    }
}

/// One step of a `$.a.b["odd key"]` path: `.name` for plain identifiers, else a
/// bracketed JSON string, so every path plangate prints reads the same way.
pub fn path_member(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 4);
    push_member(&mut s, name);
    s
}

/// Whether a member's name prints as `.name` in a path, not as `["name"]`.
pub(crate) fn plain_member(name: &str) -> bool {
    // Bytes, not chars: a byte of a character past ASCII is never alphanumeric ASCII.
    !name.is_empty()
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Appends [`path_member`]'s step.
pub(crate) fn push_member(path: &mut String, name: &str) {
    if plain_member(name) {
        path.push('.');
        path.push_str(name);
    } else {
        path.push('[');
        write_string(name, path);
        path.push(']');
    }
}

/// An xorshift generator of numbers below `n`, started from `rng_seed`, for the gate's
/// tests that draw many cases reproducibly without a property-testing harness.
#[cfg(test)]
pub(crate) fn xorshift(rng_seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = rng_seed;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value's fingerprint is the one of any text that reads as it, key order,
    /// escapes and number spellings aside; none where the text's is none.
    #[test]
    fn values_fingerprint_as_their_texts() {
        let texts = [
            r#"{"a":1,"b":[true,null,"x"],"c":{"d":-0.0}}"#,
            r#"{"c":{"d":0},"b":[true,null,"\u0078"],"a":1.0}"#,
            r#"[1e400,2e400,10e-1,1,"\ud83d\ude00"]"#,
            r#"{"a":{"a":{"a":[]}}}"#,
            r#""a string""#,
            "12345678901234567890",
        ];
        let read = |t: &str| crate::json::parse_str_with(t, crate::json::Duplicates::Flag);
        let hash = |f: Option<Fingerprint>| f.map(|f| f.hash);
        for t in texts {
            let v = read(t).unwrap();
            assert_eq!(fingerprint_value(&v), fingerprint(t), "{t}");
            // Its print hashes alike (its float flag is the print's own: `-0.0` prints
            // as `0`).
            assert_eq!(
                hash(fingerprint_value(&v)),
                hash(fingerprint(&to_string(&v))),
                "{t}"
            );
        }
        // A call's key hashes as its printed text.
        for t in &texts[..4] {
            let v = read(t).unwrap();
            let key = call_key("w\u{e9}\"", &v, false);
            assert_eq!(
                hash(fingerprint_call("w\u{e9}\"", &v)),
                hash(fingerprint(&key)),
                "{key}"
            );
        }
        // A key written twice: the text has no fingerprint, the value read from it
        // keeps the last and has that one's.
        assert_eq!(fingerprint(r#"{"a":1,"a":2}"#), None);
        let v = read(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(fingerprint_value(&v), fingerprint(r#"{"a":2}"#));
        assert!(fingerprint_value(&crate::json::parse(r#"{"a":1}"#).unwrap()).is_some());
        assert_ne!(
            fingerprint_value(&crate::json::parse("[1,2]").unwrap()),
            fingerprint_value(&crate::json::parse("[2,1]").unwrap())
        );
        // Nesting: a tree has a fingerprint exactly as deep as the reader reads text.
        for n in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
            let tree = (0..n).fold(Value::Null, |v, _| Value::Array(vec![v]));
            let text = format!("{}null{}", "[".repeat(n), "]".repeat(n));
            assert_eq!(fingerprint_value(&tree), fingerprint(&text), "{n} deep");
            assert_eq!(
                fingerprint_value(&tree).is_some(),
                n <= MAX_DEPTH,
                "{n} deep"
            );
        }
    }

    /// A result is checked and fingerprinted in one walk: it reads what `Cursor::raw`
    /// reads, to the same nesting bound, and a key written twice anywhere in it leaves
    /// it read, with no fingerprint, the walk going on past that object.
    #[test]
    fn a_checked_text_is_fingerprinted_on_the_way() {
        fn read(t: &str) -> Option<(&str, Option<Fingerprint>)> {
            let mut c = Cursor::of_str(t);
            checked_fingerprint(&mut c, 5, |_| {}).filter(|_| c.at_end())
        }
        let raw = |t: &str| {
            let mut c = Cursor::of_str(t);
            c.raw(5).filter(|_| c.at_end()).is_some()
        };
        let deep = |n| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for t in [
            r#"{"a":1,"b":[true,null,"x\u00e9"],"c":{"d":-0.0}}"#.to_string(),
            r#"{"a":{"b":1,"b":2},"c":[1,2]}"#.to_string(),
            r#"[{"a":1,"a":1},{"a":[1,}]"#.to_string(),
            r#"{"a":1,"a":2} x"#.to_string(),
            deep(MAX_DEPTH - 5),
            deep(MAX_DEPTH - 4),
        ] {
            assert_eq!(
                read(&t).map(|(text, _)| text),
                raw(&t).then_some(&*t),
                "{t}"
            );
        }
        let (_, f) = read(r#"{"a":{"b":1,"b":2},"c":[1,2]}"#).unwrap();
        assert_eq!(f, None, "a key written twice, deep in the text");
        let t = r#"{"c":[1,2],"a":{"b":"\u0078"}}"#;
        let v = crate::json::parse(t).unwrap();
        assert_eq!(read(t).unwrap().1, fingerprint_value(&v));
    }

    #[test]
    fn integers_write_as_display_writes_them() {
        for n in (0..1000).chain([usize::MAX, usize::MAX / 10, 1 << 40]) {
            let mut out = String::from("x");
            write_usize(n, &mut out);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn members_print_in_one_order_whatever_order_they_came_in() {
        let keys = ["", "a", "aa", "b", "\u{e000}", "\u{1F600}"];
        // RFC 8785's order: UTF-16 code units put U+1F600 (a surrogate pair) before U+E000.
        let want = "{\"\":0,\"a\":1,\"aa\":2,\"b\":3,\"\u{1F600}\":5,\"\u{e000}\":4}";
        let mut order: Vec<usize> = (0..keys.len()).collect();
        // Every rotation and its reverse: sorted, reversed, and orders sorted in parts.
        for _ in 0..keys.len() {
            order.rotate_left(1);
            for reversed in [false, true] {
                let mut o: Vec<usize> = order.clone();
                if reversed {
                    o.reverse();
                }
                let members: Vec<String> =
                    o.iter().map(|&k| format!("\"{}\":{k}", keys[k])).collect();
                let text = format!("{{{}}}", members.join(","));
                assert_eq!(to_string(&parse(&text).unwrap()), want, "{text}");
            }
        }
    }
    use crate::json::parse;

    /// Huge exponents that the reader keeps exactly print canonically and read back the
    /// same.
    #[test]
    fn huge_exponents_print_as_a_fixed_point() {
        for ok in [
            "1.1e999999999",
            "11000e999999995",
            "0.0011e1000000002",
            "0e99999999999",
        ] {
            let c = to_string(&parse(ok).unwrap());
            assert_eq!(to_string(&parse(&c).unwrap()), c, "{ok}");
        }
    }

    fn canon(s: &str) -> String {
        to_string(&parse(s).unwrap())
    }

    #[test]
    fn numbers_follow_ecmascript() {
        assert_eq!(canon("1.0"), "1");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("1E30"), "1e+30");
        assert_eq!(canon("1e21"), "1e+21");
        assert_eq!(canon("1e20"), "100000000000000000000");
        assert_eq!(canon("0.000001"), "0.000001");
        assert_eq!(canon("1e-7"), "1e-7");
        assert_eq!(canon("333333333.33333329"), "333333333.3333333");
    }

    #[test]
    fn integers_past_two_to_the_53_stay_distinct() {
        assert_eq!(canon("9007199254740993"), "9007199254740993");
        assert_eq!(canon("9007199254740992"), "9007199254740992");
        assert_eq!(canon("9007199254740993.0"), "9007199254740993");
        assert_eq!(
            canon("123456789012345678901234567890"),
            "1.2345678901234567890123456789e+29"
        );
        assert_ne!(canon("1e400"), canon("1e401"));
        assert_ne!(canon("1e-400"), canon("0"));
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+1F600 (surrogates D83D DE00) sorts before U+E000 in UTF-16, after it in code points.
        assert_eq!(
            canon("{\"\u{E000}\":2,\"\u{1F600}\":1,\"a\":3}"),
            "{\"a\":3,\"\u{1F600}\":1,\"\u{E000}\":2}"
        );
    }

    /// Every pair of short keys over characters of each UTF-8 length (and the two ranges
    /// whose UTF-16 order is not their code point order) compares as their code units.
    #[test]
    fn key_order_is_utf16_order() {
        let chars = [
            'a',
            'z',
            '\u{e9}',
            '\u{7ff}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{1F600}',
            '\u{10000}',
        ];
        let mut keys = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = keys
                .iter()
                .flat_map(|k| chars.iter().map(move |c| format!("{k}{c}")))
                .collect();
            keys.extend(longer);
        }
        keys.sort();
        keys.dedup();
        for a in &keys {
            for b in &keys {
                assert_eq!(
                    utf16_cmp(a, b),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    /// The short path prints what the general one prints, on lexemes of every shape:
    /// leading, inner and trailing zeros, fractions, exponents, signs, every length
    /// around the 15-digit bound and every point position around the fixed range.
    #[test]
    fn short_numbers_print_as_the_general_path() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut short = 0;
        for _ in 0..200_000 {
            let mut lex = String::new();
            if next(2) == 0 {
                lex.push('-');
            }
            let int_len = 1 + next(18) as usize;
            for k in 0..int_len {
                let d = if k == 0 && int_len > 1 {
                    1 + next(9)
                } else {
                    next(10)
                };
                // Zeros are common in real numbers: give them a fair share.
                lex.push(char::from(b'0' + if next(3) == 0 { 0 } else { d as u8 }));
            }
            if lex.trim_start_matches('-').starts_with('0') && int_len > 1 {
                lex = lex.replacen('0', "1", 1);
            }
            if next(2) == 0 {
                lex.push('.');
                for _ in 0..1 + next(18) {
                    lex.push(char::from(
                        b'0' + if next(3) == 0 { 0 } else { next(10) as u8 },
                    ));
                }
            }
            if next(3) == 0 {
                lex.push(['e', 'E'][next(2) as usize]);
                lex.push_str(["", "+", "-"][next(3) as usize]);
                lex.push_str(&next(30).to_string());
            }
            assert!(parse(&lex).is_ok(), "{lex}");
            let (mut a, mut b) = (String::new(), String::new());
            if write_short(&lex, &mut a) {
                short += 1;
                write_general(&lex, &mut b);
                assert_eq!(a, b, "{lex}");
            } else {
                assert!(a.is_empty(), "{lex}");
            }
        }
        assert!(short > 50_000, "only {short} lexemes took the short path");
    }

    #[test]
    fn minimal_escapes() {
        assert_eq!(canon(r#""\u0041\u000f\/\u20ac""#), "\"A\\u000f/€\"");
    }
}
