//! Everything the rule reads, measured before any verdict: agreements, the modal plan,
//! per-step agreement, suspect tools, schema violations, and on demand what only some
//! steps of the rule ask (an upstream taint, the modal plan's schema violation, its
//! referential miss). Kept apart from the rule so the rule reads numbers, never samples.

use crate::invented::InventedReference;
use std::collections::{BTreeMap, BTreeSet};

use super::decision::{
    Agreement, Decision, DivergentPath, MalformedSample, PlanStep, Reason, SchemaViolation,
    StepAgreement, Verdict,
};
use super::health::ToolStates;
use super::paths::{MAX_PATHS, path_agreements};
use super::prepared::{DistinctSample, PlanKey, Prepared, PreparedSample};
use super::tally::tally;
use crate::jcs;
use crate::task::Label;

/// A task measured: what its decision reports beside the verdict, and what the rule reads
/// to reach one. Built once per task; the rule may read it under several options.
pub(super) struct Measured<'p> {
    pub(super) task_id: String,
    pub(super) n: usize,
    pub(super) arg_agreement: Agreement,
    pub(super) result_agreement: Option<Agreement>,
    pub(super) modal_plan: Option<Vec<PlanStep>>,
    pub(super) divergent_paths: Vec<DivergentPath>,
    pub(super) steps: Vec<StepAgreement>,
    pub(super) first_divergent_step: Option<usize>,
    pub(super) tools: Vec<String>,
    pub(super) suspect_tools: Vec<String>,
    pub(super) malformed: Vec<MalformedSample>,
    pub(super) schema_violations: Vec<SchemaViolation>,
    pub(super) warnings: Vec<String>,
    pub(super) label: Option<Label>,
    pub(super) outcomes: Vec<Option<f64>>,
    pub(super) invented_references: std::sync::Arc<[InventedReference]>,
    /// Whether the epoch was fixed for every source the task read (seed condition 4).
    pub(super) epoch_fixed: bool,
    /// The health of the tools the task calls.
    pub(super) tool_states: &'p dyn ToolStates,
    prepared: &'p Prepared,
}

/// A step of the modal plan that refers to something its verified deterministic tool,
/// in a fixed epoch, found no trace of ([`Measured::referential_miss`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct ReferentialMiss<'p> {
    /// The step of the modal plan.
    pub(super) step: usize,
    pub(super) tool: &'p str,
    /// The reference parameters the call gives (every parameter when the schema marks
    /// none), with their values as written.
    pub(super) params: &'p [(String, String)],
    pub(super) found: MissFound<'p>,
}

/// How a referential miss was found.
#[derive(Debug, Clone, Copy)]
pub(super) enum MissFound<'p> {
    /// A reference parameter's `id` resolver (itself sound) found nothing for it.
    Unresolved { param: &'p str, resolver: &'p str },
    /// `count` of the `of` samples that make the modal plan got `not_found` (more than
    /// half); `must_exist` when a reference parameter it gives is declared so.
    NotFound {
        count: usize,
        of: usize,
        must_exist: bool,
    },
}

impl<'p> Measured<'p> {
    /// The decision: the measured task with the rule's verdict, reasons and sentences.
    pub(super) fn decided(
        self,
        verdict: Verdict,
        reasons: Vec<Reason>,
        explanation: Vec<String>,
    ) -> Decision {
        Decision {
            task_id: self.task_id,
            verdict,
            reasons,
            explanation,
            n: self.n,
            arg_agreement: self.arg_agreement,
            result_agreement: self.result_agreement,
            modal_plan: self.modal_plan,
            divergent_paths: self.divergent_paths,
            steps: self.steps,
            first_divergent_step: self.first_divergent_step,
            tools: self.tools,
            suspect_tools: self.suspect_tools,
            malformed: self.malformed,
            schema_violations: self.schema_violations,
            warnings: self.warnings,
            label: self.label,
            outcomes: self.outcomes,
            invented_references: self.invented_references,
        }
    }

