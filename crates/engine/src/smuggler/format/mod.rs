//! The `.ravendbdump` format: the compression around it, the section names and the shapes of items that
//! are more than a stored document (counter groups, attachment headers, time-series segments).

pub(crate) mod auto_map_reduce;
mod bit_stream;
pub(crate) mod chunk_pipe;
pub mod compression;
pub(crate) mod counter_group;
mod lz4_block;
pub(crate) mod sections;
pub(crate) mod threaded;
pub(crate) mod time_series_item;
pub(crate) mod time_series_segment;
