//! The operations of [`Tree`](crate::Tree), each with its docs and its code in one place:
//! point reads (`read`), point writes (`write`), the atomic per-key operations (`atomic`),
//! ranges (`scan`, `prefix`, `keys`), popping an end (`pop`), removing many entries
//! (`drain`), batches (`batch`) and the std collection traits (`collection`).

mod append;
mod atomic;
mod batch;
mod bounds;
mod collection;
mod combine;
mod cursor;
mod cursor_kit;
mod drain;
mod keys;
mod lines;
mod pop;
mod prefix;
mod read;
mod scan;
pub(crate) mod write;

pub use bounds::KeyRange;
pub use cursor::Cursor;
pub use keys::{Keys, Values};
pub use read::GET_WITH_INLINE;
pub use scan::Range;
