//! WIT values and JSON, both ways, exactly (docs/design.md, "WIT and JSON"): a call to a
//! component's typed function takes the canonical JSON arguments object the gate keys,
//! and its result becomes the JSON the gate compares, so every form here is the one
//! form of its value. The same walk writes each type's JSON Schema for
//! `plangate catalog --component`.
//!
//! - Integers are checked against their type's range; `u64` and `s64` are read and
//!   written exactly, never through a double.
//! - Floats are finite on input; a NaN or infinity a tool returns is written as the
//!   string `"NaN"`, `"Infinity"` or `"-Infinity"`, since JSON has no such number.
//! - `char` is a string of one code point; records are objects (every field required,
//!   no other); tuples are arrays of their length; enums are strings; flags are arrays
//!   of flag names, in any order on input and in declaration order on output.
//! - A variant is an object with one member, its case (`{"circle": 2.0}`; `null` for a
//!   case without a payload); a `result` value is `{"ok": …}` or `{"err": …}`.
//! - `option<T>` is `null` for `none` and T's own form for `some`, unless T's form can
//!   itself be `null` (T is an option): then `some(v)` is `{"some": v}`, so
//!   `option<option<T>>` keeps `none` and `some(none)` apart.
//! - Resources, futures, streams and error contexts have no JSON form: a function that
//!   takes or returns one is refused when its tool loads.

use serde_json::{Map, Number, Value as Json, json};
use wasmtime::component::{Type, Val};

/// An argument that does not fit its parameter: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ArgError {
    /// The JSON path of the value at fault (`$.path`, `$.opts.depth`).
    pub path: String,
    /// What was expected and what was found.
    pub message: String,
}

fn bad(path: &str, message: impl Into<String>) -> ArgError {
    ArgError {
        path: path.to_string(),
        message: message.into(),
    }
}

