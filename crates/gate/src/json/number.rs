//! A number kept as written, and its exact value: agreement must tell apart integers a
//! double cannot, and canonical output needs the exact value to print any lexeme.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Value, parse};

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
}
