//! Resident memory of this process (Linux: `/proc/self/statm`; 0 elsewhere), shared by the
//! examples and `tests/space_churn.rs` (included with `#[path]`).

/// Resident bytes of this process.
pub fn rss() -> isize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<isize>().ok())
        .map_or(0, |pages| pages * 4096)
}
