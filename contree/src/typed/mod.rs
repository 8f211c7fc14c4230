//! The typed layer: order-preserving codecs ([`codec`]), [`TreeMap`] over them (`map`) and
//! the ranges it takes (`range`).

mod atomic;
pub mod codec;
mod map;
mod range;

pub use map::{TreeMap, TypedRange};
pub use range::TypedKeyRange;
