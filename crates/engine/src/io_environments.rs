//! The storage environments of a database whose I/O is recorded (`/debug/io-metrics`): the document store
//! (journal and data file) and each index's files, in RavenDB's terms "Documents" and "Index" environments.

use std::path::PathBuf;
use std::sync::Arc;

use corvid_types::io_metrics::IoMetrics;

use crate::database::Database;
use crate::indexing::IndexBackend;

/// What kind of environment, as RavenDB names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEnvironmentKind {
    /// The document store: its journal files and data file.
    Documents,
    /// An index's files.
    Index,
}

impl IoEnvironmentKind {
    /// RavenDB's name.
    pub fn name(self) -> &'static str {
        match self {
            IoEnvironmentKind::Documents => "Documents",
            IoEnvironmentKind::Index => "Index",
        }
    }
}

/// One environment and its I/O record.
pub struct IoEnvironment {
    /// What the environment holds.
    pub kind: IoEnvironmentKind,
    /// The environment's directory.
    pub path: PathBuf,
    /// The index's name, for an index.
    pub index: Option<String>,
    /// Its recorded I/O.
    pub metrics: Arc<IoMetrics>,
}

impl Database {
    /// The document store's environment, then every index's: its tantivy files and, for map-reduce indexes,
    /// the LMDB store of its entries and results.
    pub fn io_environments(&self) -> Vec<IoEnvironment> {
        let store_metrics = self.store.io_metrics().clone();
        let mut environments = vec![IoEnvironment {
            kind: IoEnvironmentKind::Documents,
            path: self.store.path().to_owned(),
            index: None,
            metrics: store_metrics,
        }];
        for handle in self.indexes.all() {
            let mut parts: Vec<(PathBuf, Arc<IoMetrics>)> = Vec::with_capacity(2);
            match &handle.index {
                IndexBackend::Search(index) => parts.push((handle.dir.clone(), index.io_metrics().clone())),
                IndexBackend::Reduce(store) => parts.push((store.path().to_owned(), store.io_metrics().clone())),
                IndexBackend::StaticReduce { store, results } => {
                    parts.push((handle.dir.clone(), results.io_metrics().clone()));
                    parts.push((store.path().to_owned(), store.io_metrics().clone()));
                }
            }
            for (path, metrics) in parts {
                environments.push(IoEnvironment { kind: IoEnvironmentKind::Index, path, index: Some(handle.name()), metrics });
            }
        }
        environments
    }
}
