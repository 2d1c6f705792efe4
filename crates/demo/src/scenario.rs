//! The seed's experiment as data: a seeded generator of sampled plans over the seed world
//! (examples/seed-world), with ground-truth labels. Correct plans vary their surface form
//! the way models do; hallucinated plans fabricate a value in every sample.
//!
//! The generator reads the world's real IDs, so "correct" means the call names things
//! that exist, and "hallucinated" means it names things that do not.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::error::DemoError;

/// splitmix64: tiny, and its output for a seed never changes with a dependency upgrade,
/// so `--seed S` names the same batch forever.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// The real things the world has, read from its data files.
#[derive(Debug, Clone)]
pub(crate) struct World {
    /// (id, email, handle) of accounts that were not merged into another.
    users: Vec<(String, String, String)>,
    orders: Vec<String>,
    skus: Vec<String>,
    /// Paths under /world of regular files.
    files: Vec<String>,
    currencies: Vec<String>,
}

impl World {
    /// Reads `data/` of a seed-world folder.
    pub(crate) fn load(dir: &Path) -> Result<World, DemoError> {
        let read = |name: &str| -> Result<Value, DemoError> {
            let path = dir.join("data").join(name);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(source) => return Err(DemoError::Read { path, source }),
            };
            serde_json::from_str(&text).map_err(|source| DemoError::Data { path, source })
        };
        let list =
            |v: &Value, key: &str| -> Vec<Value> { v[key].as_array().cloned().unwrap_or_default() };
        let users = list(&read("users.json")?, "users")
            .into_iter()
            // Merged accounts resolve differently from cache and directory; they belong
            // to the mis-declared resolver's story, not to a correct plan's.
            .filter(|u| u.get("merged_into").is_none())
            .filter_map(|u| {
                Some((
                    u["id"].as_str()?.to_string(),
                    u["email"].as_str()?.to_string(),
                    u["handle"].as_str()?.to_string(),
                ))
            })
            .collect();
        let orders = list(&read("orders.json")?, "orders")
            .iter()
            .filter_map(|o| o["id"].as_str().map(str::to_string))
            .collect();
        let skus = list(&read("products.json")?, "products")
            .iter()
            .filter_map(|p| p["sku"].as_str().map(str::to_string))
            .collect();
        let rates = read("rates.json")?;
        let currencies = rates["rates"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let mut files = Vec::new();
        collect_files(&dir.join("data"), &dir.join("data"), &mut files)?;
        files.retain(|f| f.starts_with("files/"));
        files.sort();
        let w = World {
            users,
            orders,
            skus,
            files,
            currencies,
        };
        let whole = !w.users.is_empty()
            && !w.orders.is_empty()
            && !w.skus.is_empty()
            && !w.files.is_empty()
            && w.currencies.len() > 1;
        if !whole {
            return Err(DemoError::NotTheSeedWorld(dir.to_path_buf()));
        }
        Ok(w)
    }
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), DemoError> {
    let entries = std::fs::read_dir(dir).map_err(|source| DemoError::List {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            collect_files(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// How a batch is drawn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) tasks: usize,
    pub(crate) samples: usize,
    pub(crate) seed: u64,
    /// Share of tasks whose plan is hallucinated.
    pub(crate) hallucinated: f64,
    /// Chance that one sample of a correct task slips and fabricates anyway.
    pub(crate) slip: f64,
    /// Share of hallucinated tasks on a reference tool whose samples repeat one invented
    /// value (a consistent fabrication), a few of them with one or two samples that
    /// invent their own.
    pub(crate) consistent: f64,
}

/// One generated task: its samples line (no results: `eval` executes it) and its label.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub(crate) line: String,
    pub(crate) hallucinated: bool,
    /// A hallucinated task whose samples repeat one invented value.
    pub(crate) consistent: bool,
    /// The template's tool (or chain, `a>b`), for the per-tool breakdown.
    pub(crate) tool: &'static str,
}

/// A plan template: the tool and how one sample writes its call, correct or made up.
type Writer = fn(&World, &mut Rng, &mut Rng, bool) -> String;

/// Every seed-world tool, with a weight (how often the agent uses it).
const TEMPLATES: &[(&str, u32, Writer)] = &[
    ("read_file", 10, read_file),
    ("list_dir", 4, list_dir),
    ("grep_file", 6, grep_file),
    ("get_user", 10, get_user),
    ("get_order", 10, get_order),
    ("lookup_product", 8, lookup_product),
    ("convert_currency", 6, convert_currency),
    ("search_index", 8, search_index),
    ("read_config", 6, read_config),
    ("resolve_user", 6, resolve_user),
    ("get_current_time", 3, get_current_time),
    ("random_sample", 3, random_sample),
];

/// Templates whose made-up value names a thing that must exist (a file, a user, an
/// order, a product): the ones a consistent fabrication is drawn for. An invented search
/// query or clock offset is not a reference, and no tool can say it does not exist.
const REFERENCES: &[&str] = &[
    "read_file",
    "list_dir",
    "grep_file",
    "get_user",
    "get_order",
    "lookup_product",
    "get_order>get_user",
];

/// Two-step plans: the second call reads the first's result through `$from`.
const CHAINS: &[(&str, u32, Writer)] = &[("get_order>get_user", 6, order_then_user)];

/// Draws the batch.
pub(crate) fn generate(world: &World, cfg: &Config) -> Vec<Generated> {
    let mut rng = Rng::new(cfg.seed);
    let all: Vec<(&'static str, u32, Writer)> = TEMPLATES.iter().chain(CHAINS).copied().collect();
    let total: u32 = all.iter().map(|t| t.1).sum();
    (0..cfg.tasks)
        .map(|i| {
            let mut r = rng.below(total as usize) as u32;
            let (tool, _, write) = *all
                .iter()
                .find(|t| {
                    if r < t.1 {
                        true
                    } else {
                        r -= t.1;
                        false
                    }
                })
                .unwrap_or(&all[0]);
            let hallucinated = rng.chance(cfg.hallucinated);
            // One task draws one intent: a correct plan names one real thing in every
            // sample (surface forms vary); a hallucinated one makes up a new thing in
            // each, or, consistently, the same made-up thing in (nearly) every one.
            let intent = rng.next();
            // Drawn from the task's own stream, so a batch without consistent
            // fabrications is the batch the same seed always drew.
            let mut side = Rng::new(intent ^ 0xC0E5_15EE_D0F0_0D5E);
            let consistent =
                hallucinated && REFERENCES.contains(&tool) && side.chance(cfg.consistent);
            let strays = if consistent && side.chance(0.3) {
                1 + side.below(2)
            } else {
                0
            };
            let mut samples = Vec::with_capacity(cfg.samples);
            for k in 0..cfg.samples {
                let fabricate = hallucinated || rng.chance(cfg.slip);
                let own = fabricate.then(|| rng.next());
                let mut what = match own {
                    Some(seed) if !(consistent && k >= strays) => Rng::new(seed),
                    _ => Rng::new(intent),
                };
                // The surface form is the sample's own; the thing it names is the task's.
                let mut form = Rng::new(rng.next());
                samples.push(write(world, &mut what, &mut form, fabricate));
            }
            let mut line = String::new();
            let _ = write!(
                line,
                r#"{{"task_id":"demo-{i:05}","label":"{}","samples":[{}]}}"#,
                if hallucinated {
                    "hallucinated"
                } else {
                    "correct"
                },
                samples.join(",")
            );
            Generated {
                line,
                hallucinated,
                consistent,
                tool,
            }
        })
        .collect()
}

fn sample(calls: &[String]) -> String {
    format!(r#"{{"calls":[{}]}}"#, calls.join(","))
}

fn call(tool: &str, args: &str) -> String {
    format!(r#"{{"tool":"{tool}","arguments":{args}}}"#)
}

fn made_up(rng: &mut Rng, prefix: &str) -> String {
    format!("{prefix}{:04}", 5000 + rng.below(5000))
}

/// One of the ways to write a file path that all name the same file.
fn path_form(rel: &str, form: &mut Rng) -> String {
    let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel));
    match form.below(6) {
        0 => format!("/world/{rel}"),
        1 => rel.to_string(),
        2 => format!("./{rel}"),
        3 => format!("/world/{dir}/./{file}"),
        4 => {
            let last = dir.rsplit_once('/').map_or(dir, |(_, l)| l);
            format!("/world/{dir}/../{last}/{file}")
        }
        _ => format!("/world//{rel}/"),
    }
}

fn read_file(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let rel = if fake {
        format!(
            "files/{}/{}.md",
            what.pick(&["docs", "notes", "reports"]),
            made_up(what, "draft-")
        )
    } else {
        what.pick(&w.files).clone()
    };
    let p = path_form(&rel, form);
    let args = match form.below(3) {
        0 => format!(r#"{{"path":"{p}"}}"#),
        1 => format!(r#"{{"path":"{p}","max_bytes":65536}}"#),
        _ => format!(r#"{{"max_bytes":65536.0,"path":"{p}"}}"#),
    };
    sample(&[call("read_file", &args)])
}

fn list_dir(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let rel = if fake {
        format!("files/{}", made_up(what, "archive-"))
    } else {
        let f = what.pick(&w.files);
        f.rsplit_once('/')
            .map_or("files".to_string(), |(d, _)| d.to_string())
    };
    let p = path_form(&rel, form);
    let args = match form.below(2) {
        0 => format!(r#"{{"path":"{p}"}}"#),
        _ => format!(r#"{{"recursive":false,"path":"{p}"}}"#),
    };
    sample(&[call("list_dir", &args)])
}

fn grep_file(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let rel = if fake {
        format!("files/logs/app-{}.log", made_up(what, "2026-"))
    } else {
        what.pick(&w.files).clone()
    };
    let pat = what.pick(&["ERROR", "refund", "TODO", "def "]);
    let p = path_form(&rel, form);
    let args = match form.below(3) {
        0 => format!(r#"{{"path":"{p}","pattern":"{pat}"}}"#),
        1 => format!(r#"{{"pattern":"{pat}","path":"{p}","ignore_case":false}}"#),
        _ => format!(r#"{{"path":"{p}","pattern":"{pat}","max_matches":50}}"#),
    };
    sample(&[call("grep_file", &args)])
}

fn get_user(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let arg = if fake {
        made_up(what, "u_")
    } else {
        let (id, email, handle) = what.pick(&w.users);
        match form.below(5) {
            0 | 1 => id.clone(),
            2 => email.clone(),
            3 => format!("@{handle}"),
            _ => format!(" {id}"),
        }
    };
    sample(&[call("get_user", &format!(r#"{{"user_id":"{arg}"}}"#))])
}

fn get_order(w: &World, what: &mut Rng, _form: &mut Rng, fake: bool) -> String {
    let id = if fake {
        made_up(what, "o_")
    } else {
        what.pick(&w.orders).clone()
    };
    sample(&[call("get_order", &format!(r#"{{"order_id":"{id}"}}"#))])
}

fn lookup_product(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let sku = if fake {
        made_up(what, "SKU-")
    } else {
        what.pick(&w.skus).clone()
    };
    let args = match form.below(3) {
        0 => format!(r#"{{"sku":"{sku}","fields":["name","price_cents"]}}"#),
        1 => format!(
            r#"{{"fields":["price_cents","name"],"sku":"{}"}}"#,
            sku.to_lowercase()
        ),
        _ => format!(r#"{{"sku":" {sku} ","fields":["price_cents","name"]}}"#),
    };
    sample(&[call("lookup_product", &args)])
}

fn convert_currency(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let amount = [19, 45, 120, 250][what.below(4)];
    let from = what.pick(&w.currencies).clone();
    let to = if fake {
        let letters = b"QWXZJK";
        (0..3)
            .map(|_| letters[what.below(letters.len())] as char)
            .collect()
    } else {
        let others: Vec<&String> = w.currencies.iter().filter(|c| **c != from).collect();
        (*what.pick(&others)).clone()
    };
    let args = match form.below(3) {
        0 => format!(r#"{{"amount":{amount},"from":"{from}","to":"{to}"}}"#),
        1 => format!(
            r#"{{"amount":{amount}.0,"from":"{}","to":"{to}"}}"#,
            from.to_lowercase()
        ),
        _ => format!(
            r#"{{"to":"{}","from":"{from}","amount":{amount}e0}}"#,
            to.to_lowercase()
        ),
    };
    sample(&[call("convert_currency", &args)])
}

fn search_index(_: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let q = if fake {
        format!("policy {}", made_up(what, "clause "))
    } else {
        what.pick(&[
            "refund shipping",
            "gift cards",
            "password reset",
            "order tracking",
        ])
        .to_string()
    };
    let args = match form.below(2) {
        0 => format!(r#"{{"query":"{q}"}}"#),
        _ => format!(r#"{{"limit":5,"query":"{q}"}}"#),
    };
    sample(&[call("search_index", &args)])
}

fn read_config(_: &World, what: &mut Rng, _form: &mut Rng, fake: bool) -> String {
    let key = if fake {
        format!("features.{}", made_up(what, "flag_"))
    } else {
        what.pick(&[
            "features",
            "refunds.window_days",
            "search",
            "identity.cache_ttl_s",
        ])
        .to_string()
    };
    sample(&[call("read_config", &format!(r#"{{"key":"{key}"}}"#))])
}

fn resolve_user(w: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let who = if fake {
        format!("{}@example.com", made_up(what, "user"))
    } else {
        let (_, email, _) = what.pick(&w.users);
        match form.below(3) {
            0 => email.clone(),
            1 => email.to_uppercase(),
            _ => format!(" {email}"),
        }
    };
    sample(&[call("resolve_user", &format!(r#"{{"user":"{who}"}}"#))])
}

fn get_current_time(_: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let args = if fake {
        format!(
            r#"{{"utc_offset_minutes":{}}}"#,
            15 * (what.below(90) as i64 - 40)
        )
    } else if form.below(2) == 0 {
        "{}".to_string()
    } else {
        r#"{"utc_offset_minutes":0}"#.to_string()
    };
    sample(&[call("get_current_time", &args)])
}

fn random_sample(_: &World, what: &mut Rng, form: &mut Rng, fake: bool) -> String {
    let coll = what.pick(&["users", "orders", "products"]);
    let args = if fake {
        format!(r#"{{"collection":"{coll}","k":{}}}"#, 4 + what.below(40))
    } else if form.below(2) == 0 {
        format!(r#"{{"collection":"{coll}"}}"#)
    } else {
        format!(r#"{{"k":3,"collection":"{coll}"}}"#)
    };
    sample(&[call("random_sample", &args)])
}

fn order_then_user(w: &World, what: &mut Rng, _form: &mut Rng, fake: bool) -> String {
    let id = if fake {
        made_up(what, "o_")
    } else {
        what.pick(&w.orders).clone()
    };
    sample(&[
        call("get_order", &format!(r#"{{"order_id":"{id}"}}"#)),
        call(
            "get_user",
            r#"{"user_id":{"$from":{"step":0,"pointer":"/user_id"}}}"#,
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_gate::{catalog::Catalog, decide, json, task};

    fn world() -> World {
        World::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-world"))
            .unwrap()
    }

    fn catalog() -> Catalog {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed-world/catalog.json");
        Catalog::from_value(&json::parse(&std::fs::read_to_string(p).unwrap()).unwrap()).unwrap()
    }

    /// A generated line read and decided as the catalog records tools. Without
    /// executing, results are absent: arguments alone are compared.
    fn decide_line(cat: &Catalog, line: &str) -> (task::Task, decide::Decision) {
        let t = task::parse_task_line(line.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"));
        let d = decide::classify(
            &decide::prepare(&t, cat, None),
            &decide::tool_states(cat),
            &decide::Options::default(),
        );
        (t, d)
    }

    #[test]
    fn same_seed_same_batch() {
        let cfg = Config {
            tasks: 50,
            samples: 10,
            seed: 7,
            hallucinated: 0.3,
            slip: 0.05,
            consistent: 0.25,
        };
        let a: Vec<String> = generate(&world(), &cfg)
            .into_iter()
            .map(|g| g.line)
            .collect();
        let b: Vec<String> = generate(&world(), &cfg)
            .into_iter()
            .map(|g| g.line)
            .collect();
        assert_eq!(a, b);
        let c: Vec<String> = generate(&world(), &Config { seed: 8, ..cfg })
            .into_iter()
            .map(|g| g.line)
            .collect();
        assert_ne!(a, c);
    }

    /// A consistent fabrication repeats one invented value in nearly every sample, so
    /// agreement alone cannot see it.
    #[test]
    fn consistent_fabrications_agree_with_themselves() {
        let cfg = Config {
            tasks: 600,
            samples: 10,
            seed: 2,
            hallucinated: 0.5,
            slip: 0.0,
            consistent: 1.0,
        };
        let cat = catalog();
        let mut seen = 0;
        for g in generate(&world(), &cfg) {
            assert!(!g.consistent || (g.hallucinated && REFERENCES.contains(&g.tool)));
            if !g.consistent {
                continue;
            }
            seen += 1;
            let (_, d) = decide_line(&cat, &g.line);
            assert!(d.arg_agreement.count >= 8, "{}: {}", g.tool, g.line);
        }
        assert!(seen > 50, "{seen} consistent fabrications drawn");
    }

    /// The premise of the demo: correct plans look different as written but agree once
    /// canonicalized; hallucinated ones disagree after canonicalization too.
    #[test]
    fn correct_plans_vary_on_the_surface_and_agree_canonically() {
        let cfg = Config {
            tasks: 400,
            samples: 10,
            seed: 1,
            hallucinated: 0.3,
            slip: 0.0,
            consistent: 0.0,
        };
        let cat = catalog();
        let (mut varied, mut correct) = (0, 0);
        for g in generate(&world(), &cfg) {
            let (t, d) = decide_line(&cat, &g.line);
            assert_eq!(t.samples.len(), 10);
            assert!(d.malformed.is_empty(), "{}: {:?}", g.line, d.malformed);
            if g.hallucinated {
                if g.tool != "get_current_time" && g.tool != "random_sample" {
                    assert!(
                        d.arg_agreement.count <= 3,
                        "{} agrees {}/10: {}",
                        g.tool,
                        d.arg_agreement.count,
                        g.line
                    );
                }
            } else if g.tool != "get_user" {
                // get_user spellings agree only through the resolver, which needs eval.
                correct += 1;
                assert_eq!(d.arg_agreement.count, 10, "{}: {}", g.tool, g.line);
                let raw: std::collections::BTreeSet<String> = t
                    .samples
                    .iter()
                    // The seed's equality: raw JSON, so 1 and 1.0 or two path spellings differ.
                    .map(|s| {
                        format!(
                            "{:?}",
                            s.calls
                                .iter()
                                .map(|c| match &c.arguments {
                                    task::Arguments::Json(v) => plangate_gate::seed::dumps_key(v),
                                    task::Arguments::Malformed(m) => m.clone(),
                                })
                                .collect::<Vec<_>>()
                        )
                    })
                    .collect();
                if raw.len() > 1 {
                    varied += 1;
                }
            }
        }
        assert!(
            varied * 2 > correct,
            "only {varied} of {correct} correct tasks vary their surface form"
        );
    }
}
