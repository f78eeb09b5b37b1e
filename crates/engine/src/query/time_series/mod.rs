//! Time-series sub-queries in projections: `select timeseries(from HeartRate between $a and $b group by 1h
//! select min(), max())` and functions declared with `declare timeseries f(p) { from p.HeartRate ... }`,
//! parsed once per query (`parse`, over `lexer` and `bucket`) and run per result document (`evaluate`).

mod bucket;
mod error;
mod evaluate;
mod lexer;
mod parse;

pub(crate) use evaluate::run;
pub(crate) use parse::{parse, TimeSeriesQuery};
