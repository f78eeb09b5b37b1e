//! Creating, changing and deleting subscription definitions, and moving their position: each a write
//! through the database's merger, so definitions commit (and survive a crash) like documents.

use corvid_storage::{ReadTxn, WriteTxn};
use corvid_types::now_nanos;

use super::connections::EndReason;
use super::criteria::{Collection, SubscriptionCriteria};
use super::definition::{etag_in_change_vector, position_change_vector, StartPoint, SubscriptionDefinition, SubscriptionRequest};
use crate::{Database, EngineError};

/// Where to look a subscription up.
#[derive(Debug, Clone)]
pub enum SubscriptionKey {
    /// By name, case-insensitively.
    Name(String),
    /// By id.
    Id(u64),
}

fn does_not_exist(key: &SubscriptionKey) -> EngineError {
    let what = match key {
        SubscriptionKey::Name(name) => format!("Subscription with name '{name}'"),
        SubscriptionKey::Id(id) => format!("Subscription with id {id}"),
    };
    EngineError::SubscriptionDoesNotExist(format!("{what} was not found in server store"))
}

fn find_in(rows: Vec<(u64, Vec<u8>)>, key: &SubscriptionKey) -> Result<Option<SubscriptionDefinition>, EngineError> {
    for (id, bytes) in rows {
        let matches_id = matches!(key, SubscriptionKey::Id(wanted) if *wanted == id);
        if matches_id || matches!(key, SubscriptionKey::Name(_)) {
            let definition = SubscriptionDefinition::decode(&bytes)?;
            match key {
                SubscriptionKey::Id(_) => return Ok(Some(definition)),
                SubscriptionKey::Name(name) if definition.name.eq_ignore_ascii_case(name) => return Ok(Some(definition)),
                SubscriptionKey::Name(_) => {}
            }
        }
    }
    Ok(None)
}

/// The etag a subscription starts after (None: keep the stored one).
fn start_etag(
    start: &StartPoint,
    criteria: &SubscriptionCriteria,
    snapshot: &ReadTxn<'_>,
    database_id: &str,
) -> Result<Option<u64>, EngineError> {
    Ok(match start {
        StartPoint::Beginning => Some(0),
        StartPoint::Unchanged => None,
        StartPoint::ChangeVector(cv) => Some(etag_in_change_vector(cv, database_id)),
        StartPoint::LastDocument => Some(match &criteria.collection {
            Collection::Named(name) => snapshot.last_collection_etag(name)?,
            Collection::All => snapshot.last_document_etag()?,
        }),
    })
}

impl Database {
    /// Every subscription, by id.
    pub fn subscriptions(&self) -> Result<Vec<SubscriptionDefinition>, EngineError> {
        self.store.read()?.subscriptions()?.iter().map(|(_, bytes)| SubscriptionDefinition::decode(bytes)).collect()
    }

    /// One subscription, by name or id.
    pub fn subscription(&self, key: &SubscriptionKey) -> Result<Option<SubscriptionDefinition>, EngineError> {
        find_in(self.store.read()?.subscriptions()?, key)
    }

    /// Checks the query of a subscription (what a worker's connection evaluates).
    pub fn subscription_criteria(&self, query: &str) -> Result<SubscriptionCriteria, EngineError> {
        SubscriptionCriteria::parse(query)
    }

