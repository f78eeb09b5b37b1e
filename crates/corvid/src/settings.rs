//! Settings from (lowest to highest precedence) defaults, RavenDB's `settings.json`, a TOML file, `RAVEN_*`
//! then `CORVID_*` environment variables, and command-line arguments (Corvid's `--flags` and RavenDB's
//! `--Key=value` alike, later ones winning). RavenDB's names are translated in `ravendb_settings`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use corvid_server::logs::LogFileSettings;
use corvid_server::ServerConfig;
use corvid_types::io_metrics::SlowIoThreshold;
use serde::Deserialize;

use crate::ravendb_settings::{self, Translation};

pub const USAGE: &str = "\
usage: corvid serve [options]
       corvid check --data-dir <path>    check a stopped server's storage (corvid check --help)
       corvid replay-trace <file>        replay an indexing trace (corvid replay-trace --help)

options (each also as CORVID_<NAME> environment variable, or a key in the TOML file):
  --url <http://host:port>          listen address; port 0 picks a free port   [http://127.0.0.1:8080]
  --public-url <http://host:port>   the URL clients are told to use (topology)  [the listen address]
  --tcp-url <tcp://host:port>       TCP listener (data subscriptions); port 0   [listen host, port 0]
                                    picks a free port
  --data-dir <path>                 where databases are stored                  [./corvid-data]
  --config <file.toml>              read settings from a TOML file (CORVID_CONFIG)
  --run-in-memory                   keep data in a temporary directory removed at exit
  --max-concurrent-requests <n>     requests served at once; beyond: 503 busy  [1024]
  --max-body-bytes <n>              largest request body accepted              [67108864]
  --max-attachment-bytes <n>        largest attachment accepted (streamed)     [4294967296]
  --database-load-timeout-ms <n>    wait for a database to open before 503     [30000]
  --max-idle-time-sec <n>           close a database idle this long (0: never) [900]
  --shutdown-timeout-ms <n>         deadline for the whole shutdown: open      [30000]
                                    requests get half, databases the rest
  --request-header-timeout-ms <n>   headers must arrive within; also the idle  [30000]
                                    keep-alive limit (0: none)
  --request-body-timeout-ms <n>     a body waited for this long without        [30000]
                                    reaching the minimum rate gets 408 (0: none)
  --request-body-min-rate <n>       minimum body rate, bytes per second        [240]
  --write-queue-capacity <n>        queued writes per database before 503      [16384]
  --map-size-bytes <n>              LMDB map size per database to start with   [68719476736]
                                    (virtual; doubles as data grows, to 1 TiB)
  --disk-reserve-bytes <n>          file kept per database so deletes work on  [4194304]
                                    a full disk (0: none)
  --slow-io-threshold-ms <n>        log and notify disk operations this slow   [500]
                                    (0: never)
  --log-requests <true|false>       one log line per request                   [true]
  --http-response-compression <true|false>  compress responses (gzip, br,   [true]
                                    zstd, deflate) when the client accepts it
  --max-json-depth <n>              deepest nesting of a document (1-1024)     [256]
  --max-concurrent-queries <n>      queries run at once; more wait in a queue  [64]
  --memory-budget-mb <n>            memory large bodies, queries and streams    [half of RAM]
                                    may hold; more wait, then 503 (0: none)
  --query-queue-timeout-ms <n>      a queued query gets 503 after this long    [30000]
  --log-requests-slower-than-ms <n> log only requests taking at least this     [0]
  --log <filter>                    log filter, e.g. info or debug             [info]
  --logs-path <dir>                 also write the log to files in <dir> (Logs.Path)  [none]
  --logs-retention-size-mb <n>      keep the log files under n MiB (Logs.RetentionSizeInMb)  [1024]
  --logs-retention-time-hours <n>   remove log files older than n hours (Logs.RetentionTimeInHrs)  [72]
  --logs-max-file-size-mb <n>       start a new log file past n MiB (Logs.MaxFileSizeInMb)  [128]
  --logs-json <true|false>          log files as JSON lines {Time, Level, Message}  [false]
  --auto-index-idle-after-ms <n>    unqueried automatic index becomes idle     [1800000]
  --auto-index-delete-after-ms <n>  idle automatic index is deleted after      [259200000]
  --debug-slow-open <prefix:ms>     testing aid: databases named <prefix>... take <ms> to open