    /// The first step before the first divergent one whose results disagree, if any:
    /// arguments that diverge only after it may have read those results.
    pub(super) fn tainting_step(&self) -> Option<usize> {
        let d = self.first_divergent_step?;
        (0..d).find(|&j| {
            let results: BTreeSet<u32> = (self.prepared.samples.iter())
                .filter_map(|s| s.steps.get(j).and_then(|st| st.result))
                .collect();
            results.len() > 1
        })
    }

    /// The first way the modal plan breaks its tools' schemas, if it does.
    pub(super) fn modal_violation(&self) -> Option<&SchemaViolation> {
        let (m, _) = self.prepared.modal_plan?;
        (self.schema_violations.iter()).find(|v| v.samples.contains(&m))
    }

    /// A consistent fabrication, if the modal plan has one: a step whose tool is declared
    /// deterministic, verified and not quarantined, where a sound `id` resolver found
    /// nothing for a reference parameter, or more than half of the samples that make the
    /// modal plan got `not_found`. Agreement cannot see it (every sample repeats the
    /// invented value, every call fails alike); execution can. The first such step.
    pub(super) fn referential_miss(&self) -> Option<ReferentialMiss<'p>> {
        let p = self.prepared;
        let (m, _) = p.modal_plan?;
        let modal_plan = &p.samples[m];
        let sound = |t: &str| {
            (self.tool_states.state(t))
                .is_some_and(|s| s.declared_deterministic && s.verified && !s.quarantined)
        };
        let agreeing: Vec<&PreparedSample> = (p.samples.iter())
            .filter(|s| s.plan == modal_plan.plan)
            .collect();
        for (j, st) in modal_plan.steps.iter().enumerate() {
            let Some(miss) = &st.miss else { continue };
            if !sound(&st.tool) {
                continue;
            }
            let at = |found| ReferentialMiss {
                step: j,
                tool: &st.tool,
                params: &miss.params,
                found,
            };
            if let Some((param, resolver)) = (miss.unresolved.iter()).find(|(_, r)| sound(r)) {
                return Some(at(MissFound::Unresolved { param, resolver }));
            }
            let not_found = (agreeing.iter())
                .filter(|s| {
                    (s.steps.get(j))
                        .and_then(|x| x.miss.as_ref())
                        .is_some_and(|x| x.not_found)
                })
                .count();
            // Most samples that make the modal plan got not_found here, not just one.
            if 2 * not_found > agreeing.len() {
                return Some(at(MissFound::NotFound {
                    count: not_found,
                    of: agreeing.len(),
                    must_exist: miss.must_exist,
                }));
            }
        }
        None
    }
}

