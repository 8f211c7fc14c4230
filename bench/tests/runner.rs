//! The measured phase: a load inserts every record exactly once whatever the thread count,
//! a fixed operation count is honoured, and a timed phase stops on time.

use std::time::{Duration, Instant};

use contree_bench::adapters::{find_peer, Index, Shape};
use contree_bench::keys::KeyBuf;
use contree_bench::runner::{run_phase, Limit};
use contree_bench::workloads::hot_update::HotUpdate;
use contree_bench::workloads::load::{Load, Order};
use contree_bench::workloads::{Params, Workload};

fn btreemap(shape: Shape) -> Box<dyn Index> {
    find_peer("btreemap").unwrap().build(&shape).unwrap()
}

fn params(records: u64) -> Params {
    Params {
        records,
        ..Params::default()
    }
}

#[test]
fn load_inserts_every_record_once() {
    for order in [Order::Random, Order::Sorted] {
        for threads in [1, 3, 4] {
            let load = Load::new(params(1001), order);
            let index = btreemap(load.shape());
            let r = run_phase(index.as_ref(), &load, threads, Limit::UntilDone, 1, 1);
            assert_eq!(r.ops, 1001, "{order:?} with {threads} threads");
            let mut out = Vec::new();
            for id in 0..1001 {
                assert!(
                    index.get(KeyBuf::int(id).as_bytes(), &mut out),
                    "id {id} missing"
                );
            }
            assert!(!index.get(KeyBuf::int(1001).as_bytes(), &mut out));
            assert!(!r.latency.is_empty());
        }
    }
}

#[test]
fn fixed_ops_and_duration_limits_hold() {
    let hot = HotUpdate::new(params(100));
    let index = btreemap(hot.shape());
    hot.setup(index.as_ref(), 1);
    let r = run_phase(index.as_ref(), &hot, 3, Limit::Ops(1000), 32, 1);
    assert_eq!(r.ops, 1000);
    let start = Instant::now();
    let r = run_phase(
        index.as_ref(),
        &hot,
        2,
        Limit::Duration(Duration::from_millis(200)),
        32,
        2,
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(r.ops > 0 && r.mops() > 0.0);
    assert_eq!(r.per_second.iter().sum::<u64>(), r.ops);
}
