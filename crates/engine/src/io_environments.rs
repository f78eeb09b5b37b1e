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
    /// The document store's environment, then every index's (automatic map-reduce indexes kept in LMDB are
    /// not recorded yet). Indexes take the store's slow-I/O threshold.
    pub fn io_environments(&self) -> Vec<IoEnvironment> {
        let store_metrics = self.store.io_metrics().clone();
        let threshold = store_metrics.slow_threshold();
        let mut environments = vec![IoEnvironment {
            kind: IoEnvironmentKind::Documents,
            path: self.store.path().to_owned(),
            index: None,
            metrics: store_metrics,
        }];
        for handle in self.indexes.all() {
            let documents = match &handle.index {
                IndexBackend::Search(index) => index,
                IndexBackend::StaticReduce { results, .. } => results,
                IndexBackend::Reduce(_) => continue,
            };
            let metrics = documents.io_metrics().clone();
            metrics.set_slow_threshold(threshold);
            environments.push(IoEnvironment {
                kind: IoEnvironmentKind::Index,
                path: handle.dir.clone(),
                index: Some(handle.name()),
                metrics,
            });
        }
        environments
    }
}
