//! Document revisions: the database record's configuration, the revisions kept in the same transaction as
//! each document change (storage tables of their own), reading them back, forced revisions and reverts.

mod active;
pub mod config;
mod config_api;
mod deletion;
mod reads;
mod revert;
mod time_span;
mod trim;
pub(crate) mod writes;

pub use config::{CollectionRevisions, RevisionsConfig};
pub use deletion::RevisionsDeletion;
pub use reads::RevisionsPage;
pub use revert::RevertRequest;
pub use writes::ForcedRevision;
