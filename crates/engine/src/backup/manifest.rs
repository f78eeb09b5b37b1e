//! The manifest of a snapshot backup (`corvid-snapshot.json`): what was copied, with sizes and checksums, and
//! the database record. It is written last, flushed and renamed into place, so a folder without it is a
//! backup that did not finish; a restore checks every file against it before copying anything.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::BackupError;

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "corvid-snapshot.json";
/// What `Format` says in every Corvid snapshot manifest.
pub const SNAPSHOT_FORMAT: &str = "corvid-snapshot";
/// The manifest layout this build writes and the newest it reads.
pub const MANIFEST_VERSION: u32 = 1;

/// A snapshot backup's description.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct SnapshotManifest {
    /// Always [`SNAPSHOT_FORMAT`].
    pub format: String,
    /// [`MANIFEST_VERSION`] when written.
    pub manifest_version: u32,
    /// The Corvid release that wrote it.
    pub corvid_version: String,
    /// The storage format of the data file (`docs/storage-format.md`, History).
    pub storage_format: u32,
    /// The database the backup was taken of.
    pub database_name: String,
    /// Its catalog entry (record settings, revisions and time-series configuration).
    pub database_record: serde_json::Value,
    /// When the snapshot was taken (RavenDB's date format).
    pub created_at: String,
    /// The database's last etag just before the snapshot (the snapshot holds at least this).
    pub last_etag: u64,
    /// Every file of the backup, relative to its folder.
    pub files: Vec<ManifestFile>,
}

/// One file of a backup.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct ManifestFile {
    /// Relative path, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE) of the content.
    pub crc32: u32,
}

/// Size and CRC-32 of a file, read in blocks.
pub fn checksum(path: &Path) -> Result<(u64, u32), BackupError> {
    let mut file = std::fs::File::open(path).map_err(BackupError::io(path))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(BackupError::io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    Ok((bytes, hasher.finalize()))
}

impl SnapshotManifest {
    /// Writes the manifest into `folder` atomically (temporary file, flush, rename, directory flush).
    pub fn write(&self, folder: &Path) -> Result<(), BackupError> {
        let text = serde_json::to_vec_pretty(self).map_err(|e| BackupError::InvalidConfiguration(e.to_string()))?;
        let temporary = folder.join(format!("{MANIFEST_FILE}.tmp"));
        let target = folder.join(MANIFEST_FILE);
        std::fs::write(&temporary, text).map_err(BackupError::io(&temporary))?;
        std::fs::File::open(&temporary).and_then(|f| f.sync_all()).map_err(BackupError::io(&temporary))?;
        std::fs::rename(&temporary, &target).map_err(BackupError::io(&target))?;
        corvid_storage::sync_dir(folder)?;
        Ok(())
    }

    /// Reads and checks the manifest of `folder` (format and version; not yet the files).
    pub fn read(folder: &Path) -> Result<SnapshotManifest, BackupError> {
        let path = folder.join(MANIFEST_FILE);
        let text = std::fs::read(&path).map_err(BackupError::io(&path))?;
        let damaged = |reason: String| BackupError::Damaged { path: folder.to_owned(), reason };
        let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| damaged(format!("{MANIFEST_FILE} is not JSON: {e}")))?;
        let version = value.get("ManifestVersion").and_then(serde_json::Value::as_u64).unwrap_or(0) as u32;
        if value.get("Format").and_then(serde_json::Value::as_str) != Some(SNAPSHOT_FORMAT) {
            return Err(damaged(format!("{MANIFEST_FILE} is not a {SNAPSHOT_FORMAT} manifest")));
        }
        if version > MANIFEST_VERSION {
            return Err(BackupError::UnsupportedVersion { path: folder.to_owned(), found: version, supported: MANIFEST_VERSION });
        }
        serde_json::from_value(value).map_err(|e| damaged(format!("{MANIFEST_FILE}: {e}")))
    }

    /// Checks every listed file of `folder` (size and checksum); `checked` is told each file's size.
    pub fn verify(&self, folder: &Path, mut checked: impl FnMut(u64)) -> Result<(), BackupError> {
        for file in &self.files {
            let path = folder.join(&file.path);
            if !safe_relative(&file.path) {
                return Err(BackupError::Damaged {
                    path: folder.to_owned(),
                    reason: format!("the manifest names '{}', outside the backup", file.path),
                });
            }
            let (bytes, crc32) = match checksum(&path) {
                Ok(found) => found,
                Err(BackupError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    return Err(BackupError::Damaged { path: folder.to_owned(), reason: format!("{} is missing", file.path) })
                }
                Err(e) => return Err(e),
            };
            if bytes != file.bytes || crc32 != file.crc32 {
                return Err(BackupError::Damaged {
                    path: folder.to_owned(),
                    reason: format!(
                        "{} has {bytes} bytes with CRC-32 {crc32:08x}; the manifest says {} bytes with {:08x}",
                        file.path, file.bytes, file.crc32
                    ),
                });
            }
            checked(bytes);
        }
        Ok(())
    }
}

/// A relative path with no `..`, no root and no empty part.
fn safe_relative(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: Vec<ManifestFile>) -> SnapshotManifest {
        SnapshotManifest {
            format: SNAPSHOT_FORMAT.into(),
            manifest_version: MANIFEST_VERSION,
            corvid_version: "test".into(),
            storage_format: 3,
            database_name: "db".into(),
            database_record: serde_json::json!({}),
            created_at: "2026-01-01T00:00:00.0000000Z".into(),
            last_etag: 7,
            files,
        }
    }

    #[test]
    fn a_manifest_round_trips_and_catches_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"hello").unwrap();
        let (bytes, crc32) = checksum(&dir.path().join("a")).unwrap();
        let written = manifest(vec![ManifestFile { path: "a".into(), bytes, crc32 }]);
        written.write(dir.path()).unwrap();
        let read = SnapshotManifest::read(dir.path()).unwrap();
        assert_eq!(read, written);
        read.verify(dir.path(), |_| {}).unwrap();
        std::fs::write(dir.path().join("a"), b"hellO").unwrap();
        let error = read.verify(dir.path(), |_| {}).unwrap_err().to_string();
        assert!(error.contains("a has 5 bytes"), "{error}");
        std::fs::remove_file(dir.path().join("a")).unwrap();
        assert!(read.verify(dir.path(), |_| {}).unwrap_err().to_string().contains("a is missing"));
    }

    #[test]
    fn paths_outside_the_backup_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bad = manifest(vec![ManifestFile { path: "../x".into(), bytes: 0, crc32: 0 }]);
        assert!(bad.verify(dir.path(), |_| {}).unwrap_err().to_string().contains("outside the backup"));
    }
}
