//! Turns a struct's `Debug` text (`Name { a: 1, b: 0.5, c: true }`) into a JSON object.
//!
//! contree's `Stats` is `#[non_exhaustive]` and gains counters as mechanisms land; reading
//! its `Debug` form lets the bench report every counter without naming them. Numbers become
//! JSON numbers, `true`/`false` booleans, nested `{ .. }` values objects, anything else a
//! string.

use serde_json::{Map, Number, Value};

/// Parses `Name { field: value, ... }` (the name is optional) into a JSON object; text that
/// is not of that form becomes `{"debug": text}`.
pub fn to_json(text: &str) -> Value {
    let text = text.trim();
    match (text.find('{'), text.rfind('}')) {
        (Some(open), Some(close)) if open < close => fields(&text[open + 1..close]),
        _ => {
            let mut m = Map::new();
            m.insert("debug".into(), Value::String(text.into()));
            Value::Object(m)
        }
    }
}

fn fields(body: &str) -> Value {
    let mut map = Map::new();
    for part in split_top_level(body) {
        if let Some((name, value)) = part.split_once(':') {
            map.insert(name.trim().to_string(), scalar(value.trim()));
        }
    }
    Value::Object(map)
}

/// Splits at commas that are not inside braces, brackets, parentheses or quotes.
fn split_top_level(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut in_str, mut start) = (0i32, false, 0);
    for (i, c) in body.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '{' | '[' | '(' if !in_str => depth += 1,
            '}' | ']' | ')' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !body[start..].trim().is_empty() {
        parts.push(&body[start..]);
    }
    parts
}

fn scalar(v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        return Value::Number(i.into());
    }
    if let Ok(u) = v.parse::<u64>() {
        return Value::Number(u.into());
    }
    if let Ok(f) = v.parse::<f64>() {
        if let Some(n) = Number::from_f64(f) {
            return Value::Number(n);
        }
    }
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ if v.ends_with('}') && v.contains('{') => to_json(v),
        _ => Value::String(v.trim_matches('"').to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Inner {
        x: u8,
    }

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Sample {
        height: usize,
        fill_factor: f64,
        on: bool,
        inner: Inner,
        name: &'static str,
    }

    #[test]
    fn parses_a_derived_debug() {
        let s = Sample {
            height: 3,
            fill_factor: 0.75,
            on: true,
            inner: Inner { x: 4 },
            name: "a, b",
        };
        let v = to_json(&format!("{s:?}"));
        assert_eq!(v["height"], 3);
        assert_eq!(v["fill_factor"], 0.75);
        assert_eq!(v["on"], true);
        assert_eq!(v["inner"]["x"], 4);
        assert_eq!(v["name"], "a, b");
    }

    #[test]
    fn odd_text_is_kept() {
        assert_eq!(to_json("opaque")["debug"], "opaque");
    }
}
