//! The journal's files: `journal/<16 hex digits>.journal` in a database directory, each starting with a
//! header (database id, file sequence) and preallocated with zeros so a flush never also changes the file's
//! size. New files get their header under a temporary name and are renamed into place once it is durable, so
//! a file with a journal name and a bad header is damage, never a crash. Files the last checkpoint made
//! obsolete are kept as spares and reused (their old records carry the old sequence and read as the end).
//!
//! Every write and flush goes through here, so a test can record them (`io_log`) and build the disk images a
//! power loss could leave behind.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::zero_fill;
use crate::StorageError;

/// The journal directory inside a database directory.
pub(crate) const JOURNAL_DIR: &str = "journal";
/// Bytes reserved at the start of every file for its header; records start after it.
pub(crate) const HEADER_BYTES: u64 = 4096;
/// Size of a journal file (a bigger record gets a file of its own size). Small in tests, so they cross file
/// and recycling boundaries quickly.
#[cfg(not(test))]
pub(crate) const FILE_BYTES: u64 = 8 << 20;
#[cfg(test)]
pub(crate) const FILE_BYTES: u64 = 256 << 10;
const MAGIC: &[u8; 8] = b"CORVIDJ1";
const FORMAT: u32 = 1;
const SUFFIX: &str = ".journal";
const SPARE_PREFIX: &str = "spare-";

/// An open journal file.
pub(crate) struct JournalFile {
    pub seq: u64,
    pub path: PathBuf,
    pub file: Arc<File>,
    /// Bytes allocated (zeros past the records).
    pub capacity: u64,
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io { path: path.to_owned(), source }
}

pub(crate) fn file_name(seq: u64) -> String {
    format!("{seq:016x}{SUFFIX}")
}

/// Journal files by sequence.
pub(crate) type JournalFiles = Vec<(u64, PathBuf)>;

/// The journal files of `dir` (the journal directory) by sequence, and the spares.
pub(crate) fn list(dir: &Path) -> Result<(JournalFiles, Vec<PathBuf>), StorageError> {
    let mut files = Vec::new();
    let mut spares = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((files, spares)),
        Err(e) => return Err(io_error(dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(hex) = name.strip_suffix(SUFFIX) {
            match u64::from_str_radix(hex, 16) {
                Ok(seq) if hex.len() == 16 => files.push((seq, entry.path())),
                _ => return Err(StorageError::Journal { path: entry.path(), reason: "not a journal file name".into() }),
            }
        } else if name.starts_with(SPARE_PREFIX) {
            spares.push(entry.path());
        } else if name.ends_with(".tmp") {
            // A file whose header never became durable: never part of the journal.
            let _ = std::fs::remove_file(entry.path());
        }
    }
    files.sort();
    Ok((files, spares))
}

fn encode_header(seq: u64, database_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(database_id.len() as u16).to_le_bytes());
    out.extend_from_slice(database_id.as_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out.resize(HEADER_BYTES as usize, 0);
    out
}

/// The sequence and database id a file's header names; an error says what is wrong with it.
pub(crate) fn decode_header(bytes: &[u8]) -> Result<(u64, String), String> {
    if bytes.len() < 22 || &bytes[..8] != MAGIC {
        return Err("not a Corvid journal file (bad magic)".into());
    }
    let format = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if format != FORMAT {
        return Err(format!("journal format {format} is not supported (this build reads {FORMAT})"));
    }
    let seq = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let id_len = u16::from_le_bytes(bytes[20..22].try_into().expect("2 bytes")) as usize;
    let end = 22 + id_len;
    if bytes.len() < end + 4 {
        return Err("journal header is truncated".into());
    }
    let crc = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[..end]) != crc {
        return Err("journal header checksum does not match".into());
    }
    let id = String::from_utf8(bytes[22..end].to_vec()).map_err(|_| "journal header database id is not UTF-8".to_string())?;
    Ok((seq, id))
}

/// Reads a whole journal file, checking its header against its name and the database.
pub(crate) fn read(path: &Path, seq: u64, database_id: &str) -> Result<Vec<u8>, StorageError> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    let bad = |reason: String| StorageError::Journal { path: path.to_owned(), reason };
    let (found_seq, found_id) = decode_header(&bytes).map_err(bad)?;
    if found_id != database_id {
        return Err(bad(format!("it belongs to database {found_id}, not to this one ({database_id})")));
    }
    if found_seq != seq {
        return Err(bad(format!("its header says file {found_seq:016x}")));
    }
    Ok(bytes)
}

/// Creates file `seq` in `dir` (reusing a spare when there is one) with room for at least `need` bytes of
/// records, its header durable, under its journal name.
pub(crate) fn create(dir: &Path, seq: u64, database_id: &str, need: u64, spares: &mut Vec<PathBuf>) -> Result<JournalFile, StorageError> {
    let capacity = (HEADER_BYTES + need).max(FILE_BYTES).next_multiple_of(1 << 16);
    let tmp = dir.join(format!("{}.tmp", file_name(seq)));
    let reused = loop {
        let Some(spare) = spares.pop() else { break None };
        let fits = std::fs::metadata(&spare).is_ok_and(|m| m.len() >= capacity);
        if fits && std::fs::rename(&spare, &tmp).is_ok() {
            break Some(());
        }
        let _ = std::fs::remove_file(&spare);
    };
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&tmp).map_err(io_error(&tmp))?;
    let capacity = if reused.is_some() {
        file.metadata().map_err(io_error(&tmp))?.len()
    } else {
        // Real zeros, not a hole: writing into allocated blocks spares each flush a metadata update.
        let zeros = vec![0u8; 1 << 20];
        let mut offset = 0;
        while offset < capacity {
            let n = zeros.len().min((capacity - offset) as usize);
            zero_fill::write_zeros(&file, offset, offset + n as u64).map_err(io_error(&tmp))?;
            io_log::wrote(&tmp, offset, &zeros[..n]);
            offset += n as u64;
        }
        capacity
    };
    write_at(&file, &tmp, &encode_header(seq, database_id), 0)?;
    sync(&file, &tmp)?;
    let path = dir.join(file_name(seq));
    std::fs::rename(&tmp, &path).map_err(io_error(&path))?;
    io_log::renamed(&tmp, &path);
    sync_dir(dir)?;
    Ok(JournalFile { seq, path, file: Arc::new(file), capacity })
}

