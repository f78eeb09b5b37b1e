//! Static (user-defined) indexes as stored: the definition as the client sent it (`PUT /admin/indexes`) and
//! what Corvid derived from it when it compiled it (`compile.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The language of a static index's maps and reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SourceLanguage {
    /// `map('Users', u => ...)`, run in a QuickJS sandbox.
    JavaScript,
    /// C# LINQ (`from doc in docs.Users select new { ... }`), evaluated natively by `corvid-linq`.
    CSharp,
}

/// What a static index maps (RavenDB's `SourceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum IndexSource {
    /// Documents (`map('Users', ...)`, `from doc in docs.Users`).
    #[default]
    Documents,
    /// Counters (`counters.map('Users', 'Likes', ...)`, `from counter in counters.Users`).
    Counters,
    /// Time-series segments (`timeSeries.map('Users', 'HeartRate', ...)`, `from ts in timeSeries.Users`).
    TimeSeries,
}

impl IndexSource {
    /// RavenDB's name of the source type.
    pub fn name(self) -> &'static str {
        match self {
            IndexSource::Documents => "Documents",
            IndexSource::Counters => "Counters",
            IndexSource::TimeSeries => "TimeSeries",
        }
    }
}

/// A static index as stored: the client's definition JSON plus what was derived from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticIndex {
    /// The language of every map and the reduce.
    pub language: SourceLanguage,
    /// What the maps read: documents, counters or time series.
    #[serde(default)]
    pub source: IndexSource,
    /// The maps as sent (empty ones dropped).
    pub maps: Vec<String>,
    /// The reduce as sent; None for a map index.
    pub reduce: Option<String>,
    /// Collections the maps read; empty means every document.
    pub collections: Vec<String>,
    /// The definition as sent (answered back by `GET /indexes`).
    pub definition: Value,
}

/// Keys of the definition as sent that change what an index computes; `Priority`, `LockMode` and `State`
/// do not, and `ReduceOutputIndex` is assigned by the server.
const COMPUTING_KEYS: &[&str] = &[
    "Fields",
    "Configuration",
    "AdditionalSources",
    "AdditionalAssemblies",
    "OutputReduceToCollection",
    "PatternForOutputReduceToCollectionReferences",
    "PatternReferencesCollectionName",
];

/// A key's value with the spellings of "nothing" (missing, null, empty object or list) made equal.
fn meaningful<'a>(definition: &'a Value, key: &str) -> Option<&'a Value> {
    definition.get(key).filter(|v| match v {
        Value::Null => false,
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    })
}

impl StaticIndex {
    /// Whether both definitions compute the same index, whatever their priority, lock mode or state: a put
    /// that changes only those must not rebuild the index.
    pub fn computes_same_as(&self, other: &StaticIndex) -> bool {
        self.maps == other.maps
            && self.source == other.source
            && self.reduce == other.reduce
            && COMPUTING_KEYS.iter().all(|k| meaningful(&self.definition, k) == meaningful(&other.definition, k))
    }

    /// RavenDB's index type name.
    pub fn type_name(&self) -> &'static str {
        match (self.language, self.reduce.is_some()) {
            (SourceLanguage::JavaScript, false) => "JavaScriptMap",
            (SourceLanguage::JavaScript, true) => "JavaScriptMapReduce",
            (SourceLanguage::CSharp, false) => "Map",
            (SourceLanguage::CSharp, true) => "MapReduce",
        }
    }
}