security (RavenDB's names in brackets; see README, A secured server):
  --certificate-path <file>         server certificate: PFX, or PEM with the key [Security.Certificate.Path]
                                    (set: HTTPS and TLS only, clients authenticate with certificates)
  --certificate-password <text>     the PFX's password                   [Security.Certificate.Password]
  --certificate-key-path <file>     PEM key when not in the certificate file [Security.Certificate.Key.Path]
  --well-known-admin-certificates <thumbprints>  cluster admins without     [Security.WellKnownCertificates.Admin]
                                    registration, separated by ; or ,
  --unsecured-access-allowed <v>    without a certificate, clients served:   [Security.UnsecuredAccessAllowed]
                                    None, or Local, PrivateNetwork, PublicNetwork (comma-separated) [Local]
  --audit-log-folder <dir>          one line per authenticated connection    [Security.AuditLog.FolderPath]
                                    and administrative action

RavenDB's conventions work too: --Key=value or --Key value arguments (--ServerUrl, --PublicServerUrl,
--DataDir, --RunInMemory, --Logs.Mode, --Logs.MinLevel, --Http.UseResponseCompression, ...), RAVEN_Key_Name
environment variables (RAVEN_ServerUrl, RAVEN_Setup_Mode), and its settings.json (--config-path <file>, else
settings.json in the working directory, else beside the binary). Precedence, highest first: arguments,
CORVID_* then RAVEN_* variables, the TOML file, settings.json, defaults. A RavenDB setting Corvid does not
use is logged once; a bad value of a known one stops start-up.";

/// Every setting name accepted from the environment (as `CORVID_<NAME>`) and as a flag.
const SETTING_NAMES: &[&str] = &[
    "url",
    "public_url",
    "tcp_url",
    "data_dir",
    "run_in_memory",
    "max_concurrent_requests",
    "max_body_bytes",
    "max_attachment_bytes",
    "database_load_timeout_ms",
    "max_idle_time_sec",
    "shutdown_timeout_ms",
    "request_header_timeout_ms",
    "request_body_timeout_ms",
    "request_body_min_rate",
    "log_requests_slower_than_ms",
    "write_queue_capacity",
    "map_size_bytes",
    "disk_reserve_bytes",
    "slow_io_threshold_ms",
    "log_requests",
    "http_response_compression",
    "max_json_depth",
    "max_concurrent_queries",
    "memory_budget_mb",
    "query_queue_timeout_ms",
    "log",
    "debug_slow_open",
    "auto_index_idle_after_ms",
    "auto_index_delete_after_ms",
    "logs_path",
    "logs_retention_size_mb",
    "logs_retention_time_hours",
    "logs_max_file_size_mb",
    "logs_json",
    "certificate_path",
    "certificate_password",
    "certificate_key_path",
    "well_known_admin_certificates",
    "unsecured_access_allowed",
    "audit_log_folder",
];

pub enum Command {
    Serve(Box<Settings>),
    Help,
    Version,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub config: ServerConfig,
    pub run_in_memory: bool,
    pub parent_pid: Option<u32>,
    pub log_filter: String,
    /// Log files and their retention (none by default: the log goes to stderr).
    pub logs: LogFileSettings,
    pub ignored: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    url: Option<String>,
    public_url: Option<String>,
    tcp_url: Option<String>,
    data_dir: Option<PathBuf>,
    run_in_memory: Option<bool>,
    max_concurrent_requests: Option<usize>,
    max_body_bytes: Option<usize>,
    max_attachment_bytes: Option<u64>,
    database_load_timeout_ms: Option<u64>,
    max_idle_time_sec: Option<u64>,
    shutdown_timeout_ms: Option<u64>,
    request_header_timeout_ms: Option<u64>,
    request_body_timeout_ms: Option<u64>,
    request_body_min_rate: Option<u64>,
    log_requests_slower_than_ms: Option<u64>,
    write_queue_capacity: Option<usize>,
    map_size_bytes: Option<usize>,
    disk_reserve_bytes: Option<u64>,
    slow_io_threshold_ms: Option<u64>,
    log_requests: Option<bool>,
    http_response_compression: Option<bool>,
    max_json_depth: Option<usize>,
    max_concurrent_queries: Option<usize>,
    memory_budget_mb: Option<u64>,
    query_queue_timeout_ms: Option<u64>,
    log: Option<String>,
    auto_index_idle_after_ms: Option<u64>,
    auto_index_delete_after_ms: Option<u64>,
    logs_path: Option<PathBuf>,
    logs_retention_size_mb: Option<u64>,
    logs_retention_time_hours: Option<u64>,
    logs_max_file_size_mb: Option<u64>,
    logs_json: Option<bool>,
    certificate_path: Option<String>,
    certificate_password: Option<String>,
    certificate_key_path: Option<String>,
    well_known_admin_certificates: Option<String>,
    unsecured_access_allowed: Option<String>,
    audit_log_folder: Option<String>,
}

