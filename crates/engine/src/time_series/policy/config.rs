//! The rollup and retention part of the record's `TimeSeriesConfiguration`: per collection a raw retention
//! (`RawPolicy`) and policies, each rolling up the previous one (the raw series first) into `<series>@<policy>`
//! windows of its `AggregationTime`, kept for its `RetentionTime`. Validated with RavenDB's messages
//! (`TimeSeriesCollectionConfiguration.ValidateAndInitialize`), nothing kept from a refused configuration, and
//! written back normalized (policies sorted by aggregation time, the default raw policy and check frequency
//! filled in) as RavenDB stores it.

use std::cmp::Ordering;
use std::time::Duration;

use serde_json::{json, Map, Value};

use corvid_types::parse_time_span;

use super::time_value::TimeValue;
use crate::EngineError;

/// RavenDB's name of the raw series' policy.
pub const RAW_POLICY_NAME: &str = "rawpolicy";
/// How often the runner looks at the series when the configuration does not say (RavenDB's default).
pub const DEFAULT_CHECK_FREQUENCY: Duration = Duration::from_secs(600);
/// A rollup entry holds six values per source value; RavenDB refuses to roll up entries of more than five.
pub const MAX_ROLLUP_SOURCE_VALUES: usize = 5;

/// One rollup policy of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollupPolicy {
    /// The name after `@` in the rollup series' names.
    pub name: String,
    /// The window each rollup entry covers.
    pub aggregation: TimeValue,
    /// How long its entries are kept.
    pub retention: TimeValue,
}

/// The policies of one collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionPolicies {
    /// The collection, as configured.
    pub collection: String,
    /// Neither rollups nor retention run for it.
    pub disabled: bool,
    /// How long raw entries are kept.
    pub raw_retention: TimeValue,
    /// Sorted by aggregation time: each rolls up the one before it (the first, the raw series).
    pub policies: Vec<RollupPolicy>,
}

impl CollectionPolicies {
    /// The level of a series of this collection: 0 for a raw series, `i + 1` for `<raw>@<policies[i].name>`;
    /// None for a rollup of a policy it does not have.
    pub fn level_of(&self, series: &str) -> Option<usize> {
        match series.split_once('@') {
            None => Some(0),
            Some((_, policy)) => self.policies.iter().position(|p| p.name.eq_ignore_ascii_case(policy)).map(|i| i + 1),
        }
    }

    /// How long entries of a level are kept, and the instant their age counts from: RavenDB keeps a rollup for its
    /// retention after its window closed.
    pub fn retention_cutoff(&self, level: usize, now: i64) -> i64 {
        match level {
            0 => self.raw_retention.before(now),
            n => {
                let policy = &self.policies[n - 1];
                policy.retention.before(policy.aggregation.before(now))
            }
        }
    }
}

/// The rollup and retention configuration of a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSeriesPolicies {
    /// How often the runner looks at the series (`PolicyCheckFrequency`).
    pub check_frequency: Duration,
    /// The configured collections.
    pub collections: Vec<CollectionPolicies>,
}

impl TimeSeriesPolicies {
    /// The policies of a collection (case-insensitively).
    pub fn collection(&self, name: &str) -> Option<&CollectionPolicies> {
        self.collections.iter().find(|c| c.collection.eq_ignore_ascii_case(name))
    }

    /// Whether any collection has something for the runner to do.
    pub fn has_work(&self) -> bool {
        self.collections.iter().any(|c| !c.disabled && (!c.policies.is_empty() || !c.raw_retention.is_unlimited()))
    }
}

fn invalid(message: String) -> EngineError {
    EngineError::InvalidOperation(message)
}

fn time_value(policy: &Value, field: &str, name: &str) -> Result<Option<TimeValue>, EngineError> {
    match policy.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => TimeValue::from_json(v).map(Some).ok_or_else(|| {
            EngineError::bad_request(format!(
                "'{field}' of the policy '{name}' must be a TimeValue ({{\"Value\": n, \"Unit\": \"Second\" | \"Month\"}})"
            ))
        }),
    }
}

/// `a < b`, refused as RavenDB refuses it when a month count and a number of days cannot be ordered.
fn less(a: TimeValue, b: TimeValue) -> Result<bool, EngineError> {
    match a.compare(b) {
        Some(order) => Ok(order == Ordering::Less),
        None => Err(invalid(format!(
            "Unable to compare {} with {}, since a month might have different number of days.",
            a.describe(),
            b.describe()
        ))),
    }
}

