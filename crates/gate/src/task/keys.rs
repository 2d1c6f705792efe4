//! Task-local ids for keys (printed forms of arguments, results and calls), so agreement
//! compares small ids instead of long printed texts, and prints a form only when two keys
//! could be equal. `decide`, `baseline` and `seed` key by it, each with its own form.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Payload;
use crate::jcs::{Fingerprint, fingerprint};
use crate::json::Value;

/// A printed form of JSON that a [`KeyInterner`] compares by, from a value or a result payload
/// (printed from its text when it has one).
pub(crate) trait Form {
    /// Whether payloads are told apart by their [`Fingerprint`]s before printing: true
    /// only for a form whose equal forms have equal fingerprints, and whose printed
    /// keys, read as JSON text, have the fingerprint of every text they are the form
    /// of (or are no JSON at all). RFC 8785 and `json.dumps` are such forms (see
    /// [`Fingerprint`]).
    const FINGERPRINTS: bool = false;
    /// The form of a value.
    fn of_value(&self, v: &Value) -> String;
    /// The form of a result payload.
    fn of_payload(&self, p: &Payload) -> String;
    /// The fingerprint of a key handed over printed: of its text read as JSON.
    fn fingerprint_key(&self, key: &str) -> Option<Fingerprint> {
        fingerprint(key)
    }
}

/// RFC 8785 as a [`Form`].
pub(crate) struct Rfc8785Form;

impl Form for Rfc8785Form {
    const FINGERPRINTS: bool = true;
    fn of_value(&self, v: &Value) -> String {
        crate::jcs::to_string(v)
    }
    fn of_payload(&self, p: &Payload) -> String {
        p.canonical().0
    }
}

/// Task-local ids of keys: equal keys get equal ids. Results are looked up by text
/// first, so the copies of one result in N samples cost one lookup, and a new text is
/// told apart from the others by its [`Fingerprint`], printed only when another key
/// has the same one; comparing ids is cheaper than comparing printed results of
/// hundreds of bytes.
pub(crate) struct KeyInterner<'a, F> {
    table: IdsByForm<'a, F>,
    next: u32,
    texts: BoundedMemo<&'a str, u32>,
    values: BoundedMemo<&'a Value, u32>,
    calls: BoundedMemo<(&'a str, Arc<Value>), u32>,
}

impl<'a, F: Form> KeyInterner<'a, F> {
    /// Ids of keys; values and payloads are keyed by their `form`.
    pub(crate) fn new(form: F) -> Self {
        KeyInterner {
            table: IdsByForm::new(form),
            next: 0,
            texts: BoundedMemo::new(),
            values: BoundedMemo::new(),
            calls: BoundedMemo::new(),
        }
    }

    /// The id of `key`.
    pub(crate) fn id(&mut self, key: String) -> u32 {
        self.table.id(key, &mut self.next)
    }

    /// The id of `v`'s key, from an earlier equal value when there is one (values
    /// equal as trees have equal keys).
    pub(crate) fn value(&mut self, v: &'a Value) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        self.values.get_or(v, || table.value(v, next))
    }

    /// The id of the key of a call of `tool` with canonical arguments `args`
    /// ([`crate::jcs::call_key`]'s, not violating the schema), from an earlier call
    /// equal as a tree when there is one (the hints map most spellings of a call to one
    /// tree).
    pub(crate) fn call(&mut self, tool: &'a str, args: &Arc<Value>) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        self.calls.get_or((tool, Arc::clone(args)), || {
            table.keyed(Waiting::Call(tool, Arc::clone(args)), next)
        })
    }

    /// The id of `p`'s key, from an earlier copy of its text when there is one.
    pub(crate) fn payload(&mut self, p: &'a Payload) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        match p.text() {
            Some(text) => self.texts.get_or(text, || table.payload(p, next)),
            None => table.payload(p, next),
        }
    }
}

/// The ids of keys by printed form, numbered in order of first appearance from a
/// counter the caller holds (the naive scorer numbers two tables from one).
///
/// The first value or payload keyed waits unprinted while it is the only key: a task
/// whose samples all returned one text, or wrote one value, never needs its form (its
/// copies are found by text or as equal trees), and most tasks are such. Once there is
/// more than one key, a payload of a [`Form::FINGERPRINTS`] form is given its id by
/// fingerprint while no other key has the same one, and stays unprinted; keys handed
/// over printed are fingerprinted from their text then. Where two fingerprints meet,
/// both keys are printed and compared by form: a hash never decides that two
/// results agree, so no tool can make different results agree by writing a collision.
pub(crate) struct IdsByForm<'a, F> {
    /// Printed forms and their ids.
    ids: BTreeMap<String, u32>,
    /// The first key, not printed yet, and its id.
    waiting: Option<(Waiting<'a>, u32)>,
    /// Once a payload or value was keyed by fingerprint: the fingerprint of every form
    /// keyed, with the payload or value and id of the one form not printed (None:
    /// printed, in `ids`; several printed forms may share a fingerprint). Unprinted
    /// forms differ from each other and from every printed one.
    hashes: Slots<'a>,
    /// Whether `hashes` is kept.
    hashed: bool,
    /// A printed form has no fingerprint (it is no JSON text): every payload is printed.
    opaque: bool,
    form: F,
}

