//! Result records and their summary across repetitions.
//!
//! A [`Record`] is one (workload, peer, threads, repetition) measurement: the unit of the
//! `--json` and `--csv` files. [`summarize`] groups records that differ only in their
//! repetition and takes the median of each number: the figure the table and the plot show.

use serde::Serialize;

/// One measured run.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// Workload name.
    pub workload: String,
    /// Peer name.
    pub peer: String,
    /// Total threads.
    pub threads: usize,
    /// Repetition number, from 0.
    pub repetition: usize,
    /// Millions of operations per second.
    pub mops: f64,
    /// Operations performed.
    pub ops: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// Median sampled latency in ns (null if nothing was sampled).
    pub p50_ns: Option<u64>,
    /// 99th percentile latency in ns.
    pub p99_ns: Option<u64>,
    /// 99.9th percentile latency in ns.
    pub p999_ns: Option<u64>,
    /// Heap bytes per entry after the load (null where not measured).
    pub bytes_per_entry: Option<f64>,
    /// contree's own counters (null for other peers).
    pub stats: Option<serde_json::Value>,
    /// How the peer stored keys and values ("u64" or "bytes").
    pub repr: String,
    /// The workload's parameters.
    pub config: String,
    /// Millions of operations per second for each second of the run (time-series workloads).
    pub series: Option<Vec<f64>>,
    /// Readers beside the writers (seq-insert `--readers`): their millions of operations per
    /// second (`mops` and the latencies are then the writers').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_mops: Option<f64>,
    /// The readers' p99 latency in nanoseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_p99_ns: Option<u64>,
}

/// The median of `values` (mean of the middle two for an even count); `None` if empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The medians of one (workload, peer, threads) group.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Workload name.
    pub workload: String,
    /// Peer name.
    pub peer: String,
    /// Total threads.
    pub threads: usize,
    /// Repetitions summarised.
    pub repetitions: usize,
    /// Median throughput.
    pub mops: f64,
    /// Smallest and largest throughput across repetitions.
    pub mops_range: (f64, f64),
    /// Median p50 latency.
    pub p50_ns: Option<f64>,
    /// Median p99 latency.
    pub p99_ns: Option<f64>,
    /// Median p99.9 latency.
    pub p999_ns: Option<f64>,
    /// Median bytes per entry.
    pub bytes_per_entry: Option<f64>,
    /// Per-second series of the median repetition (by throughput).
    pub series: Option<Vec<f64>>,
    /// The stats of the last repetition.
    pub stats: Option<serde_json::Value>,
    /// Median reader throughput (seq-insert `--readers`).
    pub reader_mops: Option<f64>,
    /// Median reader p99 latency.
    pub reader_p99_ns: Option<f64>,
}

fn median_of(records: &[&Record], f: impl Fn(&Record) -> Option<f64>) -> Option<f64> {
    let mut v: Vec<f64> = records.iter().filter_map(|r| f(r)).collect();
    median(&mut v)
}

/// Groups `records` by (workload, peer, threads), keeping first-seen order.
pub fn summarize(records: &[Record]) -> Vec<Summary> {
    let mut keys: Vec<(String, String, usize)> = Vec::new();
    for r in records {
        let k = (r.workload.clone(), r.peer.clone(), r.threads);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(workload, peer, threads)| {
            let group: Vec<&Record> = records
                .iter()
                .filter(|r| r.workload == workload && r.peer == peer && r.threads == threads)
                .collect();
            let mops = median_of(&group, |r| Some(r.mops)).unwrap_or(0.0);
            let lo = group.iter().map(|r| r.mops).fold(f64::INFINITY, f64::min);
            let hi = group.iter().map(|r| r.mops).fold(0.0, f64::max);
            let mut by_mops = group.clone();
            by_mops.sort_by(|a, b| a.mops.total_cmp(&b.mops));
            let mid = by_mops[by_mops.len() / 2];
            Summary {
                repetitions: group.len(),
                mops,
                mops_range: (lo, hi),
                p50_ns: median_of(&group, |r| r.p50_ns.map(|x| x as f64)),
                p99_ns: median_of(&group, |r| r.p99_ns.map(|x| x as f64)),
                p999_ns: median_of(&group, |r| r.p999_ns.map(|x| x as f64)),
                bytes_per_entry: median_of(&group, |r| r.bytes_per_entry),
                series: mid.series.clone(),
                stats: group.last().and_then(|r| r.stats.clone()),
                reader_mops: median_of(&group, |r| r.reader_mops),
                reader_p99_ns: median_of(&group, |r| r.reader_p99_ns.map(|x| x as f64)),
                workload,
                peer,
                threads,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
