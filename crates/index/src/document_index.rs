//! [`DocumentIndex`]: one tantivy index in its own directory, written by one writer, read through snapshots.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use corvid_types::io_metrics::{IoKind, IoMetrics, SlowIoThreshold};
use corvid_types::now_nanos;
use serde::{Deserialize, Serialize};
use tantivy::collector::sort_key::{ComparatorEnum, SortByStaticFastValue, SortByString};
use tantivy::collector::{Count, TopDocs};
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::Query;
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::entry::build_document;
use crate::query_builder::QueryBuilder;
use crate::schema::{register_analyzers, IndexSchema};
pub use crate::soft_sync::RecentSegments;
use crate::soft_sync::{current_boot_id, SoftSyncDirectory};
use crate::sort_collector::{resolve_ords, KeySource, KeySpec, MultiKeyCollector};
use crate::{Filter, IndexError, IndexSpec, MappedDocument, SearchResult, SortKey, SortKind};

/// Version of the term layout described in `schema.rs`; an index written with another one is reported as
/// `Corrupted` so the engine rebuilds it.
const FORMAT_VERSION: u32 = 6;
/// One indexing thread per index while it keeps up with writes: the engine runs one indexing loop per index,
/// many indexes share a machine, and one thread makes one segment per commit.
const WRITER_THREADS: usize = 1;
/// Memory of each indexing thread before it writes a segment.
const WRITER_MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// The same while catching up: bigger segments, fewer merges after the build.
const BULK_WRITER_MEMORY_BYTES: usize = 128 * 1024 * 1024;

/// Indexing threads while an index catches up with many documents (a build from cold, a reset): tantivy's
/// indexing thread is then the bottleneck of the whole build, and the machine's other cores are free.
fn bulk_writer_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4)
}
/// Background segment merges while keeping up: two, so small segments still merge while a long merge of big
/// ones runs (with one, each commit's segment count grew to 40-70 behind it, and commits with deletes open
/// every segment; measured in decision 0015). Merge threads run at a lower priority (`merge_priority.rs`).
const MERGE_THREADS: usize = 2;
/// While catching up the indexing threads take every core, and big segments come few at a time.
const BULK_MERGE_THREADS: usize = 1;
/// Pages reaching past this many entries take the general sort path (see `collect`).
const DEEP_PAGE: usize = 1024;
/// Commits are visible at once but fsynced only at checkpoints (see `soft_sync.rs`), at most this long apart
/// while the index changes. A power loss inside the window costs a rebuild of the index, so it stays short.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);
/// An index holding more than this in memory (`RecentSegments::InMemory`) checkpoints before its interval.
const MEMORY_CHECKPOINT_BYTES: usize = 64 * 1024 * 1024;

/// The commit payload: where indexing resumes, and what the index was built for.
#[derive(Debug, Serialize, Deserialize)]
struct CommitPayload {
    format: u32,
    last_etag: u64,
    spec: IndexSpec,
}

/// One tantivy index in its own directory: entries in, keys out (see the crate documentation).
pub struct DocumentIndex {
    dir: PathBuf,
    spec: IndexSpec,
    pub(crate) schema: IndexSchema,
    pub(crate) reader: IndexReader,
    index: Index,
    writer: Mutex<Writer>,
    /// Whether the next batches are part of a bulk catch-up (see [`DocumentIndex::set_bulk`]).
    bulk: AtomicBool,
    last_etag: AtomicU64,
    directory: SoftSyncDirectory,
    last_checkpoint: Mutex<Instant>,
    /// The background checkpoint in progress, if any: its fsyncs must not hold up the indexing thread.
    checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Why the last checkpoint failed (a full disk), until one succeeds.
    checkpoint_failure: Arc<Mutex<Option<String>>>,
    /// Checkpoints that are only due wait while set (see [`DocumentIndex::hold_checkpoints`]).
    checkpoints_held: AtomicBool,
    /// Recent commits and checkpoints (`/debug/io-metrics`).
    io: Arc<IoMetrics>,
}

/// The tantivy writer and its thread count; `None` between dropping a writer and opening its successor
/// (tantivy allows one writer per index at a time).
struct Writer {
    tantivy: Option<IndexWriter<TantivyDocument>>,
    /// Opened for catching up (see [`DocumentIndex::set_bulk`]).
    bulk: bool,
    /// Whether the writer's merge threads were given their lower priority (`merge_priority.rs`); done at the
    /// first batch, since a new thread names itself only once it runs.
    merges_lowered: bool,
}