impl<'a, F: Form> IdsByForm<'a, F> {
    /// An empty table keying by `form`.
    pub(crate) fn new(form: F) -> Self {
        IdsByForm {
            ids: BTreeMap::new(),
            waiting: None,
            hashes: Slots::default(),
            hashed: false,
            opaque: false,
            form,
        }
    }

    fn fresh(next: &mut u32) -> u32 {
        let id = *next;
        *next = next.saturating_add(1);
        id
    }

    /// The id of the first key, which waits; None when something was keyed already.
    fn first(&mut self, first: impl FnOnce() -> Waiting<'a>, next: &mut u32) -> Option<u32> {
        let empty = self.ids.is_empty() && self.hashes.is_empty() && self.waiting.is_none();
        empty.then(|| {
            let id = Self::fresh(next);
            self.waiting = Some((first(), id));
            id
        })
    }

    /// The id of a printed form.
    pub(crate) fn id(&mut self, key: String, next: &mut u32) -> u32 {
        self.settle();
        if !self.hashed {
            return *self.ids.entry(key).or_insert_with(|| Self::fresh(next));
        }
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        // A new form: the unprinted key it may be is the one of its fingerprint.
        match self.form.fingerprint_key(&key) {
            Some(f) => {
                if let Some((q, id)) = self.hashes.get_or_insert_with(f.hash, || None).take() {
                    self.ids.insert(q.print(&self.form), id);
                }
            }
            None => {
                self.opaque = true;
                for slot in self.hashes.values_mut() {
                    if let Some((q, id)) = slot.take() {
                        self.ids.insert(q.print(&self.form), id);
                    }
                }
            }
        }
        *self.ids.entry(key).or_insert_with(|| Self::fresh(next))
    }

    /// The id of a value's form, by fingerprint while no other key shares it.
    pub(crate) fn value(&mut self, v: &'a Value, next: &mut u32) -> u32 {
        self.keyed(Waiting::Value(v), next)
    }

    /// The id of a payload's form, by fingerprint while no other key shares it.
    pub(crate) fn payload(&mut self, p: &'a Payload, next: &mut u32) -> u32 {
        self.keyed(Waiting::Payload(p), next)
    }

    fn keyed(&mut self, w: Waiting<'a>, next: &mut u32) -> u32 {
        if let Some(id) = self.first(|| w.clone(), next) {
            return id;
        }
        let Some(f) = w.fingerprint::<F>() else {
            let key = w.print(&self.form);
            return self.id(key, next);
        };
        self.settle();
        self.hash_printed();
        // A fingerprint not seen before is a new form: its id, and the key waits
        // unprinted (unless printed forms have no fingerprint, `opaque`). One search.
        let (opaque, mut new) = (self.opaque, None);
        let slot = self.hashes.get_or_insert_with(f.hash, || {
            (!opaque).then(|| {
                let id = Self::fresh(next);
                new = Some(id);
                (w.clone(), id)
            })
        });
        if let Some(id) = new {
            return id;
        }
        if let Some((q, id)) = slot.take() {
            self.ids.insert(q.print(&self.form), id);
        }
        let key = w.print(&self.form);
        *self.ids.entry(key).or_insert_with(|| Self::fresh(next))
    }

    /// Keys the waiting first key before another is compared with it: by fingerprint
    /// when it has one, else printed.
    fn settle(&mut self) {
        let Some((first, id)) = self.waiting.take() else {
            return;
        };
        if let Some(f) = first.fingerprint::<F>() {
            self.hashed = true;
            self.hashes.get_or_insert_with(f.hash, || Some((first, id)));
            return;
        }
        self.ids.insert(first.print(&self.form), id);
    }

    /// Starts keeping fingerprints: those of the forms printed so far.
    fn hash_printed(&mut self) {
        if self.hashed {
            return;
        }
        self.hashed = true;
        for key in self.ids.keys() {
            match self.form.fingerprint_key(key) {
                Some(f) => {
                    self.hashes.get_or_insert_with(f.hash, || None);
                }
                None => self.opaque = true,
            }
        }
    }
}

/// The first few distinct things a task computed, found again by equality. Samples
/// repeat a handful of calls and results, so a short list catches them; its bound
/// keeps a task of thousands of distinct calls linear (each lookup is at most
/// [`BoundedMemo::CAP`] comparisons, and what does not fit is simply computed again).
pub(crate) struct BoundedMemo<K, V>(Vec<(K, V)>);

