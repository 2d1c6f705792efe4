//! The byte-level reader both entry points share: `parse` builds a tree with it, and
//! `Cursor` walks text with it unbuilt, so the two check a document alike.

use std::borrow::Cow;

use super::walk::Walk;
use super::{
    Duplicates, JsonErrorKind, MAX_DEPTH, MAX_EXPONENT, Number, Object, Value, decimal_of,
};

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

type PResult<T> = Result<T, (usize, JsonErrorKind)>;

/// Members past which a reader looks keys up in an index instead of scanning.
const INDEX_FROM: usize = 32;

pub(super) struct Parser<'a> {
    /// The input as text, so a checked run is sliced out without a second UTF-8 check.
    pub(super) t: &'a str,
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    duplicates: Duplicates,
}

impl<'a> Parser<'a> {
    pub(super) fn new(t: &'a str, duplicates: Duplicates) -> Self {
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

    pub(super) fn ws(&mut self) {
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

    pub(super) fn literal(&mut self, word: &[u8], v: Value) -> PResult<Value> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.unexpected())
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> PResult<Value> {
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
    pub(super) fn check_number(&mut self) -> PResult<()> {
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
    pub(super) fn walk<W: Walk>(&mut self, depth: usize, w: &mut W) -> PResult<W::Out> {
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
        // Not through `Parser::text`: handing the run over without a `Cow` makes a
        // result's walk measurably cheaper.
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
    /// which made building a tree measurably slower.
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
    pub(super) fn text(&mut self) -> PResult<Cow<'a, str>> {
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
    /// from one word without the general scan's setup (keys are much of what a
    /// line is). None, moving nowhere, for any other key.
    #[inline]
    pub(super) fn short_key(&mut self) -> Option<&'a str> {
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
pub(super) struct Discard;

impl Text for Discard {
    fn push_run(&mut self, _: &str) {}
    fn push(&mut self, _: char) {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::skip_agrees;
    use crate::json::{JsonErrorKind, parse, parse_with};

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

    /// A saturated exponent would break the canonical fixed point
    /// (1.1e+2305843009213693952 reading back as ...951).
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
