//! `cmpxchg(key)` in a `where` comparison (`where Name = cmpxchg($p0)`): before planning, each call is
//! replaced by a parameter holding the value's `Object` as stored when the query runs, so the planner only
//! ever sees plain values.

use corvid_rql::{Arg, Call, Expr, Operand, Query, Value as RqlValue, ValueKind};
use serde_json::{Map, Value};

use crate::EngineError;

/// Binds every `cmpxchg(...)` operand of the `where` clause; `read` answers the stored JSON of a key. True
/// when any was bound (the query and parameters changed).
pub(crate) fn bind_compare_exchange_calls(
    query: &mut Query,
    parameters: &mut Map<String, Value>,
    read: &dyn Fn(&str) -> Result<Option<String>, EngineError>,
) -> Result<bool, EngineError> {
    let Some(expr) = query.where_clause.as_mut() else { return Ok(false) };
    let mut binder = Binder { parameters, read, bound: 0 };
    binder.expr(expr)?;
    Ok(binder.bound > 0)
}

struct Binder<'a> {
    parameters: &'a mut Map<String, Value>,
    read: &'a dyn Fn(&str) -> Result<Option<String>, EngineError>,
    bound: usize,
}

impl Binder<'_> {
    fn expr(&mut self, expr: &mut Expr) -> Result<(), EngineError> {
        match expr {
            Expr::And(a, b) | Expr::Or(a, b) => {
                self.expr(a)?;
                self.expr(b)
            }
            Expr::Not { expr, .. } => self.expr(expr),
            Expr::Compare { left, right, .. } => {
                self.operand(left)?;
                self.operand(right)
            }
            _ => Ok(()),
        }
    }

    fn operand(&mut self, operand: &mut Operand) -> Result<(), EngineError> {
        let Operand::Call(call) = operand else { return Ok(()) };
        if !call.is("cmpxchg") {
            return Ok(());
        }
        let key = self.key(call)?;
        let object = match (self.read)(&key)? {
            Some(stored) => {
                serde_json::from_str::<Value>(&stored).ok().and_then(|mut v| v.get_mut("Object").map(Value::take)).unwrap_or(Value::Null)
            }
            None => Value::Null,
        };
        let name = format!("__cmpxchg{}", self.bound);
        self.bound += 1;
        self.parameters.insert(name.clone(), object);
        *operand = Operand::Value(RqlValue { kind: ValueKind::Parameter(name), span: call.span });
        Ok(())
    }

    fn key(&self, call: &Call) -> Result<String, EngineError> {
        let key = match call.args.as_slice() {
            [Arg::Value(RqlValue { kind: ValueKind::String(key), .. })] => Some(key.clone()),
            [Arg::Value(RqlValue { kind: ValueKind::Parameter(p), .. })] => {
                self.parameters.get(p).and_then(Value::as_str).map(str::to_owned)
            }
            _ => None,
        };
        key.ok_or_else(|| EngineError::InvalidQuery {
            message: format!("cmpxchg() needs one key (a string or a parameter holding one) (at position {})", call.span.start),
        })
    }
}
