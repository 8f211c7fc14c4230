//! The NUMA topology: how many nodes the machine has and which node the calling thread runs
//! on, from the system or simulated ([`Topology`], chosen in [`Numa`](crate::Numa)).
//!
//! The thread's node is looked up once per thread and cached, as the thesis found per-operation
//! look-ups too slow (`numa-btree.md` §3.3.2): on the system topology `getcpu` is asked
//! once, the first time a thread needs its node, and a thread that the scheduler later moves
//! to another node keeps the node it started on (pin threads to cores for exact placement).
//! A simulated topology maps threads round-robin (the `k`-th thread of the process to touch a
//! tree with a simulated topology gets node `k % nodes`) or by a user function, called once
//! per thread and cached while the thread keeps using the same function.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The most NUMA nodes a topology may have (a page's node is kept in 6 bits).
pub const MAX_NUMA_NODES: usize = 64;

/// Where a tree's NUMA topology comes from ([`Numa::topology`](crate::Numa::topology)).
///
/// ```
/// use contree::{Config, Numa, ThreadMap, Topology, Tree};
/// let numa = Numa {
///     topology: Topology::Simulated { nodes: 4, threads: ThreadMap::RoundRobin },
///     replicas: true,
///     ..Numa::default()
/// };
/// let tree = Tree::with_config(Config { numa, ..Config::default() }).unwrap();
/// tree.insert(b"k", b"v").unwrap();
/// assert_eq!(tree.get(b"k"), Some(b"v".to_vec()));
/// assert_eq!(tree.stats().numa_nodes, 4);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Topology {
    /// The machine's: the nodes under `/sys/devices/system/node` and each thread's node
    /// from `getcpu` (Linux); one node elsewhere, or where the system tells nothing.
    #[default]
    System,
    /// `nodes` simulated nodes (1 to [`MAX_NUMA_NODES`]), threads mapped to them by
    /// `threads`: everything NUMA-aware runs, and is tested, on a one-node machine.
    Simulated {
        /// The number of nodes.
        nodes: usize,
        /// Which node each thread is on.
        threads: ThreadMap,
    },
}

/// How a simulated topology maps threads to nodes ([`Topology::Simulated`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ThreadMap {
    /// The `k`-th thread of the process that asks gets node `k % nodes`.
    #[default]
    RoundRobin,
    /// The node the function returns (taken modulo the node count), called once per thread.
    By(NodeFn),
}

/// A function that tells the calling thread's node ([`ThreadMap::By`]). A newtype, so that
/// [`Config`](crate::Config) keeps `Debug`, `Clone` and `PartialEq`: two are equal when they
/// are the same function object (`Arc::ptr_eq`).
///
/// ```
/// use contree::NodeFn;
/// let f = NodeFn::new(|| 1);
/// assert_eq!(f, f.clone());
/// assert_ne!(f, NodeFn::new(|| 1));
/// ```
#[derive(Clone)]
pub struct NodeFn(pub Arc<dyn Fn() -> usize + Send + Sync>);

impl NodeFn {
    /// Wraps `f`.
    pub fn new(f: impl Fn() -> usize + Send + Sync + 'static) -> NodeFn {
        NodeFn(Arc::new(f))
    }

    /// The function's identity, for the per-thread cache.
    fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }
}

// The function is asked for a thread's node before the tree reads or changes anything, and
// its answer is cached per thread: a panic inside it unwinds past no broken tree state, so a
// tree holding one is as unwind-safe as one without.
impl std::panic::UnwindSafe for NodeFn {}
impl std::panic::RefUnwindSafe for NodeFn {}

impl fmt::Debug for NodeFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeFn({:#x})", self.key())
    }
}

impl PartialEq for NodeFn {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A topology resolved for one tree: the node count and how to find the thread's node.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    nodes: usize,
    map: Map,
}

#[derive(Clone, Debug)]
enum Map {
    System,
    RoundRobin,
    By(NodeFn),
}

impl Resolved {
    /// Resolves `topology` (validated: a simulated node count in `1..=MAX_NUMA_NODES`).
    pub(crate) fn new(topology: &Topology) -> Resolved {
        match topology {
            Topology::System => Resolved {
                nodes: system_nodes(),
                map: Map::System,
            },
            Topology::Simulated { nodes, threads } => Resolved {
                nodes: (*nodes).clamp(1, MAX_NUMA_NODES),
                map: match threads {
                    ThreadMap::RoundRobin => Map::RoundRobin,
                    ThreadMap::By(f) => Map::By(f.clone()),
                },
            },
        }
    }

    /// The number of nodes.
    pub(crate) fn nodes(&self) -> usize {
        self.nodes
    }

    /// The calling thread's node, below [`nodes`](Self::nodes).
    #[inline]
    pub(crate) fn node(&self) -> usize {
        if self.nodes == 1 {
            return 0;
        }
        let n = match &self.map {
            Map::System => system_node(),
            Map::RoundRobin => thread_ordinal(),
            Map::By(f) => by_function(f),
        };
        n % self.nodes
    }
}