/// Everything the rule reads, measured: agreements, the modal plan, per-step agreement,
/// where plans differ, suspect tools and schema violations. The verdict is left to
/// [`rule`](super::rule).
pub(super) fn measure<'p>(
    p: &'p Prepared,
    samples: &[DistinctSample],
    tools: &'p dyn ToolStates,
) -> Measured<'p> {
    let n = p.samples.len();
    let (modal_idx, arg_count) = p.modal_plan.unwrap_or((0, 0));
    let arg = Agreement::new(arg_count, n);
    let modal_sample = p.samples.get(modal_idx);

    let is_det = |t: &str| tools.state(t).is_some_and(|s| s.declared_deterministic);
    // A sample's results: those of its deterministic steps, by step, all samples' in
    // one vector (`ends[i]` is where sample i's end).
    let mut results: Vec<(usize, Option<u32>)> = Vec::new();
    let mut ends = Vec::with_capacity(samples.len());
    for c in samples {
        for (j, st) in c.sample.steps.iter().enumerate() {
            if is_det(&st.tool) {
                results.push((j, st.result));
            }
        }
        ends.push(results.len());
    }
    let result = (!results.is_empty()).then(|| {
        let starts = std::iter::once(0).chain(ends.iter().copied());
        let keys = (samples.iter().zip(starts.zip(ends.iter())))
            .map(|(c, (a, &b))| (c.at, &results[a..b], c.times));
        let (_, count) = tally(keys).1.unwrap_or((0, 0));
        Agreement::new(count, n)
    });

    let max_steps = (samples.iter().map(|c| c.sample.steps.len()))
        .max()
        .unwrap_or(0);
    let mut steps = Vec::with_capacity(max_steps);
    let mut first_divergent_step = None;
    for j in 0..max_steps {
        // None: the sample has no step j.
        let keys =
            (samples.iter()).map(|c| (c.at, c.sample.steps.get(j).map(|st| st.key), c.times));
        let (mi, c) = tally(keys).1.unwrap_or((0, 0));
        if c < n && first_divergent_step.is_none() {
            first_divergent_step = Some(j);
        }
        steps.push(StepAgreement {
            step: j,
            tool: p.samples[mi].steps.get(j).map(|st| String::from(&*st.tool)),
            agreement: Agreement::new(c, n),
        });
    }
    let mut divergent_paths = path_agreements(samples, n, max_steps);
    divergent_paths.truncate(MAX_PATHS);

    let mut tools_called: Vec<&str> = (samples.iter())
        .flat_map(|c| c.sample.steps.iter().map(|st| &*st.tool))
        .collect();
    tools_called.sort_unstable();
    tools_called.dedup();
    Measured {
        task_id: p.task_id.clone(),
        n,
        arg_agreement: arg,
        result_agreement: result,
        modal_plan: modal_sample
            .filter(|s| matches!(s.plan, PlanKey::Steps(..)))
            .map(|s| {
                s.steps
                    .iter()
                    .map(|st| PlanStep {
                        tool: String::from(&*st.tool),
                        arguments: (st.args.as_deref())
                            .map_or_else(|| "null".into(), jcs::to_string),
                    })
                    .collect()
            }),
        divergent_paths,
        steps,
        first_divergent_step,
        tools: tools_called.into_iter().map(String::from).collect(),
        // Samples whose results all agree leave no tool suspect: one answered alike
        // wherever it was called.
        suspect_tools: match result {
            Some(r) if r.count < n => suspect_tools(samples, &is_det),
            _ => Vec::new(),
        },
        malformed: p.malformed.clone(),
        schema_violations: schema_violations(p),
        warnings: p.warnings.clone(),
        label: p.label,
        outcomes: p.outcomes.clone(),
        invented_references: p.invented_references.clone(),
        epoch_fixed: p.epoch_fixed,
        tool_states: tools,
        prepared: p,
    }
}

/// Each distinct way steps break their schema, with the samples that break it so.
fn schema_violations(p: &Prepared) -> Vec<SchemaViolation> {
    let mut out: Vec<SchemaViolation> = Vec::new();
    // Where each distinct violation is listed, so many samples stay linear.
    let mut listed: BTreeMap<(usize, &str, &str, &str), usize> = BTreeMap::new();
    for (i, s) in p.samples.iter().enumerate() {
        for (j, st) in s.steps.iter().enumerate() {
            for v in st.violations.iter().flat_map(|v| v.iter()) {
                let at = (j, &*st.tool, v.path.as_str(), v.message.as_str());
                match listed.get(&at) {
                    Some(&k) => out[k].samples.push(i),
                    None => {
                        listed.insert(at, out.len());
                        out.push(SchemaViolation {
                            step: j,
                            tool: String::from(&*st.tool),
                            path: v.path.clone(),
                            keyword: v.keyword.clone(),
                            message: v.message.clone(),
                            samples: vec![i],
                        });
                    }
                }
            }
        }
    }
    out
}

