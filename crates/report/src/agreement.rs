//! What the agreement plots are drawn from, gathered task by task into counts that add
//! up: shards, the chunks of a line-by-line run and the checkpoints of a resumed one
//! each gather their own, and their sum is what one pass over every task would have
//! gathered, exactly (counts, not floats), so every way of running a batch draws the
//! same plots.

use std::collections::BTreeMap;

use plangate_gate::task::Label;
use serde::{Deserialize, Serialize};

/// Which series of a plot a task is counted in: its label, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Series {
    /// Labelled correct.
    Correct = 0,
    /// Labelled hallucinated.
    Hallucinated = 1,
    /// No label.
    Unlabelled = 2,
}

impl Series {
    /// Every series, in the order plots draw them.
    pub const ALL: [Series; 3] = [Series::Correct, Series::Hallucinated, Series::Unlabelled];

    /// The series of a task with this label.
    pub fn of(label: Option<Label>) -> Series {
        match label {
            Some(Label::Correct) => Series::Correct,
            Some(Label::Hallucinated) => Series::Hallucinated,
            None => Series::Unlabelled,
        }
    }

    /// Its name in a bar's title and a row's note.
    pub fn name(self) -> &'static str {
        match self {
            Series::Correct => "correct",
            Series::Hallucinated => "hallucinated",
            Series::Unlabelled => "unlabelled",
        }
    }

    /// Its name in a legend.
    pub fn legend(self) -> &'static str {
        match self {
            Series::Correct => "correct plans",
            Series::Hallucinated => "hallucinated plans",
            Series::Unlabelled => "unlabelled tasks",
        }
    }

    /// Its color, in every plot.
    pub fn color(self) -> &'static str {
        match self {
            Series::Correct => CORRECT,
            Series::Hallucinated => HALLUCINATED,
            Series::Unlabelled => UNLABELLED,
        }
    }
}

/// The correct plans' color.
pub const CORRECT: &str = "#2f7ed8";
/// The hallucinated plans' color.
pub const HALLUCINATED: &str = "#e4572e";
/// Unlabelled tasks' color.
pub const UNLABELLED: &str = "#5a6b82";

/// Sample counts above this are counted on a scale of this many samples (their agreeing
/// count scaled to it), so the cells stay few whatever a hostile line holds.
pub const MAX_CELL_SAMPLES: u64 = 64;

/// Everything both agreement plots are drawn from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plots {
    /// Tasks by sample count, then agreeing samples, then series.
    arguments: BTreeMap<u64, BTreeMap<u64, [u64; 3]>>,
    /// Each row of the per-tool plot.
    tools: BTreeMap<String, ToolCounts>,
}

/// One row of the per-tool plot: its tasks, and the result agreements of those that
/// have one, per series.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct ToolCounts {
    tasks: u64,
    results: [Ratios; 3],
}

/// Ratios `count/n` of some tasks, kept as counts so their mean and minimum do not
/// depend on the order they were added in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Ratios {
    /// Sample count -> (tasks, their agreeing samples summed).
    sums: BTreeMap<u64, [u64; 2]>,
    /// The lowest ratio, as (count, n); of equal ones, the smallest `n`.
    min: Option<(u64, u64)>,
}

impl Ratios {
    fn add(&mut self, count: u64, n: u64) {
        if n == 0 {
            return;
        }
        let s = self.sums.entry(n).or_default();
        s[0] += 1;
        s[1] += count;
        self.offer_min((count, n));
    }

    fn offer_min(&mut self, (count, n): (u64, u64)) {
        let lower = match self.min {
            None => true,
            Some((c, m)) => {
                let (a, b) = (
                    u128::from(count) * u128::from(m),
                    u128::from(c) * u128::from(n),
                );
                a < b || (a == b && n < m)
            }
        };
        if lower {
            self.min = Some((count, n));
        }
    }

    fn merge(&mut self, other: &Ratios) {
        for (n, s) in &other.sums {
            let mine = self.sums.entry(*n).or_default();
            mine[0] += s[0];
            mine[1] += s[1];
        }
        if let Some(m) = other.min {
            self.offer_min(m);
        }
    }

    fn tasks(&self) -> u64 {
        self.sums.values().map(|s| s[0]).sum()
    }

    /// Mean, minimum and tasks, or None when no task has one.
    fn summary(&self) -> Option<Summary> {
        let tasks = self.tasks();
        let (c, n) = self.min?;
        let total: f64 = self.sums.iter().map(|(n, s)| s[1] as f64 / *n as f64).sum();
        Some(Summary {
            mean: total / tasks as f64,
            min: c as f64 / n as f64,
            tasks,
        })
    }
}

/// A series' result agreement in one row of the per-tool plot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean over its tasks.
    pub mean: f64,
    /// The lowest.
    pub min: f64,
    /// Tasks with a result agreement.
    pub tasks: u64,
}

/// One row of the per-tool plot, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRow {
    /// The tool (a demo chain `a>b`, or the tools left over, `N other tools`).
    pub tool: String,
    /// Its tasks, with or without a result agreement.
    pub tasks: u64,
    /// Each series' result agreement (by [`Series`] index).
    pub series: [Option<Summary>; 3],
    /// Whether the run quarantined it (for a chain, any of its tools).
    pub quarantined: bool,
}

