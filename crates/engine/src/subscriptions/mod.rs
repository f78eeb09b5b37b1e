//! Data subscriptions: definitions stored in the database (`store`), their RQL query checked at creation
//! and evaluated per document (`criteria`), batches read from a subscription's position (`batch_reader`),
//! the workers connected to each (`connections`), and how `Concurrent` workers share one subscription
//! (`concurrent_dispatch`, `concurrent_reader`). The TCP protocol that carries batches to the
//! clients' workers is the server's (`server/src/tcp/`).

mod batch_reader;
mod concurrent_dispatch;
mod concurrent_reader;
mod connections;
mod criteria;
mod definition;
mod extra_includes;
mod store;

pub use batch_reader::{BatchItem, IncludedCounters, SubscriptionBatch};
pub use concurrent_dispatch::{ConcurrentDispatch, ConcurrentWorker};
pub use connections::{
    AdmittedConnection, ConnectionSlot, EndReason, Refusal, Strategy, SubscriptionConnections, MAX_CONNECTIONS_PER_DATABASE,
};
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
