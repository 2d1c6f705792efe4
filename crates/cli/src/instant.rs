//! Reads `--instant`: an epoch's clock instant as RFC 3339 or as the nanoseconds an
//! epoch manifest records, so `plangate call` can reproduce another epoch's clock. No
//! date crate for one parser: the calendar arithmetic is a dozen lines.

/// Parses an instant given as Unix nanoseconds (`instant_unix_ns` in a manifest) or as
/// an RFC 3339 date-time (`2026-11-05T09:30:00Z`, `2026-11-05T10:30:00.5+01:00`).
pub(crate) fn parse_instant(s: &str) -> Result<u64, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map_err(|_| "more nanoseconds than an epoch instant holds (u64)".to_string());
    }
    let ns = rfc3339_ns(s.as_bytes()).ok_or_else(|| {
        "expected Unix nanoseconds or an RFC 3339 date-time such as 2026-11-05T09:30:00Z"
            .to_string()
    })?;
    u64::try_from(ns).map_err(|_| {
        "outside what an epoch instant holds (1970-01-01T00:00:00Z to 2554-07-21)".to_string()
    })
}

/// Nanoseconds since the Unix epoch of an RFC 3339 date-time, `None` for anything that
/// is not one (leap seconds included: the epoch's clock has none).
fn rfc3339_ns(b: &[u8]) -> Option<i128> {
    let num = |at: usize, len: usize| -> Option<i64> {
        let part = b.get(at..at + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let date_time = sep(4, b'-') && sep(7, b'-') && matches!(b.get(10), Some(b'T' | b't' | b' '));
    if !(date_time && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let days_in_month = match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    if !(1..=days_in_month).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut at = 19;
    let mut frac_ns = 0i128;
    if sep(at, b'.') {
        let digits = b[at + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if !(1..=9).contains(&digits) {
            return None;
        }
        let frac = num(at + 1, digits)?;
        frac_ns = i128::from(frac) * 10i128.pow(9 - digits as u32);
        at += 1 + digits;
    }
    let offset_s = match b.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(i128::from(secs) * 1_000_000_000 + frac_ns)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm, the
/// inverse of the one the seed world's tools print dates with).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_parse() {
        assert_eq!(
            parse_instant("1735689600000000000"),
            Ok(1_735_689_600_000_000_000)
        );
        assert_eq!(
            parse_instant("2025-01-01T00:00:00Z"),
            Ok(1_735_689_600_000_000_000)
        );
        assert_eq!(parse_instant("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            parse_instant("2000-02-29T00:00:00z"),
            Ok(951_782_400_000_000_000)
        );
        assert_eq!(
            parse_instant("2026-11-05T01:00:00.5+01:00"),
            Ok(1_793_836_800_500_000_000)
        );
        assert_eq!(
            parse_instant("2026-11-04T18:30:00.000000001-05:30"),
            Ok(1_793_836_800_000_000_001)
        );
        for bad in [
            "",
            "-1",
            "99999999999999999999",
            "2025-01-01",
            "2025-01-01T00:00:00",
            "2025-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-01-01T24:00:00Z",
            "2025-01-01T23:59:60Z",
            "2025-01-01T00:00:00.Z",
            "2025-01-01T00:00:00.1234567891Z",
            "2025-01-01T00:00:00+0100",
            "1969-12-31T23:59:59Z",
            "9999-01-01T00:00:00Z",
            "tomorrow",
        ] {
            assert!(parse_instant(bad).is_err(), "{bad}");
        }
    }
}
