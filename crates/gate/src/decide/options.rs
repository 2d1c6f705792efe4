//! What a run is classified with besides the tasks: the thresholds, and which rule
//! applies. Kept apart so a caller can check them once, before any task is read.

use crate::stats::Ratio;

/// The thresholds of docs/design.md, "Decision".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Argument agreement at or above which a plan can be accepted.
    pub arg_accept: Ratio,
    /// Argument agreement below which a plan can be rejected.
    pub arg_reject: Ratio,
    /// Result agreement at or above which an agreeing plan is accepted.
    pub result_accept: Ratio,
    /// Result agreement below which the tool, not the plan, is suspect.
    pub result_suspect: Ratio,
    /// Fewest samples a verdict other than defer needs.
    pub min_samples: usize,
    /// Which decision boundary applies.
    pub rule: Rule,
}

/// Two thresholds out of order: `lower` must be at most `upper`, or a region of the
/// rule is turned inside out (`result_suspect` 0.9 over `result_accept` 0.1 accepts
/// what the defaults defer as `tool_suspect`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{lower} {lower_value} is above {upper} {upper_value}: {lower} must be at most {upper}")]
pub struct InvertedThresholds {
    /// The threshold that must be the smaller (`arg_reject`, `result_suspect`).
    pub lower: &'static str,
    /// Its value.
    pub lower_value: Ratio,
    /// The threshold that must be the larger (`arg_accept`, `result_accept`).
    pub upper: &'static str,
    /// Its value.
    pub upper_value: Ratio,
}

impl Options {
    /// Refuses thresholds out of order: `arg_reject <= arg_accept` and
    /// `result_suspect <= result_accept`. Every ratio is already in [0, 1] (a [`Ratio`]
    /// cannot be anything else).
    pub fn check(&self) -> Result<(), InvertedThresholds> {
        for (lower, lower_value, upper, upper_value) in [
            ("arg_reject", self.arg_reject, "arg_accept", self.arg_accept),
            (
                "result_suspect",
                self.result_suspect,
                "result_accept",
                self.result_accept,
            ),
        ] {
            if lower_value.exceeds(upper_value) {
                return Err(InvertedThresholds {
                    lower,
                    lower_value,
                    upper,
                    upper_value,
                });
            }
        }
        Ok(())
    }
}

/// The decision boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rule {
    /// The seed's boundary with what real data showed it needs: a reject needs a located
    /// fabrication, an agreeing plan can still miss its references, and a modal plan
    /// that breaks its schema defers.
    #[default]
    Gate,
    /// The seed's boundary alone, on canonical arguments: kept to measure what the
    /// additions change (the demo's "seed's rule" column). `--seed-compat` is another
    /// thing: the seed's own code, errors included.
    Seed,
}

impl Default for Options {
    fn default() -> Self {
        let r = |s: &str| s.parse::<Ratio>().expect("default thresholds are valid");
        Options {
            arg_accept: r("0.80"),
            arg_reject: r("0.20"),
            result_accept: r("0.80"),
            result_suspect: r("0.50"),
            min_samples: 5,
            rule: Rule::Gate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_out_of_order_are_refused_naming_both() {
        let r = |s: &str| s.parse::<Ratio>().unwrap();
        assert_eq!(Options::default().check(), Ok(()));
        let equal = Options {
            arg_reject: r("0.5"),
            arg_accept: r("0.50"),
            ..Options::default()
        };
        assert_eq!(equal.check(), Ok(()));
        let args = Options {
            arg_reject: r("0.9"),
            arg_accept: r("0.1"),
            ..Options::default()
        };
        let e = args.check().unwrap_err();
        assert_eq!((e.lower, e.upper), ("arg_reject", "arg_accept"));
        assert_eq!(
            e.to_string(),
            "arg_reject 0.9 is above arg_accept 0.1: arg_reject must be at most arg_accept"
        );
        let results = Options {
            result_suspect: r("0.9"),
            result_accept: r("0.1"),
            ..Options::default()
        };
        assert_eq!(results.check().unwrap_err().lower, "result_suspect");
    }
}