/// The argument-agreement histogram, ready to draw: `samples + 1` bins, each series'
/// tasks in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    /// The sample count the bins divide: the most common one.
    pub samples: usize,
    /// Tasks per bin, by [`Series`] index.
    pub bins: [Vec<u64>; 3],
}

impl Histogram {
    /// The series that have tasks (the unlabelled one when none has).
    pub fn series(&self) -> Vec<Series> {
        let present: Vec<Series> = Series::ALL
            .into_iter()
            .filter(|s| self.bins[*s as usize].iter().any(|n| *n > 0))
            .collect();
        if present.is_empty() {
            vec![Series::Unlabelled]
        } else {
            present
        }
    }

    /// Whether the tasks carry labels.
    pub fn labelled(&self) -> bool {
        self.series().iter().any(|s| *s != Series::Unlabelled)
    }
}

impl Plots {
    /// Counts one task: its series, its argument agreement (`count` of `n` samples),
    /// its result agreement when some step is deterministic, and the rows of the
    /// per-tool plot it counts in (each once).
    pub fn add<'t>(
        &mut self,
        series: Series,
        arguments: (usize, usize),
        results: Option<(usize, usize)>,
        tools: impl IntoIterator<Item = &'t str>,
    ) {
        let (count, n) = (arguments.0 as u64, arguments.1 as u64);
        let (count, n) = if n > MAX_CELL_SAMPLES {
            // Nearest, as the histogram's bins round.
            ((count * MAX_CELL_SAMPLES + n / 2) / n, MAX_CELL_SAMPLES)
        } else {
            (count, n)
        };
        self.arguments
            .entry(n)
            .or_default()
            .entry(count)
            .or_default()[series as usize] += 1;
        for tool in tools {
            let row = match self.tools.get_mut(tool) {
                Some(row) => row,
                None => self.tools.entry(tool.to_string()).or_default(),
            };
            row.tasks += 1;
            if let Some((c, n)) = results {
                row.results[series as usize].add(c as u64, n as u64);
            }
        }
    }

    /// Adds another part's counts (a chunk's, a shard's, a checkpoint's).
    pub fn merge(&mut self, other: &Plots) {
        for (n, counts) in &other.arguments {
            let mine = self.arguments.entry(*n).or_default();
            for (c, by) in counts {
                let cell = mine.entry(*c).or_default();
                for (a, b) in cell.iter_mut().zip(by) {
                    *a += b;
                }
            }
        }
        for (tool, row) in &other.tools {
            let mine = self.tools.entry(tool.clone()).or_default();
            mine.add(row);
        }
    }

    /// The histogram over the most common sample count (the larger of two as common):
    /// a task of another count lands in the bin nearest its agreement, so the bins add
    /// up to the tasks.
    pub fn histogram(&self) -> Histogram {
        let mut by_n: BTreeMap<u64, u64> = BTreeMap::new();
        for (n, counts) in &self.arguments {
            *by_n.entry(*n).or_default() += counts.values().flatten().sum::<u64>();
        }
        let samples = by_n
            .iter()
            .max_by_key(|(n, tasks)| (**tasks, **n))
            .map_or(0, |(n, _)| *n);
        let mut bins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; samples as usize + 1]);
        for (n, counts) in &self.arguments {
            for (count, by) in counts {
                let bin = (count * samples + n / 2)
                    .checked_div(*n)
                    .unwrap_or(0)
                    .min(samples) as usize;
                for (series, v) in by.iter().enumerate() {
                    bins[series][bin] += v;
                }
            }
        }
        Histogram {
            samples: samples as usize,
            bins,
        }
    }

    /// The per-tool plot's rows: the `max` tools with the most tasks (then by name),
    /// and the rest added up in one row after them.
    pub fn tool_rows(&self, quarantined: &[String], max: usize) -> Vec<ToolRow> {
        let mut rows: Vec<(&String, &ToolCounts)> = self.tools.iter().collect();
        rows.sort_by(|a, b| b.1.tasks.cmp(&a.1.tasks).then(a.0.cmp(b.0)));
        let rest = rows.split_off(max.min(rows.len()));
        let row = |tool: String, c: &ToolCounts, quarantined: bool| ToolRow {
            tool,
            tasks: c.tasks,
            series: std::array::from_fn(|i| c.results[i].summary()),
            quarantined,
        };
        let mut out: Vec<ToolRow> = rows
            .into_iter()
            .map(|(tool, c)| {
                // A chain is marked when any of its tools is: its results carry that
                // tool's drift.
                let q = tool.split('>').any(|t| quarantined.iter().any(|q| q == t));
                row(tool.clone(), c, q)
            })
            .collect();
        if !rest.is_empty() {
            let mut sum = ToolCounts::default();
            for (_, c) in &rest {
                sum.add(c);
            }
            out.push(row(format!("{} other tools", rest.len()), &sum, false));
        }
        out
    }

    /// Whether any task was counted.
    pub fn is_empty(&self) -> bool {
        self.arguments.is_empty()
    }
}