/// Deterministic tools that answered identical calls (same plan so far) differently.
fn suspect_tools(samples: &[DistinctSample], is_det: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = BTreeSet::new();
    // Each sample's plan so far by id: (id of the prefix before, key of this step) ->
    // id. Samples that agree up to step j share an id, found without comparing whole
    // prefixes, which would make plans of thousands of steps quadratic.
    let mut prefixes: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut prefix = vec![u32::MAX; samples.len()];
    let max = (samples.iter().map(|c| c.sample.steps.len()))
        .max()
        .unwrap_or(0);
    for j in 0..max {
        // Per prefix: the tool, its first result, and whether another result differed.
        let mut groups: BTreeMap<u32, (&str, u32, bool)> = BTreeMap::new();
        for (c, prefix) in samples.iter().zip(prefix.iter_mut()) {
            let Some(st) = c.sample.steps.get(j) else {
                continue;
            };
            let next = u32::try_from(prefixes.len()).unwrap_or(u32::MAX - 1);
            *prefix = *prefixes.entry((*prefix, st.key)).or_insert(next);
            if st.args.is_none() || !is_det(&st.tool) {
                continue;
            }
            let Some(r) = st.result else {
                continue;
            };
            let group = groups.entry(*prefix).or_insert((&st.tool, r, false));
            group.2 |= group.1 != r;
        }
        for (tool, _, differ) in groups.into_values() {
            if differ {
                out.insert(String::from(tool));
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::decide::prepared::distinct_samples;
    use crate::decide::{Options, classify, prepare, test_catalog, tool_states};
    use crate::task::{Task, parse_task_line};

    /// `tally` counted the plain way, in a map: (first index, count) per key, ties to
    /// the first.
    fn tally_by_map(keys: &[(usize, u8, usize)]) -> (usize, Option<(usize, usize)>) {
        let mut counts: BTreeMap<u8, (usize, usize)> = BTreeMap::new();
        for &(i, k, times) in keys {
            counts.entry(k).or_insert((i, 0)).1 += times;
        }
        let best = (counts.values().copied()).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        (counts.len(), best)
    }

    #[test]
    fn tally_counts_as_a_map_counts() {
        let mut draw = crate::jcs::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |m: u64| draw(m) as usize;
        for _ in 0..5_000 {
            let len = next(12);
            let keys: Vec<(usize, u8, usize)> = (0..len)
                .map(|i| (i * 3 + next(3), next(4) as u8, 1 + next(3)))
                .collect();
            assert_eq!(tally(keys.iter().copied()), tally_by_map(&keys), "{keys:?}");
        }
        assert_eq!(tally(std::iter::empty::<(usize, u8, usize)>()), (0, None));
        // One key throughout: its first sample, whatever order the samples come in.
        assert_eq!(tally([(4, 7, 1), (2, 7, 3)].into_iter()), (1, Some((2, 4))));
        // A tie goes to the key seen first, whatever the order keys sort in.
        assert_eq!(tally([(0, 9, 2), (1, 1, 2)].into_iter()), (2, Some((0, 2))));
    }

    /// A task whose samples repeat, differ in arguments and in results, counted once per
    /// distinct sample: every measure equals that of the samples read apart.
    #[test]
    fn distinct_samples_measure_as_every_sample() {
        let c = test_catalog();
        let call = |city: &str, t: u32| {
            format!(
                r#"{{"calls":[{{"tool":"w","arguments":{{"city":"{city}"}},"result":{{"t":{t}}}}}]}}"#
            )
        };
        let (oslo, oslo_other, rome) = (call("Oslo", 3), call("Oslo", 4), call("Rome", 19));
        let line = format!(
            r#"{{"task_id":"t","samples":[{rome},{oslo},{oslo},{oslo_other},{rome},{oslo},{rome}]}}"#
        );
        let shared = parse_task_line(line.as_bytes()).unwrap();
        let apart = Task {
            samples: (shared.samples.iter())
                .map(|s| Arc::new((**s).clone()))
                .collect(),
            ..shared.clone()
        };
        let prepared = prepare(&shared, &c, None);
        let distinct: Vec<(usize, usize)> = (distinct_samples(&prepared).iter())
            .map(|c| (c.at, c.times))
            .collect();
        assert_eq!(distinct, [(0, 3), (1, 3), (3, 1)]);
        let apart_prepared = prepare(&apart, &c, None);
        assert_eq!(distinct_samples(&apart_prepared).len(), 7);
        let decided = |p: &Prepared| {
            let d = classify(p, &tool_states(&c), &Options::default());
            crate::record::json(&d)
        };
        let d = decided(&prepared);
        assert_eq!(d, decided(&apart_prepared));
        for part in [
            r#""arg_agreement":{"count":4,"n":7"#,
            r#""result_agreement":{"count":3,"n":7"#,
            r#""path":"$.steps[0].arguments.city","distinct":2,"agreement":{"count":4"#,
            r#""suspect_tools":["w"]"#,
        ] {
            assert!(d.contains(part), "{part} in {d}");
        }
    }
}
