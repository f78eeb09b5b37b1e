//! `ExpirationConfiguration` (`Disabled`, `DeleteFrequencyInSec`, `MaxItemsToProcess`) and
//! `RefreshConfiguration` (`Disabled`, `RefreshFrequencyInSec`, `MaxItemsToProcess`) of the database record.
//! Both have the same shape; only the name of the frequency differs.

use serde_json::{json, Value};

use crate::EngineError;

/// RavenDB's default frequency of both tasks.
const DEFAULT_FREQUENCY_SECS: u64 = 60;

/// One of the two configurations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepConfig {
    /// A disabled task does nothing (its rows wait).
    pub disabled: bool,
    /// Seconds between two passes.
    pub frequency_secs: u64,
    /// The most documents one pass acts on (None: all that are due).
    pub max_items_to_process: Option<u64>,
}

fn frequency_field(refresh: bool) -> &'static str {
    if refresh {
        "RefreshFrequencyInSec"
    } else {
        "DeleteFrequencyInSec"
    }
}

fn task_name(refresh: bool) -> &'static str {
    if refresh {
        "refresh"
    } else {
        "expiration"
    }
}

impl SweepConfig {
    /// Parses the configuration the client sent (`refresh` names which of the two it is).
    pub fn from_json(value: &Value, refresh: bool) -> Result<SweepConfig, EngineError> {
        let name = task_name(refresh);
        if !value.is_object() {
            return Err(EngineError::bad_request(format!("The {name} configuration must be a JSON object")));
        }
        let disabled = match value.get("Disabled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(EngineError::bad_request(format!("'Disabled' of the {name} configuration must be a boolean, got {other}")))
            }
        };
        let field = frequency_field(refresh);
        let positive = |field: &str| -> Result<Option<u64>, EngineError> {
            match value.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                    EngineError::bad_request(format!("'{field}' of the {name} configuration must be a positive number, got {v}"))
                }),
            }
        };
        let frequency_secs = positive(field)?.unwrap_or(DEFAULT_FREQUENCY_SECS);
        let max_items_to_process = positive("MaxItemsToProcess")?;
        Ok(SweepConfig { disabled, frequency_secs, max_items_to_process })
    }

    /// The configuration as the database record shows it.
    pub fn to_json(&self, refresh: bool) -> Value {
        json!({
            "Disabled": self.disabled,
            frequency_field(refresh): self.frequency_secs,
            "MaxItemsToProcess": self.max_items_to_process,
        })
    }

    pub(crate) fn decode(bytes: &[u8], refresh: bool) -> Result<SweepConfig, EngineError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| EngineError::Internal(format!("the stored {} configuration is not JSON: {e}", task_name(refresh))))?;
        SweepConfig::from_json(&value, refresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_clients_send() {
        let config = SweepConfig::from_json(&json!({"Disabled": false, "DeleteFrequencyInSec": 5}), false).unwrap();
        assert_eq!(config, SweepConfig { disabled: false, frequency_secs: 5, max_items_to_process: None });
        let refresh = SweepConfig::from_json(&json!({"Disabled": null, "RefreshFrequencyInSec": null}), true).unwrap();
        assert_eq!(refresh.frequency_secs, DEFAULT_FREQUENCY_SECS);
        assert_eq!(SweepConfig::decode(refresh.to_json(true).to_string().as_bytes(), true).unwrap(), refresh);
    }

    #[test]
    fn refuses_a_zero_frequency() {
        assert!(SweepConfig::from_json(&json!({"DeleteFrequencyInSec": 0}), false).is_err());
        assert!(SweepConfig::from_json(&json!([]), false).is_err());
    }
}