impl ToolCounts {
    fn add(&mut self, other: &ToolCounts) {
        self.tasks += other.tasks;
        for (a, b) in self.results.iter_mut().zip(&other.results) {
            a.merge(b);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A few tasks of both labels over three tools, for the plots' tests too.
    pub(crate) fn plots() -> Plots {
        let mut p = Plots::default();
        let c = Series::Correct;
        let h = Series::Hallucinated;
        p.add(c, (10, 10), Some((10, 10)), ["get_user>get_order"]);
        p.add(c, (10, 10), Some((9, 10)), ["get_user>get_order"]);
        p.add(c, (9, 10), None, ["search<index>"]);
        p.add(h, (3, 10), Some((4, 10)), ["search<index>"]);
        p.add(h, (5, 7), None, ["read_file"]);
        p
    }

    #[test]
    fn bins_add_up_to_the_tasks_and_split_by_label() {
        let h = plots().histogram();
        assert_eq!(h.samples, 10);
        let [correct, hallucinated, unlabelled] = &h.bins;
        assert_eq!((correct.len(), hallucinated.len()), (11, 11));
        assert_eq!(
            correct.iter().sum::<u64>() + hallucinated.iter().sum::<u64>(),
            5
        );
        assert_eq!((correct[10], correct[9], hallucinated[3]), (2, 1, 1));
        // 5 of 7 is 0.714, nearest bin 7 of 10.
        assert_eq!(hallucinated[7], 1);
        assert!(unlabelled.iter().all(|n| *n == 0));
        assert_eq!(h.series(), vec![Series::Correct, Series::Hallucinated]);
        assert!(h.labelled());

        let mut empty = Plots::default();
        empty.add(Series::Unlabelled, (0, 0), None, ["x"]);
        let h = empty.histogram();
        assert_eq!((h.samples, h.bins[2].clone()), (0, vec![1]));
        assert!(!h.labelled());
    }

    #[test]
    fn many_samples_are_counted_on_a_bounded_scale() {
        let mut p = Plots::default();
        for n in 65..400 {
            p.add(Series::Unlabelled, (n / 2, n), None, ["t"]);
        }
        assert_eq!(p.arguments.len(), 1, "one scale past the bound");
        let h = p.histogram();
        assert_eq!(h.samples, 64);
        assert_eq!(h.bins[2].iter().sum::<u64>(), 335);
        assert_eq!(h.bins[2][32], 335);
    }

    #[test]
    fn tool_rows_skip_tasks_without_results_and_mark_quarantined_chains() {
        let rows = plots().tool_rows(&["get_order".to_string()], 10);
        let chain = rows
            .iter()
            .find(|r| r.tool == "get_user>get_order")
            .unwrap();
        assert!(chain.quarantined);
        assert_eq!(chain.tasks, 2);
        let s = chain.series[0].unwrap();
        assert!((s.mean - 0.95).abs() < 1e-12 && s.min == 0.9 && s.tasks == 2);
        let search = rows.iter().find(|r| r.tool == "search<index>").unwrap();
        assert!(!search.quarantined);
        assert_eq!(search.tasks, 2);
        assert_eq!(search.series[0], None);
        assert_eq!(search.series[1].unwrap().tasks, 1);
        let read = rows.iter().find(|r| r.tool == "read_file").unwrap();
        assert_eq!(read.series, [None, None, None]);
        // Most tasks first, then by name.
        let names: Vec<&str> = rows.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(names, ["get_user>get_order", "search<index>", "read_file"]);
        // Past `max`, the rest is one row that adds them up.
        let rows = plots().tool_rows(&[], 1);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[1].tool.as_str(), rows[1].tasks), ("2 other tools", 3));
        assert_eq!(rows[1].series[1].unwrap().min, 0.4);
    }

    /// Parts added up in any order, however they were cut, equal one pass over all.
    #[test]
    fn parts_add_up_to_the_whole_in_any_order() {
        let mut points = Vec::new();
        for i in 0..200u64 {
            let n = 3 + (i % 9) as usize;
            let c = (i as usize * 7) % (n + 1);
            let series = Series::ALL[(i % 3) as usize];
            let r = (!i.is_multiple_of(4)).then_some(((i as usize * 5) % (n + 1), n));
            let tool = ["a", "b", "c", "d>e"][(i % 4) as usize];
            points.push((series, (c, n), r, tool));
        }
        let mut whole = Plots::default();
        for (s, a, r, t) in &points {
            whole.add(*s, *a, *r, [*t]);
        }
        for cut in [1, 17, 99, 199] {
            let (mut x, mut y) = (Plots::default(), Plots::default());
            for (s, a, r, t) in &points[..cut] {
                x.add(*s, *a, *r, [*t]);
            }
            for (s, a, r, t) in &points[cut..] {
                y.add(*s, *a, *r, [*t]);
            }
            let mut yx = y.clone();
            yx.merge(&x);
            x.merge(&y);
            assert_eq!(x, whole);
            assert_eq!(yx, whole);
            assert_eq!(x.tool_rows(&[], 2), whole.tool_rows(&[], 2));
        }
    }
}
