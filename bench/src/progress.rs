//! The progress bar on stderr: one tick per measured run, with the run's name as message.
//! It is hidden when stderr is not a terminal (CI logs, pipes) or when asked to be quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar over a known number of runs.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `runs` steps; hidden when `quiet` or when stderr is not a terminal.
    pub fn new(runs: u64, quiet: bool) -> Self {
        let bar = if quiet || !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new(runs);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs, eta {eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        };
        Progress { bar }
    }

    /// A bar that never draws.
    pub fn hidden() -> Self {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Shows what runs now.
    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// One run done.
    pub fn tick(&self) {
        self.bar.inc(1);
    }

    /// Prints a line above the bar (or plainly to stderr when hidden).
    pub fn note(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
