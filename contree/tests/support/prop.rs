//! The proptest configuration the property-test files share.

use proptest::test_runner::Config as PropConfig;

/// `cases` cases (`PROPTEST_CASES` overrides), nothing persisted, shrinking bounded.
pub fn prop_config(cases: u32) -> PropConfig {
    PropConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..PropConfig::default()
    }
}
