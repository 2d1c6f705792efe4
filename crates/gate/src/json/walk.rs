//! A value told part by part, in order, whether read from text (`Cursor::walk`, with the
//! parser) or from a tree ([`walk_value`]): the one interface both readers tell, kept
//! below them both.

use super::{MAX_DEPTH, Value};

/// What [`Cursor::walk`](super::Cursor::walk) makes of a value as it checks it, told its parts in order:
/// nothing (`Discard`, the parser's), or a hash of it (`jcs`'s fingerprints, computed in the same
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
