//! Histories of concurrent operations on a tree and their linearizability check.
//!
//! Every operation a model thread makes is recorded with its key, its result and the
//! logical times of its call and its return (one counter shared by all model threads: Shuttle
//! runs one thread at a time, so the counter orders the events as they happened). A scan
//! is recorded as one observation per key of the model's key set inside the part of the
//! range it covered: `Some(value)` for a key it returned, `None` for one it passed over.
//! Each observation claims that the key had that value at some moment of the scan, which
//! is what a scan of a concurrent tree promises (it is not a snapshot).
//!
//! Every operation touches one key, so the history is linearizable when each key's part
//! is (linearizability is local): the check searches, per key, for an order of its events
//! that respects real time (an event that returned before another was called comes first)
//! and in which every result is the one the sequential specification gives.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub type Val = Option<Vec<u8>>;

/// An operation on one key, with its arguments.
#[derive(Clone, Debug)]
pub enum Op {
    Insert(Vec<u8>),
    Remove,
    Get,
    /// `update_with`: inverts the value's first byte, returns the value's length.
    Update,
    /// `fetch_update` to this value (`None` removes); returns the old value.
    FetchUpdate(Val),
    CompareExchange(Val, Val),
    InsertIfAbsent(Vec<u8>),
    /// `remove_if` with a predicate that holds when the value's first byte is even.
    RemoveIfEven,
    /// What a scan (or the final check) saw of the key.
    Observe,
}

/// An operation's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Res {
    Val(Val),
    Len(Option<usize>),
    Cas(Result<(), Val>),
    Bool(bool),
    /// The operation failed (`Error::OutOfSpace`) and must not have changed anything.
    Failed,
}

#[derive(Clone)]
pub struct Event {
    pub key: usize,
    pub thread: usize,
    pub op: Op,
    pub res: Res,
    pub call: u64,
    pub ret: u64,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:>4}..{:>4}] thread {} {:?} -> {:?}",
            self.call,
            self.ret,
            self.thread,
            Short(&self.op),
            Short(&self.res)
        )
    }
}

/// Debug output with values cut to their first bytes and length.
struct Short<'a, T>(&'a T);

impl<T: fmt::Debug> fmt::Debug for Short<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = format!("{:?}", self.0);
        if s.len() > 160 {
            write!(f, "{}...", &s[..160])
        } else {
            f.write_str(&s)
        }
    }
}

/// Whether `CONTREE_SHUTTLE_TRACE` is set: then every call and return is printed as it
/// happens, which shows the operations in flight when an execution hangs (Shuttle's step
/// bound) or panics inside the tree, where no history is dumped.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("CONTREE_SHUTTLE_TRACE").is_some())
}

/// The events of one execution.
#[derive(Default)]
pub struct History {
    clock: AtomicU64,
    events: Mutex<Vec<Event>>,
    /// Operations that touch no key of their own (`compact()`): time, thread, what.
    notes: Mutex<Vec<(u64, u64, usize, String)>>,
}

impl History {
    /// A logical time: no Shuttle scheduling point, so nothing runs between taking it and
    /// the call or return it stamps.
    pub fn now(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    pub fn push(&self, e: Event) {
        self.events.lock().unwrap().push(e);
    }

    /// Runs `f` as operation `op` on `key` by `thread` and records it.
    pub fn run(&self, thread: usize, key: usize, op: Op, f: impl FnOnce() -> Res) -> Res {
        let call = self.now();
        if tracing() {
            eprintln!(
                "[{call:>4}] thread {thread} calls {:?} on key {key}",
                Short(&op)
            );
        }
        let res = f();
        let ret = self.now();
        if tracing() {
            eprintln!("[{ret:>4}] thread {thread} returns {:?}", Short(&res));
        }
        self.push(Event {
            key,
            thread,
            op,
            res: res.clone(),
            call,
            ret,
        });
        res
    }

    /// Records an operation that is not checked per key (`compact()`), for the report.
    pub fn note(&self, thread: usize, what: impl FnOnce() -> String) {
        let call = self.now();
        if tracing() {
            eprintln!("[{call:>4}] thread {thread} starts a note");
        }
        let what = what();
        let ret = self.now();
        if tracing() {
            eprintln!("[{ret:>4}] thread {thread} {what}");
        }
        self.notes.lock().unwrap().push((call, ret, thread, what));
    }

    /// Every event and note so far in call order, one per line, with keys by `name`.
    pub fn dump(&self, name: impl Fn(usize) -> String) -> String {
        let mut lines: Vec<(u64, String)> = self
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| !matches!(e.op, Op::Observe) || e.res != Res::Val(None))
            .map(|e| (e.call, format!("{e:?} on {}", name(e.key))))
            .collect();
        for (call, ret, thread, what) in self.notes.lock().unwrap().iter() {
            lines.push((
                *call,
                format!("[{call:>4}..{ret:>4}] thread {thread} {what}"),
            ));
        }
        lines.sort_by_key(|l| l.0);
        lines.into_iter().map(|l| l.1 + "\n").collect()
    }

