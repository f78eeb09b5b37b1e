//! What the process looks like from `/proc`: its threads with their names, and where its memory is (the
//! kernel's totals, and how much of each LMDB map is resident). For the debug info package.

use serde_json::{json, Map, Value};

/// Every thread of the process: its id and name (`/proc/self/task/<tid>/comm`).
pub fn threads() -> Value {
    let mut threads: Vec<(u64, String)> = std::fs::read_dir("/proc/self/task")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| {
                    let tid = entry.file_name().to_str()?.parse::<u64>().ok()?;
                    let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                    Some((tid, name.trim_end().to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    threads.sort();
    json!({
        "Count": threads.len(),
        "Threads": threads.into_iter().map(|(tid, name)| json!({"Id": tid, "Name": name})).collect::<Vec<_>>()
    })
}

/// The kernel's memory figures for the process (`Vm*` and `Rss*` of `/proc/self/status`, in bytes) and
/// the resident part of every mapped LMDB file (`/proc/self/smaps`).
pub fn memory() -> Value {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut process = Map::new();
    for line in status.lines() {
        let Some((key, rest)) = line.split_once(':') else { continue };
        if key.starts_with("Vm") || key.starts_with("Rss") {
            if let Some(kib) = rest.trim().strip_suffix("kB").and_then(|n| n.trim().parse::<u64>().ok()) {
                process.insert(key.to_owned(), json!(kib * 1024));
            }
        }
    }
    json!({"Process": process, "Allocator": "mimalloc", "LmdbMaps": lmdb_maps(&std::fs::read_to_string("/proc/self/smaps").unwrap_or_default())})
}

/// Per mapped `.mdb` file: mapped size and resident bytes, from the text of `/proc/self/smaps`.
fn lmdb_maps(smaps: &str) -> Vec<Value> {
    let mut maps: Vec<(String, u64, u64)> = Vec::new();
    let mut current: Option<usize> = None;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A mapping's header: `start-end perms offset dev inode path`.
            let path = line.split_whitespace().nth(5).unwrap_or("");
            current = if path.ends_with(".mdb") {
                let position = maps.iter().position(|(p, _, _)| p == path).unwrap_or_else(|| {
                    maps.push((path.to_owned(), 0, 0));
                    maps.len() - 1
                });
                Some(position)
            } else {
                None
            };
            continue;
        }
        let (Some(position), Some((key, rest))) = (current, line.split_once(':')) else { continue };
        let kib = rest.trim().strip_suffix("kB").and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(0);
        match key {
            "Size" => maps[position].1 += kib * 1024,
            "Rss" => maps[position].2 += kib * 1024,
            _ => {}
        }
    }
    maps.into_iter().map(|(path, size, resident)| json!({"File": path, "MappedBytes": size, "ResidentBytes": resident})).collect()
}

/// The settings as text with the values of secret-looking fields (passwords, keys, certificates, tokens)
/// replaced, from their `Debug` rendering.
pub fn redacted_settings(debug_text: &str) -> String {
    const SECRET: [&str; 5] = ["password", "secret", "token", "certificate", "private_key"];
    debug_text
        .lines()
        .map(|line| match line.split_once(':') {
            Some((field, _)) if SECRET.iter().any(|s| field.to_ascii_lowercase().contains(s)) => format!("{field}: \"<removed>\","),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lmdb_residency_is_summed_per_file() {
        let smaps = "7f00-7f10 r--s 00000000 fd:01 42 /data/db/data.mdb\nSize:  64 kB\nRss:  8 kB\n\
                     7f20-7f30 r--p 00000000 fd:01 43 /usr/lib/libc.so\nSize: 4 kB\nRss: 4 kB\n\
                     7f40-7f50 r--s 00010000 fd:01 42 /data/db/data.mdb\nSize: 16 kB\nRss: 16 kB\n";
        let maps = lmdb_maps(smaps);
        assert_eq!(maps, vec![json!({"File": "/data/db/data.mdb", "MappedBytes": 80 * 1024, "ResidentBytes": 24 * 1024})]);
    }

    #[test]
    fn secrets_are_removed() {
        let text = "ServerConfig {\n    url: \"http://x\",\n    certificate_password: \"hunter2\",\n}";
        let out = redacted_settings(text);
        assert!(out.contains("url: \"http://x\""));
        assert!(!out.contains("hunter2"));
    }

    #[test]
    fn threads_have_names() {
        let threads = threads();
        assert!(threads["Count"].as_u64().unwrap_or(0) >= 1);
    }
}