impl<K: PartialEq, V: Clone> BoundedMemo<K, V> {
    const CAP: usize = 64;

    /// An empty list.
    pub(crate) fn new() -> Self {
        BoundedMemo(Vec::new())
    }

    /// An empty list with room for the `n` things a caller expects to keep (never
    /// more than it keeps), so it is allocated once instead of grown.
    pub(crate) fn with_room(n: usize) -> Self {
        BoundedMemo(Vec::with_capacity(n.min(Self::CAP)))
    }

    /// What was computed for a key equal to `key`, or `compute`'s answer, kept while
    /// there is room.
    pub(crate) fn get_or(&mut self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Some((_, v)) = self.0.iter().find(|(seen, _)| *seen == key) {
            return v.clone();
        }
        let v = compute();
        if self.0.len() < Self::CAP {
            self.0.push((key, v.clone()));
        }
        v
    }
}

/// A task's small map: a task has a handful of tool names, or of fingerprints in a
/// [`IdsByForm`], found in a short list; past [`SMALL_MAP_LIST_LEN`] of them (a hostile line of thousands),
/// a map keeps each search from growing with them. A map for the few would cost an
/// allocation and its freeing per task, for every task.
pub(crate) struct SmallMap<K, V> {
    listed: Vec<(K, V)>,
    more: BTreeMap<K, V>,
}

/// Keys a [`SmallMap`] finds in its short list.
pub(crate) const SMALL_MAP_LIST_LEN: usize = 16;

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap {
            listed: Vec::new(),
            more: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy, V> SmallMap<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.listed.len() + self.more.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The value of `key`, `value()` put in first when there is none.
    pub(crate) fn get_or_insert_with(&mut self, key: K, value: impl FnOnce() -> V) -> &mut V {
        if let Some(i) = self.listed.iter().position(|(k, _)| *k == key) {
            return &mut self.listed[i].1;
        }
        if self.listed.len() < SMALL_MAP_LIST_LEN {
            self.listed.push((key, value()));
            return &mut self.listed.last_mut().expect("just pushed").1;
        }
        self.more.entry(key).or_insert_with(value)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        (self.listed.iter_mut().map(|(_, v)| v)).chain(self.more.values_mut())
    }
}

/// An [`IdsByForm`]'s fingerprints, each with the one key of that fingerprint not printed
/// yet (None: printed).
type Slots<'a> = SmallMap<u64, Option<(Waiting<'a>, u32)>>;

