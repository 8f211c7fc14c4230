//! The operations of [`Tree`](crate::Tree), each with its docs and its code in one place:
//! point reads (`read`), point writes (`write`) and ranges (`scan`).

mod atomic;
mod bounds;
mod cursor;
mod read;
mod scan;
pub(crate) mod write;

pub use bounds::KeyRange;
pub use cursor::Cursor;
pub use read::GET_WITH_INLINE;
pub use scan::Range;
