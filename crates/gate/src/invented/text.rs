//! The texts of a task's invented references, kept in one: a run lists thousands of
//! references, and a copy of each tool name, parameter, value and message was an
//! allocation and a free apiece. A text reads as the `str` it is, and is written and
//! read back as a plain string.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// A text of an invented reference: a part of a text shared by the references of one
/// task, or a whole one of its own (read back, or made by hand).
/// Sixteen bytes, so that the list of a task's references stays small.
#[derive(Clone)]
pub struct Text {
    all: Arc<String>,
    from: u32,
    to: u32,
}

impl Text {
    /// The part `span` of `all`, which starts and ends on character boundaries; its own
    /// copy past the 4 GiB a part can say.
    pub(crate) fn part(all: &Arc<String>, span: Range<usize>) -> Self {
        match (u32::try_from(span.start), u32::try_from(span.end)) {
            (Ok(from), Ok(to)) => Text {
                all: Arc::clone(all),
                from,
                to,
            },
            _ => Text::from(all.get(span).unwrap_or_default()),
        }
    }

    /// Whether `other` is this very part (not only the same text).
    pub(crate) fn same_part(&self, other: &Text) -> bool {
        Arc::ptr_eq(&self.all, &other.all) && (self.from, self.to) == (other.from, other.to)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        (self.all)
            .get(self.from as usize..self.to as usize)
            .unwrap_or_default()
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text::from(s.to_string())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        let len = s.len();
        Text::part(&Arc::new(s), 0..len)
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part reads, prints, compares and round-trips as the `str` it is.
    #[test]
    fn a_part_is_its_str() {
        let all = Arc::new("get_useru_9no \"u_9\"".to_string());
        let value = Text::part(&all, 8..11);
        assert_eq!(&*value, "u_9");
        assert_eq!(value, Text::from("u_9"));
        assert_ne!(value, Text::part(&all, 0..8));
        assert_eq!(
            format!("{value} {:?}", Text::part(&all, 11..19)),
            r#"u_9 "no \"u_9\"""#
        );
        let back: Text = serde_json::from_str(&serde_json::to_string(&value).unwrap()).unwrap();
        assert_eq!((back.as_str(), back.all.len()), ("u_9", 3));
    }
}