/// How a keeping-up writer merges: segments of similar size (within 4x) merge four at a time, from 20
/// documents up. tantivy's default treats every segment under 10,000 documents as one level, so while
/// keeping up (a segment of ~20 entries per commit) each merge rewrote the level's biggest segment again
/// with seven small ones, a few times a second: merges took a third of the CPU at 1,000 updates/s. Sized
/// levels rewrite an entry about once per level (log4 of the index size over 20).
pub(crate) fn keep_up_merge_policy() -> tantivy::indexer::LogMergePolicy {
    let mut policy = tantivy::indexer::LogMergePolicy::default();
    policy.set_min_num_segments(4);
    policy.set_min_layer_size(20);
    policy.set_level_log_size(2.0);
    policy
}

fn open_writer(index: &Index, threads: usize, bulk: bool) -> Result<IndexWriter<TantivyDocument>, IndexError> {
    let options = IndexWriterOptions::builder()
        .num_worker_threads(threads)
        .num_merge_threads(if bulk { BULK_MERGE_THREADS } else { MERGE_THREADS })
        .memory_budget_per_thread(if bulk { BULK_WRITER_MEMORY_BYTES } else { WRITER_MEMORY_BYTES })
        .build();
    let writer = index.writer_with_options(options)?;
    if bulk {
        // A catching-up writer does not merge: merges took a tenth of the CPU of a cold build, and most of
        // what they merged was merged again later. The catch-up's segments merge once it ends (`end_bulk`).
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    } else {
        writer.set_merge_policy(Box::new(keep_up_merge_policy()));
    }
    Ok(writer)
}

impl std::fmt::Debug for DocumentIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentIndex").field("dir", &self.dir).field("last_etag", &self.last_indexed_etag()).finish()
    }
}

impl Drop for DocumentIndex {
    /// A background checkpoint must not outlive the index (its directory may be removed next).
    fn drop(&mut self) {
        if let Some(running) = self.checkpointer.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = running.join();
        }
    }
}

/// Changes to a [`DocumentIndex`] on their way to one commit (see [`DocumentIndex::batch`]).
pub struct IndexBatch<'a> {
    index: &'a DocumentIndex,
    writer: MutexGuard<'a, Writer>,
    /// The index as last committed: only this batch writes, and every commit reloads the reader.
    searcher: Searcher,
    /// Keys added in this batch.
    added: std::collections::HashSet<String>,
    /// Every entry of the last commit was deleted in this batch.
    cleared: bool,
    entries: usize,
    deletes: usize,
    started: Instant,
    /// Operations were sent to tantivy and not committed: dropping the batch must roll them back.
    pending: bool,
}