/// A JSON path one member or item further.
fn member(path: &str, name: &str) -> String {
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !name.is_empty() {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", Json::String(name.to_string()))
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// Why a type has no JSON form, if it has none (a resource, a future, a stream, an
/// error context, or a map whose keys are not strings), at `path` inside a signature.
pub fn unsupported(ty: &Type, path: &str) -> Option<String> {
    let inner = |t: &Type, p: String| unsupported(t, &p);
    match ty {
        Type::Own(_) | Type::Borrow(_) => Some(format!(
            "{path} is a resource handle: resources live in the component's own store and \
             have no JSON form"
        )),
        Type::Future(_) | Type::Stream(_) | Type::ErrorContext => Some(format!(
            "{path} is an async value (future, stream or error-context): it has no JSON form"
        )),
        Type::Map(m) if m.key() != Type::String => Some(format!(
            "{path} is a map whose keys are not strings: JSON objects have string keys"
        )),
        Type::Map(m) => inner(&m.value(), format!("{path}[value]")),
        Type::List(l) => inner(&l.ty(), format!("{path}[item]")),
        Type::FixedLengthList(l) => inner(&l.ty(), format!("{path}[item]")),
        Type::Option(o) => inner(&o.ty(), format!("{path}[some]")),
        Type::Record(r) => r
            .fields()
            .find_map(|f| inner(&f.ty, format!("{path}.{}", f.name))),
        Type::Tuple(t) => t
            .types()
            .enumerate()
            .find_map(|(i, t)| inner(&t, format!("{path}[{i}]"))),
        Type::Variant(v) => v.cases().find_map(|c| {
            c.ty.as_ref()
                .and_then(|t| inner(t, format!("{path}[{}]", c.name)))
        }),
        Type::Result(r) => (r.ok().and_then(|t| inner(&t, format!("{path}[ok]"))))
            .or_else(|| r.err().and_then(|t| inner(&t, format!("{path}[err]")))),
        _ => None,
    }
}

/// Whether T's JSON form can be `null`, so that `option<T>` must wrap `some`.
fn nullable(ty: &Type) -> bool {
    matches!(ty, Type::Option(_))
}

/// The arguments object (`{"path": "/a.md"}`) as the values of `params`, in order. Every
/// parameter must be there and nothing else; each value must fit its type.
pub fn arguments(args: &Json, params: &[(String, Type)]) -> Result<Vec<Val>, ArgError> {
    let Json::Object(o) = args else {
        return Err(bad(
            "$",
            format!("expected an object of arguments, found {}", kind(args)),
        ));
    };
    if let Some(k) = o.keys().find(|k| !params.iter().any(|(p, _)| p == *k)) {
        let names: Vec<&str> = params.iter().map(|(p, _)| p.as_str()).collect();
        return Err(bad(
            &member("$", k),
            format!("unknown parameter (expected {})", names.join(", ")),
        ));
    }
    params
        .iter()
        .map(|(name, ty)| {
            let path = member("$", name);
            match o.get(name) {
                Some(v) => value(v, ty, &path),
                None => Err(bad(&path, "missing")),
            }
        })
        .collect()
}

/// One JSON value as a value of `ty`.
pub fn value(v: &Json, ty: &Type, path: &str) -> Result<Val, ArgError> {
    let expected = |what: &str| bad(path, format!("expected {what}, found {}", kind(v)));
    Ok(match ty {
        Type::Bool => Val::Bool(v.as_bool().ok_or_else(|| expected("true or false"))?),
        Type::S8 => Val::S8(int(v, path, "s8")?),
        Type::U8 => Val::U8(int(v, path, "u8")?),
        Type::S16 => Val::S16(int(v, path, "s16")?),
        Type::U16 => Val::U16(int(v, path, "u16")?),
        Type::S32 => Val::S32(int(v, path, "s32")?),
        Type::U32 => Val::U32(int(v, path, "u32")?),
        Type::S64 => Val::S64(int(v, path, "s64")?),
        Type::U64 => Val::U64(int(v, path, "u64")?),
        Type::Float32 => {
            let f = float(v, path)?;
            let narrow = f as f32;
            if !narrow.is_finite() {
                return Err(bad(path, format!("{v} is out of range for f32")));
            }
            Val::Float32(narrow)
        }
        Type::Float64 => Val::Float64(float(v, path)?),
        Type::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| expected("a one-character string"))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => {
                    return Err(bad(
                        path,
                        format!(
                            "expected one character (a char), found a string of {}",
                            s.chars().count()
                        ),
                    ));
                }
            }
        }
        Type::String => Val::String(v.as_str().ok_or_else(|| expected("a string"))?.into()),
        _ => return compound(v, ty, path),
    })
}

