//! `corvid backup` and `corvid restore`: a snapshot backup or a restore through a running server, for people
//! and scripts. The folder is a path on the server's machine. Each prints progress lines while the server's
//! operation runs and ends with an exit status scripts can trust:
//! 0 done, 1 the server refused or the operation failed, 2 usage error, 3 the server could not be reached.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::http_client::ServerUrl;

/// How `corvid backup` is called.
pub const BACKUP_USAGE: &str = "\
usage: corvid backup --url <http://host:port> --database <name> --folder <path on the server> [--type Snapshot|Backup]

Takes a backup of a database of a running server into a new folder inside <path> (Snapshot: Corvid's
consistent copy, taken while writes go on; Backup: a full dump in RavenDB's format). Prints progress, then
the folder written.
Exit status: 0 done, 1 refused or failed, 2 usage error, 3 server unreachable.";

/// How `corvid restore` is called.
pub const RESTORE_USAGE: &str = "\
usage: corvid restore --url <http://host:port> --folder <path on the server> --database <new name>

Restores a Corvid snapshot backup (its folder, or a destination folder: its newest complete snapshot) or a
folder of dump backups (the last full one and the incrementals after it) into a new database of a running
server. Prints progress, then the database restored.
Exit status: 0 done, 1 refused or failed, 2 usage error, 3 server unreachable.";

const FAILED: u8 = 1;
const USAGE_ERROR: u8 = 2;
const UNREACHABLE: u8 = 3;

/// The `--name value` / `--name=value` options of a command.
fn options(args: &[String], known: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut found = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, value) = match arg.split_once('=') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => (arg.clone(), args.next().ok_or_else(|| format!("{arg} needs a value"))?.clone()),
        };
        let bare = name.strip_prefix("--").filter(|n| known.contains(n)).ok_or_else(|| format!("unknown argument '{name}'"))?;
        found.push((bare.to_owned(), value));
    }
    Ok(found)
}

fn required(found: &[(String, String)], name: &str) -> Result<String, String> {
    found.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone()).ok_or_else(|| format!("--{name} is required"))
}

/// A failure and its exit status.
struct Failure(u8, String);

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_048_576.0)
}

/// Sends a request and parses the JSON answer; an error status becomes the server's message.
fn call(server: &ServerUrl, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
    let (status, text) = server.request(method, path, body).map_err(|e| Failure(UNREACHABLE, e.to_string()))?;
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let message = value.get("Message").and_then(Value::as_str).map_or_else(|| text.trim().to_owned(), str::to_owned);
        return Err(Failure(FAILED, format!("the server answered {status}: {message}")));
    }
    Ok(value)
}