fn parse<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value.trim().parse().map_err(|_| format!("invalid value '{value}' for {name}"))
}

fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(format!("invalid value '{value}' for {name} (true or false)")),
    }
}

impl Settings {
    fn defaults() -> Settings {
        Settings {
            config: ServerConfig::default(),
            run_in_memory: false,
            parent_pid: None,
            log_filter: "info".into(),
            logs: LogFileSettings::default(),
            ignored: Vec::new(),
        }
    }

    /// Applies one named setting (`name` in snake_case) from any source.
    fn apply(&mut self, name: &str, value: &str) -> Result<(), String> {
        let c = &mut self.config;
        match name {
            "url" => c.url = http_url(name, value)?,
            "public_url" => c.public_server_url = Some(http_url(name, value)?),
            "tcp_url" => c.tcp_url = Some(tcp_url(name, value)?),
            "data_dir" => c.data_dir = PathBuf::from(value),
            "run_in_memory" => self.run_in_memory = parse_bool(name, value)?,
            "max_concurrent_requests" => c.max_concurrent_requests = parse::<usize>(name, value)?.max(1),
            "max_body_bytes" => c.max_body_bytes = parse(name, value)?,
            "max_attachment_bytes" => c.max_attachment_bytes = parse(name, value)?,
            "database_load_timeout_ms" => c.database_load_timeout = Duration::from_millis(parse(name, value)?),
            "max_idle_time_sec" => c.max_idle_time = Duration::from_secs(parse(name, value)?),
            "shutdown_timeout_ms" => c.shutdown_timeout = Duration::from_millis(parse(name, value)?),
            "request_header_timeout_ms" => c.header_read_timeout = Duration::from_millis(parse(name, value)?),
            "request_body_timeout_ms" => c.body_rate.window = Duration::from_millis(parse(name, value)?),
            "request_body_min_rate" => c.body_rate.min_bytes_per_second = parse(name, value)?,
            "log_requests_slower_than_ms" => c.log_requests_slower_than = Duration::from_millis(parse(name, value)?),
            "write_queue_capacity" => c.database.write_queue_capacity = parse::<usize>(name, value)?.max(1),
            "map_size_bytes" => c.database.store.map_size = parse(name, value)?,
            "disk_reserve_bytes" => c.database.store.disk_reserve_bytes = parse(name, value)?,
            "slow_io_threshold_ms" => c.database.store.slow_io_threshold = SlowIoThreshold::new(Duration::from_millis(parse(name, value)?)),
            "log_requests" => c.log_requests = parse_bool(name, value)?,
            "http_response_compression" => c.response_compression = parse_bool(name, value)?,
            "max_concurrent_queries" => c.max_concurrent_queries = parse::<usize>(name, value)?.max(1),
            "memory_budget_mb" => c.memory_budget_bytes = parse::<u64>(name, value)?.saturating_mul(1 << 20),
            "query_queue_timeout_ms" => c.query_queue_timeout = Duration::from_millis(parse(name, value)?),
            "max_json_depth" => {
                let max = corvid_types::json::MAX_CONFIGURABLE_DEPTH;
                c.max_json_depth = parse(name, value)?;
                if !(1..=max).contains(&c.max_json_depth) {
                    return Err(format!("{name} must be between 1 and {max}"));
                }
            }
            "auto_index_idle_after_ms" => c.database.auto_index_idle_after = Duration::from_millis(parse(name, value)?),
            "auto_index_delete_after_ms" => c.database.auto_index_delete_after = Duration::from_millis(parse(name, value)?),
            "log" => self.log_filter = value.to_owned(),
            "logs_path" => self.logs.path = Some(PathBuf::from(value)),
            "logs_retention_size_mb" => self.logs.retention_bytes = parse::<u64>(name, value)?.saturating_mul(1 << 20),
            "logs_retention_time_hours" => self.logs.retention_time = Duration::from_secs(parse::<u64>(name, value)?.saturating_mul(3600)),
            "logs_max_file_size_mb" => self.logs.max_file_bytes = parse::<u64>(name, value)?.max(1).saturating_mul(1 << 20),
            "logs_json" => self.logs.json = parse_bool(name, value)?,
            "certificate_path" => c.security.certificate.get_or_insert_with(Default::default).path = PathBuf::from(value.trim()),
            "certificate_password" => c.security.certificate.get_or_insert_with(Default::default).password = Some(value.to_owned()),
            "certificate_key_path" => {
                c.security.certificate.get_or_insert_with(Default::default).key_path = Some(PathBuf::from(value.trim()))
            }
            "well_known_admin_certificates" => {
                c.security.well_known_admins = value.split([';', ',']).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()
            }
            "unsecured_access_allowed" => {
                c.security.unsecured_access = corvid_server::UnsecuredAccess::parse(value).map_err(|e| format!("{name}: {e}"))?
            }
            "audit_log_folder" => c.security.audit_log_dir = Some(PathBuf::from(value.trim())),
            "debug_slow_open" => {
                let (prefix, ms) = value.rsplit_once(':').ok_or_else(|| format!("{name} must be <database-name-prefix>:<milliseconds>"))?;
                c.slow_open = Some((prefix.to_owned(), Duration::from_millis(parse(name, ms)?)));
            }
            _ => return Err(format!("unknown setting '{name}'")),
        }
        Ok(())
    }

