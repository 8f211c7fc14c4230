//! Helpers of the concurrent tests: a check of scans taken beside writers, and a watchdog
//! that turns a hang into a failure.

#![allow(dead_code)]

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::Duration;

/// Checks one scan taken while other threads write: its keys ascend strictly, and every
/// key of `stable` (ascending: keys that nobody changed while the scan ran) is among them.
/// Returns the number of keys scanned; panics naming the first problem.
pub fn check_scan<K, S>(
    keys: impl IntoIterator<Item = K>,
    stable: impl IntoIterator<Item = S>,
) -> usize
where
    K: AsRef<[u8]>,
    S: AsRef<[u8]>,
{
    let mut stable = stable.into_iter().peekable();
    let mut prev: Option<Vec<u8>> = None;
    let mut n = 0;
    for k in keys {
        let k = k.as_ref();
        if let Some(p) = &prev {
            assert!(p.as_slice() < k, "scan out of order: {p:?} then {k:?}");
        }
        while let Some(s) = stable.next_if(|s| s.as_ref() <= k) {
            assert_eq!(s.as_ref(), k, "scan lost stable key {:?}", s.as_ref());
        }
        prev = Some(k.to_vec());
        n += 1;
    }
    if let Some(s) = stable.next() {
        panic!("scan lost stable key {:?} (and any after it)", s.as_ref());
    }
    n
}

/// As [`check_scan`], for a scan from the back: keys descend strictly; `stable` still
/// ascends.
pub fn check_scan_rev<K, S>(
    keys: impl IntoIterator<Item = K>,
    stable: impl IntoIterator<Item = S>,
) -> usize
where
    K: AsRef<[u8]>,
    S: AsRef<[u8]>,
{
    let mut keys: Vec<Vec<u8>> = keys.into_iter().map(|k| k.as_ref().to_vec()).collect();
    for w in keys.windows(2) {
        assert!(
            w[0] > w[1],
            "reverse scan out of order: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
    keys.reverse();
    check_scan(keys, stable)
}

/// Aborts the process, naming the test, if it is still alive when `limit` has passed:
/// a concurrent test must fail, never hang. Dropping the watchdog disarms it.
pub struct Watchdog(#[allow(dead_code)] Sender<()>);

pub fn watchdog(test: &'static str, limit: Duration) -> Watchdog {
    let (tx, rx) = channel::<()>();
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("{test}: still running after {limit:?}, a hang: aborting");
            dump_stacks();
            std::process::abort();
        }
    });
    Watchdog(tx)
}

/// Prints every thread's stack to stderr through `gdb`, where the machine has it (a hang
/// seen once in CI could not be reproduced; its stacks are what would explain it). Bounded
/// by `timeout`, so a stuck debugger cannot turn the abort into a hang.
fn dump_stacks() {
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("timeout")
        .args([
            "60",
            "gdb",
            "-p",
            &pid,
            "-batch",
            "-nx",
            "-ex",
            "thread apply all bt",
        ])
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("(no thread stacks: gdb is not installed or could not attach: {status:?})");
    }
}
