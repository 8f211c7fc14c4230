//! Structure changes: splits (`split`, one splitter per node: `gate`), merges after removals (`merge`) and XMerge
//! (`xmerge`). Every change of an inner node, whichever of these makes it, passes through
//! `inner`.
//!
//! Structure changes latch top-down (parent before child) so latches are always taken in
//! tree order; merges and XMerge take latches only with `try`, so they never wait and never
//! slow the data path down.

mod gate;
pub(crate) use gate::SplitGates;
mod inner;
mod merge;
pub(crate) use merge::Deferred;
mod split;
pub(crate) use split::Spare;
pub(crate) mod xmerge;
