//! Data subscriptions: definitions stored in the database (`store`), their RQL query checked at creation
//! and evaluated per document (`criteria`), batches read from a subscription's position (`batch_reader`),
//! and the workers connected to each (`connections`). The TCP protocol that carries batches to the
//! clients' workers is the server's (`server/src/tcp/`).

mod batch_reader;
mod connections;
mod criteria;
mod definition;
mod extra_includes;
mod store;

pub use batch_reader::{BatchItem, IncludedCounters, SubscriptionBatch};
pub use connections::{AdmittedConnection, ConnectionSlot, EndReason, InUse, Strategy, SubscriptionConnections};
pub use criteria::SubscriptionCriteria;
pub use definition::{SubscriptionDefinition, SubscriptionRequest};
pub use extra_includes::ExtraIncludes;
pub use store::SubscriptionKey;

impl crate::Database {
    /// The workers connected to this database's subscriptions.
    pub fn subscription_connections(&self) -> &std::sync::Arc<SubscriptionConnections> {
        &self.subscription_connections
    }
}