impl IndexBatch<'_> {
    fn tantivy(&mut self) -> &mut IndexWriter<TantivyDocument> {
        self.writer.tantivy.as_mut().expect("a batch holds an open writer")
    }

    /// Whether the last commit holds an entry with this key term that this batch has not cleared.
    fn indexed(&self, term: &Term) -> Result<bool, IndexError> {
        Ok(!self.cleared && self.searcher.doc_freq(term)? > 0)
    }

    /// Removes every entry (those added earlier in this batch included).
    pub fn delete_all(&mut self) -> Result<(), IndexError> {
        self.pending = true;
        self.tantivy().delete_all_documents()?;
        self.added.clear();
        self.cleared = true;
        Ok(())
    }

    /// Removes the entry of `key`, if any (entries added earlier in this batch included).
    pub fn delete(&mut self, key: &str) -> Result<(), IndexError> {
        let term = Term::from_field_text(self.index.schema.key, key);
        // A delete makes tantivy open a reader on every segment at commit, a cost that grows with the
        // index, so keys the index has never seen (new documents) are not deleted.
        if self.added.contains(key) || self.indexed(&term)? {
            self.pending = true;
            self.tantivy().delete_term(term);
            self.deletes += 1;
        }
        Ok(())
    }

    /// Adds `entry`, replacing the entry of its key.
    pub fn upsert(&mut self, entry: &MappedDocument) -> Result<(), IndexError> {
        let term = Term::from_field_text(self.index.schema.key, &entry.key);
        // Deletes only affect entries added before them, so a key repeated in the batch keeps its last version.
        let repeated = !self.added.insert(entry.key.clone());
        self.pending = true;
        if repeated || self.indexed(&term)? {
            self.tantivy().delete_term(term);
        }
        let document = build_document(&self.index.schema, entry);
        self.tantivy().add_document(document)?;
        self.entries += 1;
        Ok(())
    }

    /// Commits the batch with `last_etag` as the commit payload and reloads the reader; on error nothing of
    /// the batch is committed. The commit is visible at once and survives a process crash; it is fsynced by
    /// the next checkpoint.
    pub fn commit(mut self, last_etag: u64) -> Result<(), IndexError> {
        let index = self.index;
        let payload = CommitPayload { format: FORMAT_VERSION, last_etag, spec: index.spec.clone() };
        self.pending = true;
        let started = self.started;
        let filled = started.elapsed();
        let mut prepared_after = filled;
        let committed = (|| -> Result<(), IndexError> {
            let mut prepared = self.tantivy().prepare_commit()?;
            prepared_after = started.elapsed();
            prepared.set_payload(&serde_json::to_string(&payload).expect("payload serializes"));
            prepared.commit()?;
            Ok(())
        })();
        // On error, dropping `self` rolls the batch back.
        committed?;
        self.pending = false;
        let (started, entries, deletes) = (self.started, self.entries, self.deletes);
        drop(self);
        let commit_took = started.elapsed();
        let commit_start = now_nanos() - (commit_took - prepared_after).as_nanos() as i64;
        index.io.record("index", IoKind::DataFlush, commit_start, commit_took - prepared_after, 0, 0);
        index.last_etag.store(last_etag, AtomicOrdering::Release);
        index.reader.reload()?;
        tracing::debug!(
            dir = %index.dir.display(),
            entries,
            deletes,
            fill_ms = filled.as_secs_f64() * 1e3,
            prepare_ms = (prepared_after - filled).as_secs_f64() * 1e3,
            commit_ms = commit_took.as_secs_f64() * 1e3,
            reload_ms = (started.elapsed() - commit_took).as_secs_f64() * 1e3,
            segments = index.reader.searcher().segment_readers().len(),
            memory_kib = index.directory.memory_bytes() / 1024,
            "index batch committed"
        );
        index.checkpoint_if_due()
    }
}

impl Drop for IndexBatch<'_> {
    fn drop(&mut self) {
        if self.pending {
            if let Err(e) = self.tantivy().rollback() {
                tracing::warn!(dir = %self.index.dir.display(), error = %e, "index rollback failed");
            }
        }
    }
}

fn corrupted(dir: &Path, what: impl std::fmt::Display) -> IndexError {
    IndexError::Corrupted { context: format!("index at {}: {what}", dir.display()) }
}

impl DocumentIndex {
    /// Opens the index in `dir`, or creates it there, keeping recent segments in memory until checkpoints.
    /// Reopening resumes from the last checkpoint; an index built for another spec or format is `Corrupted`.
    pub fn open_or_create(dir: &Path, spec: &IndexSpec) -> Result<DocumentIndex, IndexError> {
        Self::open_or_create_with(dir, spec, RecentSegments::InMemory, SlowIoThreshold::default())
    }

    /// [`Self::open_or_create`] with the choice of where recent segments live (with `RecentSegments::OnDisk` they
    /// are written at once and a killed process resumes from its last commit) and the database's slow-I/O
    /// threshold.
    pub fn open_or_create_with(
        dir: &Path,
        spec: &IndexSpec,
        recent: RecentSegments,
        slow_io_threshold: SlowIoThreshold,
    ) -> Result<DocumentIndex, IndexError> {
        Self::open_in_boot(dir, spec, current_boot_id(), recent, slow_io_threshold)
    }

