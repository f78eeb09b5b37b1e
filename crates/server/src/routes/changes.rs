//! `/databases/{db}/changes`: the Changes API websocket, its debug view and its disconnect. Each connection
//! subscribes to its database's changes hub, answers every command with a `Confirm`, sends what its watches
//! match as JSON-array frames, and a `[]` heartbeat when it has been quiet for 5 s. With
//! `?throttleConnection=true`, skippable changes (documents, counters, time series, index batches) are sent
//! at most every 5 s: only the newest of those that came in between, as RavenDB does.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::changes::Published;
use corvid_engine::{Database, OperationState};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::operations::database_state_json;
use crate::changes_connections::ChangesConnection;
use crate::changes_protocol::{command_id, confirm, error, notification, parse_command};
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{json_value, no_content};
use crate::state::AppState;

/// Quiet time after which an empty frame tells the client the connection is alive; also how long a
/// throttled connection holds skippable changes back.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A frame the client does not take within this long ends the connection (it stopped reading).
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Under a steady flow of changes, a connection sends at most one frame per this interval, holding what
/// arrives meanwhile for the next: with 100 subscribers and a commit every millisecond, one frame per commit
/// per subscriber was 100,000 task wake-ups and socket writes a second, taken from the writers' cores. A
/// change after a quiet spell goes at once.
const COALESCE: Duration = Duration::from_millis(10);

/// Upgrades to the websocket; the database is looked up first so an unknown one gets RavenDB's 404 error.
pub async fn changes(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
    upgrade: WebSocketUpgrade,
) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let (throttled, from_studio) = (params.get_bool("throttleConnection"), params.get_bool("fromStudio"));
    let database = state.landlord.database(&db).await?;
    Ok(upgrade.on_upgrade(move |socket| serve(state, database, socket, throttled, from_studio)))
}

/// `GET /databases/{db}/changes/debug`: the connections open to the database, with what they watch.
pub async fn debug(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let connections: Vec<Value> = state.changes_connections.of_database(database.name()).iter().map(|c| c.debug_json()).collect();
    Ok(json_value(StatusCode::OK, &json!({"NumberOfConnections": connections.len(), "Connections": connections})))
}

/// `DELETE /databases/{db}/changes?id=` (repeatable): closes those connections; unknown ids are ignored.
pub async fn disconnect(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let ids = params.get_all("id");
    if ids.is_empty() {
        return Err(ApiError::BadRequest("Query string 'id' is mandatory, but wasn't specified".into()));
    }
    let ids: Vec<u64> = ids
        .iter()
        .map(|id| {
            id.trim().parse().map_err(|_| ApiError::BadRequest(format!("Could not parse query string 'id' as int64, value was: {id}")))
        })
        .collect::<ApiResult<_>>()?;
    let database = state.landlord.database(&db).await?;
    for id in ids {
        state.changes_connections.disconnect(database.name(), id);
    }
    Ok(no_content())
}

/// Why a connection's loop ended.
enum End {
    ClientLeft,
    ServerStopping,
    TooSlow,
    /// `DELETE /changes?id=` asked for it.
    Disconnected,
}

async fn serve(state: AppState, database: Arc<Database>, mut socket: WebSocket, throttled: bool, from_studio: bool) {
    state.changes_clients.fetch_add(1, Ordering::Relaxed);
    let registration = state.changes_connections.register(database.name(), throttled, from_studio);
    let end = Connection::new(&database, registration.connection().clone()).run(&state, &mut socket).await;
    drop(registration);
    state.changes_clients.fetch_sub(1, Ordering::Relaxed);
    match end {
        End::TooSlow => {
            state.changes_dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(database = database.name(), "dropped a Changes API client that stopped reading");
        }
        End::ServerStopping | End::Disconnected => {
            let _ = tokio::time::timeout(Duration::from_millis(200), socket.send(Message::Close(None))).await;
        }
        End::ClientLeft => {}
    }
}

struct Connection {
    database: Arc<Database>,
    wake: Arc<Notify>,
    shared: Arc<ChangesConnection>,
    last_sent: Instant,
    /// A throttled connection's newest skippable notification not sent yet.
    held: Option<Arc<Published>>,
}

impl Connection {
    fn new(database: &Arc<Database>, shared: Arc<ChangesConnection>) -> Connection {
        Connection { database: database.clone(), wake: Arc::new(Notify::new()), shared, last_sent: Instant::now(), held: None }
    }

