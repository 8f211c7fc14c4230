//! The typed layer: order-preserving codecs ([`codec`]) and [`TreeMap`] over them (`map`).

mod atomic;
pub mod codec;
mod map;

pub use map::{TreeMap, TypedRange};
