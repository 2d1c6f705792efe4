//! The bridge to serde_json, for the JSON Schema validator and for output. Lossy only
//! where serde_json must be (integers past 64 bits become doubles), which is harmless
//! for validation; canonical forms never pass through here.

use crate::json::Value;

/// Converts to a `serde_json::Value` for the schema validator.
pub(crate) fn to_serde(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => {
            let lex = n.lexeme();
            if !n.written_as_float() {
                if let Ok(i) = lex.parse::<i64>() {
                    return i.into();
                }
                if let Ok(u) = lex.parse::<u64>() {
                    return u.into();
                }
            }
            let f = n.as_f64();
            serde_json::Number::from_f64(f)
                .or_else(|| serde_json::Number::from_f64(f64::MAX.copysign(f)))
                .map_or(serde_json::Value::Null, serde_json::Value::Number)
        }
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_serde).collect()),
        Value::Object(o) => {
            serde_json::Value::Object(o.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect())
        }
    }
}

/// Wraps a canonical JSON text for output without re-parsing its numbers, so an exact
/// integer such as 9007199254740993 reaches the decisions file unchanged.
pub(crate) fn raw(canonical: String) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(canonical).unwrap_or_else(|_| {
        serde_json::value::RawValue::from_string("null".into()).expect("null is JSON")
    })
}
