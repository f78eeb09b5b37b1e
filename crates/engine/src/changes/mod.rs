//! The Changes API's engine side: what changed (documents, counters, time series, indexes, operations),
//! published to every subscriber of a database without ever blocking the writer.

mod change;
mod feeder;
mod hub;
pub(crate) mod pending;

pub use change::{Change, CounterChangeKind, DocumentChangeKind, IndexChangeKind, TimeSeriesChangeKind};
pub(crate) use feeder::DocumentFeeder;
pub use hub::{ChangesHub, Overflowed, Published, Subscription};
