//! How well argument agreement tells the tasks labels call `hallucinated` from those they
//! call `correct`, and what other thresholds would have decided (docs/design.md,
//! "Calibration"). Each labelled task adds an [`Observation`] to a [`Calibration`]: a
//! count per distinct agreement (agreements are counts of n, so a million tasks hold a
//! few hundred distinct values) and verdict counts at each point of a [`Grid`] of
//! thresholds, each verdict the rule's own. Counts add up exactly, so shards and the
//! parts of a resumed run give the calibration of the whole, and [`Calibration::report`]
//! writes the AUROC, the ROC curve and the sweep from them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::decide::{Decision, Options, Prepared, ToolStates, Verdict, classify_and_sweep};
use crate::stats::Ratio;
use crate::task::Label;

/// Which threshold a point of the sweep moves (the other stays the run's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// `arg_reject`.
    ArgReject,
    /// `arg_accept`.
    ArgAccept,
}

/// One point of the sweep: the run's options with one argument threshold moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// The threshold this point moves.
    pub varies: Axis,
    /// `arg_reject` at this point.
    pub arg_reject: Ratio,
    /// `arg_accept` at this point.
    pub arg_accept: Ratio,
    /// The run's own thresholds.
    pub run: bool,
}

/// Points per axis besides the run's own: 0.05 to 1.00 in steps of 0.05.
const STEPS: u32 = 20;

/// The thresholds a run's labelled tasks are decided at again: each argument threshold
/// from 0.05 to 1.00 in steps of 0.05, and at the run's own value, the other threshold
/// held at the run's. A point the options check refuses (`arg_reject` above
/// `arg_accept`) is left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    run: Options,
    points: Vec<Point>,
}

impl Grid {
    /// The grid around the run's options.
    pub fn around(run: &Options) -> Grid {
        let mut points = Vec::new();
        for varies in [Axis::ArgReject, Axis::ArgAccept] {
            let own = match varies {
                Axis::ArgReject => run.arg_reject,
                Axis::ArgAccept => run.arg_accept,
            };
            let mut values: Vec<Ratio> = (1..=STEPS)
                .map(|i| {
                    let text = format!("{}.{:02}", i / STEPS, i % STEPS * 5);
                    text.parse::<Ratio>().expect("a decimal from 0.05 to 1.00")
                })
                .filter(|v| v.cmp_value(own) != Ordering::Equal)
                .collect();
            values.push(own);
            values.sort_by(|a, b| a.cmp_value(*b));
            for v in values {
                let options = match varies {
                    Axis::ArgReject => Options {
                        arg_reject: v,
                        ..*run
                    },
                    Axis::ArgAccept => Options {
                        arg_accept: v,
                        ..*run
                    },
                };
                if options.check().is_ok() {
                    points.push(Point {
                        varies,
                        arg_reject: options.arg_reject,
                        arg_accept: options.arg_accept,
                        run: v == own,
                    });
                }
            }
        }
        Grid { run: *run, points }
    }

    /// The run's options.
    pub fn run(&self) -> &Options {
        &self.run
    }

    /// The points, in the order of the sweep.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The options at `point`.
    pub fn options(&self, point: &Point) -> Options {
        Options {
            arg_reject: point.arg_reject,
            arg_accept: point.arg_accept,
            ..self.run
        }
    }

