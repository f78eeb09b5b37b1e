//! `PatternForOutputReduceToCollectionReferences`: besides its output documents, a map-reduce index keeps
//! reference documents whose ids come from a pattern over the output's fields (`sales/daily/{Date:yyyy-MM-dd}`)
//! and which list the ids of the output documents that map to them (`ReduceOutputs`). They live in
//! `PatternReferencesCollectionName` (default `<OutputCollection>/References`) and are updated in the same
//! merged transaction as the output documents, so the two never disagree.

use corvid_storage::flags::{ARTIFICIAL, FROM_INDEX};
use corvid_storage::WriteTxn;
use corvid_types::id_key;
use serde_json::Value;

use crate::query::projection::value_at;
use crate::EngineError;

/// Why a `PatternForOutputReduceToCollectionReferences` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferencePatternError {
    /// A `{` of the pattern opens a field that is never closed.
    #[error("'{0}' has a '{{' without its '}}'")]
    Unclosed(String),
    /// The pattern has `{}` or `{:format}`.
    #[error("'{0}' has an empty field name")]
    EmptyField(String),
    /// The pattern is a constant id, which would gather every output in one document.
    #[error("'{0}' names no field of the reduce output (write them as {{Field}})")]
    NoField(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Field { path: String, format: Option<String> },
}

/// A parsed id pattern and the collection its documents go to.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePattern {
    parts: Vec<Part>,
    /// `PatternReferencesCollectionName`.
    pub collection: String,
}

impl ReferencePattern {
    /// Parses `text/{Field}/{Other:format}`; at least one field is required (a constant id would gather
    /// every output in one document).
    pub fn parse(pattern: &str, collection: &str) -> Result<ReferencePattern, ReferencePatternError> {
        let mut parts = Vec::new();
        let mut rest = pattern;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or_else(|| ReferencePatternError::Unclosed(pattern.to_owned()))? + open;
            let inner = rest[open + 1..close].trim();
            let (path, format) = match inner.split_once(':') {
                Some((path, format)) => (path.trim(), Some(format.to_owned())),
                None => (inner, None),
            };
            if path.is_empty() {
                return Err(ReferencePatternError::EmptyField(pattern.to_owned()));
            }
            parts.push(Part::Field { path: path.to_owned(), format });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        if !parts.iter().any(|p| matches!(p, Part::Field { .. })) {
            return Err(ReferencePatternError::NoField(pattern.to_owned()));
        }
        Ok(ReferencePattern { parts, collection: collection.to_owned() })
    }

    /// The reference document id for an output document's body; None when a field is missing or null.
    pub fn reference_id(&self, body: &Value) -> Option<String> {
        let mut id = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => id.push_str(text),
                Part::Field { path, format } => {
                    let value = value_at(body, path);
                    let text = match (&value, format) {
                        (Value::Null, _) => return None,
                        (Value::String(s), Some(format)) => format_date(s, format).unwrap_or_else(|| s.clone()),
                        (Value::String(s), None) => s.clone(),
                        (other, _) => other.to_string(),
                    };
                    id.push_str(&text);
                }
            }
        }
        Some(id)
    }

    /// Adds `output_id` to the reference document `reference_id` (creating it).
    pub fn add(&self, txn: &mut WriteTxn<'_>, reference_id: &str, output_id: &str, now: i64) -> Result<(), EngineError> {
        let mut outputs = self.outputs_of(txn, reference_id)?;
        if outputs.iter().any(|o| o.eq_ignore_ascii_case(output_id)) {
            return Ok(());
        }
        outputs.push(output_id.to_owned());
        self.store(txn, reference_id, outputs, now)
    }

    /// Takes `output_id` out of the reference document `reference_id` (deleted once it lists nothing).
    pub fn remove(&self, txn: &mut WriteTxn<'_>, reference_id: &str, output_id: &str, now: i64) -> Result<(), EngineError> {
        let mut outputs = self.outputs_of(txn, reference_id)?;
        let before = outputs.len();
        outputs.retain(|o| !o.eq_ignore_ascii_case(output_id));
        if outputs.len() == before {
            return Ok(());
        }
        if outputs.is_empty() {
            txn.delete_document(&id_key(reference_id), now)?;
            return Ok(());
        }
        self.store(txn, reference_id, outputs, now)
    }

    fn outputs_of(&self, txn: &WriteTxn<'_>, reference_id: &str) -> Result<Vec<String>, EngineError> {
        let Some(record) = txn.document(&id_key(reference_id))? else { return Ok(Vec::new()) };
        let body: Value = corvid_types::json::parse(&record.body).unwrap_or(Value::Null);
        Ok(body
            .get("ReduceOutputs")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default())
    }

    fn store(&self, txn: &mut WriteTxn<'_>, reference_id: &str, outputs: Vec<String>, now: i64) -> Result<(), EngineError> {
        let body = serde_json::json!({ "ReduceOutputs": outputs }).to_string();
        let id = txn.document(&id_key(reference_id))?.map(|r| r.id).unwrap_or_else(|| reference_id.to_owned());
        txn.put_document(&id, &self.collection, body, "{}".to_owned(), ARTIFICIAL | FROM_INDEX, now)?;
        Ok(())
    }
}

