//! Canonicalization hints, read once when the catalog loads: each parameter's
//! `"x-plangate": {"canon": [...], "base": ..., "must_exist": ...}` and `default`,
//! compiled into a tree shaped like the schema, which canonicalization walks beside the
//! arguments instead of reading the schema again for every value.

use std::collections::BTreeMap;

use crate::json::Value;

/// One canonicalization hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// Lexical path normalization against a base directory.
    Path {
        /// Directory that relative paths are read against.
        base: String,
    },
    /// Array compared as a set: sorted by canonical form, duplicates dropped.
    Unordered,
    /// Strings compared in lower case.
    Casefold,
    /// Strings compared without leading and trailing white space.
    Trim,
    /// Value replaced by what a resolver tool answers for it.
    Id {
        /// The resolver tool's name.
        resolve: String,
    },
    /// Free text compared by presence only: whether it holds any text, never which
    /// words (docs/design.md, "Prose").
    Prose,
}

/// The hints of one schema node, in the order they apply: trim, casefold, path, id,
/// unordered (it sorts elements already canonical), and prose last (it keeps nothing of
/// the text for a later hint to read).
fn hints_of(schema: &Value) -> Result<Vec<Hint>, String> {
    let Some(ext) = schema.as_object().and_then(|o| o.get("x-plangate")) else {
        return Ok(Vec::new());
    };
    let ext = ext.as_object().ok_or("x-plangate: expected an object")?;
    for k in ext.keys() {
        if !matches!(k.as_str(), "canon" | "base" | "must_exist") {
            return Err(format!(
                "x-plangate.{k}: unknown field (expected canon, base, must_exist)"
            ));
        }
    }
    if !matches!(ext.get("must_exist"), None | Some(Value::Bool(_))) {
        return Err("x-plangate.must_exist: expected true or false".into());
    }
    let base = match ext.get("base") {
        None => "/".to_string(),
        Some(Value::String(b)) if b.starts_with('/') => b.clone(),
        Some(_) => return Err("x-plangate.base: expected an absolute path string".into()),
    };
    let list = match ext.get("canon") {
        None => return Ok(Vec::new()),
        Some(Value::Array(l)) => l,
        Some(_) => return Err("x-plangate.canon: expected an array of hints".into()),
    };
    let mut hints = Vec::new();
    for (i, h) in list.iter().enumerate() {
        let hint = match h {
            Value::String(s) => match s.as_str() {
                "path" => Hint::Path { base: base.clone() },
                "unordered" => Hint::Unordered,
                "casefold" => Hint::Casefold,
                "trim" => Hint::Trim,
                "prose" => Hint::Prose,
                "id" => {
                    return Err(format!(
                        "x-plangate.canon[{i}]: \"id\" needs a resolver: {{\"id\": {{\"resolve\": \"TOOL\"}}}}"
                    ));
                }
                other => {
                    return Err(format!(
                        "x-plangate.canon[{i}]: unknown hint {other:?} (expected path, unordered, casefold, trim, id, prose)"
                    ));
                }
            },
            Value::Object(o) if o.len() == 1 && o.contains_key("id") => {
                match o
                    .get("id")
                    .and_then(Value::as_object)
                    .and_then(|id| id.get("resolve"))
                {
                    Some(Value::String(t)) if !t.is_empty() => Hint::Id { resolve: t.clone() },
                    _ => {
                        return Err(format!(
                            "x-plangate.canon[{i}].id: expected {{\"resolve\": \"TOOL\"}}"
                        ));
                    }
                }
            }
            _ => {
                return Err(format!(
                    "x-plangate.canon[{i}]: expected a hint name or {{\"id\": ...}}"
                ));
            }
        };
        hints.push(hint);
    }
    let rank = |h: &Hint| match h {
        Hint::Trim => 0,
        Hint::Casefold => 1,
        Hint::Path { .. } => 2,
        Hint::Id { .. } => 3,
        Hint::Unordered => 4,
        Hint::Prose => 5,
    };
    hints.sort_by_key(rank);
    // Prose makes no claim about anything: it cannot name a record that must exist or
    // be looked up, and comparing it by presence would hide the reference's value.
    if hints.contains(&Hint::Prose) {
        if hints.iter().any(|h| matches!(h, Hint::Id { .. })) {
            return Err("x-plangate.canon: \"prose\" and \"id\" exclude each other: prose names nothing to resolve".into());
        }
        if ext.get("must_exist") == Some(&Value::Bool(true)) {
            return Err("x-plangate: \"prose\" and \"must_exist\" exclude each other: prose names nothing that must exist".into());
        }
    }
    Ok(hints)
}

