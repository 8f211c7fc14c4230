//! Trees at every page size, for the files that test out-of-line keys and values.

use contree::{Config, Tree};

/// Every page size the tests of out-of-line entries cover.
pub const PAGE_SIZES: [usize; 4] = [4096, 8192, 16384, 65536];

/// A tree with `page_size` pages and no space manager thread (so counts stay exact).
pub fn tree_with(page_size: usize) -> Tree {
    Tree::with_config(Config {
        page_size,
        space_manager: false,
        ..Config::default()
    })
    .unwrap()
}