    /// Classifies `p` under the run's options ([`crate::decide::classify`]) and, when it
    /// is labelled, at every point of the grid: its observation (the naive scorer's
    /// agreement left for the caller, who scores it). The rule reads the argument
    /// thresholds only by comparing them with a few counts of the task
    /// ([`classify_and_sweep`]), so points whose thresholds each meet the same of those
    /// counts decide alike, and the rule runs once per such class: once for a task
    /// whose samples all agree, a few times for one whose paths differ.
    pub fn classify(
        &self,
        p: &Prepared,
        tools: &dyn ToolStates,
    ) -> (Decision, Option<Observation>) {
        let Some(label) = p.label() else {
            return (classify_and_sweep(p, tools, &self.run, |_, _| {}), None);
        };
        let n = p.n();
        let mut verdicts = Verdicts::default();
        let d = classify_and_sweep(p, tools, &self.run, |counts, verdict_of| {
            // How many of the counts a threshold meets: met_by rises with the count.
            let meeting = |r: Ratio| counts.iter().filter(|&&c| r.met_by(c, n)).count();
            let mut decided: SmallVec<[((usize, usize), Verdict); 8]> = SmallVec::new();
            for (i, point) in self.points.iter().enumerate() {
                let class = (meeting(point.arg_reject), meeting(point.arg_accept));
                let v = match decided.iter().find(|(c, _)| *c == class) {
                    Some((_, v)) => *v,
                    None => {
                        let v = verdict_of(&self.options(point));
                        decided.push((class, v));
                        v
                    }
                };
                verdicts.set(i, v);
            }
        });
        let observation = Observation {
            label,
            agreement: (d.arg_agreement.count, d.n),
            naive: None,
            verdicts,
        };
        (d, Some(observation))
    }
}

/// A verdict per point of a grid, two bits each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Verdicts(u128);

impl Verdicts {
    fn set(&mut self, i: usize, v: Verdict) {
        self.0 |= (v as u128) << (2 * i);
    }

    fn get(self, i: usize) -> Verdict {
        match (self.0 >> (2 * i)) & 3 {
            0 => Verdict::Accept,
            1 => Verdict::Defer,
            _ => Verdict::Reject,
        }
    }
}

const _: () = assert!(
    2 * (STEPS as usize + 1) * 2 <= 128,
    "a grid's verdicts fit in Verdicts"
);

/// What one labelled task adds to a calibration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    /// Its label.
    pub label: Label,
    /// The gate's argument agreement: (count, n).
    pub agreement: (usize, usize),
    /// The naive scorer's agreement, (count, n), when it scored the task.
    pub naive: Option<(usize, usize)>,
    /// The verdict at each point of the grid.
    verdicts: Verdicts,
}

impl Observation {
    /// The verdict at point `i` of the grid it was classified on.
    pub fn verdict(&self, i: usize) -> Verdict {
        self.verdicts.get(i)
    }
}

/// An agreement as a fraction in lowest terms, ordered by value: `2/10` and `1/5` are
/// one agreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fraction {
    num: u64,
    den: u64,
}

impl Fraction {
    /// `count / n`, or None for a task without samples (no agreement to rank it by).
    fn of(count: usize, n: usize) -> Option<Fraction> {
        if n == 0 || count > n {
            return None;
        }
        let (mut a, mut b) = (count as u64, n as u64);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Some(Fraction {
            num: count as u64 / a,
            den: n as u64 / a,
        })
    }

    fn value(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl Ord for Fraction {
    fn cmp(&self, other: &Self) -> Ordering {
        ((self.num as u128) * (other.den as u128)).cmp(&((other.num as u128) * (self.den as u128)))
    }
}

impl PartialOrd for Fraction {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Fraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// Labelled tasks, counted by label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tasks {
    /// Labelled `correct`.
    pub correct: u64,
    /// Labelled `hallucinated`.
    pub hallucinated: u64,
}

impl Tasks {
    fn add(&mut self, label: Label, times: u64) {
        match label {
            Label::Correct => self.correct += times,
            Label::Hallucinated => self.hallucinated += times,
        }
    }

    fn plus(self, other: Tasks) -> Tasks {
        Tasks {
            correct: self.correct + other.correct,
            hallucinated: self.hallucinated + other.hallucinated,
        }
    }
}

/// The labelled tasks at one agreement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// The agreement in lowest terms, `3/5`.
    pub agreement: String,
    /// Its value, for plotting.
    pub value: f64,
    /// The tasks at it.
    #[serde(flatten)]
    pub tasks: Tasks,
}

/// Labelled tasks by agreement, kept as their bins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "Vec<Bin>", try_from = "Vec<Bin>")]
struct Histogram(BTreeMap<Fraction, Tasks>);

impl Histogram {
    fn add(&mut self, at: Fraction, tasks: Tasks) {
        let here = self.0.entry(at).or_default();
        *here = here.plus(tasks);
    }

