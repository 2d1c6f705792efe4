//! RFC 8785 (JSON Canonicalization Scheme) serialization: the one byte form in which two
//! arguments are compared. Byte-exact on the RFC's vectors, with one deliberate
//! departure for integers a double cannot hold (see [`write_number`]).

use std::borrow::Cow;

use crate::json::{Cursor, Decimal, MAX_DEPTH, Number, Token, Value, decimal_of, plain_len};

/// The canonical form of `value`.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
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
            let mut members: Vec<(&String, &Value)> = o.iter().collect();
            members.sort_by(|a, b| utf16_cmp(a.0, b.0));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// Orders strings by their UTF-16 code units, as RFC 8785 section 3.2.3 requires (this
/// differs from byte or code point order for keys above U+FFFF).
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    // Keys are nearly always ASCII, where UTF-16 order is byte order; transcoding every
    // comparison was a measurable share of canonicalizing a task.
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Appends a string with RFC 8785's minimal escapes.
pub fn write_string(s: &str, out: &mut String) {
    // Copies runs of bytes that need no escape in one go, found eight bytes at a time:
    // results carry long strings (file contents). Every byte that needs an escape is
    // ASCII, so each cut is on a char boundary.
    out.reserve(s.len() + 2);
    out.push('"');
    let mut run = 0;
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
    out.push('"');
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
    // The common case without allocating: an integer of at most 15 digits is an exact
    // double, and its ECMAScript form is the digits as the JSON grammar wrote them
    // (no leading zeros); `-0` takes the general path.
    let digits = lex.strip_prefix('-').unwrap_or(lex);
    if (1..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
    {
        out.push_str(lex);
        return;
    }
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
            // Text without escapes has nothing to escape either.
            Token::String(Cow::Borrowed(s)) => {
                out.reserve(s.len() + 2);
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
            Token::String(s) => write_string(&s, out),
            Token::Array => self.array(c, depth)?,
            Token::Object => self.object(c, depth)?,
        }
        Some(())
    }

    fn array<'a>(&mut self, c: &mut Cursor<'a>, depth: usize) -> Option<()> {
        self.out.push('[');
        if !c.eat(b']') {
            loop {
                self.one(c, depth + 1)?;
                if c.eat(b']') {
                    break;
                }
                if !c.eat(b',') {
                    return None;
                }
                self.out.push(',');
            }
        }
        self.out.push(']');
        Some(())
    }

    /// Each value is printed where it falls, then the members are put in order.
    fn object<'a>(&mut self, c: &mut Cursor<'a>, depth: usize) -> Option<()> {
        let start = self.out.len();
        let mut members: Vec<(Cow<'a, str>, std::ops::Range<usize>)> = Vec::new();
        if !c.eat(b'}') {
            loop {
                let key = c.key()?;
                let at = self.out.len() - start;
                self.one(c, depth + 1)?;
                members.push((key, at..self.out.len() - start));
                if c.eat(b'}') {
                    break;
                }
                if !c.eat(b',') {
                    return None;
                }
            }
        }
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
            write_string(key, out);
            out.push(':');
            out.push_str(&values[range.clone()]);
        }
        out.push('}');
        Some(())
    }
}

impl std::fmt::Display for Value {
    /// Writes the RFC 8785 canonical form.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_string(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn minimal_escapes() {
        assert_eq!(canon(r#""\u0041\u000f\/\u20ac""#), "\"A\\u000f/€\"");
    }
}
