//! The space manager never keeps a core busy for nothing: with a fill target no tree can
//! reach (1.0) and no pause between rounds (share 1.0), an idle tree still lets the thread
//! sleep. (Its own test binary: no other test's tree shares the thread meanwhile.)

#[cfg(target_os = "linux")]
#[test]
fn an_unreachable_fill_target_does_not_spin() {
    use contree::{Config, Tree};
    use std::time::Duration;

    /// CPU time of the space-manager thread, in clock ticks (user + system).
    fn manager_ticks() -> Option<u64> {
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let dir = task.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            if comm.trim() == "contree-space" {
                let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
                // Fields after the parenthesised name: utime and stime are 14 and 15.
                let rest = &stat[stat.rfind(')')? + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                return Some(f[11].parse::<u64>().ok()? + f[12].parse::<u64>().ok()?);
            }
        }
        None
    }

    let t = Tree::with_config(Config {
        fill_target: 1.0,
        space_manager_share: 1.0,
        ..Config::default()
    })
    .unwrap();
    for i in 0..1_000u64 {
        t.insert(&i.to_be_bytes(), b"v").unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let before = manager_ticks().expect("the space-manager thread runs");
    std::thread::sleep(Duration::from_secs(1));
    let used = manager_ticks().unwrap() - before;
    // Clock ticks are 10 ms: a spinning thread would use about 100 in that second.
    assert!(
        used <= 10,
        "the idle space manager used {used} ticks in 1 s"
    );
    drop(t);
}