    /// [`Self::open_or_create_with`] as if the machine's boot id were `boot_id` (tests simulate reboots with it).
    pub(crate) fn open_in_boot(
        dir: &Path,
        spec: &IndexSpec,
        boot_id: String,
        recent: RecentSegments,
        slow_io_threshold: SlowIoThreshold,
    ) -> Result<DocumentIndex, IndexError> {
        std::fs::create_dir_all(dir)?;
        let schema = IndexSchema::build(spec);
        let directory = match SoftSyncDirectory::open(dir, boot_id, recent).map_err(|e| corrupted(dir, e))? {
            Ok(directory) => directory,
            Err(lost) => {
                return Err(corrupted(
                    dir,
                    format!("the machine restarted (boot {}) before its last commits were synced", lost.written_in_boot),
                ))
            }
        };
        let (index, last_etag, fresh) = if Index::exists(&directory).map_err(|e| corrupted(dir, e))? {
            let index = Index::open(directory.clone()).map_err(|e| corrupted(dir, e))?;
            let payload = index.load_metas().map_err(|e| corrupted(dir, e))?.payload;
            let last_etag = match payload {
                // Created but never committed: nothing indexed yet.
                None => 0,
                Some(text) => {
                    let payload: CommitPayload = serde_json::from_str(&text).map_err(|e| corrupted(dir, format!("commit payload: {e}")))?;
                    if payload.format != FORMAT_VERSION {
                        return Err(corrupted(dir, format!("format {} (expected {FORMAT_VERSION})", payload.format)));
                    }
                    if &payload.spec != spec {
                        return Err(corrupted(dir, "built for a different field list"));
                    }
                    payload.last_etag
                }
            };
            if index.schema() != schema.schema {
                return Err(corrupted(dir, "schema differs from the field list"));
            }
            (index, last_etag, false)
        } else {
            (Index::create(directory.clone(), schema.schema.clone(), Default::default())?, 0, true)
        };
        register_analyzers(&index);
        let writer = Writer { tantivy: Some(open_writer(&index, WRITER_THREADS, false)?), bulk: false, merges_lowered: false };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let this = DocumentIndex {
            dir: dir.to_path_buf(),
            spec: spec.clone(),
            schema,
            reader,
            index,
            writer: Mutex::new(writer),
            bulk: AtomicBool::new(false),
            last_etag: AtomicU64::new(last_etag),
            directory,
            last_checkpoint: Mutex::new(Instant::now()),
            checkpointer: Mutex::new(None),
            checkpoint_failure: Arc::new(Mutex::new(None)),
            checkpoints_held: AtomicBool::new(false),
            io: Arc::new(IoMetrics::new(dir.display().to_string(), slow_io_threshold)),
        };
        if fresh {
            // Record the spec right away, so a reopen can check it even before the first batch.
            this.apply(&[], &[], 0)?;
        }
        Ok(this)
    }

    pub(crate) fn spec_fields(&self) -> &[crate::FieldSpec] {
        &self.spec.fields
    }

