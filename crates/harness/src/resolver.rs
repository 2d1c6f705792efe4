//! `id` hints resolved in the run's own epoch (docs/design.md, "Canonical arguments"): the value a model
//! wrote is sent to the hint's resolver tool and replaced by its canonical answer, so an
//! email, a handle and a user ID for one account agree.
//!
//! The resolver convention, generic over tools: the value goes in as the resolver's
//! first required parameter (`{"user": "<value>"}` for the seed world's `resolve_user`);
//! the canonical answer is the first string member of the result object named `id` or
//! ending in `_id` (`user_id`). A failed call, or a result without such a member, means
//! the value does not resolve, and the gate keeps it distinct.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use plangate_gate::canon::Resolver;
use plangate_gate::catalog::Catalog;
use plangate_gate::jcs;
use plangate_gate::json::{Object, Value};
use plangate_gate::task::Observed;

use crate::bounded::Bounded;
use crate::observe::observed;
use crate::world::World;

/// The canonical answer in a resolver's result, per the convention above.
pub fn resolver_answer(o: &Observed) -> Option<Value> {
    let Observed::Result(p) = o else {
        return None;
    };
    let Value::Object(obj) = p.value() else {
        return None;
    };
    obj.iter()
        .find(|(k, v)| (k.as_str() == "id" || k.ends_with("_id")) && matches!(v, Value::String(_)))
        .map(|(_, v)| v.clone())
}

/// Resolves through the world's tools, caching one answer per (tool, value) for the
/// whole run: the first answer is the run's answer, so every task sees the same one.
/// A bounded cache (a server's) forgets its oldest answers first: a value forgotten is
/// asked again.
/// `Sync`: workers share it.
pub struct SandboxResolver {
    world: Arc<World>,
    /// Each resolver tool's input parameter (None: it has no required parameter).
    params: HashMap<String, Option<String>>,
    cache: Mutex<Bounded<(String, String), Option<Value>>>,
}

impl std::fmt::Debug for SandboxResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxResolver")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl SandboxResolver {
    /// A resolver over `world`, reading each tool's first required parameter from
    /// `catalog`, remembering at most `bound` answers (`None`: all).
    pub fn new(world: Arc<World>, catalog: &Catalog, bound: Option<usize>) -> Self {
        let params = catalog
            .tools()
            .iter()
            .map(|t| {
                let first = t
                    .parameters
                    .as_object()
                    .and_then(|o| o.get("required"))
                    .and_then(Value::as_array)
                    .and_then(|r| r.first())
                    .and_then(Value::as_str)
                    .map(str::to_string);
                (t.name.clone(), first)
            })
            .collect();
        SandboxResolver {
            world,
            params,
            cache: Mutex::new(Bounded::new(bound)),
        }
    }

    /// The canonical value for `value` per resolver `tool`, or `None`.
    pub fn lookup(&self, tool: &str, value: &Value) -> Option<Value> {
        let key = (tool.to_string(), jcs::to_string(value));
        if let Some(hit) = self.lock().get(&key) {
            return hit.clone();
        }
        let answer = self.ask(tool, value);
        // Two workers may ask at once; the first stored answer wins for both.
        self.lock().get_or_insert(key, answer).clone()
    }

    fn ask(&self, tool: &str, value: &Value) -> Option<Value> {
        let param = self.params.get(tool)?.as_ref()?;
        let args = Value::Object(Object::from_iter([(param.clone(), value.clone())]));
        let record = self.world.call(tool, jcs::to_string(&args).as_bytes())?;
        let answer = resolver_answer(&observed(&record));
        tracing::debug!(tool, value = %jcs::to_string(value), resolved = ?answer.as_ref().map(jcs::to_string), "id resolved");
        answer
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bounded<(String, String), Option<Value>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Resolver for &SandboxResolver {
    fn resolve(&mut self, tool: &str, value: &Value) -> Option<Value> {
        self.lookup(tool, value)
    }
}

/// A per-task view that remembers which resolver tools the task's canonical arguments
/// depended on: their live mounts count as touched by the task.
pub(crate) struct TaskResolver<'a> {
    pub(crate) shared: &'a SandboxResolver,
    pub(crate) used: BTreeSet<String>,
}

impl Resolver for TaskResolver<'_> {
    fn resolve(&mut self, tool: &str, value: &Value) -> Option<Value> {
        self.used.insert(tool.to_string());
        self.shared.lookup(tool, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_gate::json::parse;

    #[test]
    fn the_answer_is_the_first_id_member() {
        let r = |s: &str| resolver_answer(&Observed::Result(parse(s).unwrap().into()));
        assert_eq!(
            r(r#"{"matched":"email","user_id":"u_0001","source":"x"}"#),
            Some(Value::String("u_0001".into()))
        );
        assert_eq!(
            r(r#"{"id":"a","org_id":"b"}"#),
            Some(Value::String("a".into()))
        );
        assert_eq!(
            r(r#"{"user_id":7,"other_id":"z"}"#),
            Some(Value::String("z".into()))
        );
        assert_eq!(r(r#"{"name":"x"}"#), None);
        assert_eq!(r(r#"["u_1"]"#), None);
        let failed = Observed::Error {
            kind: "not_found".into(),
            message: String::new(),
        };
        assert_eq!(resolver_answer(&failed), None);
    }
}