    fn apply_file(&mut self, path: &str) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {path}: {e}"))?;
        let file: FileSettings = toml::from_str(&text).map_err(|e| format!("config file {path}: {e}"))?;
        let pairs: Vec<(&str, Option<String>)> = vec![
            ("url", file.url),
            ("public_url", file.public_url),
            ("tcp_url", file.tcp_url),
            ("data_dir", file.data_dir.map(|p| p.display().to_string())),
            ("run_in_memory", file.run_in_memory.map(|v| v.to_string())),
            ("max_concurrent_requests", file.max_concurrent_requests.map(|v| v.to_string())),
            ("max_body_bytes", file.max_body_bytes.map(|v| v.to_string())),
            ("max_attachment_bytes", file.max_attachment_bytes.map(|v| v.to_string())),
            ("database_load_timeout_ms", file.database_load_timeout_ms.map(|v| v.to_string())),
            ("max_idle_time_sec", file.max_idle_time_sec.map(|v| v.to_string())),
            ("shutdown_timeout_ms", file.shutdown_timeout_ms.map(|v| v.to_string())),
            ("request_header_timeout_ms", file.request_header_timeout_ms.map(|v| v.to_string())),
            ("request_body_timeout_ms", file.request_body_timeout_ms.map(|v| v.to_string())),
            ("request_body_min_rate", file.request_body_min_rate.map(|v| v.to_string())),
            ("log_requests_slower_than_ms", file.log_requests_slower_than_ms.map(|v| v.to_string())),
            ("write_queue_capacity", file.write_queue_capacity.map(|v| v.to_string())),
            ("map_size_bytes", file.map_size_bytes.map(|v| v.to_string())),
            ("disk_reserve_bytes", file.disk_reserve_bytes.map(|v| v.to_string())),
            ("slow_io_threshold_ms", file.slow_io_threshold_ms.map(|v| v.to_string())),
            ("log_requests", file.log_requests.map(|v| v.to_string())),
            ("http_response_compression", file.http_response_compression.map(|v| v.to_string())),
            ("max_json_depth", file.max_json_depth.map(|v| v.to_string())),
            ("max_concurrent_queries", file.max_concurrent_queries.map(|v| v.to_string())),
            ("memory_budget_mb", file.memory_budget_mb.map(|v| v.to_string())),
            ("query_queue_timeout_ms", file.query_queue_timeout_ms.map(|v| v.to_string())),
            ("log", file.log),
            ("auto_index_idle_after_ms", file.auto_index_idle_after_ms.map(|v| v.to_string())),
            ("auto_index_delete_after_ms", file.auto_index_delete_after_ms.map(|v| v.to_string())),
            ("logs_path", file.logs_path.map(|p| p.display().to_string())),
            ("logs_retention_size_mb", file.logs_retention_size_mb.map(|v| v.to_string())),
            ("logs_retention_time_hours", file.logs_retention_time_hours.map(|v| v.to_string())),
            ("logs_max_file_size_mb", file.logs_max_file_size_mb.map(|v| v.to_string())),
            ("logs_json", file.logs_json.map(|v| v.to_string())),
            ("certificate_path", file.certificate_path),
            ("certificate_password", file.certificate_password),
            ("certificate_key_path", file.certificate_key_path),
            ("well_known_admin_certificates", file.well_known_admin_certificates),
            ("unsecured_access_allowed", file.unsecured_access_allowed),
            ("audit_log_folder", file.audit_log_folder),
        ];
        for (name, value) in pairs {
            if let Some(value) = value {
                self.apply(name, &value)?;
            }
        }
        Ok(())
    }

    pub fn from_args(args: &[String]) -> Result<Command, String> {
        if args.iter().any(|a| a == "--help" || a == "-h") {
            return Ok(Command::Help);
        }
        let args: Vec<&str> = match args.first().map(String::as_str) {
            Some("serve") => args[1..].iter().map(String::as_str).collect(),
            Some("help" | "--help" | "-h") => return Ok(Command::Help),
            Some("version" | "--version" | "-V") => return Ok(Command::Version),
            _ => args.iter().map(String::as_str).collect(),
        };
        let env: Vec<(String, String)> = std::env::vars().collect();
        Self::from_sources(&args, &env).map(|s| Command::Serve(Box::new(s)))
    }

    fn from_sources(args: &[&str], env: &[(String, String)]) -> Result<Settings, String> {
        Self::from_sources_with(args, env, &default_settings_files())
    }

    /// `settings_files` are where RavenDB's settings.json is looked for when `--config-path` does not say.
    fn from_sources_with(args: &[&str], env: &[(String, String)], settings_files: &[PathBuf]) -> Result<Settings, String> {
        let mut settings = Settings::defaults();
        let settings_file = match flag_value(args, "config-path") {
            Some(path) => Some(PathBuf::from(path)),
            None => settings_files.iter().find(|p| p.is_file()).cloned(),
        };
        if let Some(path) = settings_file {
            let source = format!("settings file {}", path.display());
            for (name, value) in ravendb_settings::read_file(&path)? {
                settings.apply_ravendb(&name, &value, &source)?;
            }
        }
        let config_env = env.iter().find(|(k, _)| k == "CORVID_CONFIG").map(|(_, v)| v.clone());
        if let Some(path) = flag_value(args, "config").or(config_env) {
            settings.apply_file(&path)?;
        }
        for (name, value) in ravendb_settings::from_environment(env) {
            settings.apply_ravendb(&name, &value, &format!("environment variable RAVEN_{}", name.replace('.', "_")))?;
        }
        for (key, value) in env {
            if let Some(name) = key.strip_prefix("CORVID_") {
                let name = name.to_ascii_lowercase();
                if name == "config" {
                    continue;
                }
                if !SETTING_NAMES.contains(&name.as_str()) {
                    // Other tools use the prefix too (CORVID_BIN in our tests): note it, never refuse to start.
                    settings.ignore(key, "not a Corvid setting");
                    continue;
                }
                settings.apply(&name, value).map_err(|e| format!("{key}: {e}"))?;
            }
        }
        let mut i = 0;
        while i < args.len() {
            let arg = args[i];
            i += 1;
            let Some(flag) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument '{arg}'"));
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (flag, None),
            };
            if name.contains('.') || name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                // RavenDB takes `--Key=value` and `--Key value`; a key alone is a switch.
                let value = match inline {
                    Some(v) => v,
                    None => match args.get(i) {
                        Some(next) if !next.starts_with("--") => {
                            i += 1;
                            next.to_string()
                        }
                        _ => "true".to_owned(),
                    },
                };
                settings.apply_ravendb(name, &value, "argument")?;
                continue;
            }
            let snake = name.replace('-', "_");
            let is_switch = matches!(snake.as_str(), "run_in_memory") && inline.is_none();
            let value = match (inline, is_switch) {
                (Some(v), _) => v,
                (None, true) => "true".to_owned(),
                (None, false) => {
                    let v = args.get(i).ok_or_else(|| format!("--{name} needs a value"))?;
                    i += 1;
                    v.to_string()
                }
            };
            if snake == "config" || snake == "config_path" {
                continue;
            }
            settings.apply(&snake, &value)?;
        }
        Ok(settings)
    }

    /// Applies a setting given under RavenDB's name (from `source`, for the error message).
    fn apply_ravendb(&mut self, name: &str, value: &str, source: &str) -> Result<(), String> {
        match ravendb_settings::translate(name, value) {
            Translation::Corvid(setting, value) => self.apply(setting, &value).map_err(|e| format!("{name} ({source}): {e}")),
            Translation::ParentProcess(pid) => {
                self.parent_pid = Some(parse(name, &pid).map_err(|e| format!("{name} ({source}): {e}"))?);
                Ok(())
            }
            Translation::NoEffect(why) => {
                self.ignore(name, why);
                Ok(())
            }
            Translation::Refused(why) => Err(format!("{name} ({source}): {why}")),
            Translation::Unknown => {
                self.ignore(name, "not a setting Corvid knows");
                Ok(())
            }
        }
    }

    /// Remembers a setting that has no effect, to be logged once at start-up.
    fn ignore(&mut self, name: &str, why: &str) {
        let line = format!("{name} ({why})");
        if !self.ignored.iter().any(|seen| seen.split(" (").next() == Some(name)) {
            self.ignored.push(line);
        }
    }
}