/// Makes journal files obsolete after a durable checkpoint: they become spares.
pub(crate) fn recycle(dir: &Path, obsolete: &[(u64, PathBuf)], spares: &mut Vec<PathBuf>) -> Result<(), StorageError> {
    for (seq, path) in obsolete {
        let spare = dir.join(format!("{SPARE_PREFIX}{seq:016x}"));
        // Two spares are plenty: more would only hold disk space.
        if spares.len() < 2 {
            std::fs::rename(path, &spare).map_err(io_error(path))?;
            io_log::renamed(path, &spare);
            spares.push(spare);
        } else {
            std::fs::remove_file(path).map_err(io_error(path))?;
            io_log::removed(path);
        }
    }
    sync_dir(dir)
}

pub(crate) fn write_at(file: &File, path: &Path, bytes: &[u8], offset: u64) -> Result<(), StorageError> {
    file.write_all_at(bytes, offset).map_err(io_error(path))?;
    io_log::wrote(path, offset, bytes);
    Ok(())
}

/// `fdatasync`: the file's data (its size never changes after creation).
pub(crate) fn sync(file: &File, path: &Path) -> Result<(), StorageError> {
    let started = io_log::sync_started(path);
    file.sync_data().map_err(io_error(path))?;
    io_log::synced(path, started);
    Ok(())
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error(dir))
}

/// The recorded writes and flushes of journal files (tests only; nothing is recorded otherwise).
#[cfg(not(test))]
pub(crate) mod io_log {
    #![allow(dead_code)]
    use std::path::Path;
    pub fn wrote(_: &Path, _: u64, _: &[u8]) {}
    pub fn sync_started(_: &Path) -> u64 {
        0
    }
    pub fn synced(_: &Path, _: u64) {}
    pub fn renamed(_: &Path, _: &Path) {}
    pub fn removed(_: &Path) {}
    pub fn data_copy(_: &Path, _: &'static str) {}
}

#[cfg(test)]
pub(crate) mod io_log {
    //! Records I/O events for directories registered by a test (the crash-image test), in the order they
    //! happen. A flush covers the writes recorded before it started.
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    #[derive(Debug, Clone)]
    pub enum Event {
        Write {
            path: PathBuf,
            offset: u64,
            bytes: Vec<u8>,
        },
        /// `fdatasync` of `path` returned; it covers the events before index `covers`.
        Synced {
            path: PathBuf,
            covers: usize,
        },
        Renamed {
            from: PathBuf,
            to: PathBuf,
        },
        Removed {
            path: PathBuf,
        },
        /// Markers the test or the checkpoint code adds.
        Mark(String),
        /// The data file's content at that moment: when a checkpoint starts ("start"), just before it lets
        /// the previous checkpoint's snapshot go ("end"), or as the test says.
        DataCopy(&'static str, Vec<u8>),
    }

    pub type Log = Arc<Mutex<Vec<Event>>>;

    static LOGS: Mutex<Vec<(PathBuf, Log)>> = Mutex::new(Vec::new());

    /// Starts recording the I/O of every journal under `root`.
    pub fn record(root: &Path) -> Log {
        let log: Log = Arc::default();
        LOGS.lock().unwrap().push((root.to_owned(), log.clone()));
        log
    }

    pub fn log_for(path: &Path) -> Option<Log> {
        LOGS.lock().unwrap().iter().find(|(root, _)| path.starts_with(root)).map(|(_, log)| log.clone())
    }

    fn push(path: &Path, event: impl FnOnce() -> Event) -> Option<usize> {
        let log = log_for(path)?;
        let mut log = log.lock().unwrap();
        log.push(event());
        Some(log.len())
    }

    pub fn wrote(path: &Path, offset: u64, bytes: &[u8]) {
        push(path, || Event::Write { path: path.to_owned(), offset, bytes: bytes.to_vec() });
    }
    pub fn sync_started(path: &Path) -> u64 {
        log_for(path).map(|log| log.lock().unwrap().len() as u64).unwrap_or(0)
    }
    pub fn synced(path: &Path, started: u64) {
        push(path, || Event::Synced { path: path.to_owned(), covers: started as usize });
    }
    pub fn renamed(from: &Path, to: &Path) {
        push(to, || Event::Renamed { from: from.to_owned(), to: to.to_owned() });
    }
    pub fn removed(path: &Path) {
        push(path, || Event::Removed { path: path.to_owned() });
    }
    pub fn mark(path: &Path, what: &str) {
        push(path, || Event::Mark(what.to_owned()));
    }
    /// Records the content of `db_dir`'s data file, when its I/O is recorded.
    pub fn data_copy(db_dir: &Path, tag: &'static str) {
        if log_for(db_dir).is_some() {
            let bytes = std::fs::read(db_dir.join(crate::tables::DATA_FILE)).unwrap();
            push(db_dir, || Event::DataCopy(tag, bytes));
        }
    }
}
