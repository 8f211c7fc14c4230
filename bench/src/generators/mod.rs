//! Workload generators: the random number source, the zipfian distribution and the request
//! distributions built on it. Pure functions of a seed; no shared state.

pub mod distribution;
pub mod rng;
pub mod zipfian;

pub use distribution::{Distribution, KeyChooser};
pub use rng::FastRng;
pub use zipfian::Zipfian;
