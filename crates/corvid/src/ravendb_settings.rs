//! RavenDB's configuration conventions: its settings file (`settings.json`, a JSON object whose keys are
//! RavenDB setting names such as `"ServerUrl"` or `"Logs.Mode"`, possibly nested: `{"Logs": {"Mode": "None"}}`
//! is `Logs.Mode`), its `RAVEN_` environment variables (`RAVEN_Logs_Mode` is `Logs.Mode`), and the
//! translation of its setting names onto Corvid's.

use serde_json::Value;

/// What a RavenDB setting means to Corvid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Translation {
    /// The Corvid setting (snake_case name, as the flags and `CORVID_*` variables use) and its value.
    Corvid(&'static str, String),
    /// The parent process to follow (the embedded server and test drivers pass it): Corvid exits with it.
    ParentProcess(String),
    /// A RavenDB setting Corvid knows and does not need (it has no effect here), and why.
    NoEffect(&'static str),
    /// A setting that asks for something Corvid cannot do yet: starting anyway would be wrong.
    Refused(&'static str),
    /// Not a setting Corvid knows.
    Unknown,
}

/// Translates one RavenDB setting. Names are matched without regard to case, as RavenDB does.
pub fn translate(name: &str, value: &str) -> Translation {
    let corvid = |setting: &'static str, value: &str| Translation::Corvid(setting, value.trim().to_owned());
    match name.to_ascii_lowercase().as_str() {
        // RavenDB takes several URLs separated by semicolons; Corvid listens on one.
        "serverurl" => corvid("url", value.split(';').next().unwrap_or_default()),
        "publicserverurl" => corvid("public_url", value),
        "datadir" => corvid("data_dir", value),
        "runinmemory" => corvid("run_in_memory", value),
        "databases.maxidletimeinsec" => corvid("max_idle_time_sec", value),
        "http.useresponsecompression" => corvid("http_response_compression", value),
        "logs.mode" if value.trim().eq_ignore_ascii_case("none") => corvid("log_requests", "false"),
        "logs.mode" => Translation::NoEffect("Corvid writes its log to stderr, and to files with Logs.Path"),
        "logs.path" => corvid("logs_path", value),
        "logs.retentionsize" | "logs.retentionsizeinmb" => corvid("logs_retention_size_mb", value),
        "logs.retentiontime" | "logs.retentiontimeinhrs" => corvid("logs_retention_time_hours", value),
        "logs.maxfilesize" | "logs.maxfilesizeinmb" => corvid("logs_max_file_size_mb", value),
        "logs.minlevel" | "logs.level" => match log_filter(value) {
            Some(filter) => corvid("log", filter),
            None => corvid("log", value),
        },
        "embedded.parentprocessid" | "testing.parentprocessid" => Translation::ParentProcess(value.trim().to_owned()),
        "setup.mode" => Translation::NoEffect("Corvid has no setup wizard"),
        "license.eula.accepted" | "license" | "license.path" | "license.canactivate" | "license.canforceupdate" => {
            Translation::NoEffect("Corvid needs no license")
        }
        "security.unsecuredaccessallowed" => corvid("unsecured_access_allowed", value),
        "security.certificate.path" => corvid("certificate_path", value),
        "security.certificate.password" => corvid("certificate_password", value),
        // Corvid's own: the key of a PEM certificate kept in a separate file.
        "security.certificate.key.path" => corvid("certificate_key_path", value),
        "security.wellknowncertificates.admin" => corvid("well_known_admin_certificates", value),
        "security.auditlog.folderpath" => corvid("audit_log_folder", value),
        "serverurl.tcp" => corvid("tcp_url", value),
        "publicserverurl.tcp" => Translation::NoEffect("Corvid announces the TCP listener's own address"),
        "security.certificate.load.exec" | "security.certificate.letsencrypt.email" => Translation::Refused(
            "Corvid reads its certificate from Security.Certificate.Path only: it would serve this certificate's clients in plain HTTP",
        ),
        _ => Translation::Unknown,
    }
}

/// RavenDB's log levels as a Corvid log filter.
fn log_filter(level: &str) -> Option<&'static str> {
    Some(match level.trim().to_ascii_lowercase().as_str() {
        "trace" => "trace",
        "debug" => "debug",
        "info" | "information" | "operations" => "info",
        "warn" | "warning" => "warn",
        "error" | "fatal" => "error",
        "off" | "none" => "off",
        _ => return None,
    })
}

/// The RavenDB settings among environment variables: `RAVEN_Setup_Mode=None` is `Setup.Mode`, as RavenDB
/// reads them (`RAVEN.` is accepted too).
pub fn from_environment(env: &[(String, String)]) -> Vec<(String, String)> {
    env.iter()
        .filter_map(|(key, value)| {
            let rest = key.strip_prefix("RAVEN_").or_else(|| key.strip_prefix("RAVEN."))?;
            (!rest.is_empty()).then(|| (rest.replace('_', "."), value.clone()))
        })
        .collect()
}

/// The file's settings as `(name, value)` pairs in file order, nested objects flattened with dots.
pub fn read_file(path: &std::path::Path) -> Result<Vec<(String, String)>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read settings file {shown}: {e}"))?;
    parse(&text).map_err(|e| format!("settings file {shown}: {e}"))
}

pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    // An empty file is what some launchers write when they have nothing to set.
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("must hold a JSON object of setting names and values".into());
    };
    let mut out = Vec::new();
    flatten("", &map, &mut out)?;
    Ok(out)
}

fn flatten(prefix: &str, map: &serde_json::Map<String, Value>, out: &mut Vec<(String, String)>) -> Result<(), String> {
    for (key, value) in map {
        let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(inner) => flatten(&name, inner, out)?,
            Value::String(s) => out.push((name, s.clone())),
            Value::Bool(_) | Value::Number(_) => out.push((name, value.to_string())),
            // RavenDB reads a null as "not set".
            Value::Null => {}
            // Lists (several URLs, several paths) are passed on semicolon-separated, as RavenDB writes them.
            Value::Array(items) => {
                let parts: Vec<String> = items.iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect();
                out.push((name, parts.join(";")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_and_nested_names() {
        let pairs =
            parse(r#"{"ServerUrl": "http://127.0.0.1:0", "RunInMemory": true, "Logs": {"Mode": "None"}, "X": null, "N": 5}"#).unwrap();
        let expected = [("ServerUrl", "http://127.0.0.1:0"), ("RunInMemory", "true"), ("Logs.Mode", "None"), ("N", "5")];
        assert_eq!(pairs, expected.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }

    #[test]
    fn environment_names() {
        let env = [("RAVEN_Setup_Mode", "None"), ("RAVEN_ServerUrl", "http://0.0.0.0:8080"), ("RAVENX", "1"), ("PATH", "/bin")];
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let expected = [("Setup.Mode", "None"), ("ServerUrl", "http://0.0.0.0:8080")];
        assert_eq!(from_environment(&env), expected.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }

    #[test]
    fn translations() {
        assert_eq!(translate("ServerUrl", "http://a:1;http://b:2"), Translation::Corvid("url", "http://a:1".into()));
        assert_eq!(translate("serverurl", "http://a:1"), Translation::Corvid("url", "http://a:1".into()));
        assert_eq!(translate("Logs.MinLevel", "Warning"), Translation::Corvid("log", "warn".into()));
        assert!(matches!(translate("Setup.Mode", "None"), Translation::NoEffect(_)));
        assert_eq!(translate("Security.Certificate.Path", "/c.pfx"), Translation::Corvid("certificate_path", "/c.pfx".into()));
        assert!(matches!(translate("Security.Certificate.Load.Exec", "/c.sh"), Translation::Refused(_)));
        assert_eq!(translate("Indexing.MapBatchSize", "5"), Translation::Unknown);
    }

    #[test]
    fn empty_file_and_bad_files() {
        assert!(parse("  \n").unwrap().is_empty());
        assert!(parse("[1]").is_err());
        assert!(parse("{").is_err());
    }
}