// Under Shuttle, whose threads share one OS thread: one of each per model thread (`seam`).
crate::sync::seam::model_local! {
    /// This thread's node on the system topology (`usize::MAX`: not asked yet).
    static SYSTEM_NODE: Cell<usize> = const { Cell::new(usize::MAX) };
    /// This thread's round-robin ordinal (`usize::MAX`: none yet).
    static ORDINAL: Cell<usize> = const { Cell::new(usize::MAX) };
    /// The last user function asked on this thread and its answer.
    static BY_FN: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The next round-robin ordinal.
static NEXT_ORDINAL: AtomicUsize = AtomicUsize::new(0);

fn thread_ordinal() -> usize {
    ORDINAL.with(|o| {
        if o.get() == usize::MAX {
            o.set(NEXT_ORDINAL.fetch_add(1, Ordering::Relaxed));
        }
        o.get()
    })
}

fn by_function(f: &NodeFn) -> usize {
    BY_FN.with(|c| {
        let (key, node) = c.get();
        if key == f.key() {
            return node;
        }
        let node = (f.0)();
        c.set((f.key(), node));
        node
    })
}

fn system_node() -> usize {
    SYSTEM_NODE.with(|c| {
        if c.get() == usize::MAX {
            c.set(getcpu_node().unwrap_or(0));
        }
        c.get()
    })
}

/// The NUMA nodes the system reports (at least 1, at most [`MAX_NUMA_NODES`]); read once.
pub(crate) fn system_nodes() -> usize {
    static NODES: OnceLock<usize> = OnceLock::new();
    *NODES.get_or_init(|| {
        std::fs::read_to_string("/sys/devices/system/node/online")
            .ok()
            .and_then(|s| highest_in_list(&s))
            .map_or(1, |highest| (highest + 1).clamp(1, MAX_NUMA_NODES))
    })
}

/// The highest number in a kernel list such as `0-1,3` (`None` if it cannot be read).
fn highest_in_list(list: &str) -> Option<usize> {
    list.trim()
        .split(',')
        .filter(|part| !part.is_empty())
        .map(|part| part.rsplit('-').next().and_then(|n| n.trim().parse().ok()))
        .try_fold(0usize, |max, n: Option<usize>| Some(max.max(n?)))
}

/// The node of the CPU the thread runs on now.
#[cfg(target_os = "linux")]
fn getcpu_node() -> Option<usize> {
    let (mut cpu, mut node) = (0u32, 0u32);
    // SAFETY: `getcpu` writes one `unsigned` to each of the two pointers, which point to
    // live locals; the third argument (a cache the kernel ignores) may be null.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut u32,
            &mut node as *mut u32,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    (rc == 0).then_some(node as usize)
}

#[cfg(not(target_os = "linux"))]
fn getcpu_node() -> Option<usize> {
    None
}

/// Binds the memory `addr..addr + len` (page-aligned, not yet touched) to NUMA node `node`
/// (`mbind` with `MPOL_BIND`); `false` if the kernel refuses (no NUMA support, a node it does
/// not have).
#[cfg(target_os = "linux")]
pub(crate) fn bind_to_node(addr: *mut u8, len: usize, node: usize) -> bool {
    const MPOL_BIND: libc::c_long = 2;
    if node >= MAX_NUMA_NODES {
        return false;
    }
    // Two words of node bits: the kernel reads `maxnode - 1` bits.
    let mut mask = [0 as libc::c_ulong; 2];
    mask[node / libc::c_ulong::BITS as usize] |= 1 << (node % libc::c_ulong::BITS as usize);
    // SAFETY: `mbind` only reads `mask` (two live words, `maxnode` bits of them) and changes
    // the policy of the caller's own mapping `addr..addr + len`; no memory is touched.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            (2 * libc::c_ulong::BITS + 1) as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_lists_parse() {
        assert_eq!(highest_in_list("0\n"), Some(0));
        assert_eq!(highest_in_list("0-3\n"), Some(3));
        assert_eq!(highest_in_list("0-1,4,6-7"), Some(7));
        assert_eq!(highest_in_list("x"), None);
    }

    #[test]
    fn the_system_has_at_least_one_node_and_the_thread_is_on_one_of_them() {
        let t = Resolved::new(&Topology::System);
        assert!((1..=MAX_NUMA_NODES).contains(&t.nodes()));
        assert!(t.node() < t.nodes());
    }

    #[test]
    fn round_robin_spreads_threads_and_caches_the_node() {
        let t = Resolved::new(&Topology::Simulated {
            nodes: 4,
            threads: ThreadMap::RoundRobin,
        });
        let nodes: Vec<usize> = (0..8)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    let n = t.node();
                    assert_eq!(t.node(), n, "cached");
                    n
                })
                .join()
                .unwrap()
            })
            .collect();
        // Consecutive ordinals (other tests may take some in between): not all on one node.
        assert!(nodes.iter().any(|&n| n != nodes[0]));
        assert!(nodes.iter().all(|&n| n < 4));
    }

    #[test]
    fn a_user_function_is_asked_once_per_thread() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let t = Resolved::new(&Topology::Simulated {
            nodes: 3,
            threads: ThreadMap::By(NodeFn::new(move || {
                c.fetch_add(1, Ordering::Relaxed);
                5
            })),
        });
        std::thread::spawn(move || {
            assert_eq!(t.node(), 2);
            assert_eq!(t.node(), 2);
        })
        .join()
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }
}