/// Where RavenDB looks for settings.json without `--config-path`: the working directory, then beside the binary.
fn default_settings_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("settings.json")];
    if let Some(dir) = std::env::current_exe().ok().as_deref().and_then(Path::parent) {
        files.push(dir.join("settings.json"));
    }
    files
}

/// A URL Corvid can listen on or announce: `http://`, or `https://` with a certificate.
fn http_url(name: &str, value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.starts_with("http://") || value.starts_with("https://") {
        Ok(value.to_owned())
    } else {
        Err(format!("{name} '{value}' must be a URL starting with http:// or https://"))
    }
}

/// The TCP listener's URL: `tcp://host:port` (RavenDB's `ServerUrl.Tcp` may also be a bare port number).
fn tcp_url(name: &str, value: &str) -> Result<String, String> {
    let value = value.trim().split(';').next().unwrap_or_default().trim_end_matches('/');
    if value.parse::<u16>().is_ok() {
        return Ok(format!("tcp://0.0.0.0:{value}"));
    }
    let rest = value.strip_prefix("tcp://").ok_or_else(|| format!("{name} '{value}' must be a URL starting with tcp://"))?;
    match rest.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(value.to_owned()),
        _ => Err(format!("{name} '{value}' must be tcp://host:port")),
    }
}

