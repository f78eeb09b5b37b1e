//! `corvid check --data-dir DIR`: checks every database of a stopped server against the storage layout's
//! invariants (docs/storage-format.md), without writing to them. Prints each violation; the exit status says
//! whether any was found.

use std::path::PathBuf;
use std::process::ExitCode;

use corvid_engine::{check_closed_database, DatabaseCatalog};

/// How `corvid check` is called.
pub const USAGE: &str = "\
usage: corvid check --data-dir <path>

Checks every database of a stopped server against the storage invariants, read-only.
Exit status: 0 when every database is sound, 1 when a violation is found or a database cannot be read,
2 for a usage error or a directory without a catalog.";

/// Exit status when a violation is found or a database cannot be read.
const VIOLATIONS: u8 = 1;
/// Exit status for a usage error or a directory that is no data directory.
const UNUSABLE: u8 = 2;

fn data_dir(args: &[String]) -> Result<PathBuf, String> {
    let mut dir = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if let Some(value) = arg.strip_prefix("--data-dir=") {
            dir = Some(PathBuf::from(value));
        } else if arg == "--data-dir" {
            dir = Some(PathBuf::from(args.next().ok_or("--data-dir needs a path")?));
        } else {
            return Err(format!("unknown argument '{arg}'"));
        }
    }
    dir.ok_or_else(|| "--data-dir is required".to_owned())
}

/// Runs `corvid check` with the arguments after `check`.
pub fn run(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let dir = match data_dir(args) {
        Ok(dir) => dir,
        Err(message) => {
            eprintln!("corvid check: {message}\n\n{USAGE}");
            return ExitCode::from(UNUSABLE);
        }
    };
    // A running server's files change under the check (and its journal is not replayed yet): refuse.
    let _lock = match dir.is_dir().then(|| crate::data_dir_lock::lock(&dir)).transpose() {
        Ok(lock) => lock,
        Err(e) => {
            eprintln!("corvid check: {e}");
            return ExitCode::from(UNUSABLE);
        }
    };
    let entries = match DatabaseCatalog::open_read_only(&dir).and_then(|catalog| catalog.map(|c| c.list()).transpose()) {
        Ok(Some(entries)) => entries,
        Ok(None) => {
            eprintln!("corvid check: {} has no catalog; is it a Corvid data directory?", dir.display());
            return ExitCode::from(UNUSABLE);
        }
        Err(e) => {
            eprintln!("corvid check: cannot read the catalog of {}: {e}", dir.display());
            return ExitCode::from(VIOLATIONS);
        }
    };
    let mut failed = 0;
    for entry in &entries {
        match check_closed_database(&dir.join(&entry.directory)) {
            Ok(None) => println!("{}: not created yet (never opened)", entry.name),
            Ok(Some(report)) if report.is_sound() => println!(
                "{}: sound ({} documents, {} tombstones, {} attachments, {} counters, {} time-series segments)",
                entry.name, report.documents, report.tombstones, report.attachments, report.counters, report.time_series_segments
            ),
            Ok(Some(report)) => {
                failed += 1;
                println!("{}: {} violation(s)", entry.name, report.violations.len());
                for violation in &report.violations {
                    println!("  {violation}");
                }
            }
            Err(e) => {
                failed += 1;
                println!("{}: cannot be read: {e}", entry.name);
            }
        }
    }
    println!("{} database(s) checked, {failed} with violations", entries.len());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(VIOLATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_data_directory_is_required_and_nothing_else_accepted() {
        assert_eq!(data_dir(&args(&["--data-dir", "/d"])).unwrap(), PathBuf::from("/d"));
        assert_eq!(data_dir(&args(&["--data-dir=/e"])).unwrap(), PathBuf::from("/e"));
        assert!(data_dir(&args(&[])).is_err());
        assert!(data_dir(&args(&["--data-dir"])).is_err());
        assert!(data_dir(&args(&["--data-dir", "/d", "--fix"])).is_err());
    }
}
