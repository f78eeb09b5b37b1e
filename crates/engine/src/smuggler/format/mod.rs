//! The `.ravendbdump` format: the compression around it, the section names and the shapes of items that
//! are more than a stored document (counter groups, attachment headers).

pub(crate) mod chunk_pipe;
pub mod compression;
pub(crate) mod counter_group;
pub(crate) mod sections;
pub(crate) mod threaded;