/// Formats an ISO date(-time) string with .NET custom format tokens (`yyyy`, `yy`, `MM`, `M`, `dd`, `d`,
/// `HH`, `H`, `mm`, `m`, `ss`, `s`); other characters are copied. None when the value is not a date.
fn format_date(value: &str, format: &str) -> Option<String> {
    let number = |range: std::ops::Range<usize>| value.get(range).filter(|s| s.bytes().all(|b| b.is_ascii_digit()))?.parse::<u32>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    if value.as_bytes().get(4) != Some(&b'-') || value.as_bytes().get(7) != Some(&b'-') {
        return None;
    }
    let (hour, minute, second) = if value.len() >= 19 { (number(11..13)?, number(14..16)?, number(17..19)?) } else { (0, 0, 0) };
    let mut out = String::new();
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let field = match c {
            'y' => Some(if run >= 4 { format!("{year:04}") } else { format!("{:02}", year % 100) }),
            'M' => Some(if run >= 2 { format!("{month:02}") } else { month.to_string() }),
            'd' => Some(if run >= 2 { format!("{day:02}") } else { day.to_string() }),
            'H' => Some(if run >= 2 { format!("{hour:02}") } else { hour.to_string() }),
            'm' => Some(if run >= 2 { format!("{minute:02}") } else { minute.to_string() }),
            's' => Some(if run >= 2 { format!("{second:02}") } else { second.to_string() }),
            _ => None,
        };
        match field {
            Some(text) => {
                out.push_str(&text);
                i += run;
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_build_ids_from_output_fields() {
        let pattern = ReferencePattern::parse("sales/daily/{Date:yyyy-MM-dd}/{Product}", "R").unwrap();
        let id = pattern.reference_id(&json!({"Date": "2024-03-05T10:20:30.0000000", "Product": "apples"}));
        assert_eq!(id.as_deref(), Some("sales/daily/2024-03-05/apples"));
        assert_eq!(pattern.reference_id(&json!({"Date": "2024-03-05"})), None, "a missing field gives no reference");
        let numbers = ReferencePattern::parse("by/{n}", "R").unwrap();
        assert_eq!(numbers.reference_id(&json!({"n": 7})).as_deref(), Some("by/7"));
        assert_eq!(format_date("2024-03-05T01:02:03", "yy/M/d H:mm:ss").as_deref(), Some("24/3/5 1:02:03"));
        assert!(ReferencePattern::parse("constant", "R").is_err());
        assert!(ReferencePattern::parse("a/{b", "R").is_err());
    }
}
