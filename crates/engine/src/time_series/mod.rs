//! Time series of documents: the operations of a batch, bulk insert (`bulk_command`) or `POST /timeseries`
//! (`operation`),
//! range reads with paging and stats (`range`), rollup and retention policies (`policy`). Storage keeps the segments (`corvid_storage::time_series`).

mod bulk_command;
mod include_clause;
mod includes;
mod operation;
pub mod policy;
mod range;

pub(crate) use include_clause::parse_include;
pub(crate) use includes::series_of_documents;
pub use includes::TimeSeriesInclude;
pub use operation::{is_incremental, TimeSeriesDelete, TimeSeriesIncrement, TimeSeriesOperation, INCREMENTAL_PREFIX};
pub use range::{TimeSeriesRange, TimeSeriesRangeRequest};

pub(crate) use bulk_command::{parse as parse_bulk_command, TimeSeriesBulkBody};
pub(crate) use operation::{run, validate};
