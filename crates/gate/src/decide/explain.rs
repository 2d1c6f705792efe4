//! The sentences of a decision's explanations, written piece by piece: the rule writes
//! several for every task, and these stay cheaper than formatting each one.

use crate::jcs;
use crate::stats::Ratio;

/// An explanation, written piece by piece: `format!` costs far more than appending, and
/// a task explains itself two or three times.
pub(super) struct Sentence(String);

impl Sentence {
    pub(super) fn new(text: &str) -> Self {
        let mut s = String::with_capacity(text.len() + 96);
        s.push_str(text);
        Sentence(s)
    }
    pub(super) fn s(mut self, text: &str) -> Self {
        self.0.push_str(text);
        self
    }
    pub(super) fn n(mut self, v: usize) -> Self {
        jcs::write_usize(v, &mut self.0);
        self
    }
    /// `count/n`.
    pub(super) fn of(self, count: usize, n: usize) -> Self {
        self.n(count).s("/").n(n)
    }
    pub(super) fn ratio(mut self, r: Ratio) -> Self {
        r.write_to(&mut self.0);
        self
    }
    pub(super) fn done(self) -> String {
        self.0
    }
}

/// `1/n` to two places, as `{:.2}` writes it.
pub(super) fn one_in(n: usize) -> std::borrow::Cow<'static, str> {
    let two_places = |n: usize| format!("{:.2}", 1.0 / n as f64);
    match ONE_IN
        .get_or_init(|| (0..=ONE_IN_N).map(two_places).collect())
        .get(n)
    {
        Some(text) => text.into(),
        None => two_places(n).into(),
    }
}

/// Tool names as every sentence names them: `tool "a"`, or `tools "a", "b"`.
pub(super) fn quoted<S: AsRef<str>>(names: &[S]) -> String {
    let q: Vec<String> = names.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!(
        "{} {}",
        if q.len() == 1 { "tool" } else { "tools" },
        q.join(", ")
    )
}

/// Agreements of up to this many samples have `1/n` to two places in [`ONE_IN`].
const ONE_IN_N: usize = 64;
/// `1/n` to two places (`{:.2}`) for `n <= ONE_IN_N`, written once per process.
static ONE_IN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_n_reads_as_two_places_do() {
        for n in 1..=ONE_IN_N * 4 {
            assert_eq!(one_in(n), format!("{:.2}", 1.0 / n as f64), "1/{n}");
        }
        assert_eq!(one_in(8), "0.12", "a tie rounds as {{:.2}} rounds it");
    }

    #[test]
    fn a_sentence_writes_what_format_writes() {
        let r: Ratio = "0.80".parse().unwrap();
        let said = Sentence::new("a ")
            .of(4, 5)
            .s(" b ")
            .ratio(r)
            .n(12_345)
            .done();
        assert_eq!(said, format!("a 4/5 b {r}12345"));
        assert_eq!(said, "a 4/5 b 0.812345");
    }
}
