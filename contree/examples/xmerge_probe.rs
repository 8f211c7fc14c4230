use contree::{Config, Tree};
fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(20_000, |s| s.parse().unwrap());
    let tree = Tree::with_config(Config {
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    let mut x = 1u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tree.insert(&x.to_be_bytes(), &x.to_le_bytes()).unwrap();
    }
    println!("{:?}", tree.stats());
    let freed = tree.compact();
    println!("freed {freed}");
    println!("{:?}", tree.stats());
    tree.check_invariants().unwrap();
}
