//! `GET /databases/{db}/changes`: the Changes API websocket. Each connection subscribes to its database's
//! changes hub, answers every command with a `Confirm`, sends what its watches match as JSON-array frames,
//! and a `[]` heartbeat when it has been quiet for 5 s.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response;
use corvid_engine::changes::Change;
use corvid_engine::Database;
use serde_json::Value;
use tokio::sync::Notify;

use super::operations::database_state_json;
use crate::changes_protocol::{command_id, confirm, error, notification, parse_command, Watches};
use crate::error::ApiResult;
use crate::state::AppState;

/// Quiet time after which an empty frame tells the client the connection is alive.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A frame the client does not take within this long ends the connection (it stopped reading).
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Upgrades to the websocket; the database is looked up first so an unknown one gets RavenDB's 404 error.
pub async fn changes(State(state): State<AppState>, Path(db): Path<String>, upgrade: WebSocketUpgrade) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    Ok(upgrade.on_upgrade(move |socket| serve(state, database, socket)))
}

/// Why a connection's loop ended.
enum End {
    ClientLeft,
    ServerStopping,
    TooSlow,
}

async fn serve(state: AppState, database: Arc<Database>, mut socket: WebSocket) {
    state.changes_clients.fetch_add(1, Ordering::Relaxed);
    let end = Connection::new(&database).run(&state, &mut socket).await;
    state.changes_clients.fetch_sub(1, Ordering::Relaxed);
    match end {
        End::TooSlow => {
            state.changes_dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(database = database.name(), "dropped a Changes API client that stopped reading");
        }
        End::ServerStopping => {
            let _ = tokio::time::timeout(Duration::from_millis(200), socket.send(Message::Close(None))).await;
        }
        End::ClientLeft => {}
    }
}

struct Connection {
    database: Arc<Database>,
    wake: Arc<Notify>,
    watches: Watches,
    last_sent: Instant,
}

impl Connection {
    fn new(database: &Arc<Database>) -> Connection {
        Connection { database: database.clone(), wake: Arc::new(Notify::new()), watches: Watches::default(), last_sent: Instant::now() }
    }

    async fn run(mut self, state: &AppState, socket: &mut WebSocket) -> End {
        let mut stopping = state.changes_shutdown.subscribe();
        if *stopping.borrow_and_update() {
            return End::ServerStopping;
        }
        let wake = self.wake.clone();
        let mut subscription = self.database.changes().subscribe(move || wake.notify_one());
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        loop {
            let frame: Vec<Value> = tokio::select! {
                _ = stopping.changed() => return End::ServerStopping,
                received = socket.recv() => match received {
                    Some(Ok(Message::Text(text))) => self.command(text.as_str()),
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return End::ClientLeft,
                    Some(Ok(_)) => continue,
                },
                _ = self.wake.notified() => match subscription.drain() {
                    Ok(changes) => self.notifications(&changes),
                    Err(_) => {
                        // Fell too far behind while writing: report what was lost and start afresh.
                        let wake = self.wake.clone();
                        subscription = self.database.changes().subscribe(move || wake.notify_one());
                        state.changes_dropped.fetch_add(1, Ordering::Relaxed);
                        vec![error("This client fell too far behind; some changes were not delivered")]
                    }
                },
                _ = heartbeat.tick() => {
                    if self.last_sent.elapsed() < HEARTBEAT {
                        continue;
                    }
                    Vec::new()
                }
            };
            if frame.is_empty() && self.last_sent.elapsed() < HEARTBEAT {
                continue;
            }
            let text = Value::Array(frame).to_string();
            tokio::select! {
                _ = stopping.changed() => return End::ServerStopping,
                sent = tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(text.into()))) => match sent {
                    Ok(Ok(())) => self.last_sent = Instant::now(),
                    Ok(Err(_)) => return End::ClientLeft,
                    Err(_) => return End::TooSlow,
                },
            }
        }
    }

    /// Applies one command; answers with its confirmation, after an error when it was refused.
    fn command(&mut self, text: &str) -> Vec<Value> {
        let mut frame = Vec::new();
        match parse_command(text) {
            Ok(command) => {
                let id = command.id;
                self.watches.apply(command);
                frame.extend(id.map(confirm));
            }
            Err(e) => {
                frame.push(error(&e.to_string()));
                // Confirmed even so: the clients block on the confirmation of every command they send.
                frame.extend(command_id(text).map(confirm));
            }
        }
        frame
    }

    fn notifications(&self, changes: &[Arc<Change>]) -> Vec<Value> {
        changes
            .iter()
            .filter(|change| self.watches.matches(change))
            .filter_map(|change| {
                notification(change, |id| self.database.operations().get(id).map(|op| database_state_json(&op.snapshot())))
            })
            .collect()
    }
}
