//! `corvid export --data-dir`: exports a database of a stopped server straight from its files. The data
//! directory's lock is held meanwhile, so a server cannot start on it halfway through.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use corvid_engine::smuggler::{self, Compression, ExportOptions, ItemTypes, SmugglerResult};
use corvid_engine::{Database, DatabaseCatalog, DatabaseOptions};

use super::progress_line::ProgressLine;
use super::{TransferArgs, FAILED};

type Failure = (u8, String);

/// Writes the dump into the file at `path`, synced, showing progress.
fn export_to(database: &Database, options: &ExportOptions, path: &Path) -> Result<SmugglerResult, String> {
    let file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut line = ProgressLine::start();
    let mut progress = |so_far: &SmugglerResult| {
        line.show("export", so_far.total_items(), so_far.bytes);
        true
    };
    let (result, out) =
        smuggler::export(database, options, BufWriter::with_capacity(256 * 1024, file), &mut progress).map_err(|e| e.to_string())?;
    line.done();
    let file = out.into_inner().map_err(|e| e.to_string())?;
    file.sync_all().map_err(|e| e.to_string())?;
    Ok(result)
}

pub fn export(dir: &Path, args: &TransferArgs) -> Result<String, Failure> {
    let _lock = crate::data_dir_lock::lock(dir).map_err(|e| (FAILED, e.to_string()))?;
    let catalog = DatabaseCatalog::open_read_only(dir)
        .map_err(|e| (FAILED, format!("cannot read the catalog of {}: {e}", dir.display())))?
        .ok_or_else(|| (FAILED, format!("{} has no catalog; is it a Corvid data directory?", dir.display())))?;
    let entry = catalog
        .list()
        .map_err(|e| (FAILED, e.to_string()))?
        .into_iter()
        .find(|e| e.name.eq_ignore_ascii_case(&args.database))
        .ok_or_else(|| (FAILED, format!("there is no database '{}' in {}", args.database, dir.display())))?;
    drop(catalog);
    let database = Database::open(&entry.name, &dir.join(&entry.directory), &DatabaseOptions::default())
        .map_err(|e| (FAILED, format!("cannot open database '{}': {e}", entry.name)))?;
    let mut options = ExportOptions::default();
    if let Some(types) = &args.types {
        options.types = ItemTypes::parse(types).map_err(|e| (FAILED, e))?;
    }
    if args.zstd {
        options.compression = Compression::Zstd;
    }
    let partial = args.file.with_extension("partial");
    let outcome = export_to(&database, &options, &partial);
    database.close();
    match outcome {
        Ok(result) => {
            std::fs::rename(&partial, &args.file).map_err(|e| (FAILED, format!("cannot write {}: {e}", args.file.display())))?;
            let mut summary = format!("exported '{}' to {}: {}", entry.name, args.file.display(), result.summary());
            for message in &result.messages {
                summary.push_str("\n  ");
                summary.push_str(message);
            }
            let _ = std::io::stderr().flush();
            Ok(summary)
        }
        Err(message) => {
            let _ = std::fs::remove_file(&partial);
            Err((FAILED, message))
        }
    }
}