/// Polls an operation's state until it ends, printing progress; returns its result.
fn wait(server: &ServerUrl, state_path: &str, what: &str) -> Result<Value, Failure> {
    let started = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let state = call(server, "GET", state_path, None)?;
        match state.get("Status").and_then(Value::as_str) {
            Some("Completed") => return Ok(state.get("Result").cloned().unwrap_or(Value::Null)),
            Some("Faulted") => {
                let message = state.pointer("/Result/Message").and_then(Value::as_str).unwrap_or("no message");
                return Err(Failure(FAILED, format!("{what} failed: {message}")));
            }
            Some("Canceled") => return Err(Failure(FAILED, format!("{what} was canceled"))),
            _ => {}
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            let processed = state.pointer("/Progress/Processed").and_then(Value::as_u64).unwrap_or(0);
            let total = state.pointer("/Progress/Total").and_then(Value::as_u64).filter(|t| *t > 0);
            let rate = processed as f64 / started.elapsed().as_secs_f64().max(0.001) / 1_048_576.0;
            match total {
                Some(total) => println!("{what}: {} of {} ({rate:.1} MB/s)", megabytes(processed), megabytes(total)),
                None => println!("{what}: {} ({rate:.1} MB/s)", megabytes(processed)),
            }
            last_print = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn finish(command: &str, usage: &str, outcome: Result<Result<String, Failure>, String>) -> ExitCode {
    match outcome {
        Ok(Ok(done)) => {
            println!("{done}");
            ExitCode::SUCCESS
        }
        Ok(Err(Failure(code, message))) => {
            eprintln!("corvid {command}: {message}");
            ExitCode::from(code)
        }
        Err(message) => {
            eprintln!("corvid {command}: {message}\n\n{usage}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

fn help(args: &[String]) -> bool {
    args.iter().any(|a| a == "--help" || a == "-h")
}

/// Runs `corvid backup` with the arguments after `backup`.
pub fn run_backup(args: &[String]) -> ExitCode {
    if help(args) {
        println!("{BACKUP_USAGE}");
        return ExitCode::SUCCESS;
    }
    let outcome = (|| {
        let found = options(args, &["url", "database", "folder", "type"])?;
        let server = ServerUrl::parse(&required(&found, "url")?).map_err(|e| e.to_string())?;
        let database = required(&found, "database")?;
        let folder = required(&found, "folder")?;
        let kind = required(&found, "type").unwrap_or_else(|_| "Snapshot".into());
        Ok((|| {
            let body = json!({"BackupType": kind, "LocalSettings": {"Disabled": false, "FolderPath": folder}});
            let started = call(&server, "POST", &format!("/databases/{}/admin/backup", encode(&database)), Some(&body))?;
            let id = started
                .get("OperationId")
                .and_then(Value::as_u64)
                .ok_or_else(|| Failure(FAILED, "the server started no operation".into()))?;
            println!("backup: started (operation {id})");
            let result = wait(&server, &format!("/databases/{}/operations/state?id={id}", encode(&database)), "backup")?;
            let written = result.pointer("/LocalBackup/BackupDirectory").and_then(Value::as_str).unwrap_or("?");
            let files = result.get("Files").and_then(Value::as_u64).unwrap_or(0);
            let bytes = result.get("Bytes").and_then(Value::as_u64).unwrap_or(0);
            let ms = result.get("DurationInMs").and_then(Value::as_u64).unwrap_or(0);
            Ok(format!("backup: done: {written} ({files} files, {}) in {:.1} s", megabytes(bytes), ms as f64 / 1000.0))
        })())
    })();
    finish("backup", BACKUP_USAGE, outcome)
}

/// Runs `corvid restore` with the arguments after `restore`.
pub fn run_restore(args: &[String]) -> ExitCode {
    if help(args) {
        println!("{RESTORE_USAGE}");
        return ExitCode::SUCCESS;
    }
    let outcome = (|| {
        let found = options(args, &["url", "database", "folder"])?;
        let server = ServerUrl::parse(&required(&found, "url")?).map_err(|e| e.to_string())?;
        let database = required(&found, "database")?;
        let folder = required(&found, "folder")?;
        Ok((|| {
            let body = json!({"DatabaseName": database, "BackupLocation": folder, "Type": "Local"});
            let started = call(&server, "POST", "/admin/restore/database", Some(&body))?;
            let id = started
                .get("OperationId")
                .and_then(Value::as_u64)
                .ok_or_else(|| Failure(FAILED, "the server started no operation".into()))?;
            println!("restore: started (operation {id})");
            let result = wait(&server, &format!("/operations/state?id={id}"), "restore")?;
            let files = result
                .pointer("/SnapshotRestore/ReadCount")
                .and_then(Value::as_u64)
                .filter(|n| *n > 0)
                .or_else(|| result.get("Files").and_then(Value::as_u64))
                .unwrap_or(0);
            Ok(format!("restore: done: database {database} ({files} files)"))
        })())
    })();
    finish("restore", RESTORE_USAGE, outcome)
}

/// Percent-encodes a path segment (database names are letters, digits, `_`, `-` and `.`; anything else is
/// encoded so the server's own check answers).
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.') { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_in_both_forms() {
        let args: Vec<String> = ["--url", "http://x:1", "--database=db"].iter().map(|s| s.to_string()).collect();
        let found = options(&args, &["url", "database"]).unwrap();
        assert_eq!(required(&found, "database").unwrap(), "db");
        assert!(required(&found, "folder").is_err());
        assert!(options(&["--nope".into(), "1".into()], &["url"]).is_err());
        assert!(options(&["--url".into()], &["url"]).is_err());
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }
}