/// Reads one policy (`{"Name", "AggregationTime", "RetentionTime"}`).
pub fn parse_policy(value: &Value) -> Result<RollupPolicy, EngineError> {
    let name = value.get("Name").and_then(Value::as_str).unwrap_or_default().to_owned();
    if name.trim().is_empty() {
        return Err(EngineError::bad_request("A time series policy must have a 'Name'"));
    }
    let aggregation = time_value(value, "AggregationTime", &name)?.unwrap_or(TimeValue::Unbounded(0));
    let retention = time_value(value, "RetentionTime", &name)?.unwrap_or(TimeValue::MAX);
    Ok(RollupPolicy { name, aggregation, retention })
}

/// Checks and sorts the policies of one collection (RavenDB's `ValidateAndInitialize`).
fn validate_collection(collection: &mut CollectionPolicies) -> Result<(), EngineError> {
    if !collection.raw_retention.is_positive() {
        return Err(invalid("Retention time of the RawPolicy must be greater than zero".into()));
    }
    collection.policies.sort_by(|a, b| a.aggregation.compare(b.aggregation).unwrap_or(Ordering::Equal));
    let mut seen: Vec<String> = Vec::new();
    for index in 0..collection.policies.len() {
        let policy = &collection.policies[index];
        if seen.iter().any(|s| s.eq_ignore_ascii_case(&policy.name)) || policy.name.eq_ignore_ascii_case(RAW_POLICY_NAME) {
            return Err(invalid(format!("Policy names must be unique, policy with the name '{}' has duplicates.", policy.name)));
        }
        seen.push(policy.name.clone());
        if policy.name.contains('@') {
            return Err(EngineError::bad_request(format!("The policy name '{}' cannot contain '@'", policy.name)));
        }
        if !policy.aggregation.is_positive() || policy.aggregation.is_unlimited() || matches!(policy.aggregation, TimeValue::Unbounded(_)) {
            return Err(invalid(format!("Aggregation time of '{}' must be greater than zero", policy.name)));
        }
        if !policy.retention.is_positive() {
            return Err(invalid(format!("Retention time of '{}' must be greater than zero", policy.name)));
        }
        let (prev_name, prev_aggregation, prev_retention) = match index {
            0 => (RAW_POLICY_NAME.to_owned(), None, collection.raw_retention),
            i => {
                let prev = &collection.policies[i - 1];
                (prev.name.clone(), Some(prev.aggregation), prev.retention)
            }
        };
        if prev_aggregation.is_some_and(|a| a.compare(policy.aggregation) == Some(Ordering::Equal)) {
            return Err(invalid(format!("The policy '{prev_name}' has the same aggregation time as the policy '{}'", policy.name)));
        }
        if less(prev_retention, policy.aggregation)? {
            return Err(invalid(format!(
                "The policy '{prev_name}' has a retention time of '{}' but should be aggregated by policy '{}' with the aggregation time frame of {}",
                prev_retention.describe(),
                policy.name,
                policy.aggregation.describe()
            )));
        }
        if let Some(prev_aggregation) = prev_aggregation {
            if !prev_aggregation.divides(policy.aggregation) {
                return Err(invalid(format!(
                    "The aggregation time of the policy '{}' ({}) must be divided by the aggregation time of '{prev_name}' ({}) without a remainder.",
                    policy.name,
                    policy.aggregation.describe(),
                    prev_aggregation.describe()
                )));
            }
        }
    }
    Ok(())
}

fn parse_collection(name: &str, value: &Value) -> Result<CollectionPolicies, EngineError> {
    let disabled = value.get("Disabled").and_then(Value::as_bool).unwrap_or(false);
    let raw_retention = match value.get("RawPolicy") {
        None | Some(Value::Null) => TimeValue::MAX,
        Some(raw) => time_value(raw, "RetentionTime", RAW_POLICY_NAME)?.unwrap_or(TimeValue::MAX),
    };
    let policies = match value.get("Policies") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(parse_policy).collect::<Result<_, _>>()?,
        Some(_) => return Err(EngineError::bad_request(format!("'Policies' of collection '{name}' must be an array"))),
    };
    let mut collection = CollectionPolicies { collection: name.to_owned(), disabled, raw_retention, policies };
    validate_collection(&mut collection)?;
    Ok(collection)
}

fn policy_json(policy: &RollupPolicy) -> Value {
    json!({"Name": policy.name, "RetentionTime": policy.retention.to_json(), "AggregationTime": policy.aggregation.to_json()})
}

/// A collection's configuration as RavenDB stores it.
pub fn collection_json(collection: &CollectionPolicies) -> Value {
    json!({
        "Disabled": collection.disabled,
        "Policies": collection.policies.iter().map(policy_json).collect::<Vec<_>>(),
        "RawPolicy": {"Name": RAW_POLICY_NAME, "RetentionTime": collection.raw_retention.to_json(), "AggregationTime": TimeValue::Unbounded(0).to_json()},
    })
}

