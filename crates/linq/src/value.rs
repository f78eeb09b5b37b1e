//! C# dynamic value rules over JSON: numbers, text, comparison, members, indexers, casts, dates.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::reserved_keys::{GROUP_ITEMS, GROUP_KEY};

#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    F(f64),
}

pub(crate) fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Number(n) => Some(n.as_i64().map(Num::I).unwrap_or_else(|| Num::F(n.as_f64().unwrap_or(0.0)))),
        _ => None,
    }
}

pub(crate) fn from_f64(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

pub(crate) fn from_num(n: Num) -> Value {
    match n {
        Num::I(i) => Value::from(i),
        Num::F(f) => from_f64(f),
    }
}

pub(crate) fn as_f64(n: Num) -> f64 {
    match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    }
}

pub(crate) fn group(key: Value, items: Vec<Value>) -> Value {
    let mut m = Map::new();
    m.insert(GROUP_KEY.into(), key);
    m.insert(GROUP_ITEMS.into(), Value::Array(items));
    Value::Object(m)
}

/// The elements of an enumerable value: arrays, groups, null (empty, like a dynamic null), and objects
/// (their properties as `{Key, Value}` pairs, like a dictionary: `AsJson(doc).Select(x => x.Value)`).
pub(crate) fn into_items(v: Value) -> Option<Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        Value::Null => Some(Vec::new()),
        Value::Object(mut o) => match o.remove(GROUP_ITEMS) {
            Some(Value::Array(a)) => Some(a),
            Some(_) => None,
            None => Some(
                o.into_iter()
                    .filter(|(k, _)| k.as_str() != "@metadata")
                    .map(|(k, v)| {
                        let mut p = Map::new();
                        p.insert("Key".into(), Value::String(k));
                        p.insert("Value".into(), v);
                        Value::Object(p)
                    })
                    .collect(),
            ),
        },
        _ => None,
    }
}

/// C#'s `ToString()` of a JSON value.
pub(crate) fn to_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        // .NET prints whole doubles without a fraction: 3.0 gives "3".
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => match (num(a), num(b)) {
            (Some(Num::I(x)), Some(Num::I(y))) => x.cmp(&y),
            (Some(x), Some(y)) => as_f64(x).partial_cmp(&as_f64(y)).unwrap_or(Ordering::Equal),
            _ => match (a, b) {
                (Value::String(x), Value::String(y)) => x.cmp(y),
                (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
                _ => a.to_string().cmp(&b.to_string()),
            },
        },
    }
}

pub(crate) fn equals(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Some(_), Some(_)) => compare(a, b) == Ordering::Equal,
        _ => a == b,
    }
}

/// Date parts of an ISO 8601 string: year, month, day, hour, minute, second, fraction (7 digits).
pub(crate) fn date_parts(s: &str) -> Option<[u32; 7]> {
    let b = s.as_bytes();
    let d = |r: std::ops::Range<usize>| -> Option<u32> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, da) = (d(0..4)?, d(5..7)?, d(8..10)?);
    let (mut h, mut mi, mut se, mut fr) = (0, 0, 0, 0);
    if b.len() >= 19 && (b[10] == b'T' || b[10] == b' ') {
        h = d(11..13)?;
        mi = d(14..16)?;
        se = d(17..19)?;
        if b.get(19) == Some(&b'.') {
            let digits: String = s[20..].chars().take_while(char::is_ascii_digit).take(7).collect();
            fr = format!("{digits:0<7}").parse().ok()?;
        }
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some([y, mo, da, h, mi, se, fr])
}

/// 100-nanosecond ticks since 0001-01-01 (.NET's `DateTime.Ticks`) of date parts; time zone suffixes are not
/// read, so both sides of a difference are taken in the same zone.
pub(crate) fn date_ticks(p: [u32; 7]) -> i64 {
    // Days from the civil date (proleptic Gregorian), counted from 0001-01-01.
    let (y, m, d) = (i64::from(p[0]) - i64::from(p[1] <= 2), i64::from(p[1]), i64::from(p[2]));
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 0000-03-01 is day 0 of era 0; 0001-01-01 is 306 days later.
    let days = era * 146_097 + day_of_era - 306;
    let seconds = days * 86_400 + i64::from(p[3]) * 3_600 + i64::from(p[4]) * 60 + i64::from(p[5]);
    seconds * 10_000_000 + i64::from(p[6])
}

/// `a - b` of two dates: a TimeSpan, as its ticks (the form clients send TimeSpan query parameters in); `None`
/// unless both are date strings.
pub(crate) fn date_difference(a: &Value, b: &Value) -> Option<i64> {
    let (Value::String(a), Value::String(b)) = (a, b) else { return None };
    Some(date_ticks(date_parts(a)?) - date_ticks(date_parts(b)?))
}

pub(crate) fn format_date(p: [u32; 7]) -> String {
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}", p[0], p[1], p[2], p[3], p[4], p[5], p[6])
}

pub(crate) fn day_of_week(y: u32, m: u32, d: u32) -> u32 {
    // Sakamoto's method; 0 = Sunday as in .NET's DayOfWeek.
    let t = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let y = i64::from(y) - i64::from(m < 3);
    let r = (y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400) + t[(m - 1) as usize] + i64::from(d)).rem_euclid(7);
    r as u32
}