    fn total(&self) -> Tasks {
        self.0.values().fold(Tasks::default(), |a, b| a.plus(*b))
    }

    fn bins(&self) -> Vec<Bin> {
        (self.0.iter())
            .map(|(at, tasks)| Bin {
                agreement: at.to_string(),
                value: at.value(),
                tasks: *tasks,
            })
            .collect()
    }

    /// The AUROC of agreement for telling hallucinated (the positives, ranked by low
    /// agreement) from correct: the share of (hallucinated, correct) pairs whose
    /// hallucinated task agrees less, a tie counted half (the Mann-Whitney U over the
    /// product of the counts). Counted in integers, so it is exact but for the one
    /// division. None without tasks of both labels.
    fn auroc(&self) -> Option<f64> {
        let all = self.total();
        if all.correct == 0 || all.hallucinated == 0 {
            return None;
        }
        // Twice U: each hallucinated task scores 2 per correct task above it, 1 per tie.
        let (mut twice_u, mut correct_above) = (0u128, 0u128);
        for tasks in self.0.values().rev() {
            let (pos, neg) = (tasks.hallucinated as u128, tasks.correct as u128);
            twice_u += pos * (2 * correct_above + neg);
            correct_above += neg;
        }
        let pairs = 2 * all.correct as u128 * all.hallucinated as u128;
        Some(twice_u as f64 / pairs as f64)
    }

    /// The ROC curve of flagging as hallucinated every task whose agreement is at most a
    /// threshold, one point per distinct agreement from the lowest, after the point
    /// that flags nothing. Empty without tasks of both labels.
    fn roc(&self) -> Vec<RocPoint> {
        let all = self.total();
        if all.correct == 0 || all.hallucinated == 0 {
            return Vec::new();
        }
        let mut flagged = Tasks::default();
        let mut out = vec![RocPoint {
            at_most: None,
            fpr: 0.0,
            tpr: 0.0,
        }];
        for (at, tasks) in &self.0 {
            flagged = flagged.plus(*tasks);
            out.push(RocPoint {
                at_most: Some(at.value()),
                fpr: flagged.correct as f64 / all.correct as f64,
                tpr: flagged.hallucinated as f64 / all.hallucinated as f64,
            });
        }
        out
    }
}

impl From<Histogram> for Vec<Bin> {
    fn from(h: Histogram) -> Self {
        h.bins()
    }
}

impl TryFrom<Vec<Bin>> for Histogram {
    type Error = String;
    fn try_from(bins: Vec<Bin>) -> Result<Self, String> {
        let mut h = Histogram::default();
        for bin in bins {
            let bad = || format!("not an agreement: {:?}", bin.agreement);
            let (count, n) = bin.agreement.split_once('/').ok_or_else(bad)?;
            let (count, n) = (
                count.parse().map_err(|_| bad())?,
                n.parse().map_err(|_| bad())?,
            );
            h.add(Fraction::of(count, n).ok_or_else(bad)?, bin.tasks);
        }
        Ok(h)
    }
}

/// One point of a ROC curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RocPoint {
    /// Tasks whose agreement is at most this are flagged hallucinated (None: none are).
    pub at_most: Option<f64>,
    /// False-positive rate: the share of tasks labelled correct that are flagged.
    pub fpr: f64,
    /// True-positive rate: the share of tasks labelled hallucinated that are flagged.
    pub tpr: f64,
}

/// Verdicts counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByVerdict {
    /// Accepted.
    pub accept: u64,
    /// Deferred.
    pub defer: u64,
    /// Rejected.
    pub reject: u64,
}

impl ByVerdict {
    fn add(&mut self, v: Verdict, times: u64) {
        match v {
            Verdict::Accept => self.accept += times,
            Verdict::Defer => self.defer += times,
            Verdict::Reject => self.reject += times,
        }
    }

    fn plus(self, o: ByVerdict) -> ByVerdict {
        ByVerdict {
            accept: self.accept + o.accept,
            defer: self.defer + o.defer,
            reject: self.reject + o.reject,
        }
    }
}