    /// Drops the writer, so the next batch opens a new one on the last commit: a batch that failed (a full
    /// disk) can leave tantivy's writer unusable, and retrying with it would fail forever.
    pub fn reopen_writer(&self) {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner).tantivy = None;
    }

    /// Whether the coming batches catch up with many documents (more indexing threads, bigger segments) or
    /// keep up with new writes (one thread, one segment per commit). Takes effect at the next batch.
    pub fn set_bulk(&self, bulk: bool) {
        self.bulk.store(bulk, AtomicOrdering::Relaxed);
    }

    /// Ends a catch-up now rather than at the next batch: the writer keeps up from here, and an empty commit
    /// lets its merge policy merge the segments the catch-up left, while the index is idle.
    pub fn end_bulk(&self) -> Result<(), IndexError> {
        if !self.bulk.swap(false, AtomicOrdering::Relaxed) {
            return Ok(());
        }
        let batch = self.batch()?;
        batch.commit(self.last_indexed_etag())
    }

    /// The etag of the last commit: indexing resumes after it.
    pub fn last_indexed_etag(&self) -> u64 {
        self.last_etag.load(AtomicOrdering::Acquire)
    }

    /// Fsyncs everything committed so far (see `soft_sync.rs`), waiting for a background checkpoint first.
    /// Called at shutdown.
    pub fn checkpoint(&self) -> Result<(), IndexError> {
        if let Some(running) = self.checkpointer.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = running.join();
        }
        *self.last_checkpoint.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        let result = timed_checkpoint(&self.directory, &self.io);
        *self.checkpoint_failure.lock().unwrap_or_else(PoisonError::into_inner) = result.as_ref().err().map(|e| e.to_string());
        result?;
        Ok(())
    }

    /// Why the last checkpoint failed, while none has succeeded since.
    pub fn checkpoint_failure(&self) -> Option<String> {
        self.checkpoint_failure.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// While held, due checkpoints wait (commits stay in memory): on a full disk the little space left is
    /// for the database's deletes. A forced [`DocumentIndex::checkpoint`] (shutdown) still writes.
    pub fn hold_checkpoints(&self, held: bool) {
        self.checkpoints_held.store(held, AtomicOrdering::Relaxed);
    }

    /// Starts a checkpoint on a background thread if the last one is older than [`CHECKPOINT_INTERVAL`] (or
    /// too much is held in memory) and none is running.
    pub fn checkpoint_if_due(&self) -> Result<(), IndexError> {
        if self.checkpoints_held.load(AtomicOrdering::Relaxed) {
            return Ok(());
        }
        let mut last = self.last_checkpoint.lock().unwrap_or_else(PoisonError::into_inner);
        if last.elapsed() < CHECKPOINT_INTERVAL && self.directory.memory_bytes() < MEMORY_CHECKPOINT_BYTES {
            return Ok(());
        }
        let mut running = self.checkpointer.lock().unwrap_or_else(PoisonError::into_inner);
        if running.as_ref().is_some_and(|t| !t.is_finished()) {
            return Ok(());
        }
        *last = Instant::now();
        let directory = self.directory.clone();
        let dir = self.dir.clone();
        let failure = self.checkpoint_failure.clone();
        let io = self.io.clone();
        let thread = std::thread::Builder::new().name("index-checkpoint".into()).spawn(move || {
            crate::merge_priority::lower_this_thread();
            let started = Instant::now();
            let result = timed_checkpoint(&directory, &io);
            *failure.lock().unwrap_or_else(PoisonError::into_inner) = result.as_ref().err().map(|e| e.to_string());
            match result {
                Ok(true) => tracing::debug!(dir = %dir.display(), took_ms = started.elapsed().as_millis() as u64, "index checkpoint"),
                Ok(false) => {}
                // The commits stay valid for this boot; the next checkpoint retries.
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "index checkpoint failed"),
            }
        })?;
        *running = Some(thread);
        Ok(())
    }

    /// Whether commits since the last checkpoint are still unsynced.
    pub fn has_unsynced_commits(&self) -> bool {
        self.directory.is_dirty()
    }

    /// Bytes of recent segments held in memory until the next checkpoint.
    pub fn memory_bytes(&self) -> usize {
        self.directory.memory_bytes()
    }

    /// The index's recent commits and checkpoints.
    pub fn io_metrics(&self) -> &Arc<IoMetrics> {
        &self.io
    }

    #[cfg(test)]
    pub(crate) fn recent_files(&self) -> Vec<PathBuf> {
        self.directory.recent_files()
    }

    /// Replaces the entries of `upserts` (by key), removes `deletes`, commits with `last_etag` as the commit
    /// payload and reloads the reader. On error nothing of the batch is committed. The commit is visible at
    /// once and survives a process crash; it is fsynced by the next checkpoint.
    pub fn apply(&self, upserts: &[MappedDocument], deletes: &[String], last_etag: u64) -> Result<(), IndexError> {
        let mut batch = self.batch()?;
        for key in deletes {
            batch.delete(key)?;
        }
        for entry in upserts {
            batch.upsert(entry)?;
        }
        batch.commit(last_etag)
    }

    /// Starts a batch of changes: entries go to tantivy's indexing threads as they are added, so the caller
    /// can map the next document while the last one is indexed. Holds the writer until committed or dropped
    /// (dropping rolls the batch back).
    pub fn batch(&self) -> Result<IndexBatch<'_>, IndexError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let bulk = self.bulk.load(AtomicOrdering::Relaxed);
        if writer.bulk != bulk || writer.tantivy.is_none() {
            // No batch is pending between batches, so the writer can be replaced here.
            let threads = if bulk { bulk_writer_threads() } else { WRITER_THREADS };
            writer.tantivy = None;
            writer.tantivy = Some(open_writer(&self.index, threads, bulk)?);
            writer.bulk = bulk;
            writer.merges_lowered = false;
        } else if !writer.merges_lowered {
            crate::merge_priority::lower_merge_threads();
            writer.merges_lowered = true;
        }
        Ok(IndexBatch {
            index: self,
            writer,
            searcher: self.reader.searcher(),
            added: std::collections::HashSet::new(),
            cleared: false,
            entries: 0,
            deletes: 0,
            started: Instant::now(),
            pending: false,
        })
    }

    /// Entries the index holds.
    pub fn entries_count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Bytes of the index: the files in its directory and the recent segments held in memory.
    pub fn size_on_disk(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return 0 };
        let files: u64 = entries.filter_map(|e| e.ok()?.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
        files + self.directory.memory_bytes() as u64
    }

    /// Matching entries, sorted by `sort` (relevance when empty), paged by `skip`/`take`; `total` counts every match.
    pub fn search(&self, filter: &Filter, sort: &[SortKey], skip: usize, take: usize) -> Result<SearchResult, IndexError> {
        let query = QueryBuilder::new(&self.schema).build(filter)?;
        let searcher = self.reader.searcher();
        let (hits, total) = self.collect(&searcher, query.as_ref(), filter, sort, skip, take)?;
        let keys = self.keys_of(&searcher, hits.iter().map(|(a, _)| *a))?;
        Ok(SearchResult { keys, total, scores: hits.iter().map(|(_, s)| *s).collect() })
    }

    /// The page as (address, score) plus the total.
    #[allow(clippy::type_complexity)]
    fn collect(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        filter: &Filter,
        sort: &[SortKey],
        skip: usize,
        take: usize,
    ) -> Result<(Vec<(DocAddress, f32)>, usize), IndexError> {
        if take == 0 {
            return Ok((Vec::new(), searcher.search(query, &Count)?));
        }
        if sort.is_empty() && matches!(filter, Filter::All) {
            return Ok(first_alive(searcher, skip, take));
        }
        let page = TopDocs::with_limit(take).and_offset(skip);
        // Deep pages: tantivy turns every string key of the window into text, one dictionary lookup each.
        let deep = skip.saturating_add(take) > DEEP_PAGE;
        let keys = sort.iter().map(|k| self.key_spec(k)).collect::<Result<Vec<_>, _>>()?;
        match keys.as_slice() {
            [] | [KeySpec { source: KeySource::Score, descending: false }] => {
                let (hits, total) = searcher.search(query, &(page.order_by_score(), Count))?;
                return Ok((hits.into_iter().map(|(s, a)| (a, s)).collect(), total));
            }
            [key @ KeySpec { source: KeySource::Str(column), .. }] if !deep => {
                let top = page.order_by((SortByString::for_field(column), comparator(key.descending)));
                let (hits, total) = searcher.search(query, &(top, Count))?;
                return Ok((unscored(hits), total));
            }
            [key @ KeySpec { source: KeySource::Numeric(column), .. }] => {
                let (hits, total) = if sort[0].kind == SortKind::Long {
                    let top = page.order_by((SortByStaticFastValue::<i64>::for_field(column), comparator(key.descending)));
                    let (hits, total) = searcher.search(query, &(top, Count))?;
                    (unscored(hits), total)
                } else {
                    let top = page.order_by((SortByStaticFastValue::<f64>::for_field(column), comparator(key.descending)));
                    let (hits, total) = searcher.search(query, &(top, Count))?;
                    (unscored(hits), total)
                };
                return Ok((hits, total));
            }
            _ => {}
        }
        let scored = keys.iter().any(|k| matches!(k.source, KeySource::Score));
        let single_segment = searcher.segment_readers().len() == 1;
        let collector = MultiKeyCollector { keys, limit: skip.saturating_add(take), single_segment };
        let (hits, total) = searcher.search(query, &collector)?;
        let hits = hits.into_iter().skip(skip).map(|h| (h.address, if scored { h.score } else { 0.0 })).collect();
        Ok((hits, total))
    }

    fn key_spec(&self, key: &SortKey) -> Result<KeySpec, IndexError> {
        let source = if key.kind == SortKind::Score {
            KeySource::Score
        } else {
            let (_, field) = self
                .schema
                .field(&key.field)
                .ok_or_else(|| IndexError::InvalidQuery(format!("cannot sort by '{}': the field is not indexed", key.field)))?;
            match key.kind {
                SortKind::String => KeySource::Str(field.sort_string.name.clone()),
                // Analyzed fields keep one short sort key (see `entry::add_analyzed_only`).
                SortKind::AlphaNumeric if field.analyzed_only => KeySource::Str(field.sort_string.name.clone()),
                SortKind::AlphaNumeric => KeySource::Str(field.sort_alnum.name.clone()),
                SortKind::Long => KeySource::Numeric(field.long.name.clone()),
                SortKind::Double => KeySource::Numeric(field.double.name.clone()),
                SortKind::Score => unreachable!("handled above"),
                SortKind::Distance { lat_e7, lng_e7 } => {
                    let columns = field.spatial.clone().ok_or_else(|| {
                        IndexError::InvalidQuery(format!("cannot sort by distance on '{}': it is not a spatial field", key.field))
                    })?;
                    KeySource::Distance { columns, origin: (lat_e7 as f64 / 1e7, lng_e7 as f64 / 1e7) }
                }
            }
        };
        Ok(KeySpec { source, descending: key.descending })
    }

    /// Entry keys of `addresses`, read from the `key` fast column, one dictionary pass per segment.
    pub(crate) fn keys_of(&self, searcher: &Searcher, addresses: impl Iterator<Item = DocAddress>) -> Result<Vec<String>, IndexError> {
        let addresses: Vec<DocAddress> = addresses.collect();
        let mut out: Vec<Option<String>> = vec![None; addresses.len()];
        let mut segments: Vec<u32> = addresses.iter().map(|a| a.segment_ord).collect();
        segments.sort_unstable();
        segments.dedup();
        for segment in segments {
            let column = searcher
                .segment_reader(segment)
                .fast_fields()
                .str(crate::schema::KEY_FIELD)?
                .ok_or_else(|| corrupted(&self.dir, "missing key column"))?;
            let positions: Vec<usize> = (0..addresses.len()).filter(|&i| addresses[i].segment_ord == segment).collect();
            let ords = positions.iter().map(|&i| column.ords().first(addresses[i].doc_id));
            for (&i, key) in positions.iter().zip(resolve_ords(&column, ords)) {
                out[i] = key;
            }
        }
        out.into_iter()
            .zip(&addresses)
            .map(|(key, address)| key.ok_or_else(|| corrupted(&self.dir, format!("entry {address:?} has no key"))))
            .collect()
    }
}

