//! The calibration's sweep is the rule itself: for random labelled tasks, tool states and
//! thresholds, the verdict a grid point records is the one `classify` gives under that
//! point's options, and the run's own decision is `classify`'s, record for record.

use std::collections::BTreeMap;
use std::sync::Arc;

use plangate_gate::calibration::Grid;
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, ToolState};
use plangate_gate::json::{self, Value};
use plangate_gate::record;
use plangate_gate::task::{Arguments, Call, Label, Observed, Sample, Task};
use proptest::prelude::*;

fn catalog() -> Catalog {
    let doc = r#"{"tools":[
      {"name":"a","deterministic":true,"verified":true},
      {"name":"b","deterministic":true,"verified":true,"input_schema":{"type":"object",
        "properties":{"x":{"type":"integer","maximum":2}}}},
      {"name":"c","deterministic":false}]}"#;
    Catalog::from_value(&json::parse(doc).unwrap()).unwrap()
}

fn num(i: u64) -> Value {
    json::parse(&i.to_string()).unwrap()
}

/// A labelled task of up to 14 samples of one or two calls, whose two arguments vary
/// apart, so that agreement, located and diffuse divergence, schema breaks, unknown
/// tools and result disagreement all occur.
fn task() -> impl Strategy<Value = Task> {
    // Mostly trusted tools, so the rule gets past its preconditions.
    let tool = prop_oneof![8 => Just(0usize), 4 => Just(1), 1 => Just(2), 1 => Just(3)];
    let call = (tool, 0u64..4, 0u64..3, 0u64..3).prop_map(|(t, x, y, res)| Call {
        origin: None,
        tool: ["a", "b", "c", "z"][t].to_string(),
        arguments: Arguments::Json(Arc::new(Value::Object(
            [("x".to_string(), num(x)), ("y".to_string(), num(y))]
                .into_iter()
                .collect(),
        ))),
        observed: Observed::Result(num(res).into()),
    });
    let sample = proptest::collection::vec(call, 1..3).prop_map(|calls| {
        Arc::new(Sample {
            calls,
            ..Sample::default()
        })
    });
    // A few plans drawn again and again, so that agreement covers its whole range.
    let pool = proptest::collection::vec(sample, 1..5);
    let picks = proptest::collection::vec(any::<prop::sample::Index>(), 0..15);
    let fixed = prop::bool::weighted(0.9);
    (pool, picks, fixed, any::<bool>()).prop_map(|(pool, picks, fixed, hallucinated)| Task {
        task_id: "t".into(),
        samples: picks
            .iter()
            .map(|i| pool[i.index(pool.len())].clone())
            .collect(),
        label: Some(if hallucinated {
            Label::Hallucinated
        } else {
            Label::Correct
        }),
        epoch_fixed: Some(fixed),
        warnings: Vec::new(),
        notes: Default::default(),
    })
}

fn states() -> impl Strategy<Value = BTreeMap<String, ToolState>> {
    // Most tools declared deterministic and verified (85 in 100 each), few quarantined
    // (10 in 100): each state weighted by its flags' odds.
    let odds = |on: bool, percent: u32| if on { percent } else { 100 - percent };
    let st = prop::strategy::Union::new_weighted(
        (ToolState::ALL.iter())
            .map(|s| {
                let weight = odds(s.declared_deterministic, 85)
                    * odds(s.verified, 85)
                    * odds(s.quarantined, 10);
                (weight, Just(*s))
            })
            .collect(),
    );
    proptest::collection::vec(st, 3).prop_map(|s| {
        ["a", "b", "c"]
            .iter()
            .zip(s)
            .map(|(t, st)| (t.to_string(), st))
            .collect()
    })
}

fn options() -> impl Strategy<Value = Options> {
    let ratio = prop::sample::select(vec![
        "0", "0.1", "0.2", "0.25", "0.33", "0.34", "0.5", "0.6", "0.66", "0.8", "0.9", "1",
    ]);
    (ratio.clone(), ratio, 0usize..7).prop_map(|(a, b, min)| {
        let (a, b): (plangate_gate::stats::Ratio, plangate_gate::stats::Ratio) =
            (a.parse().unwrap(), b.parse().unwrap());
        let (arg_reject, arg_accept) = if a.exceeds(b) { (b, a) } else { (a, b) };
        Options {
            arg_reject,
            arg_accept,
            min_samples: min,
            ..Options::default()
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn every_point_of_the_sweep_is_the_rules_verdict(t in task(), s in states(), run in options()) {
        let catalog = catalog();
        let p = decide::prepare(&t, &catalog, None);
        let grid = Grid::around(&run);
        let (d, observation) = grid.classify(&p, &s);
        prop_assert_eq!(record::json(&d), record::json(&decide::classify(&p, &s, &run)));
        let o = observation.expect("a labelled task is observed");
        prop_assert_eq!(o.agreement, (d.arg_agreement.count, d.n));
        for (i, point) in grid.points().iter().enumerate() {
            let alone = decide::classify(&p, &s, &grid.options(point));
            prop_assert_eq!(o.verdict(i), alone.verdict, "{:?}", point);
            if point.run {
                prop_assert_eq!(o.verdict(i), d.verdict);
            }
        }
    }
}

/// The generated tasks reach every verdict, and points of one task disagree: the
/// property above compares something.
#[test]
fn the_generated_tasks_reach_every_verdict() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let catalog = catalog();
    let (mut seen, mut moved) = (BTreeMap::new(), 0);
    for _ in 0..500 {
        let (t, s, run) = (task(), states(), options())
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let p = decide::prepare(&t, &catalog, None);
        let grid = Grid::around(&run);
        let (d, o) = grid.classify(&p, &s);
        let o = o.unwrap();
        let verdicts: Vec<_> = (0..grid.points().len()).map(|i| o.verdict(i)).collect();
        moved += usize::from(verdicts.iter().any(|v| *v != d.verdict));
        for v in verdicts {
            *seen.entry(v).or_insert(0) += 1;
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        moved > 50,
        "{moved} of 500 tasks change verdict across the grid"
    );
}
