//! The Studio's files (crates/server/studio), compiled into the binary so the server needs nothing beside
//! it and works offline. Each file carries a content hash as its ETag: browsers revalidate with
//! `If-None-Match` and get a 304 until a new binary changes the file (decision 0046).

use std::sync::OnceLock;

/// One embedded file.
pub struct StudioAsset {
    /// The path below `/studio/`, e.g. `js/api.js`.
    pub path: &'static str,
    /// The file's bytes as they were at build time.
    pub bytes: &'static [u8],
    /// The `Content-Type` it is served with.
    pub content_type: &'static str,
    /// A strong ETag (quoted FNV-1a hash of the bytes).
    pub etag: String,
}

macro_rules! studio_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/studio/", $path)) as &[u8])),*]
    };
}

/// Every file of the Studio. A unit test fails when a file in the directory is missing here.
const FILES: &[(&str, &[u8])] = studio_files!(
    "index.html",
    "studio.css",
    "js/app.js",
    "js/api.js",
    "js/dom.js",
    "js/highlight.js",
    "js/code_editor.js",
    "js/rql.js",
    "js/results.js",
    "js/virtual_list.js",
    "js/pages/databases.js",
    "js/pages/documents.js",
    "js/pages/document_editor.js",
    "js/pages/query.js",
    "js/pages/indexes.js",
    "js/pages/dashboard.js",
    "js/pages/tasks.js",
    "js/pages/query_patch.js",
    "js/pages/query_explain.js",
    "js/pages/index_terms.js",
    "js/pages/index_performance.js",
    "js/chart.js",
    "js/diff.js",
    "js/tabs.js",
    "js/operation_progress.js",
    "js/dashboard_traffic.js",
    "js/document/attachments.js",
    "js/document/counters.js",
    "js/document/revisions.js",
    "js/document/time_series.js",
);

/// The embedded file at `path` (below `/studio/`; empty means the index page).
pub fn studio_asset(path: &str) -> Option<&'static StudioAsset> {
    let path = if path.is_empty() { "index.html" } else { path };
    assets().iter().find(|a| a.path == path)
}

fn assets() -> &'static [StudioAsset] {
    static ASSETS: OnceLock<Vec<StudioAsset>> = OnceLock::new();
    ASSETS.get_or_init(|| {
        FILES
            .iter()
            .map(|(path, bytes)| StudioAsset { path, bytes, content_type: content_type(path), etag: format!("\"{:016x}\"", fnv1a(bytes)) })
            .collect()
    })
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// FNV-1a, 64 bits: stable across builds and platforms, enough to tell versions of a file apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_on_disk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_on_disk(&path, base, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }

    #[test]
    fn every_file_of_the_studio_directory_is_embedded() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studio");
        let mut on_disk = Vec::new();
        files_on_disk(&base, &base, &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded, "list every file of crates/server/studio in studio_assets::FILES");
    }

    #[test]
    fn the_empty_path_is_the_index_page_and_etags_differ_per_content() {
        let index = studio_asset("").unwrap();
        assert_eq!(index.path, "index.html");
        assert_eq!(index.content_type, "text/html; charset=utf-8");
        assert_ne!(index.etag, studio_asset("studio.css").unwrap().etag);
        assert!(studio_asset("../Cargo.toml").is_none());
    }
}