/// What [`IdsByForm`] keyed and has not printed yet.
#[derive(Clone)]
enum Waiting<'a> {
    Value(&'a Value),
    Payload(&'a Payload),
    /// A call of a tool with canonical arguments (see [`crate::jcs::call_key`]).
    Call(&'a str, Arc<Value>),
}

impl Waiting<'_> {
    /// Its form.
    fn print(&self, form: &impl Form) -> String {
        match self {
            Waiting::Value(v) => form.of_value(v),
            Waiting::Payload(p) => form.of_payload(p),
            Waiting::Call(tool, v) => crate::jcs::call_key(tool, v, false),
        }
    }

    /// Its fingerprint, where the form tells keys apart by them.
    fn fingerprint<F: Form>(&self) -> Option<Fingerprint> {
        if !F::FINGERPRINTS {
            return None;
        }
        match self {
            Waiting::Value(v) => crate::jcs::fingerprint_value(v),
            Waiting::Payload(p) => p.fingerprint(),
            Waiting::Call(tool, v) => crate::jcs::fingerprint_call(tool, v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Observed, PayloadRepr, parse_task_line, result_ids};

    /// Past the short list of fingerprints an [`IdsByForm`] keeps ([`SMALL_MAP_LIST_LEN`]), results are
    /// told apart and found again as before: equal results one id, distinct ones their
    /// own, whichever of the list or the map holds them.
    #[test]
    fn many_distinct_results_keep_their_ids() {
        let n = 3 * SMALL_MAP_LIST_LEN;
        let result = |i: usize| {
            let text = format!("{{\"n\":{i},\"s\":\"r{i}\"}}");
            Observed::Result(Payload::from(crate::json::parse(&text).unwrap()))
        };
        let results: Vec<Observed> = (0..n).chain((0..n).rev()).map(result).collect();
        let ids = result_ids(&results);
        let (first, again) = ids.split_at(n);
        let distinct: std::collections::BTreeSet<_> = first.iter().collect();
        assert_eq!(distinct.len(), n, "{first:?}");
        let back: Vec<_> = again.iter().rev().copied().collect();
        assert_eq!(back, first);
    }

    /// What each sample's first call of `line` observed.
    fn first_calls(line: &[u8]) -> Vec<Observed> {
        let task = parse_task_line(line).unwrap();
        (task.samples.iter())
            .map(|s| s.calls[0].observed.clone())
            .collect()
    }

    /// Whether a payload's RFC 8785 form was printed.
    fn printed(o: &Observed) -> bool {
        match o {
            Observed::Result(Payload(PayloadRepr::Text(t))) => t.canonical.get().is_some(),
            other => panic!("{other:?}"),
        }
    }

    /// Results whose fingerprints differ from every other key's get their ids unprinted;
    /// those that print alike are printed, compared and agree, an error among them.
    #[test]
    fn results_are_told_apart_without_printing() {
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1.0,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":2,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"b":"x","a":10e-1}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1.0,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"error":{"kind":"k","message":"m"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":[1,{"c":null}],"b":"y"}}]}]}"#;
        let observed = first_calls(line);
        let ids: Vec<Option<u32>> = result_ids(&observed).into_iter().collect();
        let want = [0, 1, 0, 0, 2, 2, 3];
        assert_eq!(ids, want.map(Some));
        for (i, o) in observed.iter().enumerate() {
            // The results that share a form with another key were printed; no other.
            if i != 4 {
                assert_eq!(printed(o), [0, 2, 3, 5].contains(&i), "result {i}");
            }
        }
        // A repeated key leaves the fingerprint out; the result is printed and keyed.
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":[1]}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":0,"a":1}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1}}]}]}"#;
        let observed = first_calls(line);
        assert_eq!(result_ids(&observed), [0, 1, 1].map(Some));
        assert!(printed(&observed[1]) && printed(&observed[2]) && !printed(&observed[0]));
    }

    /// The first result waits unprinted; whatever comes next is still compared with
    /// its printed form: an error that prints the same, a text that reads the same.
    #[test]
    fn the_first_result_keys_as_if_printed() {
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"error":{"kind":"k","message":"m"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error": {"kind":"k","message":"m"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"kind":"k","message":"n"}}}]},
            {"calls":[{"tool":"x","arguments":{}}]}]}"#;
        let task = parse_task_line(line).unwrap();
        let observed: Vec<&Observed> = task.samples.iter().map(|s| &s.calls[0].observed).collect();
        for first in 0..observed.len() {
            // Every order of arrival, each result first once.
            let order: Vec<usize> = (first..observed.len()).chain(0..first).collect();
            let mut keys = KeyInterner::new(Rfc8785Form);
            let mut ids = vec![None; observed.len()];
            for &i in &order {
                ids[i] = observed[i].key_id(&mut keys);
            }
            let same = Some(ids[0].unwrap());
            assert_eq!(&ids[..4], &[same; 4], "first {first}");
            assert!(ids[4].is_some() && ids[4] != same, "first {first}");
            assert_eq!(ids[5], None);
        }
    }

    /// So does the first value: `1` and `1.0` are two trees with one RFC 8785 form.
    #[test]
    fn the_first_value_keys_as_if_printed() {
        let values: Vec<Value> = [r#"{"a":1}"#, r#"{"a":1.0}"#, r#"{"a":2}"#]
            .iter()
            .map(|t| crate::json::parse(t).unwrap())
            .collect();
        for first in 0..values.len() {
            let mut keys = KeyInterner::new(Rfc8785Form);
            let mut ids = [0; 3];
            for i in (first..values.len()).chain(0..first) {
                ids[i] = keys.value(&values[i]);
            }
            assert_eq!(ids[0], ids[1], "first {first}");
            assert_ne!(ids[0], ids[2], "first {first}");
        }
    }

    /// Repeats are found again; past the bound new things are computed every time and
    /// the list stops growing, so a task of many distinct calls stays linear.
    #[test]
    fn bounded_memo_remembers_a_bounded_few() {
        let computed = std::cell::Cell::new(0);
        let mut memo: BoundedMemo<u32, u32> = BoundedMemo::new();
        let mut get = |k: u32| {
            memo.get_or(k, || {
                computed.set(computed.get() + 1);
                k * 10
            })
        };
        assert_eq!((get(1), get(1), get(2)), (10, 10, 20));
        assert_eq!(computed.get(), 2, "the repeat was not computed again");
        for k in 0..200 {
            assert_eq!(get(k), k * 10);
        }
        let before = computed.get();
        assert_eq!(get(150), 1500, "answers stay right past the bound");
        assert_eq!(
            computed.get(),
            before + 1,
            "150 did not fit, so it is computed again"
        );
        assert_eq!(get(5), 50);
        assert_eq!(computed.get(), before + 1, "5 fit within the first 64");
        assert_eq!(memo.0.len(), BoundedMemo::<u32, u32>::CAP);
    }
}
