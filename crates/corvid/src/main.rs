//! `corvid`: the server binary. `corvid serve` (or the RavenDB-style arguments the official launchers pass)
//! starts the server; see README for every setting. `corvid check` checks a stopped server's storage;
//! `corvid export`/`corvid import` move a database to or from a dump file.
//! `corvid backup` and `corvid restore` drive a running server's backup and restore.
//! `corvid replay-trace` replays an indexing trace.

mod allocator;
mod backup_cli;
mod check;
mod data_dir_lock;
mod http_client;
mod ravendb_settings;
mod replay_trace;
mod settings;
mod transfer;

/// mimalloc instead of glibc's malloc: writers, parsers and indexers hand buffers between threads, and
/// glibc serialises those cross-thread frees on arena locks (decision 0009).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;

use tokio::sync::Notify;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("check") => return check::run(&args[1..]),
        Some("export") => return transfer::run(transfer::Direction::Export, &args[1..]),
        Some("import") => return transfer::run(transfer::Direction::Import, &args[1..]),
        Some("backup") => return backup_cli::run_backup(&args[1..]),
        Some("restore") => return backup_cli::run_restore(&args[1..]),
        Some("replay-trace") => return replay_trace::run(&args[1..]),
        _ => {}
    }
    let parsed = match settings::Settings::from_args(&args) {
        Ok(settings::Command::Serve(s)) => s,
        Ok(settings::Command::Help) => {
            println!("{}", settings::USAGE);
            return std::process::ExitCode::SUCCESS;
        }
        Ok(settings::Command::Version) => {
            println!("corvid {}", env!("CARGO_PKG_VERSION"));
            return std::process::ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("corvid: {message}\n\n{}", settings::USAGE);
            return std::process::ExitCode::from(2);
        }
    };
    init_logging(&parsed.log_filter);
    allocator::return_freed_memory_promptly();
    if let Err(e) = corvid_server::logs::sink().configure_files(parsed.logs.clone()) {
        eprintln!("corvid: cannot write log files: {e}");
        return std::process::ExitCode::FAILURE;
    }
    for ignored in &parsed.ignored {
        tracing::info!(setting = %ignored, "ignoring RavenDB setting that Corvid does not use");
    }
    match run(*parsed) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server stopped with an error");
            eprintln!("corvid: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// tracing's lines go through the server's log sink (stderr, log files, `/admin/logs/watch`); the filter
/// sits behind a reload handle so `/admin/logs/configuration` can change the level.
fn init_logging(filter: &str) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let initial = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (filter_layer, reload) = tracing_subscriber::reload::Layer::new(initial);
    let format = tracing_subscriber::fmt::layer().with_writer(|| corvid_server::logs::SinkWriter).with_ansi(false).with_target(false);
    tracing_subscriber::registry().with(filter_layer).with(format).init();
    corvid_server::logs::sink().set_level_control(
        filter,
        Box::new(move |new: &str| {
            let parsed = tracing_subscriber::EnvFilter::try_new(new).map_err(|e| e.to_string())?;
            reload.reload(parsed).map_err(|e| e.to_string())
        }),
    );
}

fn run(settings: settings::Settings) -> std::io::Result<()> {
    // Held until exit: removes an in-memory server's data directory.
    let _temp_dir = match &settings.run_in_memory {
        true => Some(tempfile::Builder::new().prefix("corvid-in-memory-").tempdir()?),
        false => None,
    };
    let mut config = settings.config.clone();
    if let Some(dir) = &_temp_dir {
        config.data_dir = dir.path().to_owned();
    }
    let _data_dir_lock = data_dir_lock::lock(&config.data_dir).map_err(std::io::Error::other)?;
    // Documents nest up to --max-json-depth levels, parsed and written recursively on these threads.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("corvid-http").thread_stack_size(8 << 20).build()?;
    let stop = Arc::new(Notify::new());
    if let Some(pid) = settings.parent_pid {
        watch_parent(pid, stop.clone());
    }
    watch_stdin(stop.clone());
    runtime.block_on(async move {
        let shutdown = {
            let stop = stop.clone();
            async move {
                wait_for_signal(stop).await;
                tracing::info!("shutdown requested");
            }
        };
        corvid_server::serve(config, shutdown).await
    })?;
    // The shutdown deadline has been spent on requests and databases; leftover blocking work is abandoned.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(())
}

async fn wait_for_signal(stop: Arc<Notify>) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
            _ = stop.notified() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::select! {
        _ = ctrl_c => {}
        _ = stop.notified() => {}
    }
}

/// RavenDB's embedded launchers stop the server by writing `shutdown no-confirmation` to its stdin (or
/// `q`). End of input (no terminal, /dev/null) means nothing.
fn watch_stdin(stop: Arc<Notify>) {
    let _ = std::thread::Builder::new().name("stdin-commands".into()).spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let command = line.trim();
                    if command.eq_ignore_ascii_case("shutdown no-confirmation") || command == "q" {
                        tracing::info!(command, "shutdown requested on stdin");
                        stop.notify_one();
                        return;
                    }
                }
            }
        }
    });
}

/// Embedded launchers pass their pid; when that process is gone, shut down instead of lingering.
fn watch_parent(pid: u32, stop: Arc<Notify>) {
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    if !proc_dir.exists() {
        return;
    }
    let _ = std::thread::Builder::new().name("parent-watch".into()).spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if !proc_dir.exists() {
            tracing::info!(pid, "parent process exited; shutting down");
            stop.notify_one();
            return;
        }
    });
}