    async fn run(mut self, state: &AppState, socket: &mut WebSocket) -> End {
        let mut stopping = state.changes_shutdown.subscribe();
        if *stopping.borrow_and_update() {
            return End::ServerStopping;
        }
        let wake = self.wake.clone();
        let mut subscription = self.database.changes().subscribe(move || wake.notify_one());
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        let shared = self.shared.clone();
        loop {
            let frame: Vec<Part> = tokio::select! {
                _ = stopping.changed() => return End::ServerStopping,
                _ = shared.dropped.notified() => return End::Disconnected,
                received = socket.recv() => match received {
                    Some(Ok(Message::Text(text))) => self.command(text.as_str()),
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return End::ClientLeft,
                    Some(Ok(_)) => continue,
                },
                _ = self.wake.notified() => {
                    self.hold_under_flow().await;
                    match subscription.drain() {
                        Ok(changes) => {
                            self.shared.pending.store(subscription.pending() as u64, Ordering::Relaxed);
                            self.notifications(&changes)
                        }
                        Err(_) => {
                            // Fell too far behind while writing: report what was lost and start afresh.
                            let wake = self.wake.clone();
                            subscription = self.database.changes().subscribe(move || wake.notify_one());
                            state.changes_dropped.fetch_add(1, Ordering::Relaxed);
                            vec![Part::Own(error("This client fell too far behind; some changes were not delivered").to_string())]
                        }
                    }
                }
                _ = heartbeat.tick() => {
                    if self.last_sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    // Quiet for 5 s: a throttled connection's held change goes now, else a heartbeat.
                    self.held.take().map(Part::Change).into_iter().collect()
                }
            };
            if frame.is_empty() && self.last_sent.elapsed() < HEARTBEAT {
                continue;
            }
            let count = frame.iter().filter(|part| matches!(part, Part::Change(_))).count() as u64;
            let text = frame_text(&frame);
            tokio::select! {
                _ = stopping.changed() => return End::ServerStopping,
                sent = tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(text.into()))) => match sent {
                    Ok(Ok(())) => {
                        self.last_sent = Instant::now();
                        self.shared.sent.fetch_add(count, Ordering::Relaxed);
                    }
                    Ok(Err(_)) => return End::ClientLeft,
                    Err(_) => return End::TooSlow,
                },
            }
        }
    }

    /// Under a steady flow, waits until `COALESCE` has passed since the last frame, so what arrives meanwhile
    /// goes in the next one.
    async fn hold_under_flow(&self) {
        let hold = COALESCE.saturating_sub(self.last_sent.elapsed());
        if !hold.is_zero() {
            tokio::time::sleep(hold).await;
        }
    }

    /// Applies one command; answers with its confirmation, after an error when it was refused.
    fn command(&mut self, text: &str) -> Vec<Part> {
        let mut frame = Vec::new();
        match parse_command(text) {
            Ok(command) => {
                let id = command.id;
                self.shared.watches.lock().apply(command);
                frame.extend(id.map(|id| Part::Own(confirm(id).to_string())));
            }
            Err(e) => {
                frame.push(Part::Own(error(&e.to_string()).to_string()));
                // Confirmed even so: the clients block on the confirmation of every command they send.
                frame.extend(command_id(text).map(|id| Part::Own(confirm(id).to_string())));
            }
        }
        frame
    }

    fn notifications(&mut self, changes: &[Arc<Published>]) -> Vec<Part> {
        let wanted: Vec<&Arc<Published>> = {
            let watches = self.shared.watches.lock();
            changes.iter().filter(|published| watches.matches(&published.change)).collect()
        };
        let mut frame = Vec::new();
        let database = &self.database;
        for published in wanted {
            let render = |change: &_| notification(change, |id| operation_state(database, id)).map(|v| v.to_string());
            if published.rendered(render).is_none() {
                continue;
            }
            let change = &published.change;
            if self.shared.throttled && change.skippable() && self.last_sent.elapsed() < HEARTBEAT {
                if self.held.replace(published.clone()).is_some() {
                    self.shared.skipped.fetch_add(1, Ordering::Relaxed);
                }
                continue;
            }
            if self.shared.throttled && change.skippable() && self.held.take().is_some() {
                // Sent a newer one: the held change is stale.
                self.shared.skipped.fetch_add(1, Ordering::Relaxed);
            }
            frame.push(Part::Change(published.clone()));
        }
        frame
    }
}

/// One message of a frame: a notification (rendered once, shared by every connection) or this
/// connection's own (a confirmation, an error).
enum Part {
    Change(Arc<Published>),
    Own(String),
}

/// The frame's text: its messages as one JSON array.
fn frame_text(frame: &[Part]) -> String {
    let texts: Vec<&str> = frame
        .iter()
        .map(|part| match part {
            // Rendered before it was put in the frame; an empty text is never produced.
            Part::Change(published) => published.rendered(|_| None).unwrap_or("null"),
            Part::Own(text) => text.as_str(),
        })
        .collect();
    let mut text = String::with_capacity(2 + texts.iter().map(|t| t.len() + 1).sum::<usize>());
    text.push('[');
    for (n, part) in texts.iter().enumerate() {
        if n > 0 {
            text.push(',');
        }
        text.push_str(part);
    }
    text.push(']');
    text
}

/// An operation's state as `/operations/state` renders it, and whether it is still running.
fn operation_state(database: &Database, id: u64) -> Option<(Value, bool)> {
    let snapshot = database.operations().get(id)?.snapshot();
    let running = matches!(snapshot.state, OperationState::InProgress);
    Some((database_state_json(&snapshot), running))
}
