//! Backing off between optimistic attempts that restart: a restart usually means one
//! concurrent write that ends within a few hundred cycles, so the first retries spin
//! briefly; after that the writer is likely descheduled (many threads on few cores), and
//! spinning on would only burn the time slice it needs, so each further retry gives the
//! CPU away first.
//!
//! Every loop that repeats an optimistic attempt after a failed validation goes through a
//! `Backoff`, also when the failure comes after the attempt (a cursor that validated its
//! leaf copy and then found a blob latched by a writer): a loop that never yields can keep
//! a preempted writer off the CPU for as long as it spins. The Shuttle models find such
//! loops (a prioritized reader spinning forever under the PCT scheduler).

/// Retries of a failing optimistic attempt that spin before the retries yield.
const SPINS: u32 = 4;

/// The retry count of one optimistic loop; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    attempts: u32,
}

impl Backoff {
    /// Waits before the next attempt: a short spin (`2^n` spin hints) for the first
    /// retries, a yield of the CPU after them.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        self.attempts = self.attempts.saturating_add(1);
        Self::pause(self.attempts);
    }

    /// The wait before retry number `attempts` (from 1) of a loop that counts its retries
    /// itself (a loop whose retry is out of line and takes only values).
    #[inline]
    pub(crate) fn pause(attempts: u32) {
        if attempts < SPINS {
            for _ in 0..(1u32 << attempts) {
                std::hint::spin_loop();
            }
        } else {
            crate::sync::seam::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_first_then_counts_on() {
        let mut b = Backoff::default();
        for n in 1..=10 {
            b.snooze();
            assert_eq!(b.attempts, n);
        }
    }
}
