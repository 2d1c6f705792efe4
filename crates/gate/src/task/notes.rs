//! What reading a line notices that the run, not the line's decision, should hear of:
//! how a transcript's results found their calls, and the fields passed over. Each line's
//! [`ReadingNotes`] go up with its outcome; a front end adds them into one [`RunNotes`]
//! per run and says each thing once ([`RunNotes::warnings`]), never once per line.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::fields::Level;

/// Results of provider messages matched to their calls otherwise than by a unique id
/// (docs/inputs.md, "Transcript"). Ids that repeat or are missing are read, but a run
/// should say how many results were placed by the reading rule rather than by the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IdMatching {
    /// Results matched by an id that more than one call of their conversation carries.
    pub reused: u32,
    /// Results with no id, matched to the oldest call still waiting.
    pub positional: u32,
}

impl IdMatching {
    /// Whether every result found its call by an id no other call carries.
    pub fn is_exact(self) -> bool {
        self == IdMatching::default()
    }
}

impl std::ops::AddAssign for IdMatching {
    fn add_assign(&mut self, other: IdMatching) {
        self.reused = self.reused.saturating_add(other.reused);
        self.positional = self.positional.saturating_add(other.positional);
    }
}

/// A set of [`Level`]s: where a field name was found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "Vec<Level>", into = "Vec<Level>")]
pub struct Levels(u16);

const _: () = assert!(
    Level::ALL.len() <= u16::BITS as usize,
    "every level has a bit"
);

impl Levels {
    /// Adds `level`.
    pub fn insert(&mut self, level: Level) {
        self.0 |= 1 << level as u16;
    }

    /// The levels, in [`Level`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Level> {
        (Level::ALL.iter().copied()).filter(move |&l| self.0 & (1 << l as u16) != 0)
    }

    /// The levels' objects, as a warning names them: `tasks and calls`.
    fn describe(self) -> String {
        let names: Vec<&str> = self.iter().map(Level::plural).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

impl From<Vec<Level>> for Levels {
    fn from(levels: Vec<Level>) -> Self {
        let mut set = Levels::default();
        levels.into_iter().for_each(|l| set.insert(l));
        set
    }
}

impl From<Levels> for Vec<Level> {
    fn from(levels: Levels) -> Self {
        levels.iter().collect()
    }
}

/// What reading one line noted for the run; never part of a decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadingNotes {
    /// How a transcript's results found calls whose ids do not tell them apart.
    pub id_matching: IdMatching,
    /// The fields passed over, each name once with where it sat.
    pub unknown_fields: BTreeMap<Box<str>, Levels>,
}

impl ReadingNotes {
    /// Notes the unknown field `name` at `level`; a name seen before costs no allocation.
    pub(crate) fn unknown(&mut self, level: Level, name: &str) {
        match self.unknown_fields.get_mut(name) {
            Some(levels) => levels.insert(level),
            None => {
                let mut levels = Levels::default();
                levels.insert(level);
                self.unknown_fields.insert(name.into(), levels);
            }
        }
    }
}

/// A run's reading notes, summed over its lines: bounded, whatever the input, so a run
/// of hostile lines keeps a few dozen names, not one per line.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RunNotes {
    /// Transcript results placed by a reused call id or by position (no id).
    pub ids: IdMatching,
    /// The first [`RunNotes::NAMES`] unknown field names (each cut to
    /// [`RunNotes::NAME_CHARS`] characters), where they sat and on how many lines.
    pub unknown_fields: BTreeMap<String, FieldSeen>,
    /// Unknown fields under names beyond those kept, each counted once per line.
    pub unnamed: u64,
}

/// Where an unknown field name was found, and on how many lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldSeen {
    /// The levels it sat at.
    pub levels: Levels,
    /// The lines that had it.
    pub lines: u64,
}

impl RunNotes {
    /// How many unknown field names a run keeps and names.
    pub const NAMES: usize = 32;
    /// How many characters of a name are kept.
    pub const NAME_CHARS: usize = 64;

    /// Adds one line's notes.
    pub fn add(&mut self, line: &ReadingNotes) {
        self.ids += line.id_matching;
        for (name, levels) in &line.unknown_fields {
            self.count(name, *levels, 1);
        }
    }

    /// Adds another run's notes (a part of this run read apart, in input order).
    pub fn merge(&mut self, other: &RunNotes) {
        self.ids += other.ids;
        for (name, seen) in &other.unknown_fields {
            self.count(name, seen.levels, seen.lines);
        }
        self.unnamed = self.unnamed.saturating_add(other.unnamed);
    }

