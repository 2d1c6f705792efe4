//! Reading a document part by part instead of building it: a task line keeps its results
//! as checked text, and `jcs` fingerprints a result in the pass that checks it. `Walk` is
//! told a value's parts in order, whether read from text or from a tree.

use std::borrow::Cow;

use super::parser::{Discard, Parser};
use super::{Duplicates, MAX_DEPTH, Value, utf8};

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
    use crate::json::{Duplicates, MAX_DEPTH, parse_with};

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
}
