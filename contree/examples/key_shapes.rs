//! The tree's shape after loading keys of four shapes in random order: height, leaf and
//! inner pages, and page bytes per entry (`Stats::bytes_allocated / len`), with the space
//! manager off so that the numbers do not depend on timing. Shows what suffix truncation
//! of separators (`docs/design.md`, "Suffix truncation") does to inner nodes.
//! Run: `cargo run --release -p contree --example key_shapes`.

use contree::{Config, Tree};

/// A 64-bit mix (the finaliser of MurmurHash3): distinct inputs give distinct outputs.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

fn load(name: &str, n: u64, key: impl Fn(u64) -> Vec<u8>) {
    let config = Config {
        space_manager: false,
        ..Config::default()
    };
    let tree = Tree::with_config(config).expect("default page size");
    for i in 0..n {
        tree.insert(&key(i), &i.to_le_bytes()).expect("short keys");
    }
    let s = tree.stats();
    println!(
        "{name:<28} {:>9} {:>6} {:>7} {:>6} {:>9.2}",
        s.len,
        s.height,
        s.leaf_pages,
        s.inner_pages,
        s.bytes_allocated as f64 / s.len as f64
    );
}

fn main() {
    println!(
        "{:<28} {:>9} {:>6} {:>7} {:>6} {:>9}",
        "keys", "entries", "height", "leaves", "inner", "B/entry"
    );
    load("random u64 (big-endian)", 1_000_000, |i| {
        (mix(i) >> 1).to_be_bytes().to_vec()
    });
    load("user + hashed id", 200_000, |i| {
        format!("user{}", mix(i) % 10_000_000_000_000_000_000).into_bytes()
    });
    load("file paths", 100_000, |i| {
        format!(
            "/usr/share/docs/project-{}/src/module_{}/file_{i}.rs",
            mix(i) % 97,
            mix(i ^ 7) % 1000
        )
        .into_bytes()
    });
}