    fn count(&mut self, name: &str, levels: Levels, lines: u64) {
        // A name is cut only when it may be too long, and copied only when it is new.
        let cut = match name.len() > Self::NAME_CHARS {
            true => name
                .char_indices()
                .nth(Self::NAME_CHARS)
                .map(|(cut, _)| cut),
            false => None,
        };
        let name = match cut {
            Some(cut) => Cow::Owned(format!("{}...", &name[..cut])),
            None => Cow::Borrowed(name),
        };
        let full = self.unknown_fields.len() >= Self::NAMES;
        match self.unknown_fields.get_mut(&*name) {
            Some(seen) => {
                seen.levels.0 |= levels.0;
                seen.lines = seen.lines.saturating_add(lines);
            }
            None if full => self.unnamed = self.unnamed.saturating_add(lines),
            None => {
                let seen = FieldSeen { levels, lines };
                self.unknown_fields.insert(name.into_owned(), seen);
            }
        }
    }

    /// What the run should say once, each a line for stderr or a Python warning: how
    /// transcript results found their calls when ids did not tell them apart, and one
    /// line per unknown field name.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.ids.is_exact() {
            out.push(format!(
                "{} tool results found their call by a call id other calls carry too and {} by position (no id): each answers the first waiting call with its id in the latest turn that has one, or the oldest waiting call (docs/inputs.md, \"Matching results to calls\")",
                self.ids.reused, self.ids.positional
            ));
        }
        for (name, seen) in &self.unknown_fields {
            out.push(format!(
                "unknown field {name:?} in {} passed over on {} line{} (docs/inputs.md, \"Unknown fields\")",
                seen.levels.describe(),
                seen.lines,
                if seen.lines == 1 { "" } else { "s" }
            ));
        }
        if self.unnamed > 0 {
            out.push(format!(
                "{} more unknown fields passed over, under names beyond the first {} (each counted once per line)",
                self.unnamed,
                Self::NAMES
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: &[(&str, Level)]) -> ReadingNotes {
        let mut notes = ReadingNotes::default();
        for (name, level) in fields {
            notes.unknown(*level, name);
        }
        notes
    }

    #[test]
    fn a_run_says_each_field_name_once_with_its_lines() {
        let mut run = RunNotes::default();
        for _ in 0..3 {
            run.add(&line(&[("trial", Level::Task), ("id", Level::Call)]));
        }
        run.add(&line(&[("id", Level::Sample), ("id", Level::Call)]));
        let w = run.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("unknown field \"id\" in samples and calls passed over on 4 lines")
        );
        assert!(w[1].starts_with("unknown field \"trial\" in tasks passed over on 3 lines"));
        // Read apart and merged in order, the same.
        let (mut a, mut b) = (RunNotes::default(), RunNotes::default());
        a.add(&line(&[("trial", Level::Task), ("id", Level::Call)]));
        b.add(&line(&[("trial", Level::Task), ("id", Level::Call)]));
        b.add(&line(&[("trial", Level::Task), ("id", Level::Call)]));
        b.add(&line(&[("id", Level::Sample), ("id", Level::Call)]));
        a.merge(&b);
        assert_eq!(a, run);
    }

    #[test]
    fn a_run_keeps_a_bounded_set_of_names() {
        let mut run = RunNotes::default();
        let long = "x".repeat(10_000);
        for i in 0..1000 {
            run.add(&line(&[
                (&format!("f{i:04}"), Level::Call),
                (&long, Level::Task),
            ]));
        }
        assert_eq!(run.unknown_fields.len(), RunNotes::NAMES);
        let cut = format!("{}...", "x".repeat(RunNotes::NAME_CHARS));
        assert_eq!(run.unknown_fields[&cut].lines, 1000);
        assert_eq!(run.unnamed, 1000 - (RunNotes::NAMES as u64 - 1));
        let w = run.warnings();
        assert_eq!(w.len(), RunNotes::NAMES + 1);
        assert!(w.iter().all(|l| l.len() < 300), "{w:?}");
        // Kept in a journal and read back, the same.
        let back: RunNotes = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back, run);
        let old: RunNotes = serde_json::from_str(r#"{"ids":{"reused":2,"positional":1}}"#).unwrap();
        assert_eq!(old.ids.reused, 2);
    }
}
