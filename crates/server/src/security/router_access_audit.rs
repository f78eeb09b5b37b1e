//! Every route of the router has an entry in the access table: the router is enumerated (from its debug
//! form, the only listing axum gives) and each path and method looked up.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::Method;

use super::access_table;
use crate::config::ServerConfig;
use crate::landlord::Landlord;
use crate::state::AppState;

/// `(path, methods)` of every route; `*` for a route that takes any method (a method router's fallback).
fn routes_of(router: &axum::Router) -> Vec<(String, Vec<String>)> {
    let text = format!("{router:?}");
    // The fallback router numbers its routes on its own: only the path router's part is read.
    let text = text.split("fallback_router").next().unwrap_or_default();
    let mut handlers: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut paths: BTreeMap<u64, String> = BTreeMap::new();
    let mut rest = text;
    while let Some(at) = rest.find("RouteId(") {
        rest = &rest[at + "RouteId(".len()..];
        let close = rest.find(')').expect("RouteId(n)");
        let id: u64 = rest[..close].parse().expect("a route id");
        let after = rest[close + 1..].trim_start_matches(": ");
        if let Some(path) = after.strip_prefix('"') {
            paths.insert(id, path[..path.find('"').expect("a quoted path")].to_owned());
        } else if let Some(body) = after.strip_prefix("MethodRouter(MethodRouter { ") {
            let end = body.find("allow_header").expect("the method router's last field");
            let mut methods = Vec::new();
            for field in body[..end].split(", ") {
                let Some((name, value)) = field.split_once(": ") else { continue };
                match name {
                    // Every route has one (the router's method-not-allowed answer): only telling when it is
                    // the route's only handler (`any`).
                    "fallback" => {}
                    _ if value.starts_with("None") => {}
                    method => methods.push(method.to_ascii_uppercase()),
                }
            }
            if methods.is_empty() {
                methods.push("*".to_owned());
            }
            handlers.insert(id, methods);
        }
    }
    paths.into_iter().map(|(id, path)| (path, handlers.remove(&id).unwrap_or_default())).collect()
}

#[test]
fn every_route_declares_its_access() {
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig { data_dir: dir.path().to_owned(), log_requests: false, ..Default::default() };
    let landlord = Arc::new(Landlord::open(&config).unwrap());
    let state = AppState::new(config, landlord, "http://127.0.0.1:1".into(), "tcp://127.0.0.1:2".into(), None).unwrap();
    let routes = routes_of(&crate::routes::router(state));
    assert!(routes.len() > 80, "the router's listing was not understood: {routes:?}");
    let mut missing = Vec::new();
    for (path, methods) in &routes {
        assert!(!methods.is_empty(), "no handler found for {path}");
        for method in methods {
            let probe =
                if method == "*" { Method::from_bytes(b"PROPFIND").unwrap() } else { Method::from_bytes(method.as_bytes()).unwrap() };
            if access_table::required(&probe, path).is_none() {
                missing.push(format!("{method} {path}"));
            }
        }
    }
    assert!(missing.is_empty(), "routes without an entry in security::access_table: {missing:#?}");
    // And the table names no route the router does not have.
    for pattern in access_table::patterns() {
        assert!(routes.iter().any(|(path, _)| path == pattern), "the access table names {pattern}, which is not a route");
    }
}
