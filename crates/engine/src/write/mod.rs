//! The steps every document write is made of, inside the merger's write transaction: the optimistic
//! concurrency check, putting and deleting a document, and refreshing the metadata the server keeps on a
//! document (`@attachments`, `@counters` and their flags). The commands (batches, patches, attachments,
//! counters, bulk insert, HiLo) build on these; nothing here knows a command or a wire reply.

pub(crate) mod document;
pub(crate) mod metadata;
pub(crate) mod precondition;