/// Members of values: `Length`, `Count`, date parts, document `Id`, group `Key`.
pub(crate) fn member(v: &Value, name: &str) -> Value {
    match v {
        Value::Object(o) => {
            if let Some(k) = o.get(GROUP_KEY) {
                return match name {
                    "Key" => k.clone(),
                    "Count" => Value::from(o.get(GROUP_ITEMS).and_then(Value::as_array).map_or(0, Vec::len)),
                    _ => Value::Null,
                };
            }
            match o.get(name) {
                Some(x) => x.clone(),
                None if name == "Id" => o.get("@metadata").and_then(|m| m.get("@id")).cloned().unwrap_or(Value::Null),
                None => Value::Null,
            }
        }
        Value::Array(a) if name == "Length" || name == "Count" => Value::from(a.len()),
        Value::String(s) => {
            if name == "Length" {
                return Value::from(s.chars().count());
            }
            match date_parts(s) {
                Some(p) => match name {
                    "Year" => Value::from(p[0]),
                    "Month" => Value::from(p[1]),
                    "Day" => Value::from(p[2]),
                    "Hour" => Value::from(p[3]),
                    "Minute" => Value::from(p[4]),
                    "Second" => Value::from(p[5]),
                    "Millisecond" => Value::from(p[6] / 10_000),
                    "DayOfWeek" => Value::from(day_of_week(p[0], p[1], p[2])),
                    "Date" => Value::String(format_date([p[0], p[1], p[2], 0, 0, 0, 0])),
                    _ => Value::Null,
                },
                None => Value::Null,
            }
        }
        _ => Value::Null,
    }
}

/// `v[i]`: object members, array elements and string characters; anything else is null.
pub(crate) fn index(v: &Value, i: &Value) -> Value {
    match (v, i) {
        (Value::Object(_), Value::String(k)) => member(v, k),
        (Value::Array(a), _) => match num(i) {
            Some(Num::I(n)) if n >= 0 => a.get(n as usize).cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        (Value::String(s), _) => match num(i) {
            Some(Num::I(n)) if n >= 0 => s.chars().nth(n as usize).map_or(Value::Null, |c| Value::String(c.into())),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

pub(crate) fn cast(ty: &str, v: Value) -> Result<Value, String> {
    let base = ty.trim_end_matches("[]");
    if ty.ends_with("[]") || v.is_null() {
        return Ok(v);
    }
    Ok(match base {
        "int" | "long" | "short" | "byte" | "uint" | "ulong" | "Int32" | "Int64" => match num(&v) {
            Some(Num::I(i)) => Value::from(i),
            Some(Num::F(f)) => Value::from(f.trunc() as i64),
            None => match &v {
                Value::String(s) => Value::from(s.trim().parse::<i64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        "double" | "float" | "Double" => match num(&v) {
            Some(n) => from_f64(as_f64(n)),
            None => match &v {
                Value::String(s) => from_f64(s.trim().parse::<f64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        // Decimals keep integral values integral so sums of `(decimal)` stay exact where JSON allows.
        "decimal" | "Decimal" => match num(&v) {
            Some(_) => v,
            None => match &v {
                Value::String(s) => from_f64(s.trim().parse::<f64>().map_err(|_| format!("Cannot convert \"{s}\" to {base}"))?),
                _ => return Err(format!("Cannot convert {v} to {base}")),
            },
        },
        "string" | "String" => Value::String(to_text(&v)),
        "DateTime" | "DateTimeOffset" => match &v {
            Value::String(s) => match date_parts(s) {
                Some(_) => v,
                None => return Err(format!("Cannot convert \"{s}\" to DateTime")),
            },
            _ => return Err(format!("Cannot convert {v} to DateTime")),
        },
        _ => v,
    })
}

/// Comparisons a sort of `n` items may make, for the step budget.
pub(crate) fn sort_cost(n: usize) -> u64 {
    let n = n as u64;
    n * (64 - n.leading_zeros() as u64).max(1)
}

/// Bytes a JSON value holds on the heap beside its own slot, about as serde_json lays it out (a slot is a
/// `Value`; an object entry adds its key and the map's per-entry overhead).
pub(crate) fn heap_size(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.len() as u64,
        Value::Array(a) => a.iter().map(|x| SLOT_BYTES + heap_size(x)).sum(),
        Value::Object(o) => o.iter().map(|(k, x)| ENTRY_BYTES + k.len() as u64 + heap_size(x)).sum(),
    }
}

/// Bytes of a container's own slots, not of what they hold.
pub(crate) fn shallow_size(v: &Value) -> u64 {
    match v {
        Value::Array(a) => a.len() as u64 * SLOT_BYTES,
        Value::Object(o) => o.keys().map(|k| ENTRY_BYTES + k.len() as u64).sum(),
        _ => 0,
    }
}

const SLOT_BYTES: u64 = std::mem::size_of::<Value>() as u64;
const ENTRY_BYTES: u64 = SLOT_BYTES + 32;