    /// `PUT /subscriptions`: checks the query (nothing is stored when it does not parse) and stores the
    /// subscription, named after its id when the request names none.
    pub fn create_subscription(&self, request: SubscriptionRequest) -> Result<SubscriptionDefinition, EngineError> {
        let query =
            request.query.clone().filter(|q| !q.trim().is_empty()).ok_or_else(|| EngineError::bad_request("'Query' is required"))?;
        let criteria = SubscriptionCriteria::parse(&query)?;
        let start = StartPoint::of(request.change_vector.as_deref());
        let position = start_etag(&start, &criteria, &self.store.read()?, self.database_id())?.unwrap_or(0);
        let database_id = self.database_id().to_owned();
        self.write_blocking(move |txn: &mut WriteTxn<'_>| {
            if let Some(name) = &request.name {
                if find_in(txn.subscriptions()?, &SubscriptionKey::Name(name.clone()))?.is_some() {
                    return Err(EngineError::bad_request(format!("A subscription named '{name}' already exists")));
                }
            }
            let id = txn.next_subscription_id()?;
            let definition = SubscriptionDefinition {
                id,
                name: request.name.clone().unwrap_or_else(|| id.to_string()),
                query,
                start_change_vector: match start {
                    StartPoint::ChangeVector(cv) => Some(cv),
                    StartPoint::LastDocument => position_change_vector(position, &database_id),
                    _ => None,
                },
                position,
                position_change_vector: None,
                disabled: request.disabled.unwrap_or(false),
                last_batch_ack_time: None,
                last_client_connection_time: None,
                last_change_vector_acknowledged: None,
            };
            txn.put_subscription(id, &definition.encode())?;
            Ok(definition)
        })
    }

    /// `POST /subscriptions/update`: the changed subscription, or None when nothing changed. A changed
    /// query or start point ends its connections (they may reconnect).
    pub fn update_subscription(&self, request: SubscriptionRequest) -> Result<Option<SubscriptionDefinition>, EngineError> {
        let key = match (&request.id, &request.name) {
            (Some(id), _) => SubscriptionKey::Id(*id),
            (None, Some(name)) => SubscriptionKey::Name(name.clone()),
            (None, None) => return Err(EngineError::bad_request("an update needs the subscription's 'Id' or 'Name'")),
        };
        // An update that names an id is about that id only (RavenDB refuses it when the id is unknown, even if
        // the name exists).
        let found = match self.subscription(&key)? {
            Some(found) => found,
            None if request.create_new == Some(true) => return self.create_subscription(request).map(Some),
            None => return Err(does_not_exist(&key)),
        };
        let query = request.query.clone().filter(|q| !q.trim().is_empty()).unwrap_or_else(|| found.query.clone());
        let criteria = SubscriptionCriteria::parse(&query)?;
        let start = match &request.change_vector {
            None => StartPoint::Unchanged,
            Some(cv) => StartPoint::of(Some(cv)),
        };
        let position = start_etag(&start, &criteria, &self.store.read()?, self.database_id())?;
        let mut changed = found.clone();
        changed.query = query;
        if let Some(disabled) = request.disabled {
            changed.disabled = disabled;
        }
        if let Some(position) = position {
            changed.position = position;
            changed.position_change_vector = None;
            changed.start_change_vector = match start {
                StartPoint::ChangeVector(cv) => Some(cv),
                StartPoint::LastDocument => position_change_vector(position, self.database_id()),
                _ => None,
            };
        }
        if changed == found {
            return Ok(None);
        }
        let id = found.id;
        let stored = changed.clone();
        self.write_blocking(move |txn: &mut WriteTxn<'_>| {
            txn.subscription(id)?.ok_or_else(|| does_not_exist(&SubscriptionKey::Id(id)))?;
            txn.put_subscription(id, &stored.encode())?;
            Ok(())
        })?;
        let reason = if changed.disabled { EndReason::Disabled } else { EndReason::Modified };
        self.subscription_connections.end_all(id, reason);
        Ok(Some(changed))
    }

    /// Deletes a subscription and ends its connections; false when there was none.
    pub fn delete_subscription(&self, name: &str) -> Result<bool, EngineError> {
        let Some(found) = self.subscription(&SubscriptionKey::Name(name.to_owned()))? else { return Ok(false) };
        let id = found.id;
        let deleted = self.write_blocking(move |txn: &mut WriteTxn<'_>| Ok(txn.delete_subscription(id)?))?;
        self.subscription_connections.end_all(id, EndReason::Deleted);
        Ok(deleted)
    }

    /// Enables or disables a subscription (disabling ends its connections); None when there is none.
    pub fn set_subscription_disabled(&self, name: &str, disabled: bool) -> Result<Option<SubscriptionDefinition>, EngineError> {
        let Some(found) = self.subscription(&SubscriptionKey::Name(name.to_owned()))? else { return Ok(None) };
        let request = SubscriptionRequest { id: Some(found.id), disabled: Some(disabled), ..Default::default() };
        self.update_subscription(request)?;
        self.subscription(&SubscriptionKey::Id(found.id))
    }

    /// Records what a worker acknowledged: documents up to `position` are done (`position_change_vector`
    /// is the last scanned document's), `acknowledged` is what the client sent.
    pub fn acknowledge_subscription(
        &self,
        id: u64,
        position: u64,
        position_change_vector: Option<String>,
        acknowledged: Option<String>,
    ) -> Result<(), EngineError> {
        self.update_definition(id, move |definition| {
            if position > definition.position {
                definition.position = position;
                definition.position_change_vector = position_change_vector;
            }
            if acknowledged.is_some() {
                definition.last_change_vector_acknowledged = acknowledged;
                definition.last_batch_ack_time = Some(now_nanos());
            }
        })
    }

    /// Records that a worker was admitted.
    pub fn record_subscription_connection(&self, id: u64) -> Result<(), EngineError> {
        self.update_definition(id, |definition| definition.last_client_connection_time = Some(now_nanos()))
    }

    fn update_definition(&self, id: u64, change: impl FnOnce(&mut SubscriptionDefinition) + Send + 'static) -> Result<(), EngineError> {
        self.write_blocking(move |txn: &mut WriteTxn<'_>| {
            let bytes = txn.subscription(id)?.ok_or_else(|| does_not_exist(&SubscriptionKey::Id(id)))?;
            let mut definition = SubscriptionDefinition::decode(&bytes)?;
            change(&mut definition);
            txn.put_subscription(id, &definition.encode())?;
            Ok(())
        })
    }
}
