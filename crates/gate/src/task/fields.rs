//! The fields each part of a samples line has, and when a field a part does not have is
//! a misspelling. Agent logs carry fields of their own beside ours (a trial number, a
//! reward, a model name), so a field plangate does not know is passed over and noted;
//! but one a slip of the keyboard away from a field plangate reads, which the object
//! lacks, is refused, since passing it over would silently drop what it holds (a
//! `labell` loses the label, an `argumnets` makes the call's arguments `{}`).
//! docs/inputs.md, "Unknown fields", states the rule.

/// Where in a samples line a field sits.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The line itself: `task_id`, `samples`, ...
    Task,
    /// A sample object: `calls`, `turns` or `messages`.
    Sample,
    /// A native call: `tool`, `arguments`, `result`, `error`.
    Call,
    /// A native call's `error`: `kind`, `message`.
    CallError,
    /// A provider message, in a conversation or as a sample of its own.
    Message,
    /// One of an OpenAI message's `tool_calls`.
    ToolCall,
    /// An OpenAI tool call's `function`.
    Function,
    /// An Anthropic `tool_use` content block.
    ToolUse,
    /// An Anthropic `tool_result` content block.
    ToolResult,
    /// One MCP `tools/call` params object of a list of them.
    McpCall,
}

impl Level {
    /// Every level, in order.
    pub const ALL: &'static [Level] = <Level as strum::VariantArray>::VARIANTS;

    /// The names read here, in groups of alternatives: an object holding one name of a
    /// group cannot have misspelt another (a sample with `calls` has no `turns` to
    /// misspell).
    pub(crate) fn read(self) -> &'static [&'static [&'static str]] {
        match self {
            Level::Task => &[&["task_id"], &["samples"], &["label"], &["epoch_fixed"]],
            Level::Sample => &[&["calls", "turns", "messages"], &["outcome"]],
            Level::Call => &[&["tool"], &["arguments"], &["result", "error"]],
            Level::CallError => &[&["kind"], &["message"]],
            Level::Message => &[&["role"], &["content"], &["tool_calls"], &["tool_call_id"]],
            Level::ToolCall => &[&["id"], &["type"], &["function"]],
            Level::Function | Level::McpCall => &[&["name"], &["arguments"]],
            Level::ToolUse => &[&["type"], &["id"], &["name"], &["input"]],
            Level::ToolResult => &[&["type"], &["tool_use_id"], &["content"], &["is_error"]],
        }
    }

    /// Names known here that say nothing about the plan, passed over without a word:
    /// plangate's own `meta`, and what a provider documents beside the fields read
    /// (OpenAI's `refusal`, Anthropic's `stop_reason`, MCP's `_meta`, ...).
    fn passed(self) -> &'static [&'static str] {
        match self {
            Level::Task => &["meta"],
            Level::Message => &[
                "name",
                "refusal",
                "audio",
                "annotations",
                "id",
                "type",
                "model",
                "stop_reason",
                "stop_sequence",
                "usage",
            ],
            Level::ToolCall => &["index"],
            Level::ToolUse | Level::ToolResult => &["cache_control"],
            Level::McpCall => &["_meta"],
            Level::Sample | Level::Call | Level::CallError | Level::Function => &[],
        }
    }

    /// Whether `key` is a field known here, read or passed over.
    pub(crate) fn knows(self, key: &str) -> bool {
        self.read().iter().any(|group| group.contains(&key)) || self.passed().contains(&key)
    }

    /// The level's objects, as a warning names them.
    pub fn plural(self) -> &'static str {
        match self {
            Level::Task => "tasks",
            Level::Sample => "samples",
            Level::Call => "calls",
            Level::CallError => "call errors",
            Level::Message => "messages",
            Level::ToolCall => "tool calls",
            Level::Function => "tool call functions",
            Level::ToolUse => "tool_use blocks",
            Level::ToolResult => "tool_result blocks",
            Level::McpCall => "MCP calls",
        }
    }
}

