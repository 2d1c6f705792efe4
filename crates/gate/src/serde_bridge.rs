//! The bridge to serde_json, for the JSON Schema validator and for output. Lossy only
//! where serde_json must be (integers past 64 bits become doubles), which is harmless
//! for validation; canonical forms never pass through here.

use crate::json::{Number, Object, Value};
use jsonschema::JsonType;
use jsonschema::json::{Array, Json, Node, NodeIdentity};
use std::borrow::Cow;

/// Converts to a `serde_json::Value` for the schema validator.
pub(crate) fn to_serde(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::Value::Number(number(n)),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_serde).collect()),
        Value::Object(o) => {
            serde_json::Value::Object(o.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect())
        }
    }
}

/// A number as the validator sees it: an integer that fits 64 bits exactly, else the
/// nearest double (the largest finite one past the doubles' range).
fn number(n: &Number) -> serde_json::Number {
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
    // A parsed number is never NaN, so one of the two is finite.
    serde_json::Number::from_f64(f)
        .or_else(|| serde_json::Number::from_f64(f64::MAX.copysign(f)))
        .unwrap_or_else(|| 0.into())
}

/// Our values as the schema validator's instances, read in place: converting each
/// call's arguments to a `serde_json::Value` first was a noticeable share of deciding a
/// task (docs/benchmarks.md). Every accessor answers as it would on [`to_serde`]'s output
/// (numbers through [`number`]), so whether arguments are valid cannot differ; their
/// errors are still listed from the converted value, in serde_json's member order.
/// Objects with a duplicate key never reach a validator (they are unreadable first).
pub(crate) struct GateJson;

impl Json for GateJson {
    type Node<'a> = &'a Value;
    type PreparedKey = String;
    type StringBuffer = Option<Value>;

    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(
        buffer: &mut Option<Value>,
        string: &str,
        f: impl FnOnce(&Value) -> T,
    ) -> T {
        f(buffer.insert(Value::String(string.to_owned())))
    }
}

impl<'a> Node<'a, GateJson> for &'a Value {
    type Object = &'a Object;
    type Array = &'a [Value];
    type Number = serde_json::Number;

    fn as_object(&self) -> Option<&'a Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&'a [Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }
    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self {
            Value::String(s) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }
    fn as_number(&self) -> Option<serde_json::Number> {
        match self {
            Value::Number(n) => Some(number(n)),
            _ => None,
        }
    }
    fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }
    fn as_boolean(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    fn json_type(&self) -> JsonType {
        match self {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(_) => JsonType::Number,
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }
    fn to_value(&self) -> Cow<'a, serde_json::Value> {
        Cow::Owned(to_serde(self))
    }
    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref::<Value>(self) as usize))
    }
}

impl<'a> jsonschema::json::Object<'a, GateJson> for &'a Object {
    type Node = &'a Value;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        Object::len(self)
    }
    fn get(&self, key: &String) -> Option<&'a Value> {
        Object::get(self, key)
    }
    fn members(&self) -> Members<'a> {
        Members(Object::members(self).iter())
    }
}

/// An object's members as the validator walks them.
pub(crate) struct Members<'a>(std::slice::Iter<'a, (String, Value)>);

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.as_str(), v))
    }
}