/// Index order without a filter: the first live entries, no query needed.
fn first_alive(searcher: &Searcher, skip: usize, take: usize) -> (Vec<(DocAddress, f32)>, usize) {
    let total = searcher.num_docs() as usize;
    let mut hits = Vec::with_capacity(take.min(total));
    let mut to_skip = skip;
    for (ord, reader) in searcher.segment_readers().iter().enumerate() {
        let alive = reader.num_docs() as usize;
        if to_skip >= alive {
            to_skip -= alive;
            continue;
        }
        for doc in reader.doc_ids_alive().skip(to_skip).take(take - hits.len()) {
            hits.push((DocAddress::new(ord as u32, doc), 0.0));
        }
        to_skip = 0;
        if hits.len() == take {
            break;
        }
    }
    (hits, total)
}

fn unscored<K>(hits: Vec<(K, DocAddress)>) -> Vec<(DocAddress, f32)> {
    hits.into_iter().map(|(_, a)| (a, 0.0)).collect()
}

/// tantivy's `TopDocs` keeps the greatest keys under the comparator, with `None` below every value: the reverse
/// comparator gives ascending order with missing values first, the natural one descending with missing last.
fn comparator(descending: bool) -> ComparatorEnum {
    if descending {
        ComparatorEnum::Natural
    } else {
        ComparatorEnum::Reverse
    }
}

/// A checkpoint of the index's files, recorded as a data sync of the bytes it had in memory.
fn timed_checkpoint(directory: &SoftSyncDirectory, io: &IoMetrics) -> std::io::Result<bool> {
    let pending = directory.memory_bytes() as u64;
    let timer = IoMetrics::start();
    let result = directory.checkpoint();
    if matches!(result, Ok(true)) {
        let (start, duration) = timer.stop();
        io.record("index", IoKind::DataSync, start, duration, pending, 0);
    }
    result
}