    /// The events recorded so far, in call order (the history keeps them for `dump`).
    pub fn take_events(&self) -> Vec<Event> {
        let mut events = self.events.lock().unwrap().clone();
        events.sort_by_key(|e| e.call);
        events
    }
}

/// The sequential specification: the state after `op` from `state` if `res` is the result
/// it gives there, else `None`.
fn step(state: &Val, op: &Op, res: &Res) -> Option<Val> {
    let expect = |r: Res, next: Val| (*res == r).then_some(next);
    if *res == Res::Failed {
        // Only writes that may need a page can fail, and a failure changes nothing.
        return matches!(
            op,
            Op::Insert(_)
                | Op::FetchUpdate(Some(_))
                | Op::CompareExchange(..)
                | Op::InsertIfAbsent(_)
        )
        .then(|| state.clone());
    }
    match op {
        Op::Insert(v) => expect(Res::Val(state.clone()), Some(v.clone())),
        Op::Remove => expect(Res::Val(state.clone()), None),
        Op::Get | Op::Observe => expect(Res::Val(state.clone()), state.clone()),
        Op::Update => match state {
            Some(v) => {
                let mut n = v.clone();
                flip_ends(&mut n);
                expect(Res::Len(Some(v.len())), Some(n))
            }
            None => expect(Res::Len(None), None),
        },
        Op::FetchUpdate(new) => expect(Res::Val(state.clone()), new.clone()),
        Op::CompareExchange(current, new) => {
            if state == current {
                expect(Res::Cas(Ok(())), new.clone())
            } else {
                expect(Res::Cas(Err(state.clone())), state.clone())
            }
        }
        Op::InsertIfAbsent(v) => match state {
            Some(_) => expect(Res::Bool(false), state.clone()),
            None => expect(Res::Bool(true), Some(v.clone())),
        },
        Op::RemoveIfEven => match state {
            Some(v) if v[0] % 2 == 0 => expect(Res::Val(state.clone()), None),
            _ => expect(Res::Val(None), state.clone()),
        },
    }
}

/// Checks that the events on each key are linearizable from `initial(key)`; on failure,
/// returns a report of the first key that is not, with its events.
pub fn check_linearizable(
    events: &[Event],
    keys: usize,
    initial: impl Fn(usize) -> Val,
    name: impl Fn(usize) -> String,
) -> Result<(), String> {
    let mut per_key: Vec<Vec<&Event>> = (0..keys).map(|_| Vec::new()).collect();
    for e in events {
        per_key[e.key].push(e);
    }
    for (key, mut evs) in per_key.into_iter().enumerate() {
        if evs.is_empty() {
            continue;
        }
        evs.sort_by_key(|e| e.call);
        assert!(
            evs.len() <= 128,
            "too many events on one key for the search"
        );
        let mut failed = HashSet::new();
        if !search(&evs, 0, &initial(key), &mut failed) {
            let mut report = format!(
                "the operations on key {} are not linearizable (initial value {:?}):\n",
                name(key),
                Short(&initial(key))
            );
            for e in &evs {
                report.push_str(&format!("  {e:?}\n"));
            }
            return Err(report);
        }
    }
    Ok(())
}

/// Depth-first search for a linearization of the events not in `done` (a bit set).
fn search(evs: &[&Event], done: u128, state: &Val, failed: &mut HashSet<(u128, Val)>) -> bool {
    if done.count_ones() as usize == evs.len() {
        return true;
    }
    if failed.contains(&(done, state.clone())) {
        return false;
    }
    // An event may come next only if no pending event returned before it was called.
    let first_ret = evs
        .iter()
        .enumerate()
        .filter(|(i, _)| done & (1 << i) == 0)
        .map(|(_, e)| e.ret)
        .min()
        .unwrap();
    for (i, e) in evs.iter().enumerate() {
        if done & (1 << i) != 0 || e.call > first_ret {
            continue;
        }
        if let Some(next) = step(state, &e.op, &e.res) {
            if search(evs, done | (1 << i), &next, failed) {
                return true;
            }
        }
    }
    failed.insert((done, state.clone()));
    false
}

/// What `update_with` does in the models: flips the first byte and the last (a value in a
/// leaf in line mode spans several stretches: a torn read shows one flipped alone).
pub fn flip_ends(v: &mut [u8]) {
    v[0] = !v[0];
    if let Some(last) = v.len().checked_sub(1).filter(|&l| l > 0) {
        v[last] = !v[last];
    }
}
