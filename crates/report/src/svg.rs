//! The pieces plangate's plots are drawn with: the `<svg>` element, a legend, and axis
//! ticks that are round numbers. A page's own plot takes these too, so every plot reads
//! alike and is styled by the page's one stylesheet.

use std::fmt::Write as _;

use crate::html::escape;

/// Opens an `<svg>` of `w` by `ht` whose accessible name is `title` (escaped); the caller
/// closes it with `</svg>`.
pub fn open(s: &mut String, id: &str, title: &str, w: f64, ht: f64) {
    let _ = writeln!(
        s,
        "<svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-labelledby=\"{id}-title\">"
    );
    let _ = writeln!(s, "<title id=\"{id}-title\">{}</title>", escape(title));
}

/// A column of swatches from (`x`, `y`) down: each `(color, name, n)` is drawn as a
/// square of its color beside `name (n)`.
pub fn legend(s: &mut String, x: f64, y: f64, items: &[(&str, &str, u64)]) {
    for (i, (color, name, n)) in items.iter().enumerate() {
        let yy = y + 18.0 * i as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\">{} ({n})</text>",
            x + 18.0,
            yy + 10.5,
            escape(name)
        );
    }
}

/// A tick label with as few decimals as it needs (0, 0.1, 0.33, 1).
pub fn tick(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Round numbers for a count axis up to `max`: 1, 2 or 5 times a power of ten apart.
/// Returns the axis's top and its ticks from 0.
pub fn count_ticks(max: u64) -> (u64, Vec<u64>) {
    let max = max.max(1);
    let raw = max as f64 / 5.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow)
        .max(1.0) as u64;
    let top = max.div_ceil(step) * step;
    (top, (0..=top).step_by(step as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_ticks_cover_the_maximum_with_round_steps() {
        assert_eq!(count_ticks(0), (1, vec![0, 1]));
        assert_eq!(count_ticks(7), (8, vec![0, 2, 4, 6, 8]));
        let (top, ticks) = count_ticks(2613);
        assert!(top >= 2613 && ticks.len() <= 7, "{top} {ticks:?}");
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(1.0 / 3.0), "0.33");
    }
}
