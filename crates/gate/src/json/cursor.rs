//! Reading a document part by part instead of building it: a task line keeps its results
//! as checked text, and `jcs` fingerprints a result in the pass that checks it.

use std::borrow::Cow;

use super::parser::{Discard, Parser};
use super::walk::Walk;
use super::{Duplicates, Value, utf8};

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
