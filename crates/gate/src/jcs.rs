//! RFC 8785 (JSON Canonicalization Scheme) serialization: the one byte form in which two
//! arguments are compared. Byte-exact on the RFC's vectors, with one deliberate
//! departure for integers a double cannot hold (see [`write_number`]).

use crate::json::{Decimal, Number, Value, decimal_of};

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
    // Copies runs of bytes that need no escape in one go: results carry long strings
    // (file contents), and pushing them char by char dominated `plangate score`.
    // Every byte that needs an escape is ASCII, so each cut is on a char boundary.
    out.reserve(s.len() + 2);
    out.push('"');
    let mut run = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
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
    out.push_str(&s[run..]);
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
    // The common case without allocating: an integer of at most 15 digits is an exact
    // double, and its ECMAScript form is the digits as the JSON grammar wrote them
    // (no leading zeros); `-0` takes the general path.
    let lex = n.lexeme();
    let digits = lex.strip_prefix('-').unwrap_or(lex);
    if (1..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
    {
        out.push_str(lex);
        return;
    }
    let exact = n.decimal();
    if exact.is_zero() {
        out.push('0');
        return;
    }
    let f = n.as_f64();
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
