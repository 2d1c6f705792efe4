//! Exact agreement arithmetic: thresholds are decimal fractions and agreements are counts
//! over N, so "4 of 5 is 0.80, and 0.80 accepts" holds without floating-point luck.

use std::fmt;
use std::str::FromStr;

/// A threshold written as a decimal (`0.80`), held exactly as `num / den`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    num: u64,
    den: u64,
}

/// A threshold that is not a decimal between 0 and 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a decimal between 0 and 1 such as 0.80, found {0:?}")]
pub struct RatioError(pub String);

impl FromStr for Ratio {
    type Err = RatioError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || RatioError(s.to_string());
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
            || frac.len() > 9
        {
            return Err(bad());
        }
        let den = 10u64.pow(frac.len() as u32);
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let frac_v: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        let num = int
            .checked_mul(den)
            .and_then(|v| v.checked_add(frac_v))
            .ok_or_else(bad)?;
        if num > den {
            return Err(bad());
        }
        Ok(Ratio { num, den })
    }
}

impl Ratio {
    /// Whether `self > other`, exactly.
    pub fn exceeds(self, other: Ratio) -> bool {
        (self.num as u128) * (other.den as u128) > (other.num as u128) * (self.den as u128)
    }

    /// Whether `count / n >= self`, exactly.
    pub fn met_by(self, count: usize, n: usize) -> bool {
        (count as u128) * (self.den as u128) >= (self.num as u128) * (n as u128)
    }
    /// Whether `count / n < self`, exactly.
    pub fn missed_by(self, count: usize, n: usize) -> bool {
        !self.met_by(count, n)
    }
    /// The two thresholds' values compared, exactly (`0.8` and `0.80` are equal).
    pub fn cmp_value(self, other: Ratio) -> std::cmp::Ordering {
        ((self.num as u128) * (other.den as u128)).cmp(&((other.num as u128) * (self.den as u128)))
    }
    /// The decimal it was written as (trailing zeros aside), exactly: parsing it
    /// gives the same threshold back.
    pub fn decimal(self) -> String {
        let digits = self.den.ilog10() as usize;
        let (int, frac) = (self.num / self.den, self.num % self.den);
        if digits == 0 {
            return int.to_string();
        }
        format!("{int}.{frac:0digits$}")
    }
    /// The nearest double, for display.
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// Written as the decimal it was read from ([`Ratio::decimal`]), which reads back as
/// the same threshold.
impl serde::Serialize for Ratio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.decimal())
    }
}

impl<'de> serde::Deserialize<'de> for Ratio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// As [`Ratio::as_f64`] displays, written from the digits: explanations print
/// thresholds several times a task, and a double's shortest form costs far more than
/// copying digits. A decimal of at most ten significant digits is what its nearest
/// double prints as (a double keeps 15), less trailing zeros.
impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.digits(&mut [0; 32]))
    }
}

impl Ratio {
    /// Appends what [`Display`](fmt::Display) writes, without the formatting machinery.
    pub fn write_to(self, o: &mut String) {
        o.push_str(self.digits(&mut [0; 32]));
    }

    /// The displayed text, written from the right into `buf`: at most 9 fraction digits,
    /// the point, 20 integer ones.
    fn digits(self, buf: &mut [u8; 32]) -> &str {
        let mut digits = self.den.ilog10();
        let (int, mut frac) = (self.num / self.den, self.num % self.den);
        while digits > 0 && frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        let mut at = buf.len();
        for _ in 0..digits {
            at -= 1;
            buf[at] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        if digits > 0 {
            at -= 1;
            buf[at] = b'.';
        }
        let at = crate::jcs::digits_before(int, buf, at);
        // Only ASCII digits and a point were written.
        std::str::from_utf8(&buf[at..]).unwrap_or("?")
    }
}

/// The 95% Wilson score interval for `count` successes in `n` trials: unlike the normal
/// approximation it stays inside [0, 1] and is honest at the small N plans are sampled at.
pub fn wilson(count: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let nf = n as f64;
    let p = count as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = z * ((p * (1.0 - p) / nf) + z2 / (4.0 * nf * nf)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_ratio_prints_as_the_decimal_it_reads_from() {
        for text in ["0.80", "0.2", "1", "0", "0.000000001", "1.0", "0.333333333"] {
            let r: Ratio = text.parse().unwrap();
            assert_eq!(r.decimal(), text);
            assert_eq!(r.decimal().parse::<Ratio>().unwrap(), r);
        }
    }

    use super::*;

    #[test]
    fn a_ratio_displays_as_its_double_does() {
        let check = |text: String| {
            let r: Ratio = text.parse().unwrap();
            assert_eq!(r.to_string(), r.as_f64().to_string(), "{text}");
            let mut pushed = String::from("x");
            r.write_to(&mut pushed);
            assert_eq!(pushed, format!("x{r}"));
        };
        for digits in 0..=3 {
            let den = 10u64.pow(digits);
            for num in 0..=den {
                let (int, frac) = (num / den, num % den);
                check(match digits {
                    0 => int.to_string(),
                    d => format!("{int}.{frac:0d$}", d = d as usize),
                });
            }
        }
        // Ten significant digits, and runs of zeros and nines, at every length.
        for digits in 4..=9usize {
            for frac in [
                1,
                7,
                10,
                99,
                123_456_789 % 10u64.pow(digits as u32),
                10u64.pow(digits as u32) - 1,
            ] {
                check(format!("0.{frac:0digits$}"));
            }
            check(format!("1.{:0digits$}", 0));
        }
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(format!("0.{:09}", x % 1_000_000_000));
        }
    }

    #[test]
    fn thresholds_compare_exactly() {
        let t: Ratio = "0.80".parse().unwrap();
        assert!(t.met_by(4, 5));
        assert!(!t.met_by(7, 9));
        assert!(t.met_by(8, 10));
        let r: Ratio = "0.2".parse().unwrap();
        assert!(!r.missed_by(1, 5), "1/5 is not below 0.20");
        assert!(r.missed_by(1, 6));
        for bad in ["", ".", "1.5", "-0.1", "abc", "0.1234567891"] {
            assert!(bad.parse::<Ratio>().is_err(), "{bad}");
        }
    }

    #[test]
    fn thresholds_compare_by_value_and_serialize_as_written() {
        let at = |t: &str| t.parse::<Ratio>().unwrap();
        assert_eq!(at("0.8").cmp_value(at("0.80")), std::cmp::Ordering::Equal);
        assert_eq!(at("0.05").cmp_value(at("0.1")), std::cmp::Ordering::Less);
        assert_eq!(serde_json::to_string(&at("0.80")).unwrap(), "\"0.80\"");
        let back: Ratio = serde_json::from_str("\"0.80\"").unwrap();
        assert_eq!(back, at("0.80"));
        assert!(serde_json::from_str::<Ratio>("\"1.5\"").is_err());
    }

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = wilson(8, 10);
        assert!(lo < 0.8 && 0.8 < hi);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        let (lo, hi) = wilson(5, 5);
        assert!(hi <= 1.0 && lo > 0.5);
    }
}