/// The value of `--name=value` or `--name value` among the arguments, if given.
fn flag_value(args: &[&str], name: &str) -> Option<String> {
    let flag = format!("--{name}");
    args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix(flag.as_str()) {
        Some(rest) if rest.starts_with('=') => Some(rest[1..].to_owned()),
        Some("") => args.get(i + 1).map(|s| s.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[&str], env: &[(&str, &str)]) -> Settings {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_sources_with(args, &env, &[]).unwrap()
    }

    #[test]
    fn flags_override_environment() {
        let s = settings(
            &["--url", "http://127.0.0.1:0", "--max-body-bytes=10", "--max-attachment-bytes=20"],
            &[("CORVID_URL", "http://0.0.0.0:1"), ("CORVID_DATA_DIR", "/d")],
        );
        assert_eq!(s.config.url, "http://127.0.0.1:0");
        assert_eq!(s.config.max_body_bytes, 10);
        assert_eq!(s.config.max_attachment_bytes, 20);
        assert_eq!(s.config.data_dir, PathBuf::from("/d"));
    }

    #[test]
    fn understands_ravendb_launcher_arguments() {
        let s = settings(
            &[
                "--RunInMemory=true",
                "--ServerUrl=http://127.0.0.1:0",
                "--DataDir=/x",
                "--Setup.Mode=None",
                "--Embedded.ParentProcessId=42",
                "--Logs.Mode=None",
                "--Http.UseResponseCompression=false",
            ],
            &[],
        );
        assert!(!s.config.response_compression);
        assert!(s.run_in_memory);
        assert_eq!(s.config.url, "http://127.0.0.1:0");
        assert_eq!(s.config.data_dir, PathBuf::from("/x"));
        assert_eq!(s.parent_pid, Some(42));
        assert!(!s.config.log_requests);
        assert_eq!(s.ignored, ["Setup.Mode (Corvid has no setup wizard)"]);
    }

    #[test]
    fn understands_the_test_driver_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"ServerUrl": "http://127.0.0.1:7", "DataDir": "/from-file", "Logs": {"Mode": "None"}}"#).unwrap();
        let path = path.to_str().unwrap();
        let s = settings(
            &[
                "--config-path",
                path,
                "--RunInMemory=true",
                "--License.Eula.Accepted=true",
                "--Setup.Mode",
                "None",
                "--Testing.ParentProcessId=77",
                "--ServerUrl",
                "http://127.0.0.1:0",
            ],
            &[],
        );
        assert!(s.run_in_memory);
        // Flags override the file; what only the file says stays.
        assert_eq!(s.config.url, "http://127.0.0.1:0");
        assert_eq!(s.config.data_dir, PathBuf::from("/from-file"));
        assert!(!s.config.log_requests);
        assert_eq!(s.parent_pid, Some(77));
        assert_eq!(s.ignored, ["License.Eula.Accepted (Corvid needs no license)", "Setup.Mode (Corvid has no setup wizard)"]);
        let s = settings(&[&format!("--config-path={path}"), "--RunInMemory"], &[]);
        assert_eq!(s.config.url, "http://127.0.0.1:7");
        assert!(s.run_in_memory);
        assert!(Settings::from_sources(&["--config-path", "/no/such/settings.json"], &[]).is_err());
    }

    #[test]
    fn ravendb_conventions_and_their_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("settings.json");
        std::fs::write(&json, r#"{"ServerUrl": "http://127.0.0.1:1", "DataDir": "/json", "PublicServerUrl": "http://json:1", "Logs": {"MinLevel": "Warning"}, "Indexing.MapBatchSize": 5}"#).unwrap();
        let toml = dir.path().join("c.toml");
        std::fs::write(&toml, "url = \"http://127.0.0.1:2\"\ndata_dir = \"/toml\"\n").unwrap();
        let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let missing = dir.path().join("none.json");
        let files = [missing, json.clone()];

        // settings.json found in the second place looked at, nothing else given.
        let s = Settings::from_sources_with(&[], &[], &files).unwrap();
        assert_eq!((s.config.url.as_str(), s.config.data_dir.to_str().unwrap()), ("http://127.0.0.1:1", "/json"));
        assert_eq!(s.config.public_server_url.as_deref(), Some("http://json:1"));
        assert_eq!(s.log_filter, "warn");
        assert_eq!(s.ignored, ["Indexing.MapBatchSize (not a setting Corvid knows)"]);

        // TOML over settings.json, RAVEN_ over TOML, CORVID_ over RAVEN_, arguments over everything.
        let toml_arg = format!("--config={}", toml.display());
        let s = Settings::from_sources_with(&[&toml_arg], &[], &files).unwrap();
        assert_eq!(s.config.url, "http://127.0.0.1:2");
        let raven = env(&[("RAVEN_ServerUrl", "http://0.0.0.0:3"), ("RAVEN_Logs_Mode", "None")]);
        let s = Settings::from_sources_with(&[&toml_arg], &raven, &files).unwrap();
        assert_eq!((s.config.url.as_str(), s.config.log_requests), ("http://0.0.0.0:3", false));
        assert_eq!(s.config.data_dir, PathBuf::from("/toml"));
        let both = env(&[("RAVEN_ServerUrl", "http://0.0.0.0:3"), ("CORVID_URL", "http://0.0.0.0:4")]);
        let s = Settings::from_sources_with(&[&toml_arg], &both, &files).unwrap();
        assert_eq!(s.config.url, "http://0.0.0.0:4");
        let s = Settings::from_sources_with(&[&toml_arg, "--ServerUrl", "http://0.0.0.0:5"], &both, &files).unwrap();
        assert_eq!(s.config.url, "http://0.0.0.0:5");

        // --config-path wins over the places looked at by default.
        let other = dir.path().join("other.json");
        std::fs::write(&other, r#"{"DataDir": "/other"}"#).unwrap();
        let s = Settings::from_sources_with(&["--config-path", other.to_str().unwrap()], &[], &files).unwrap();
        assert_eq!(s.config.data_dir, PathBuf::from("/other"));
    }

    #[test]
    fn a_bad_value_of_a_known_ravendb_setting_stops_start_up_naming_it() {
        let env = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        let e = Settings::from_sources_with(&[], &env("RAVEN_RunInMemory", "maybe"), &[]).err().unwrap();
        assert!(e.contains("RunInMemory") && e.contains("RAVEN_RunInMemory"), "{e}");
        // An https:// URL and a certificate agree or not at start-up, once the certificate is read
        // (tests/compat/test_security.py); here only values that cannot be read.
        let e = Settings::from_sources_with(&["--Security.UnsecuredAccessAllowed=Everyone"], &[], &[]).err().unwrap();
        assert!(e.contains("Security.UnsecuredAccessAllowed"), "{e}");
        let e = Settings::from_sources_with(&["--Testing.ParentProcessId=abc"], &[], &[]).err().unwrap();
        assert!(e.contains("Testing.ParentProcessId"), "{e}");
        // An unknown setting is noted once, however often it is given.
        let s = Settings::from_sources_with(&["--Foo.Bar=1", "--Foo.Bar=2"], &env("RAVEN_Foo_Bar", "3"), &[]).unwrap();
        assert_eq!(s.ignored, ["Foo.Bar (not a setting Corvid knows)"]);
    }

    #[test]
    fn unknown_environment_names_are_ignored_not_fatal() {
        let s = settings(&[], &[("CORVID_BIN", "/x"), ("CORVID_ARGS", "--y"), ("CORVID_MAX_BODY_BYTES", "5")]);
        assert_eq!(s.config.max_body_bytes, 5);
        assert_eq!(s.ignored.len(), 2);
    }

    #[test]
    fn bad_values_are_errors() {
        assert!(Settings::from_sources(&["--max-body-bytes", "lots"], &[]).is_err());
        assert!(Settings::from_sources(&["--no-such-flag", "1"], &[]).is_err());
        assert!(Settings::from_sources(&["stray"], &[]).is_err());
    }

    #[test]
    fn reads_toml_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "url = \"http://127.0.0.1:9\"\nmax_concurrent_requests = 3\n").unwrap();
        let s = settings(&["--config", path.to_str().unwrap()], &[]);
        assert_eq!(s.config.url, "http://127.0.0.1:9");
        assert_eq!(s.config.max_concurrent_requests, 3);
    }

    #[test]
    fn the_tcp_url_comes_from_the_flag_or_ravendbs_setting_and_is_checked() {
        assert_eq!(settings(&["--tcp-url", "tcp://127.0.0.1:0"], &[]).config.tcp_url.as_deref(), Some("tcp://127.0.0.1:0"));
        let raven = Settings::from_sources_with(&["--ServerUrl.Tcp=38881"], &[], &[]).unwrap();
        assert_eq!(raven.config.tcp_url.as_deref(), Some("tcp://0.0.0.0:38881"));
        let e = Settings::from_sources_with(&["--ServerUrl.Tcp=http://x:1"], &[], &[]).err().unwrap();
        assert!(e.contains("tcp://"), "{e}");
    }
}