/// The verdicts at one point of the grid, by label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Row {
    #[serde(flatten)]
    point: Point,
    correct: ByVerdict,
    hallucinated: ByVerdict,
}

/// The counts a run keeps for its calibration: exact, and added up across runs of
/// parts of one batch ([`Calibration::merge`]). Serialized as they are, so a resumed run
/// keeps the part it did not redo.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Labelled tasks by the gate's argument agreement.
    agreements: Histogram,
    /// Labelled tasks by the naive scorer's agreement.
    naive_agreements: Histogram,
    /// Labelled tasks without samples: no agreement ranks them, the sweep counts them.
    without_samples: Tasks,
    /// Verdicts at each point of the grid, in its order.
    sweep: Vec<Row>,
}

impl Calibration {
    /// Adds one labelled task, classified on `grid` (the grid every task of this
    /// calibration is classified on).
    pub fn add(&mut self, grid: &Grid, o: &Observation) {
        if self.sweep.is_empty() {
            self.sweep = (grid.points.iter())
                .map(|&point| Row {
                    point,
                    correct: ByVerdict::default(),
                    hallucinated: ByVerdict::default(),
                })
                .collect();
        }
        let mut one = Tasks::default();
        one.add(o.label, 1);
        match Fraction::of(o.agreement.0, o.agreement.1) {
            Some(at) => self.agreements.add(at, one),
            None => self.without_samples = self.without_samples.plus(one),
        }
        if let Some(at) = o.naive.and_then(|(count, n)| Fraction::of(count, n)) {
            self.naive_agreements.add(at, one);
        }
        for (i, row) in self.sweep.iter_mut().enumerate() {
            let by = match o.label {
                Label::Correct => &mut row.correct,
                Label::Hallucinated => &mut row.hallucinated,
            };
            by.add(o.verdict(i), 1);
        }
    }

    /// Adds another calibration's counts (another shard's, or the part of a run
    /// decided before it was resumed). Rows are matched by their thresholds.
    pub fn merge(&mut self, other: &Calibration) {
        for (h, o) in [
            (&mut self.agreements, &other.agreements),
            (&mut self.naive_agreements, &other.naive_agreements),
        ] {
            for (at, tasks) in &o.0 {
                h.add(*at, *tasks);
            }
        }
        self.without_samples = self.without_samples.plus(other.without_samples);
        for row in &other.sweep {
            match self.sweep.iter_mut().find(|r| r.point == row.point) {
                Some(mine) => {
                    mine.correct = mine.correct.plus(row.correct);
                    mine.hallucinated = mine.hallucinated.plus(row.hallucinated);
                }
                None => self.sweep.push(*row),
            }
        }
    }

    /// Whether no labelled task was added.
    pub fn is_empty(&self) -> bool {
        self.tasks() == Tasks::default()
    }

    /// Every labelled task added.
    pub fn tasks(&self) -> Tasks {
        self.agreements.total().plus(self.without_samples)
    }

    /// The calibration's report (the summary's `calibration` block), or None when no
    /// labelled task was added.
    pub fn report(&self) -> Option<Report> {
        if self.is_empty() {
            return None;
        }
        let tasks = self.tasks();
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        let sweep = (self.sweep.iter())
            .map(|r| {
                let rejected = r.correct.reject + r.hallucinated.reject;
                SweepRow {
                    varies: r.point.varies,
                    arg_reject: r.point.arg_reject.as_f64(),
                    arg_accept: r.point.arg_accept.as_f64(),
                    run: r.point.run,
                    rejected,
                    rejected_correct: r.correct.reject,
                    false_positive_share: share(r.correct.reject, rejected),
                    caught: share(r.hallucinated.reject, tasks.hallucinated),
                    accepted_hallucinated: r.hallucinated.accept,
                    correct: r.correct,
                    hallucinated: r.hallucinated,
                }
            })
            .collect();
        Some(Report {
            tasks,
            without_samples: self.without_samples.correct + self.without_samples.hallucinated,
            auroc: self.agreements.auroc(),
            naive_auroc: self.naive_agreements.auroc(),
            roc: self.agreements.roc(),
            naive_roc: self.naive_agreements.roc(),
            agreements: self.agreements.bins(),
            naive_agreements: self.naive_agreements.bins(),
            sweep,
        })
    }
}