/// Reads and checks a whole `TimeSeriesConfiguration`; returns it normalized as RavenDB stores it and the
/// policies it sets. Refuses it (nothing changed) with RavenDB's messages.
pub fn parse_configuration(config: &Value) -> Result<(Value, TimeSeriesPolicies), EngineError> {
    let Some(object) = config.as_object() else {
        return Err(EngineError::bad_request("The time series configuration must be a JSON object"));
    };
    let mut collections = Vec::new();
    let mut rendered = Map::new();
    match object.get("Collections") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                if value.is_null() {
                    continue;
                }
                if collections.iter().any(|c: &CollectionPolicies| c.collection.eq_ignore_ascii_case(name)) {
                    return Err(EngineError::bad_request(format!("The collection '{name}' is configured twice")));
                }
                let collection = parse_collection(name, value)?;
                rendered.insert(name.clone(), collection_json(&collection));
                collections.push(collection);
            }
        }
        Some(_) => return Err(EngineError::bad_request("'Collections' must be an object")),
    }
    let frequency = match object.get("PolicyCheckFrequency") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(
            parse_time_span(text)
                .ok_or_else(|| EngineError::bad_request(format!("'{text}' is not a TimeSpan ([d.]hh:mm:ss[.fffffff])")))?,
        ),
        Some(_) => return Err(EngineError::bad_request("'PolicyCheckFrequency' must be a TimeSpan such as \"00:10:00\"")),
    };
    if frequency.is_some_and(|f| f.is_zero()) {
        return Err(EngineError::bad_request("PolicyCheckFrequency must be positive."));
    }
    let mut normalized = object.clone();
    if !collections.is_empty() {
        normalized.insert("Collections".into(), Value::Object(rendered));
        if frequency.is_none() {
            normalized.insert("PolicyCheckFrequency".into(), json!("00:10:00"));
        }
    }
    let policies = TimeSeriesPolicies { check_frequency: frequency.unwrap_or(DEFAULT_CHECK_FREQUENCY), collections };
    Ok((Value::Object(normalized), policies))
}

/// The policies of a stored configuration (the record's `TimeSeries`); None when it sets none or cannot be read
/// (a configuration is checked before it is stored).
pub fn policies_of(config: Option<&Value>) -> Option<TimeSeriesPolicies> {
    let (_, policies) = parse_configuration(config?).ok()?;
    policies.has_work().then_some(policies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(policies: Value) -> Value {
        json!({"Collections": {"Users": {"Disabled": false, "Policies": policies, "RawPolicy": {"Name": "rawpolicy", "RetentionTime": {"Value": 2147483647, "Unit": "None"}, "AggregationTime": null}}}})
    }

    fn policy(name: &str, aggregation: i64, retention: i64) -> Value {
        json!({"Name": name, "AggregationTime": {"Value": aggregation, "Unit": "Second"}, "RetentionTime": {"Value": retention, "Unit": "Second"}})
    }

    #[test]
    fn policies_are_sorted_and_defaults_filled_in() {
        let (normalized, policies) =
            parse_configuration(&config(json!([policy("ByDay", 86_400, 864_000), policy("ByHour", 3600, 86_400)]))).unwrap();
        let users = policies.collection("users").unwrap();
        assert_eq!(users.policies.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["ByHour", "ByDay"]);
        assert_eq!(users.level_of("HeartRate@byday"), Some(2));
        assert_eq!(users.level_of("HeartRate@other"), None);
        assert_eq!(normalized["PolicyCheckFrequency"], "00:10:00");
        assert_eq!(normalized["Collections"]["Users"]["Policies"][0]["Name"], "ByHour");
        assert_eq!(policies.check_frequency, DEFAULT_CHECK_FREQUENCY);
    }

    #[test]
    fn bad_configurations_get_ravendbs_messages() {
        let refused = |policies: Value| parse_configuration(&config(policies)).unwrap_err().to_string();
        assert!(refused(json!([policy("A", 3600, 86_400), policy("a", 7200, 86_400)])).contains("Policy names must be unique"));
        assert!(refused(json!([policy("A", 0, 86_400)])).contains("Aggregation time of 'A' must be greater than zero"));
        assert!(refused(json!([policy("A", 3600, 86_400), policy("B", 3600, 86_400)])).contains("has the same aggregation time"));
        assert!(refused(json!([policy("A", 3600, 1800), policy("B", 7200, 86_400)]))
            .contains("The policy 'A' has a retention time of '30 minutes'"));
        assert!(refused(json!([policy("A", 7200, 86_400), policy("B", 10_800, 86_400)])).contains("without a remainder"));
        let months = json!({"Collections": {"Users": {"RawPolicy": {"RetentionTime": {"Value": 12, "Unit": "Month"}}, "Policies": [policy("Y", 365 * 86_400, 86_400 * 3650)]}}});
        let message = parse_configuration(&months).unwrap_err().to_string();
        assert!(
            message.contains("Unable to compare 1 year with 365 days, since a month might have different number of days."),
            "{message}"
        );
    }
}
