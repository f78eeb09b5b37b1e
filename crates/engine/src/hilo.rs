//! HiLo id ranges (`Raven/Hilo/<tag>` documents) and identities.

use corvid_types::{format_date, id_key, metadata, now_nanos, NODE_TAG};
use time::{format_description::well_known::Iso8601, PrimitiveDateTime};

use crate::write::document::{identity_name, put_document};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, IncomingDocument};

const MIN_CAPACITY: u64 = 32;
const MAX_CAPACITY: u64 = 1024 * 1024;

/// A client's request for its next HiLo range, with what it knows of its previous one.
#[derive(Debug, Clone, Default)]
pub struct HiloRequest {
    /// The collection tag: the range is kept in `Raven/Hilo/<tag>`.
    pub tag: String,
    /// The size of the client's previous range; the next one grows or shrinks from it.
    pub last_batch_size: u64,
    /// When the client got its previous range (as the client formats dates), if ever.
    pub last_range_at: Option<String>,
    /// What the client puts between the tag and the number in its ids (the prefix ends with it).
    pub separator: String,
    /// The highest id number the client handed out; the new range starts above it even if the stored max is lower.
    pub last_max: u64,
}

/// A range of id numbers reserved for one client, and how it should print them.
#[derive(Debug, Clone, PartialEq)]
pub struct HiloRange {
    /// The tag and separator that start every id of the range.
    pub prefix: String,
    /// The first number of the range.
    pub low: u64,
    /// The last number of the range (now the stored max).
    pub high: u64,
    /// How many numbers the range holds; the client sends it back with its next request.
    pub last_size: u64,
    /// This node's tag, which clients may append to ids.
    pub server_tag: String,
    /// When the range was handed out, in the date format clients send back.
    pub last_range_at: String,
}

fn hilo_id(tag: &str) -> String {
    format!("Raven/Hilo/{tag}")
}

/// Grows the range for clients that come back quickly, shrinks it for slow ones (as RavenDB does).
fn capacity(last_size: u64, last_range_at: Option<&str>, now: i64) -> u64 {
    let Some(at) = last_range_at.and_then(parse_client_date) else {
        return MIN_CAPACITY;
    };
    let elapsed_s = (now - at) / 1_000_000_000;
    if elapsed_s < 30 {
        (last_size.saturating_mul(2)).clamp(MIN_CAPACITY, MAX_CAPACITY)
    } else if elapsed_s > 60 {
        (last_size / 2).max(MIN_CAPACITY)
    } else {
        last_size.max(MIN_CAPACITY)
    }
}

/// Parses `2024-05-01T10:00:00.1234567` with or without `Z`, to unix nanoseconds.
fn parse_client_date(text: &str) -> Option<i64> {
    let text = text.trim().trim_end_matches('Z');
    let dt = PrimitiveDateTime::parse(text, &Iso8601::DEFAULT).ok()?;
    i64::try_from(dt.assume_utc().unix_timestamp_nanos()).ok()
}

fn stored_max(txn: &corvid_storage::WriteTxn<'_>, id: &str) -> Result<Option<u64>, EngineError> {
    let Some(doc) = txn.document(&id_key(id))? else {
        return Ok(None);
    };
    let body: serde_json::Value = corvid_types::json::parse(&doc.body).map_err(|e| EngineError::bad_request(e.to_string()))?;
    Ok(Some(body.get("Max").and_then(|m| m.as_u64().or_else(|| m.as_f64().map(|f| f as u64))).unwrap_or(0)))
}

fn hilo_document(max: u64) -> IncomingDocument {
    IncomingDocument {
        collection: metadata::HILO_COLLECTION.to_owned(),
        body: format!("{{\"Max\":{max}}}"),
        client_metadata: "{}".to_owned(),
    }
}

impl Database {
    /// Queues the reservation of the next range for `request.tag`: the stored max moves up by a capacity
    /// that follows the client's pace; `reply` gets the range once committed.
    pub fn submit_hilo_next(
        &self,
        request: HiloRequest,
        reply: impl FnOnce(Result<HiloRange, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        if request.tag.is_empty() {
            return Err(EngineError::bad_request("HiLo requires a non-empty 'tag'"));
        }
        self.write(
            move |txn| {
                let now = now_nanos();
                let id = hilo_id(&request.tag);
                let old_max = stored_max(txn, &id)?.unwrap_or(0).max(request.last_max);
                let size = capacity(request.last_batch_size, request.last_range_at.as_deref(), now);
                let high = old_max + size;
                put_document(txn, &id, &ExpectedChangeVector::Any, hilo_document(high), now)?;
                Ok(HiloRange {
                    prefix: format!("{}{}", request.tag, request.separator),
                    low: old_max + 1,
                    high,
                    last_size: size,
                    server_tag: NODE_TAG.to_owned(),
                    last_range_at: format_date(now),
                })
            },
            reply,
        )
    }

    /// Gives back the unused end of a range when a client closes: only if nobody took a range since.
    pub fn submit_hilo_return(
        &self,
        tag: String,
        end: u64,
        last: u64,
        reply: impl FnOnce(Result<(), EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        self.write(
            move |txn| {
                let id = hilo_id(&tag);
                if let Some(max) = stored_max(txn, &id)? {
                    if max == end && last <= max {
                        put_document(txn, &id, &ExpectedChangeVector::Any, hilo_document(last), now_nanos())?;
                    }
                }
                Ok(())
            },
            reply,
        )
    }

    /// Queues the increment of the identity `name`; `reply` gets the new value once committed.
    pub fn submit_identity_next(
        &self,
        name: String,
        reply: impl FnOnce(Result<u64, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        let name = identity_name(&name);
        self.write(move |txn| Ok(txn.next_identity(&name)?), reply)
    }

    /// Sets an identity to `value` if that raises it (or always with `force`); returns the value in effect.
    pub fn submit_identity_seed(
        &self,
        name: String,
        value: u64,
        force: bool,
        reply: impl FnOnce(Result<u64, EngineError>) + Send + 'static,
    ) -> Result<(), EngineError> {
        let name = identity_name(&name);
        self.write(
            move |txn| {
                let current = txn.identity(&name)?;
                if force || value > current {
                    txn.set_identity(&name, value)?;
                    Ok(value)
                } else {
                    Ok(current)
                }
            },
            reply,
        )
    }

    /// Every identity with its current value, read from a snapshot.
    pub fn identities(&self) -> Result<Vec<(String, u64)>, EngineError> {
        Ok(self.store.read()?.identities()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_follows_the_clients_pace() {
        let now = parse_client_date("2024-05-01T10:01:00.0000000").unwrap();
        assert_eq!(capacity(0, None, now), 32);
        assert_eq!(capacity(32, Some("2024-05-01T10:00:50.0000000"), now), 64);
        assert_eq!(capacity(64, Some("2024-05-01T10:00:15.1234567Z"), now), 64);
        assert_eq!(capacity(64, Some("2024-05-01T09:50:00.0000000"), now), 32);
        assert_eq!(capacity(1 << 20, Some("2024-05-01T10:00:59.0000000"), now), 1 << 20);
    }
}
