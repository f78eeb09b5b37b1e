//! The server's log: files with retention (`log_files`), and the sink every line goes through
//! (`log_sink`: stderr, files, live watchers). Imports run one way: the sink uses the files.

mod log_files;
mod log_sink;

pub use log_files::LogFileSettings;
pub use log_sink::{sink, LevelControl, SinkWriter};
