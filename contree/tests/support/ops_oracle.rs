//! The answer an executor operation must get, from a `BTreeMap` oracle that the operation
//! changes as the executor's tree would (shared by `tests/executor.rs` and the Shuttle
//! models of the executor).

use contree::{Bytes, Op, OpResult};
use std::collections::BTreeMap;

/// Applies `op`'s effect to `oracle` and returns the answer it must get.
pub fn expect(oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>, op: &Op) -> OpResult {
    Ok(match op {
        Op::Get(k) => oracle.get(k.as_slice()).cloned(),
        Op::Insert(k, v) => oracle.insert(k.to_vec(), v.to_vec()),
        Op::Remove(k) => oracle.remove(k.as_slice()),
        _ => unreachable!(),
    }
    .map(Bytes::from))
}
