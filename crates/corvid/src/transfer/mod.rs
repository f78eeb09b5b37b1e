//! `corvid export` and `corvid import`: move a database to or from a `.ravendbdump` file, against a running
//! server (`--url`, through its smuggler endpoints) or, for export, a stopped server's data directory
//! (`--data-dir`, under the data directory's lock). Progress goes to stderr (one line rewritten on a
//! terminal, a line every few seconds otherwise); the exit status says how it ended.

mod http_client;
mod offline;
mod online;
mod progress_line;

use std::path::PathBuf;
use std::process::ExitCode;

/// How `corvid export` and `corvid import` are called.
pub const USAGE: &str = "\
usage: corvid export --url <http://host:port> --database <name> --file <path> [--types <list>] [--zstd]
       corvid export --data-dir <path> --database <name> --file <path> [--types <list>] [--zstd]
       corvid import --url <http://host:port> --database <name> --file <path> [--types <list>]
                     [--skip-revision-creation]

Exports a database to a RavenDB .ravendbdump file (gzip, or zstd with --zstd) or imports one (gzip, zstd
or plain JSON). --types takes RavenDB's item type names, comma separated (default: the clients' default).
--data-dir exports from a stopped server's data directory (it is locked meanwhile).
Exit status: 0 done, 1 the export or import failed, 2 usage error, 3 the server cannot be reached.";

/// Exit status when the export or import failed.
pub const FAILED: u8 = 1;
/// Exit status for a usage error.
pub const USAGE_ERROR: u8 = 2;
/// Exit status when the server cannot be reached.
pub const UNREACHABLE: u8 = 3;

/// Export or import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `corvid export`.
    Export,
    /// `corvid import`.
    Import,
}

/// The parsed arguments.
#[derive(Debug, Default)]
pub struct TransferArgs {
    pub url: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub database: String,
    pub file: PathBuf,
    pub types: Option<String>,
    pub zstd: bool,
    pub skip_revision_creation: bool,
}

fn parse(direction: Direction, args: &[String]) -> Result<TransferArgs, String> {
    let mut out = TransferArgs::default();
    let mut database = None;
    let mut file = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next().cloned()).ok_or_else(|| format!("{key} needs a value"));
        match key {
            "--url" => out.url = Some(value()?),
            "--data-dir" => out.data_dir = Some(PathBuf::from(value()?)),
            "--database" => database = Some(value()?),
            "--file" => file = Some(PathBuf::from(value()?)),
            "--types" => out.types = Some(value()?),
            "--zstd" if direction == Direction::Export => out.zstd = true,
            "--skip-revision-creation" if direction == Direction::Import => out.skip_revision_creation = true,
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    out.database = database.ok_or("--database is required")?;
    out.file = file.ok_or("--file is required")?;
    match (&out.url, &out.data_dir, direction) {
        (Some(_), Some(_), _) => Err("give --url or --data-dir, not both".into()),
        (None, None, _) => Err("--url (a running server) or --data-dir (a stopped one) is required".into()),
        (None, Some(_), Direction::Import) => Err("import needs a running server (--url)".into()),
        _ => Ok(out),
    }
}

/// Runs `corvid export` or `corvid import` with the arguments after the command.
pub fn run(direction: Direction, args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let parsed = match parse(direction, args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("corvid: {message}\n\n{USAGE}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    if let Some(types) = &parsed.types {
        if let Err(e) = corvid_engine::smuggler::ItemTypes::parse(types) {
            eprintln!("corvid: --types: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    }
    let outcome = match (direction, &parsed.data_dir) {
        (Direction::Export, Some(dir)) => offline::export(dir, &parsed),
        (Direction::Export, None) => online::export(&parsed),
        (Direction::Import, _) => online::import(&parsed),
    };
    match outcome {
        Ok(summary) => {
            eprintln!("{summary}");
            ExitCode::SUCCESS
        }
        Err((code, message)) => {
            eprintln!("corvid: {message}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_are_checked() {
        let ok = parse(Direction::Export, &args(&["--url", "http://h:1", "--database=db", "--file", "f", "--zstd"])).unwrap();
        assert!(ok.zstd && ok.database == "db");
        assert!(parse(Direction::Import, &args(&["--data-dir", "d", "--database", "db", "--file", "f"])).is_err());
        assert!(parse(Direction::Import, &args(&["--url", "http://h:1", "--database", "db", "--file", "f", "--zstd"])).is_err());
        assert!(parse(Direction::Export, &args(&["--url", "http://h:1", "--file", "f"])).unwrap_err().contains("--database"));
    }
}