/// The name read at `level` that the unknown field `key` misspells, if any: one of a
/// group the object has none of (`present` says which names it has), written the same
/// once ASCII case, `_` and `-` are set aside (`taskId`, `Task-ID`), or within a few edits
/// of it (optimal string alignment distance, a swap of two neighbours counting one):
/// none for a name under 4 characters, 1 under 6, 2 from 6 on. The nearest wins.
pub(crate) fn near_miss(
    level: Level,
    key: &str,
    present: impl Fn(&str) -> bool,
) -> Option<&'static str> {
    level
        .read()
        .iter()
        .filter(|group| !group.iter().any(|name| present(name)))
        .flat_map(|group| group.iter().copied())
        .filter_map(|name| distance(key, name).map(|d| (d, name)))
        .min_by_key(|&(d, _)| d)
        .map(|(_, name)| name)
}

/// How far `key` is from `name`, when close enough to be its misspelling.
fn distance(key: &str, name: &str) -> Option<usize> {
    if folded(key).eq(folded(name)) {
        return Some(0);
    }
    let limit = match name.len() {
        0..4 => return None,
        4..6 => 1,
        _ => 2,
    };
    // A key longer than the name by more than the limit is no misspelling of it;
    // counted only that far, so a long key costs no more than a short one.
    let longer = key.len() > name.len() + limit && key.chars().nth(name.len() + limit).is_some();
    if longer || letters_apart(key, name) > limit {
        return None;
    }
    let d = strsim::osa_distance(key, name);
    (d <= limit).then_some(d)
}

/// A lower bound of the edit distance between `key` and the ASCII `name` from their
/// letters alone: a letter of one that the other lacks anywhere must be changed or
/// dropped, one edit each (a swap moves letters, it changes none), so the distance is
/// at least the count of such letters in either. Letters are told apart by their low
/// six bits, which can only take some for the same and lower the bound; most foreign
/// names are still told apart by it, without the distance's table.
fn letters_apart(key: &str, name: &str) -> usize {
    let bit = |b: u8| 1u64 << (b & 63);
    let has = |mask: u64, b: u8| mask & bit(b) != 0;
    let key_mask = (key.bytes().filter(u8::is_ascii)).fold(0, |m, b| m | bit(b));
    let name_mask = name.bytes().fold(0, |m, b| m | bit(b));
    let key_only = match key.is_ascii() {
        true => key.bytes().filter(|&b| !has(name_mask, b)).count(),
        // A character beyond ASCII is in no name.
        false => (key.chars())
            .filter(|&c| u8::try_from(c).map_or(true, |b| !b.is_ascii() || !has(name_mask, b)))
            .count(),
    };
    let name_only = name.bytes().filter(|&b| !has(key_mask, b)).count();
    key_only.max(name_only)
}