/// The hints of a schema and of every schema below it that canonicalization visits:
/// object properties and array items.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hints {
    hints: Vec<Hint>,
    default: Option<Value>,
    must_exist: bool,
    properties: BTreeMap<String, Hints>,
    items: Option<Box<Hints>>,
    /// See [`Hints::is_empty`].
    empty: bool,
}

/// The tree of a schema with no hints, for arguments the schema does not describe.
pub(crate) static NONE: Hints = Hints {
    hints: Vec::new(),
    default: None,
    must_exist: false,
    properties: BTreeMap::new(),
    items: None,
    empty: true,
};

impl Hints {
    /// Reads every hint of `schema`, reporting each bad one as (place, message), the
    /// place a JSON Pointer after `field`, so a typo fails when the catalog loads rather
    /// than silently canonicalizing nothing.
    pub(crate) fn compile(
        schema: &Value,
        field: &str,
        problems: &mut Vec<(String, String)>,
    ) -> Hints {
        let hints = hints_of(schema).unwrap_or_else(|message| {
            problems.push((field.to_string(), message));
            Vec::new()
        });
        let o = schema.as_object();
        let mut properties = BTreeMap::new();
        if let Some(Value::Object(props)) = o.and_then(|o| o.get("properties")) {
            for (k, sub) in props.iter() {
                let at = format!(
                    "{field}/properties/{}",
                    k.replace('~', "~0").replace('/', "~1")
                );
                properties.insert(k.clone(), Hints::compile(sub, &at, problems));
            }
        }
        let items = o
            .and_then(|o| o.get("items"))
            .map(|items| Box::new(Hints::compile(items, &format!("{field}/items"), problems)));
        let must_exist = o
            .and_then(|o| o.get("x-plangate"))
            .and_then(Value::as_object)
            .and_then(|x| x.get("must_exist"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let default = o.and_then(|o| o.get("default")).cloned();
        let empty = hints.is_empty()
            && default.is_none()
            && properties.values().all(Hints::is_empty)
            && items.as_deref().is_none_or(Hints::is_empty);
        Hints {
            hints,
            default,
            must_exist,
            properties,
            items,
            empty,
        }
    }

    /// This node's hints, in the order they apply.
    pub fn hints(&self) -> &[Hint] {
        &self.hints
    }

    /// The value an omitted parameter stands for.
    pub fn default(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    /// Declared a reference that must exist (`"must_exist": true`): a `not_found` for it
    /// on a verified tool is a fabrication, not an answer.
    pub fn must_exist(&self) -> bool {
        self.must_exist
    }

    /// The tree of property `name` (an empty one when the schema does not name it).
    pub fn property(&self, name: &str) -> &Hints {
        self.properties.get(name).unwrap_or(&NONE)
    }

    /// Every named property's tree.
    pub fn properties(&self) -> impl ExactSizeIterator<Item = (&String, &Hints)> {
        self.properties.iter()
    }

    /// The tree of array items.
    pub fn items(&self) -> &Hints {
        self.items.as_deref().unwrap_or(&NONE)
    }

    /// Whether this node and every node below it have no hint and no default, so
    /// canonicalization leaves their values as they are. Worked out when compiled.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Whether this node's values are prose ([`Hint::Prose`]).
    pub fn prose(&self) -> bool {
        self.hints.contains(&Hint::Prose)
    }

    /// The resolver tool of this node's `id` hint, if it has one.
    pub fn resolver(&self) -> Option<&str> {
        self.hints.iter().find_map(|h| match h {
            Hint::Id { resolve } => Some(resolve.as_str()),
            _ => None,
        })
    }
}