/// A list, map, record or tuple, or (through [`cases`]) a variant, enum, option, result
/// or flags value.
fn compound(v: &Json, ty: &Type, path: &str) -> Result<Val, ArgError> {
    let expected = |what: &str| bad(path, format!("expected {what}, found {}", kind(v)));
    Ok(match ty {
        Type::List(l) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            let t = l.ty();
            Val::List(
                (items.iter().enumerate())
                    .map(|(i, x)| value(x, &t, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::FixedLengthList(l) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != l.len() as usize {
                return Err(bad(
                    path,
                    format!("expected {} items, found {}", l.len(), items.len()),
                ));
            }
            let t = l.ty();
            Val::FixedLengthList(
                (items.iter().enumerate())
                    .map(|(i, x)| value(x, &t, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(m) => {
            let o = v.as_object().ok_or_else(|| expected("an object"))?;
            let t = m.value();
            Val::Map(
                o.iter()
                    .map(|(k, x)| Ok((Val::String(k.clone()), value(x, &t, &member(path, k))?)))
                    .collect::<Result<_, ArgError>>()?,
            )
        }
        Type::Record(r) => {
            let o = v.as_object().ok_or_else(|| expected("an object"))?;
            let names: Vec<&str> = r.fields().map(|f| f.name).collect();
            if let Some(k) = o.keys().find(|k| !names.contains(&k.as_str())) {
                return Err(bad(
                    &member(path, k),
                    format!("unknown field (expected {})", names.join(", ")),
                ));
            }
            Val::Record(
                r.fields()
                    .map(|f| {
                        let p = member(path, f.name);
                        let x = o.get(f.name).ok_or_else(|| bad(&p, "missing"))?;
                        Ok((f.name.to_string(), value(x, &f.ty, &p)?))
                    })
                    .collect::<Result<_, ArgError>>()?,
            )
        }
        Type::Tuple(t) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != t.types().len() {
                return Err(bad(
                    path,
                    format!(
                        "expected a tuple of {} items, found {}",
                        t.types().len(),
                        items.len()
                    ),
                ));
            }
            Val::Tuple(
                (items.iter().zip(t.types()).enumerate())
                    .map(|(i, (x, ty))| value(x, &ty, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        _ => return cases(v, ty, path),
    })
}

/// A variant, enum, option, result or flags value.
fn cases(v: &Json, ty: &Type, path: &str) -> Result<Val, ArgError> {
    let expected = |what: &str| bad(path, format!("expected {what}, found {}", kind(v)));
    Ok(match ty {
        Type::Variant(var) => {
            let names: Vec<&str> = var.cases().map(|c| c.name).collect();
            let (case, payload) = one_member(v, path, &names)?;
            let c = var
                .cases()
                .find(|c| c.name == case)
                .expect("one_member checked the name");
            let p = member(path, case);
            let payload = match (&c.ty, payload) {
                (None, Json::Null) => None,
                (None, other) => {
                    return Err(bad(
                        &p,
                        format!(
                            "case {case} has no payload: expected null, found {}",
                            kind(other)
                        ),
                    ));
                }
                (Some(t), x) => Some(Box::new(value(x, t, &p)?)),
            };
            Val::Variant(case.to_string(), payload)
        }
        Type::Enum(e) => {
            let names: Vec<&str> = e.names().collect();
            let s = v.as_str().ok_or_else(|| expected("a string"))?;
            if !names.contains(&s) {
                return Err(bad(
                    path,
                    format!("{s:?} is not one of {}", names.join(", ")),
                ));
            }
            Val::Enum(s.to_string())
        }
        Type::Option(o) => {
            let t = o.ty();
            match v {
                Json::Null => Val::Option(None),
                _ if nullable(&t) => {
                    let (_, x) = one_member(v, path, &["some"])?;
                    Val::Option(Some(Box::new(value(x, &t, &member(path, "some"))?)))
                }
                _ => Val::Option(Some(Box::new(value(v, &t, path)?))),
            }
        }
        Type::Result(r) => {
            let (case, x) = one_member(v, path, &["ok", "err"])?;
            let t = if case == "ok" { r.ok() } else { r.err() };
            let p = member(path, case);
            let payload = match (t, x) {
                (None, Json::Null) => None,
                (None, other) => {
                    return Err(bad(
                        &p,
                        format!(
                            "{case} has no payload: expected null, found {}",
                            kind(other)
                        ),
                    ));
                }
                (Some(t), x) => Some(Box::new(value(x, &t, &p)?)),
            };
            Val::Result(if case == "ok" {
                Ok(payload)
            } else {
                Err(payload)
            })
        }
        Type::Flags(f) => {
            let names: Vec<&str> = f.names().collect();
            let items = v
                .as_array()
                .ok_or_else(|| expected("an array of flag names"))?;
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, x) in items.iter().enumerate() {
                let p = format!("{path}[{i}]");
                let s = x.as_str().ok_or_else(|| bad(&p, "expected a flag name"))?;
                if !names.contains(&s) {
                    return Err(bad(&p, format!("{s:?} is not one of {}", names.join(", "))));
                }
                if set.iter().any(|y| y == s) {
                    return Err(bad(&p, format!("{s:?} is given twice")));
                }
                set.push(s.to_string());
            }
            // Declaration order: the host hands flags over as a set.
            set.sort_by_key(|s| names.iter().position(|n| n == s));
            Val::Flags(set)
        }
        _ => {
            return Err(bad(
                path,
                unsupported(ty, path).unwrap_or_else(|| "no JSON form".into()),
            ));
        }
    })
}

/// An object with exactly one member, named one of `names`: its name and value.
fn one_member<'v>(
    v: &'v Json,
    path: &str,
    names: &[&str],
) -> Result<(&'v str, &'v Json), ArgError> {
    let want = || {
        format!(
            "expected an object with one member, one of {}",
            names.join(", ")
        )
    };
    let Json::Object(o) = v else {
        return Err(bad(path, format!("{}, found {}", want(), kind(v))));
    };
    let mut it = o.iter();
    match (it.next(), it.next()) {
        (Some((k, x)), None) if names.contains(&k.as_str()) => Ok((k.as_str(), x)),
        (Some((k, _)), None) => Err(bad(&member(path, k), want())),
        _ => Err(bad(path, format!("{}, found {} members", want(), o.len()))),
    }
}

/// An integer of type `T` (named `wit` in messages), exact: only an integer lexeme in
/// range is one. serde_json keeps every integer within u64 or i64 exactly.
fn int<T: TryFrom<i64> + TryFrom<u64>>(v: &Json, path: &str, wit: &str) -> Result<T, ArgError> {
    let Json::Number(n) = v else {
        return Err(bad(
            path,
            format!("expected an integer ({wit}), found {}", kind(v)),
        ));
    };
    let out_of_range = || bad(path, format!("{n} is out of range for {wit}"));
    if let Some(u) = n.as_u64() {
        T::try_from(u).map_err(|_| out_of_range())
    } else if let Some(i) = n.as_i64() {
        T::try_from(i).map_err(|_| out_of_range())
    } else if n.as_f64().is_some_and(|f| f.fract() == 0.0) {
        Err(out_of_range())
    } else {
        Err(bad(path, format!("expected an integer ({wit}), found {n}")))
    }
}

fn float(v: &Json, path: &str) -> Result<f64, ArgError> {
    match v {
        Json::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| bad(path, format!("{n} is not a finite number"))),
        _ => Err(bad(
            path,
            format!("expected a finite number, found {}", kind(v)),
        )),
    }
}

/// A returned value as JSON.
pub fn to_json(v: &Val, ty: &Type) -> Json {
    match (v, ty) {
        (Val::Bool(b), _) => Json::Bool(*b),
        (Val::S8(x), _) => json!(x),
        (Val::U8(x), _) => json!(x),
        (Val::S16(x), _) => json!(x),
        (Val::U16(x), _) => json!(x),
        (Val::S32(x), _) => json!(x),
        (Val::U32(x), _) => json!(x),
        (Val::S64(x), _) => json!(x),
        (Val::U64(x), _) => json!(x),
        (Val::Float32(x), _) => float_json(f64::from(*x)),
        (Val::Float64(x), _) => float_json(*x),
        (Val::Char(c), _) => Json::String(c.to_string()),
        (Val::String(s), _) => Json::String(s.clone()),
        (Val::List(items), Type::List(l)) => {
            let t = l.ty();
            Json::Array(items.iter().map(|x| to_json(x, &t)).collect())
        }
        (Val::FixedLengthList(items), Type::FixedLengthList(l)) => {
            let t = l.ty();
            Json::Array(items.iter().map(|x| to_json(x, &t)).collect())
        }
        (Val::Map(pairs), Type::Map(m)) => {
            let t = m.value();
            let mut o = Map::new();
            for (k, x) in pairs {
                if let Val::String(k) = k {
                    // Last value wins, as the component model reads duplicate keys.
                    o.insert(k.clone(), to_json(x, &t));
                }
            }
            Json::Object(o)
        }
        (Val::Record(fields), Type::Record(r)) => {
            let mut o = Map::new();
            for ((name, x), f) in fields.iter().zip(r.fields()) {
                o.insert(name.clone(), to_json(x, &f.ty));
            }
            Json::Object(o)
        }
        (Val::Tuple(items), Type::Tuple(t)) => Json::Array(
            (items.iter().zip(t.types()))
                .map(|(x, ty)| to_json(x, &ty))
                .collect(),
        ),
        (Val::Variant(case, payload), Type::Variant(var)) => {
            let t = var.cases().find(|c| c.name == case).and_then(|c| c.ty);
            let x = match (payload, t) {
                (Some(x), Some(t)) => to_json(x, &t),
                _ => Json::Null,
            };
            Json::Object([(case.clone(), x)].into_iter().collect())
        }
        (Val::Enum(s), _) => Json::String(s.clone()),
        (Val::Option(None), _) => Json::Null,
        (Val::Option(Some(x)), Type::Option(o)) => {
            let t = o.ty();
            let inner = to_json(x, &t);
            if nullable(&t) {
                Json::Object([("some".to_string(), inner)].into_iter().collect())
            } else {
                inner
            }
        }
        (Val::Result(r), Type::Result(rt)) => {
            let (case, x, t) = match r {
                Ok(x) => ("ok", x, rt.ok()),
                Err(x) => ("err", x, rt.err()),
            };
            let x = match (x, t) {
                (Some(x), Some(t)) => to_json(x, &t),
                _ => Json::Null,
            };
            Json::Object([(case.to_string(), x)].into_iter().collect())
        }
        (Val::Flags(names), _) => Json::Array(names.iter().cloned().map(Json::String).collect()),
        // Types with no JSON form are refused before a call; a value that does not
        // match its type cannot come back from wasmtime.
        _ => Json::Null,
    }
}

/// The name of the error variant or enum case by which a typed export says "not found".
const NOT_FOUND_CASE: &str = "not-found";

/// A typed call's `err` as the tool ABI's error envelope, `{"error": {"kind": …,
/// "message": …}}`, the one form every call's error takes (docs/tools.md, "Errors from
/// typed exports"):
/// - a variant or enum case named `not-found` is kind `not_found`, its message the
///   payload's text (a string as it is, any other payload as JSON) or, with no payload,
///   the case's name;
/// - an err whose JSON form is itself the envelope (an object whose `error` holds a
///   string `kind`), or a string that is the envelope's JSON text, is that envelope;
/// - any other err is kind `tool_error`, its message the err's text, or its JSON when
///   it is not a string.
pub fn call_error(err: Option<&Val>, ty: Option<&Type>) -> Json {
    let text = |v: Json| match v {
        Json::String(s) => s,
        other => other.to_string(),
    };
    let (Some(v), Some(t)) = (err, ty) else {
        return envelope("tool_error", "the tool returned err");
    };
    match (v, t) {
        (Val::Enum(case), _) if case == NOT_FOUND_CASE => envelope("not_found", case),
        (Val::Variant(case, payload), Type::Variant(var)) if case == NOT_FOUND_CASE => {
            let payload_ty = var.cases().find(|c| c.name == case).and_then(|c| c.ty);
            let message = match (payload, payload_ty) {
                (Some(p), Some(pt)) => text(to_json(p, &pt)),
                _ => case.clone(),
            };
            envelope("not_found", &message)
        }
        _ => {
            let json = to_json(v, t);
            let read = match &json {
                Json::String(s) => serde_json::from_str(s).ok(),
                other => Some(other.clone()),
            };
            match read.filter(is_envelope) {
                Some(e) => e,
                None => envelope("tool_error", &text(json)),
            }
        }
    }
}

/// The tool ABI's error envelope, `{"error": {"kind": …, "message": …}}`.
pub(crate) fn envelope(kind: &str, message: &str) -> Json {
    json!({"error": {"kind": kind, "message": message}})
}

/// `{"error": {"kind": "…", …}}`: what the tool ABI reads as a call's error.
fn is_envelope(v: &Json) -> bool {
    (v.get("error").and_then(|e| e.get("kind"))).is_some_and(Json::is_string)
}

fn float_json(f: f64) -> Json {
    match Number::from_f64(f) {
        Some(n) => Json::Number(n),
        None if f.is_nan() => Json::String("NaN".into()),
        None if f > 0.0 => Json::String("Infinity".into()),
        None => Json::String("-Infinity".into()),
    }
}

/// The JSON Schema of `ty`'s JSON form.
pub fn schema(ty: &Type) -> Json {
    fn int(lo: i128, hi: i128) -> Json {
        let n = |x: i128| match (u64::try_from(x), i64::try_from(x)) {
            (Ok(u), _) => json!(u),
            (_, Ok(i)) => json!(i),
            _ => Json::Null,
        };
        json!({"type": "integer", "minimum": n(lo), "maximum": n(hi)})
    }
    fn one_of_members(cases: Vec<(String, Json)>) -> Json {
        let alternatives: Vec<Json> = cases
            .into_iter()
            .map(|(name, s)| {
                json!({"type": "object", "properties": {name.clone(): s},
                       "required": [name], "additionalProperties": false})
            })
            .collect();
        json!({ "oneOf": alternatives })
    }
    let null = || json!({"type": "null"});
    match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => int(i8::MIN.into(), i8::MAX.into()),
        Type::U8 => int(0, u8::MAX.into()),
        Type::S16 => int(i16::MIN.into(), i16::MAX.into()),
        Type::U16 => int(0, u16::MAX.into()),
        Type::S32 => int(i32::MIN.into(), i32::MAX.into()),
        Type::U32 => int(0, u32::MAX.into()),
        Type::S64 => int(i64::MIN.into(), i64::MAX.into()),
        Type::U64 => int(0, u64::MAX.into()),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(l) => json!({"type": "array", "items": schema(&l.ty())}),
        Type::FixedLengthList(l) => json!({"type": "array", "items": schema(&l.ty()),
            "minItems": l.len(), "maxItems": l.len()}),
        Type::Map(m) => json!({"type": "object", "additionalProperties": schema(&m.value())}),
        Type::Record(r) => {
            let properties: Map<String, Json> = r
                .fields()
                .map(|f| (f.name.to_string(), schema(&f.ty)))
                .collect();
            let required: Vec<&str> = r.fields().map(|f| f.name).collect();
            json!({"type": "object", "properties": properties, "required": required,
                   "additionalProperties": false})
        }
        Type::Tuple(t) => {
            let items: Vec<Json> = t.types().map(|t| schema(&t)).collect();
            json!({"type": "array", "prefixItems": items, "items": false,
                   "minItems": t.types().len(), "maxItems": t.types().len()})
        }
        Type::Variant(v) => one_of_members(
            v.cases()
                .map(|c| (c.name.to_string(), c.ty.as_ref().map_or_else(null, schema)))
                .collect(),
        ),
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Option(o) => {
            let t = o.ty();
            let some = if nullable(&t) {
                one_of_members(vec![("some".into(), schema(&t))])
            } else {
                schema(&t)
            };
            let none = null();
            json!({ "anyOf": [none, some] })
        }
        Type::Result(r) => one_of_members(vec![
            ("ok".into(), r.ok().as_ref().map_or_else(null, schema)),
            ("err".into(), r.err().as_ref().map_or_else(null, schema)),
        ]),
        Type::Flags(f) => json!({"type": "array", "uniqueItems": true,
            "items": {"type": "string", "enum": f.names().collect::<Vec<_>>()}}),
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            json!(false)
        }
    }
}

/// The JSON Schema of a function's arguments object: every parameter, required.
pub fn parameters_schema(params: &[(String, Type)]) -> Json {
    let properties: Map<String, Json> = params
        .iter()
        .map(|(name, ty)| (name.clone(), schema(ty)))
        .collect();
    let required: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}