impl<'a> Array<'a, GateJson> for &'a [Value] {
    type Node = &'a Value;
    type ElementsIter = std::slice::Iter<'a, Value>;

    fn len(&self) -> usize {
        <[Value]>::len(self)
    }
    fn elements(&self) -> std::slice::Iter<'a, Value> {
        self.iter()
    }
    /// Strings are equal as JSON exactly when their texts are, so a list of only strings
    /// (a set of names, the rule in arguments) is told unique without converting each
    /// element as the validator's own answer does.
    fn is_unique(&self) -> bool {
        match self
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
        {
            Some(mut texts) => {
                texts.sort_unstable();
                texts.windows(2).all(|w| w[0] != w[1])
            }
            None => {
                let values: Vec<serde_json::Value> = self.iter().map(to_serde).collect();
                jsonschema::json::unique::is_unique(&values)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Schemas that read every kind of value, and every keyword whose answer depends
    /// on how a number, string, object or array is read.
    fn schemas() -> Vec<serde_json::Value> {
        vec![
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number", "minimum": 0, "exclusiveMaximum": 1e300}}, "required": ["a"], "additionalProperties": false}),
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": [1, "x", null, [1]]}}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"multipleOf": 0.5}, "b": {"const": 1}}, "dependencies": {"a": ["b"]}}),
            json!({"properties": {"a": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-zé🦀]+$"}, "b": {"format": "date"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "minItems": 1, "maxItems": 2}, "b": {"contains": {"const": 2}}}}),
            json!({"propertyNames": {"pattern": "^[a-c]$"}, "patternProperties": {"^b": {"type": "boolean"}}, "minProperties": 1, "maxProperties": 2}),
            json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"properties": {"c": {"type": "null"}}, "required": ["c"]}}),
            json!({"anyOf": [{"properties": {"a": {"maximum": 18446744073709551615u64}}}, {"properties": {"b": {"minimum": -9223372036854775808i64}}}], "if": {"required": ["a"]}, "then": {"properties": {"a": {"type": "number"}}}, "else": {"properties": {"b": {"type": ["string", "integer"]}}}}),
            json!({"properties": {"a": {"$ref": "#"}, "b": {"type": "object", "unevaluatedProperties": false, "properties": {"a": true}}}, "dependentRequired": {"b": ["a"]}}),
            json!({"properties": {"a": {"uniqueItems": true}, "b": {"items": {"uniqueItems": true}}}}),
        ]
    }

    /// A JSON text: numbers written every way (past 64 bits and past the doubles'
    /// range too), strings of one to four bytes a character, and nesting.
    fn text() -> impl Strategy<Value = String> {
        let leaf = proptest::sample::select(vec![
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1",
            "1.0",
            "1e2",
            "2",
            "0.5",
            "-5",
            "1.5e300",
            "1e400",
            "-1e400",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "9007199254740993",
            "0.1",
            "\"\"",
            "\"ab\"",
            "\"abc\"",
            "\"h\u{e9}l\"",
            "\"\u{1F980}\u{1F980}\"",
            "\"2024-01-01\"",
            "\"2024-13-01\"",
            "\"u_1\"",
        ])
        .prop_map(str::to_string);
        let key = proptest::sample::select(vec!["a", "b", "c", "d", "user_id", "path", "query"]);
        leaf.prop_recursive(3, 12, 3, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::btree_map(key.clone(), inner, 0..4).prop_map(|m| {
                    let members: Vec<String> =
                        m.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    /// The seed world's argument schemas, as its catalog writes them.
    fn seed_world() -> Vec<serde_json::Value> {
        let text = include_str!("../../../examples/seed-world/catalog.json");
        let catalog: serde_json::Value = serde_json::from_str(text).unwrap();
        let tools = catalog["tools"].as_array().unwrap();
        let schemas: Vec<_> = tools.iter().map(|t| t["parameters"].clone()).collect();
        assert!(schemas.iter().all(|s| s.is_object()) && schemas.len() > 3);
        schemas
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn read_in_place_arguments_are_valid_exactly_when_converted_ones_are(t in text()) {
            let v = crate::json::parse(&t).unwrap();
            for schema in schemas().into_iter().chain(seed_world()) {
                let serde = jsonschema::validator_for(&schema).unwrap();
                let in_place = jsonschema::options_for::<GateJson>().build(&schema).unwrap();
                prop_assert_eq!(in_place.is_valid(&v), serde.is_valid(&to_serde(&v)), "{} against {}", t, schema);
            }
        }
    }

    /// Lists of strings, told unique by their texts, answer as converted ones do, beside
    /// lists that mix in other values.
    #[test]
    fn unique_strings_are_unique_as_converted() {
        let schema = json!({"uniqueItems": true});
        let serde = jsonschema::validator_for(&schema).unwrap();
        let in_place = jsonschema::options_for::<GateJson>()
            .build(&schema)
            .unwrap();
        for (t, unique) in [
            (r#"["a","b","c","d"]"#, true),
            (r#"["d","b","c","b"]"#, false),
            (r#"["b","a","b"]"#, false),
            (r#"["\u00e9","e\u0301"]"#, true),
            (r#"["é","\u00e9"]"#, false),
            (r#"[]"#, true),
            (r#"["1",1,"1.0"]"#, true),
            (r#"["a",1,1.0]"#, false),
        ] {
            let v = crate::json::parse(t).unwrap();
            assert_eq!(in_place.is_valid(&v), unique, "{t}");
            assert_eq!(serde.is_valid(&to_serde(&v)), unique, "{t}");
        }
    }

    #[test]
    fn the_schemas_tell_values_apart() {
        // The property above would hold trivially if every value passed or failed.
        for schema in schemas() {
            let v = jsonschema::options_for::<GateJson>()
                .build(&schema)
                .unwrap();
            let verdicts: Vec<bool> = [
                r#"{"a":1}"#,
                r#"{"a":"x","b":1.5,"c":null}"#,
                r#"{"b":true}"#,
                "[]",
                r#"{"a":[2,2],"b":{"a":1,"z":1}}"#,
                r#"{"a":["ab","ab"]}"#,
            ]
            .iter()
            .map(|t| v.is_valid(&crate::json::parse(t).unwrap()))
            .collect();
            assert!(
                verdicts.contains(&true) && verdicts.contains(&false),
                "{schema}: {verdicts:?}"
            );
        }
    }
}