/// The summary's `calibration` block (docs/design.md, "Calibration").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Labelled tasks, by label.
    pub tasks: Tasks,
    /// Labelled tasks without samples, left out of the AUROC and the ROC curves (the
    /// sweep counts them: the rule defers them).
    pub without_samples: u64,
    /// The AUROC of the gate's argument agreement for telling hallucinated (low
    /// agreement) from correct, ties counted half; None without both labels.
    pub auroc: Option<f64>,
    /// The same for the naive scorer's agreement (arguments and results together).
    pub naive_auroc: Option<f64>,
    /// The ROC curve of the gate's argument agreement.
    pub roc: Vec<RocPoint>,
    /// The ROC curve of the naive scorer's agreement.
    pub naive_roc: Vec<RocPoint>,
    /// Labelled tasks per distinct argument agreement, the lowest first.
    pub agreements: Vec<Bin>,
    /// Labelled tasks per distinct naive agreement, the lowest first.
    pub naive_agreements: Vec<Bin>,
    /// What the rule decides at each point of the grid.
    pub sweep: Vec<SweepRow>,
}

/// The rule's verdicts on the labelled tasks at one point of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The threshold this row moves.
    pub varies: Axis,
    /// `arg_reject` at this row.
    pub arg_reject: f64,
    /// `arg_accept` at this row.
    pub arg_accept: f64,
    /// The run's own thresholds.
    pub run: bool,
    /// Labelled tasks rejected.
    pub rejected: u64,
    /// Of them, labelled correct.
    pub rejected_correct: u64,
    /// `rejected_correct / rejected` (None: nothing rejected).
    pub false_positive_share: Option<f64>,
    /// The share of tasks labelled hallucinated that are rejected (None: none labelled so).
    pub caught: Option<f64>,
    /// Tasks labelled hallucinated that are accepted.
    pub accepted_hallucinated: u64,
    /// Verdicts on the tasks labelled correct.
    pub correct: ByVerdict,
    /// Verdicts on the tasks labelled hallucinated.
    pub hallucinated: ByVerdict,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The AUROC by brute force: every (hallucinated, correct) pair compared.
    fn pairwise(tasks: &[(Label, usize, usize)]) -> Option<f64> {
        let value = |(count, n): (usize, usize)| Fraction::of(count, n).unwrap();
        let (mut score, mut pairs) = (0.0, 0u64);
        for &(lp, cp, np) in tasks.iter().filter(|t| t.0 == Label::Hallucinated) {
            for &(_, cn, nn) in tasks.iter().filter(|t| t.0 == Label::Correct) {
                let _ = lp;
                pairs += 1;
                score += match value((cp, np)).cmp(&value((cn, nn))) {
                    Ordering::Less => 1.0,
                    Ordering::Equal => 0.5,
                    Ordering::Greater => 0.0,
                };
            }
        }
        (pairs > 0).then(|| score / pairs as f64)
    }

    fn histogram(tasks: &[(Label, usize, usize)]) -> Histogram {
        let mut h = Histogram::default();
        for &(label, count, n) in tasks {
            let mut one = Tasks::default();
            one.add(label, 1);
            h.add(Fraction::of(count, n).unwrap(), one);
        }
        h
    }

    fn labelled() -> impl Strategy<Value = Vec<(Label, usize, usize)>> {
        let task = (any::<bool>(), 1usize..13).prop_flat_map(|(h, n)| {
            let label = if h {
                Label::Hallucinated
            } else {
                Label::Correct
            };
            (Just(label), 0..=n, Just(n))
        });
        proptest::collection::vec(task, 0..60)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The AUROC from counts per agreement is the pairwise one, and the area under
        /// the ROC curve (trapezoids) is it too.
        #[test]
        fn auroc_from_counts_is_the_pairwise_one(tasks in labelled()) {
            let h = histogram(&tasks);
            let (counted, brute) = (h.auroc(), pairwise(&tasks));
            prop_assert_eq!(counted.is_some(), brute.is_some());
            if let (Some(a), Some(b)) = (counted, brute) {
                prop_assert!((a - b).abs() < 1e-12, "{} {}", a, b);
                let roc = h.roc();
                let area: f64 = roc.windows(2)
                    .map(|w| (w[1].fpr - w[0].fpr) * (w[1].tpr + w[0].tpr) / 2.0)
                    .sum();
                prop_assert!((area - a).abs() < 1e-9, "{} {}", area, a);
                let last = roc.last().unwrap();
                prop_assert_eq!((last.fpr, last.tpr), (1.0, 1.0));
            }
        }

        /// Split anywhere, two calibrations merged are the calibration of the whole,
        /// and a calibration read back from its JSON is itself.
        #[test]
        fn calibrations_merge_to_the_whole(tasks in labelled(), cut in any::<prop::sample::Index>()) {
            let grid = Grid::around(&Options::default());
            let observe = |&(label, count, n): &(Label, usize, usize)| {
                let mut verdicts = Verdicts::default();
                for i in 0..grid.points.len() {
                    verdicts.set(i, [Verdict::Accept, Verdict::Defer, Verdict::Reject][(count + i) % 3]);
                }
                Observation { label, agreement: (count, n), naive: Some((n - count, n)), verdicts }
            };
            let mut whole = Calibration::default();
            let (mut a, mut b) = (Calibration::default(), Calibration::default());
            let cut = cut.index(tasks.len() + 1);
            for (i, t) in tasks.iter().enumerate() {
                whole.add(&grid, &observe(t));
                if i < cut { a.add(&grid, &observe(t)) } else { b.add(&grid, &observe(t)) }
            }
            a.merge(&b);
            prop_assert_eq!(whole.report(), a.report());
            let text = serde_json::to_string(&whole).unwrap();
            let back: Calibration = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, whole);
        }
    }

    #[test]
    fn ties_count_half_and_order_decides() {
        let h = |t: &[(Label, usize, usize)]| histogram(t).auroc();
        let (c, x) = (Label::Correct, Label::Hallucinated);
        assert_eq!(h(&[(x, 1, 5), (c, 4, 5)]), Some(1.0));
        assert_eq!(h(&[(x, 4, 5), (c, 1, 5)]), Some(0.0));
        // 2/10 and 1/5 are one agreement.
        assert_eq!(h(&[(x, 2, 10), (c, 1, 5)]), Some(0.5));
        assert_eq!(h(&[(x, 2, 10), (x, 1, 10)]), None);
    }

    #[test]
    fn the_grid_holds_the_runs_thresholds_and_only_valid_points() {
        let grid = Grid::around(&Options::default());
        let rejects: Vec<String> = (grid.points.iter())
            .filter(|p| p.varies == Axis::ArgReject)
            .map(|p| p.arg_reject.decimal())
            .collect();
        // 0.05 to 0.80 (0.20 is the run's own, written as given); above 0.80 is refused.
        assert_eq!(rejects.len(), 16, "{rejects:?}");
        assert_eq!(rejects.first().map(String::as_str), Some("0.05"));
        assert_eq!(rejects.last().map(String::as_str), Some("0.80"));
        let accepts = (grid.points.iter()).filter(|p| p.varies == Axis::ArgAccept);
        assert_eq!(accepts.clone().count(), 17);
        assert_eq!(grid.points.iter().filter(|p| p.run).count(), 2);
        for p in &grid.points {
            assert!(grid.options(p).check().is_ok());
        }
        let odd = Options {
            arg_reject: "0.33".parse().unwrap(),
            ..Options::default()
        };
        let grid = Grid::around(&odd);
        let run: Vec<&Point> = grid.points.iter().filter(|p| p.run).collect();
        assert_eq!(run.len(), 2);
        assert!(run.iter().all(|p| p.arg_reject.decimal() == "0.33"));
    }
}
