//! The Changes API's engine side: what changed (documents, indexes, operations), published to every
//! subscriber of a database without ever blocking the writer.

mod change;
mod feeder;
mod hub;

pub use change::{Change, DocumentChangeKind, IndexChangeKind};
pub(crate) use feeder::DocumentFeeder;
pub use hub::{ChangesHub, Overflowed, Subscription};
