//! The Studio: `/` sends a browser to `/studio/`, whose files come from `studio_assets`.

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::studio_assets::studio_asset;

/// `GET /` and `GET /studio`: the Studio's start page.
pub async fn redirect_to_studio() -> Response {
    (StatusCode::FOUND, [(header::LOCATION, HeaderValue::from_static("/studio/"))]).into_response()
}

/// `GET /studio/`: the index page.
pub async fn index(headers: HeaderMap) -> Response {
    answer("", &headers)
}

/// `GET /studio/{*path}`: one embedded file, or 404.
pub async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    answer(&path, &headers)
}

fn answer(path: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = studio_asset(path) else {
        return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "No such Studio file").into_response();
    };
    let etag = HeaderValue::from_str(&asset.etag).expect("a hex etag is a valid header");
    // `no-cache` means "revalidate": a new binary's files are seen at once, an unchanged file costs a 304.
    let cache = (header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == asset.etag || tag.trim() == "*"));
    if matches {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag), cache]).into_response();
    }
    (StatusCode::OK, [(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)), (header::ETAG, etag), cache], asset.bytes)
        .into_response()
}