/// A name's bytes with ASCII case, `_` and `-` set aside.
fn folded(name: &str) -> impl Iterator<Item = u8> + '_ {
    name.bytes()
        .filter(|b| !matches!(b, b'_' | b'-'))
        .map(|b| b.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspellings_name_the_field_they_miss() {
        for (level, key, want) in [
            (Level::Task, "sampels", "samples"),
            (Level::Task, "task_ld", "task_id"),
            (Level::Task, "taskId", "task_id"),
            (Level::Task, "labell", "label"),
            (Level::Task, "Label", "label"),
            (Level::Task, "epoch_fixd", "epoch_fixed"),
            (Level::Task, "epochFixed", "epoch_fixed"),
            (Level::Sample, "cals", "calls"),
            (Level::Sample, "mesages", "messages"),
            (Level::Call, "tol", "tool"),
            (Level::Call, "argumnets", "arguments"),
            (Level::Call, "reslt", "result"),
            (Level::Call, "eror", "error"),
            (Level::CallError, "mesage", "message"),
            (Level::Message, "tool_cals", "tool_calls"),
            (Level::Message, "toolCallId", "tool_call_id"),
            (Level::Function, "argumnets", "arguments"),
            (Level::ToolResult, "isError", "is_error"),
            (Level::ToolUse, "inputs", "input"),
            (Level::McpCall, "nme", "name"),
        ] {
            assert_eq!(near_miss(level, key, |_| false), Some(want), "{key}");
        }
        // The nearest of two candidates.
        assert_eq!(near_miss(Level::Call, "results", |_| false), Some("result"));
    }

    /// Fields agent logs, eval exports and provider SDK dumps carry beside ours.
    #[rustfmt::skip]
    const FOREIGN: &[&str] = &[
        "trial", "reward", "info", "metadata", "meta_data", "model", "timestamp", "id", "name",
        "type", "created", "created_at", "usage", "finish_reason", "index", "logprobs", "score",
        "seed", "temperature", "duration", "latency", "cost", "status", "traj", "trajectory",
        "tags", "source", "split", "category", "question", "answer", "ground_truth", "expected",
        "prompt", "response", "output", "outputs", "step", "step_id", "run_id", "sample_id",
        "trial_id", "task", "agent", "env", "user_id", "reward_info", "termination_reason",
        "simulation_id", "uuid", "version", "notes", "config", "tools", "steps", "turn",
        "observation", "action", "thought", "reasoning", "reasoning_content", "thinking",
        "annotations", "function_call", "parallel_tool_calls", "extra", "elapsed_ms",
        "start_time", "end_time", "difficulty", "domain", "_meta", "x-trace", "data", "state",
        "messages_count", "num_turns", "returns", "errno", "level", "labels_version",
        "cache_control", "citations", "text", "exit_code",
    ];

    /// Fields real agent logs and eval exports carry beside ours, at every level, with
    /// the object holding what it usually holds: none is taken for a misspelling.
    #[test]
    fn foreign_fields_are_no_misspellings() {
        // What each object holds besides its foreign fields, the least it may hold: a
        // call to execute has no result, an assistant message calling tools no content.
        let present = |level: Level| -> &'static [&'static str] {
            match level {
                Level::Task => &["task_id", "samples"],
                Level::Sample => &["calls"],
                Level::Call => &["tool", "arguments"],
                Level::CallError => &["kind"],
                Level::Message => &["role", "tool_calls"],
                Level::ToolCall => &["function"],
                Level::Function | Level::McpCall => &["name", "arguments"],
                Level::ToolUse => &["type", "id", "name", "input"],
                Level::ToolResult => &["type", "tool_use_id", "content"],
            }
        };
        for &level in Level::ALL {
            let has = present(level);
            for key in FOREIGN.iter().filter(|k| !level.knows(k)) {
                let missed = near_miss(level, key, |n| has.contains(&n));
                assert_eq!(missed, None, "{key} in {}", level.plural());
            }
        }
    }

    /// The letters' bound never exceeds the distance itself, so it never hides a
    /// misspelling.
    #[test]
    fn the_letters_bound_is_below_the_distance() {
        let names = Level::ALL
            .iter()
            .flat_map(|l| l.read().iter().flat_map(|g| g.iter()));
        for name in names {
            for key in FOREIGN.iter().copied().chain([
                "",
                "x",
                "é",
                "tool",
                "TOOL",
                "lool",
                "ool",
                "otol",
                "tooll",
                "t\u{e9}ol",
                "sampels",
                "task_ld",
                "argumnets",
                "labell",
                "\u{1F600}result",
            ]) {
                let bound = letters_apart(key, name);
                assert!(bound <= strsim::osa_distance(key, name), "{key} {name}");
            }
        }
        assert_eq!(letters_apart("trial", "label"), 3);
        assert_eq!(letters_apart("r\u{e9}sult", "result"), 1);
        assert_eq!(letters_apart("sampels", "samples"), 0);
    }

    #[test]
    fn a_name_the_object_has_is_no_misspelling_target() {
        // `labels` beside `label`, `results` beside `result`, `took` beside `tool`.
        assert_eq!(near_miss(Level::Task, "labels", |n| n == "label"), None);
        assert_eq!(near_miss(Level::Call, "results", |n| n == "result"), None);
        assert_eq!(near_miss(Level::Call, "errors", |n| n == "result"), None);
        assert_eq!(near_miss(Level::Call, "took", |n| n == "tool"), None);
        assert_eq!(near_miss(Level::Sample, "turn", |n| n == "calls"), None);
        // Names under 4 characters are matched only as written otherwise.
        assert_eq!(near_miss(Level::ToolCall, "ix", |_| false), None);
        assert_eq!(near_miss(Level::ToolCall, "ID", |_| false), Some("id"));
    }

    #[test]
    fn every_read_name_is_known_and_no_passed_name_is_read() {
        for &level in Level::ALL {
            for name in level.read().iter().flat_map(|g| g.iter()) {
                assert!(level.knows(name));
                assert!(!level.passed().contains(name), "{name}");
            }
        }
    }
}
