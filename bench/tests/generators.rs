//! Statistical checks of the workload generators: zipfian skew, YCSB operation mixes, and a
//! latest distribution that follows the inserts.

use contree_bench::generators::{Distribution, FastRng, KeyChooser, Zipfian};
use contree_bench::workloads::ycsb::{Op, YcsbKind};

const DRAWS: usize = 400_000;

#[test]
fn zipfian_frequencies_match_the_formula() {
    let n = 1000;
    let z = Zipfian::new(n, 0.99);
    let mut rng = FastRng::new(1);
    let mut counts = vec![0usize; n as usize];
    for _ in 0..DRAWS {
        counts[z.next(&mut rng) as usize] += 1;
    }
    // The head ranks follow p(i) = 1 / (i+1)^theta / zeta(n) within a few percent.
    for rank in [0u64, 1, 2, 5, 10] {
        let expected = z.probability(rank) * DRAWS as f64;
        let got = counts[rank as usize] as f64;
        let err = (got - expected).abs() / expected;
        // Ranks above 1 come from the closed-form approximation (Gray et al.): allow more.
        let tolerance = if rank < 2 { 0.03 } else { 0.25 };
        assert!(
            err < tolerance,
            "rank {rank}: got {got}, expected {expected:.0}"
        );
    }
    // Skew: the top 10% of ranks take most of the draws, and popularity falls with rank.
    let top: usize = counts[..(n as usize / 10)].iter().sum();
    assert!(top as f64 > 0.6 * DRAWS as f64, "top 10% took {top}");
    assert!(counts[0] > counts[1] && counts[1] > counts[9] && counts[9] > counts[99]);
    assert!(counts.iter().all(|&c| c < DRAWS), "draws stay in range");
}

#[test]
fn lower_theta_is_less_skewed() {
    let mut rng = FastRng::new(2);
    let share_of_rank0 = |theta: f64, rng: &mut FastRng| {
        let z = Zipfian::new(10_000, theta);
        (0..100_000).filter(|_| z.next(rng) == 0).count()
    };
    let hot = share_of_rank0(0.99, &mut rng);
    let mild = share_of_rank0(0.5, &mut rng);
    assert!(
        hot > 5 * mild,
        "theta 0.99 gave {hot}, theta 0.5 gave {mild}"
    );
}

#[test]
fn zipfian_grow_matches_a_fresh_one() {
    let mut grown = Zipfian::new(100, 0.9);
    grown.grow(5000);
    let fresh = Zipfian::new(5000, 0.9);
    assert!((grown.probability(0) - fresh.probability(0)).abs() < 1e-12);
    assert_eq!(grown.items(), 5000);
}

#[test]
fn scrambled_zipfian_spreads_the_hot_items() {
    let n = 10_000;
    let mut c = KeyChooser::new(Distribution::ScrambledZipfian, n, 0.99);
    let mut rng = FastRng::new(3);
    let mut counts = vec![0usize; n as usize];
    for _ in 0..DRAWS {
        counts[c.next(&mut rng, n) as usize] += 1;
    }
    let max = *counts.iter().max().unwrap();
    let hottest = counts.iter().position(|&x| x == max).unwrap();
    // Still skewed, but the hottest id is not id 0 and the low ids are not all hot.
    assert!(max as f64 > 0.05 * DRAWS as f64);
    assert_ne!(hottest, 0);
    let low: usize = counts[..10].iter().sum();
    assert!(low < max, "the first ids are not the hot ones");
}

#[test]
fn uniform_is_flat() {
    let n = 100;
    let mut c = KeyChooser::new(Distribution::Uniform, n, 0.99);
    let mut rng = FastRng::new(4);
    let mut counts = vec![0usize; n as usize];
    for _ in 0..DRAWS {
        counts[c.next(&mut rng, n) as usize] += 1;
    }
    let expected = DRAWS as f64 / n as f64;
    assert!(counts
        .iter()
        .all(|&x| (x as f64 - expected).abs() < 0.1 * expected));
}

#[test]
fn latest_follows_the_inserts() {
    let mut c = KeyChooser::new(Distribution::Latest, 1000, 0.99);
    let mut rng = FastRng::new(5);
    for items in [1000u64, 5000, 20_000] {
        let draws: Vec<u64> = (0..50_000).map(|_| c.next(&mut rng, items)).collect();
        assert!(draws.iter().all(|&id| id < items));
        let newest = draws.iter().filter(|&&id| id == items - 1).count();
        let recent = draws.iter().filter(|&&id| id >= items - items / 10).count();
        // The newest id is the single most popular one, and the newest tenth dominates.
        assert!(newest > 3_500, "items {items}: newest drawn {newest} times");
        assert!(
            recent > 30_000,
            "items {items}: recent tenth drawn {recent} times"
        );
        let old = draws.iter().filter(|&&id| id < items / 2).count();
        assert!(old < recent / 4);
    }
}

fn proportions(kind: YcsbKind) -> [f64; 5] {
    let mix = kind.mix();
    let mut rng = FastRng::new(6);
    let mut counts = [0usize; 5];
    for _ in 0..DRAWS {
        let i = match mix.choose(rng.next_f64()) {
            Op::Read => 0,
            Op::Update => 1,
            Op::Insert => 2,
            Op::Scan => 3,
            Op::ReadModifyWrite => 4,
        };
        counts[i] += 1;
    }
    counts.map(|c| c as f64 / DRAWS as f64)
}

#[test]
fn ycsb_mixes_have_their_proportions() {
    // read, update, insert, scan, read-modify-write
    let expected = [
        (YcsbKind::A, [0.5, 0.5, 0.0, 0.0, 0.0]),
        (YcsbKind::B, [0.95, 0.05, 0.0, 0.0, 0.0]),
        (YcsbKind::C, [1.0, 0.0, 0.0, 0.0, 0.0]),
        (YcsbKind::D, [0.95, 0.0, 0.05, 0.0, 0.0]),
        (YcsbKind::E, [0.0, 0.0, 0.05, 0.95, 0.0]),
        (YcsbKind::F, [0.5, 0.0, 0.0, 0.0, 0.5]),
        (YcsbKind::ReadHeavy, [0.75, 0.25, 0.0, 0.0, 0.0]),
    ];
    for (kind, want) in expected {
        let got = proportions(kind);
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() < 0.005,
                "{}: got {got:?}, want {want:?}",
                kind.name()
            );
        }
    }
    assert_eq!(YcsbKind::D.default_distribution(), Distribution::Latest);
    assert_eq!(YcsbKind::A.default_distribution(), Distribution::Zipfian);
}
