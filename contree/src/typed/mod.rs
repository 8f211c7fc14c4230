//! The typed layer: order-preserving codecs ([`codec`]), [`TreeMap`] over them (`map`), its
//! atomic per-key operations (`atomic`), its std collection surface (`collection`), the
//! ranges it takes (`range`) and, with the `serde`
//! feature, its serde support (`serde`).

mod atomic;
pub mod codec;
mod collection;
mod map;
mod range;
#[cfg(feature = "serde")]
mod serde;

pub use map::{TreeMap, TypedRange};
pub use range::TypedKeyRange;
