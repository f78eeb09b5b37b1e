//! Importing a folder of dumps (RavenDB's `GET /databases/{db}/admin/smuggler/import-dir?dir=`): every
//! `.ravendbdump` / `.dump`, full and incremental backup file directly in the folder, imported in order (by
//! name without extension, a full backup before an incremental of the same name, as a restore orders a
//! chain). Backup files bring their tombstones, so deletes between backups are replayed; as the clients'
//! `import_incremental` does, indexes and subscriptions come from the last file only, so an earlier file
//! cannot bring back an index the later ones dropped.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::dump_chain::{kind_of, stem};
use crate::smuggler::{self, ImportOptions, ItemType, SmugglerResult};
use crate::{Database, EngineError};

/// Extensions of plain dumps (RavenDB's export, and its older import-dir's `*.dump`).
const DUMP_EXTENSIONS: &[&str] = &[".ravendbdump", ".dump"];

/// The files imported from `folder`, in order: (path, is a backup file).
pub fn files_to_import(folder: &Path) -> Result<Vec<(PathBuf, bool)>, EngineError> {
    let listing = std::fs::read_dir(folder)
        .map_err(|e| EngineError::bad_request(format!("The folder '{}' cannot be read: {e}", folder.display())))?;
    let mut files = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| EngineError::Internal(format!("listing '{}': {e}", folder.display())))?;
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        // A full backup and a plain dump both start a chain; an incremental one follows them.
        let rank = match kind_of(&name) {
            Some(true) => 0,
            Some(false) => 1,
            None if DUMP_EXTENSIONS.iter().any(|e| name.to_ascii_lowercase().ends_with(e)) => 0,
            None => continue,
        };
        files.push((name, rank));
    }
    files.sort_by(|(a, a_rank), (b, b_rank)| stem(a).cmp(stem(b)).then(a_rank.cmp(b_rank)).then(a.cmp(b)));
    Ok(files.into_iter().map(|(name, _)| (folder.join(&name), kind_of(&name).is_some())).collect())
}

/// Imports every dump in `folder` into `db` with `options`; `progress` hears each file's name and counts
/// (false stops the import). Returns the counts of all files together.
pub fn import_directory(
    db: &Database,
    folder: &Path,
    options: &ImportOptions,
    progress: &mut dyn FnMut(&str, &SmugglerResult) -> bool,
) -> Result<SmugglerResult, EngineError> {
    let files = files_to_import(folder)?;
    if files.is_empty() {
        return Err(EngineError::bad_request(format!(
            "The folder '{}' holds no .ravendbdump, .dump or backup file to import",
            folder.display()
        )));
    }
    let mut total = SmugglerResult::default();
    for (i, (path, backup)) in files.iter().enumerate() {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut file_options = options.clone();
        if *backup {
            // Replayed as a restore replays a chain: the database ends as the source was at the last file.
            file_options.types = file_options.types.with(ItemType::Tombstones);
            file_options.replay = true;
            file_options.skip_revision_creation = true;
        }
        if i + 1 < files.len() {
            file_options.types = file_options.types.without(ItemType::Indexes).without(ItemType::Subscriptions);
        }
        let file = File::open(path).map_err(|e| EngineError::bad_request(format!("'{}' cannot be opened: {e}", path.display())))?;
        let result = smuggler::import(db, &file_options, file, &mut |so_far| progress(&name, so_far)).map_err(|e| match e {
            EngineError::BadRequest(message) => EngineError::bad_request(format!("Importing '{name}': {message}")),
            other => other,
        })?;
        total.absorb(&name, result);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_and_backups_are_imported_in_chain_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "2026-01-02-00-00-00.ravendb-incremental-backup",
            "2026-01-01-00-00-00.ravendb-full-backup",
            "2026-01-01-00-00-00.ravendb-incremental-backup",
            "2026-01-03-00-00-00.ravendb-incremental-backup.in-progress",
            "a.ravendbdump",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names: Vec<(String, bool)> = files_to_import(dir.path())
            .unwrap()
            .into_iter()
            .map(|(p, backup)| (p.file_name().unwrap().to_string_lossy().into_owned(), backup))
            .collect();
        assert_eq!(
            names,
            [
                ("2026-01-01-00-00-00.ravendb-full-backup".to_owned(), true),
                ("2026-01-01-00-00-00.ravendb-incremental-backup".to_owned(), true),
                ("2026-01-02-00-00-00.ravendb-incremental-backup".to_owned(), true),
                ("a.ravendbdump".to_owned(), false),
            ]
        );
        assert!(files_to_import(&dir.path().join("missing")).is_err());
    }
}
