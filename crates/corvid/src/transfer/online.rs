//! Export and import against a running server, through the same endpoints the clients use.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::http_client::{encode, get, send, ServerUrl};
use super::progress_line::ProgressLine;
use super::{TransferArgs, FAILED, UNREACHABLE, USAGE_ERROR};

type Failure = (u8, String);

/// Bytes copied at a time.
const COPY_BUFFER: usize = 256 * 1024;

fn unreachable(e: io::Error) -> Failure {
    (UNREACHABLE, format!("cannot reach the server: {e}"))
}

fn server_of(args: &TransferArgs) -> Result<ServerUrl, Failure> {
    ServerUrl::parse(args.url.as_deref().unwrap_or_default()).map_err(|e| (USAGE_ERROR, e))
}

/// The error message of an error answer (RavenDB's error JSON), or its text.
fn error_of(status: u16, text: &str) -> String {
    let message = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("Message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| text.trim().chars().take(500).collect());
    format!("the server answered {status}: {message}")
}

fn json_of(server: &ServerUrl, path: &str) -> Result<Value, Failure> {
    let response = get(server, path).map_err(unreachable)?;
    let status = response.status;
    let text = response.text().map_err(unreachable)?;
    if status != 200 {
        return Err((FAILED, error_of(status, &text)));
    }
    serde_json::from_str(&text).map_err(|e| (FAILED, format!("the server's answer to {path} is not JSON: {e}")))
}

fn options_json(args: &TransferArgs) -> Value {
    let mut options = json!({});
    if let Some(types) = &args.types {
        options["OperateOnTypes"] = json!(types);
    }
    if args.zstd {
        options["CompressionAlgorithm"] = json!("Zstd");
    }
    if args.skip_revision_creation {
        options["SkipRevisionCreation"] = json!(true);
    }
    options
}

/// "Documents 10 (+2 attachments), Counters 3" from a SmugglerResult JSON.
fn summary_of(result: &Value) -> String {
    let mut parts = Vec::new();
    for key in [
        "Documents",
        "RevisionDocuments",
        "Tombstones",
        "Indexes",
        "Identities",
        "CompareExchange",
        "Counters",
        "Subscriptions",
        "TimeSeries",
    ] {
        let counts = &result[key];
        let read = counts["ReadCount"].as_u64().unwrap_or(0);
        if read == 0 && !counts["Processed"].as_bool().unwrap_or(false) {
            continue;
        }
        let mut part = format!("{key} {read}");
        if let Some(n) = counts["Attachments"]["ReadCount"].as_u64().filter(|n| *n > 0) {
            part.push_str(&format!(" (+{n} attachments)"));
        }
        if let Some(n) = counts["ErroredCount"].as_u64().filter(|n| *n > 0) {
            part.push_str(&format!(" ({n} errored)"));
        }
        parts.push(part);
    }
    let mut out = if parts.is_empty() { "nothing".to_owned() } else { parts.join(", ") };
    for message in result["Messages"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        out.push_str("\n  ");
        out.push_str(message);
    }
    out
}

/// Polls the operation until it ends; its result, or why it failed.
fn wait_for(server: &ServerUrl, db: &str, id: u64) -> Result<Value, Failure> {
    loop {
        let state = json_of(server, &format!("/databases/{db}/operations/state?id={id}"))?;
        match state["Status"].as_str() {
            Some("Completed") => return Ok(state["Result"].clone()),
            Some("InProgress") => std::thread::sleep(Duration::from_millis(200)),
            _ => {
                let message = state["Result"]["Message"].as_str().unwrap_or("the operation failed").to_owned();
                return Err((FAILED, message));
            }
        }
    }
}

fn next_operation_id(server: &ServerUrl, db: &str) -> Result<u64, Failure> {
    let body = json_of(server, &format!("/databases/{db}/operations/next-operation-id"))?;
    body["Id"].as_u64().ok_or_else(|| (FAILED, "the server gave no operation id".to_owned()))
}

/// Copies the response body into the file at `path`, synced, showing progress.
fn save_body(body: &mut impl Read, path: &Path) -> io::Result<u64> {
    let mut out = io::BufWriter::new(File::create(path)?);
    let mut progress = ProgressLine::start();
    let mut buffer = vec![0u8; COPY_BUFFER];
    let mut total = 0u64;
    loop {
        let n = body.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        out.write_all(&buffer[..n])?;
        total += n as u64;
        progress.show("export", 0, total);
    }
    progress.done();
    out.flush()?;
    out.get_ref().sync_all()?;
    Ok(total)
}

pub fn export(args: &TransferArgs) -> Result<String, Failure> {
    let server = server_of(args)?;
    let db = encode(&args.database);
    let id = next_operation_id(&server, &db)?;
    let body = options_json(args).to_string();
    let path = format!("/databases/{db}/smuggler/export?operationId={id}");
    let mut response =
        send(&server, "POST", &path, Some("application/json"), body.len() as u64, |w| w.write_all(body.as_bytes())).map_err(unreachable)?;
    if response.status != 200 {
        let status = response.status;
        return Err((FAILED, error_of(status, &response.text().unwrap_or_default())));
    }
    // Written beside the target and renamed once whole: a failed export leaves no half file under its name.
    let partial = args.file.with_extension("partial");
    let copied = save_body(&mut response.body, &partial);
    let result = match copied {
        Ok(_) => wait_for(&server, &db, id),
        Err(e) => Err((FAILED, format!("the export was cut off: {e}"))),
    };
    match result {
        Ok(result) => {
            std::fs::rename(&partial, &args.file).map_err(|e| (FAILED, format!("cannot write {}: {e}", args.file.display())))?;
            Ok(format!("exported '{}' to {}: {}", args.database, args.file.display(), summary_of(&result)))
        }
        Err(failure) => {
            let _ = std::fs::remove_file(&partial);
            Err(failure)
        }
    }
}

/// Prints the operation's progress until `stop` is set.
fn watch(server: ServerUrl, db: String, id: u64, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut progress = ProgressLine::start();
        while !stop.load(Ordering::Relaxed) {
            if let Ok(state) = json_of(&server, &format!("/databases/{db}/operations/state?id={id}")) {
                if let Some(processed) = state["Progress"]["Processed"].as_u64() {
                    progress.show("import", processed, 0);
                }
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        progress.done();
    })
}

pub fn import(args: &TransferArgs) -> Result<String, Failure> {
    let server = server_of(args)?;
    let db = encode(&args.database);
    let mut file = File::open(&args.file).map_err(|e| (FAILED, format!("cannot open {}: {e}", args.file.display())))?;
    let size = file.metadata().map_err(|e| (FAILED, e.to_string()))?.len();
    let id = next_operation_id(&server, &db)?;
    let boundary = format!("corvid-{}", std::process::id());
    let options = options_json(args).to_string();
    let preamble = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"importOptions\"\r\nContent-Type: application/json\r\n\r\n{options}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
        file_name(&args.file)
    );
    let epilogue = format!("\r\n--{boundary}--\r\n");
    let length = preamble.len() as u64 + size + epilogue.len() as u64;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(server.clone(), db.clone(), id, stop.clone());
    let path = format!("/databases/{db}/smuggler/import?operationId={id}");
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let sent = send(&server, "POST", &path, Some(&content_type), length, |w| {
        w.write_all(preamble.as_bytes())?;
        io::copy(&mut file, w)?;
        w.write_all(epilogue.as_bytes())
    });
    let outcome = sent.and_then(|response| {
        let status = response.status;
        response.text().map(|text| (status, text))
    });
    stop.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let (status, text) = outcome.map_err(unreachable)?;
    if status != 200 {
        return Err((FAILED, error_of(status, &text)));
    }
    let result: Value = serde_json::from_str(&text).map_err(|e| (FAILED, format!("the import's answer is not JSON: {e}")))?;
    Ok(format!("imported {} into '{}': {}", args.file.display(), args.database, summary_of(&result)))
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().replace('"', "")).unwrap_or_else(|| "dump".into())
}
