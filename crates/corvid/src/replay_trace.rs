//! `corvid replay-trace FILE [--commit-every N] [--restart-every M]`: replays an indexing trace recorded by
//! `POST /databases/{db}/admin/indexes/trace` into a fresh index in a temporary directory and prints the
//! entries' digest (equal to the live index's when indexing is correct) and where the time went.

use std::path::PathBuf;
use std::process::ExitCode;

use corvid_engine::indexing::{replay_trace, ReplayOptions};

/// How `corvid replay-trace` is called.
pub const USAGE: &str = "\
usage: corvid replay-trace <file> [--commit-every <N>] [--restart-every <M>]

Replays an indexing trace into a fresh index in a temporary directory and prints the entries' digest
and timings. --commit-every N commits after every N documents and tombstones instead of at the
recorded commit points; --restart-every M closes and reopens the index after every M commits.
Exit status: 0 after a replay, 1 when the trace cannot be replayed, 2 for a usage error.";

fn parse_args(args: &[String]) -> Result<(PathBuf, ReplayOptions), String> {
    let mut file = None;
    let mut options = ReplayOptions::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or_else(|| format!("{name} needs a number"))?;
            value.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| format!("{name}: '{value}' is not a positive number"))
        };
        match arg.as_str() {
            "--commit-every" => options.commit_every = Some(number("--commit-every")?),
            "--restart-every" => options.restart_every = Some(number("--restart-every")?),
            other if other.starts_with("--") => return Err(format!("unknown argument '{other}'")),
            path if file.is_none() => file = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument '{extra}'")),
        }
    }
    Ok((file.ok_or("the trace file is required")?, options))
}

/// Runs `corvid replay-trace` with the arguments after `replay-trace`.
pub fn run(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let (file, options) = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("corvid replay-trace: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match replay_trace(&file, &options) {
        Ok(report) => {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            println!("index: {}", report.index);
            println!("recorded batches: {}", report.recorded_batches);
            println!("replayed: {} documents and tombstones ({} tombstones)", report.documents, report.tombstones);
            println!(
                "commits: {}, restarts: {}{}",
                report.commits,
                report.restarts,
                if report.errored { ", the index errored" } else { "" }
            );
            println!("entries: {}", report.entries);
            println!("digest: {}", report.digest);
            println!(
                "time: {:.1} ms (map {:.1}, reduce {:.1}, commit {:.1}, merge {:.1})",
                ms(report.elapsed),
                ms(report.map),
                ms(report.reduce),
                ms(report.commit),
                ms(report.merge)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("corvid replay-trace: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_parsed() {
        let args: Vec<String> = ["t.trace", "--commit-every", "7", "--restart-every", "2"].iter().map(|s| s.to_string()).collect();
        let (file, options) = parse_args(&args).expect("valid");
        assert_eq!(file, PathBuf::from("t.trace"));
        assert_eq!((options.commit_every, options.restart_every), (Some(7), Some(2)));
        assert!(parse_args(&["--commit-every".to_string(), "0".to_string()]).is_err());
        assert!(parse_args(&[]).is_err());
    }
}
