//! RavenDB's TCP protocol, which the clients' data subscription workers speak: the listener, the
//! connection header negotiation, the authorization hook and the dispatch of each operation.

mod admission;
mod authorization;
mod connection;
mod json_stream;
mod listener;
mod negotiation;
mod subscription_connection;
mod subscription_messages;
mod worker_options;

pub use listener::TcpService;
