//! Long keys: a key longer than a node stores whole
//! ([`Config::max_inline_key_len`](crate::Config::max_inline_key_len), a sixteenth of a page)
//! keeps its first `long_head` bytes in the node and the rest out of line (`crate::blob`: a
//! heap chunk, or a page chain past a page). Every node that names such a key (a leaf entry,
//! an inner separator, a fence) holds its *stored form*: the key's first `long_head` bytes
//! followed by the blob's 8-byte stub (the key's length and the blob's place). The stored
//! form is `long_key_len = max_inline_key_len + 1` bytes long, a length no key stored whole
//! has, so a node knows a long key by its length alone, and every routine that moves
//! entries, fences or separators (builder, splits, merges, XMerge) moves the stored form as
//! opaque bytes. Node prefixes stop four bytes before the stub (`node::prefix_cap`), so
//! prefixes and slot heads hold key bytes only.
//!
//! ```text
//! stored form: key[..long_head] | stub (key length, place of the blob)
//! key blob:    reference count u32 LE | key[long_head..]
//! ```
//!
//! **Order.** Searches compare a real key with a stored form: the inline bytes first, and
//! only when they tie (the keys share `long_head` bytes) the rest, compared in the blob
//! ([`compare_stored`]). A separator is a stored form too, so inner nodes route long keys
//! exactly, whatever prefix the keys share.
//!
//! **Sharing and reclamation.** A separator or fence made from a long key is a copy of its
//! stored form, naming the same blob. The blob's first four bytes count the stored forms
//! that name it (changed under the tree's heap mutex, which also keeps heap chunks in place;
//! readers never read them): an insert writes the blob with a count of 1; a structure change
//! counts the stored forms in the nodes it changes before and after ([`KeyRefs`]) and applies
//! the difference, adding before its latches are released and dropping (freeing a blob whose
//! count reaches 0) after. A removal drops its key's count after the leaf's latch is
//! released. So an optimistic reader that read a stored form validates a node version that
//! moved before the blob could be freed, as for out-of-line values. `check_invariants`
//! recounts every blob.
//!
//! **Cost.** Trees that never stored a long key pay nothing but a length compare in the
//! slow path of a search and a flag load per structure change; a long key costs its stored
//! form in each node that names it, its rest plus 8 bytes in the heap, and a blob compare per
//! search that ties on its first `long_head` bytes.

use crate::blob::{self, Place, Stub, STUB_LEN};
use crate::engine::TreeCore;
use crate::error::Error;
use crate::heap::HeapState;
use crate::node::raw::RawPage;
use crate::node::{long_head, long_key_len, Node};
use crate::page::Directory;
use crate::sync::Restart;
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;

/// The longest key a tree accepts, whatever its page size: 16 KiB.
pub const MAX_KEY_LEN: usize = 16 << 10;

/// Bytes of the reference count at the start of a key blob.
const COUNT: usize = 4;

/// The stub of the stored form `stored` if it is one (its length says so).
#[inline]
pub(crate) fn stub_of(stored: &[u8], page_size: usize) -> Option<Stub> {
    if stored.len() != long_key_len(page_size) {
        return None;
    }
    let b: [u8; STUB_LEN] = stored[long_head(page_size)..].try_into().ok()?;
    Some(Stub::decode(b))
}

/// The length of the blob of a long key of `key_len` bytes, or `Restart` for a length no
/// long key has (a garbage stub).
#[inline]
pub(crate) fn blob_len(key_len: usize, page_size: usize) -> Result<usize, Restart> {
    let head = long_head(page_size);
    if key_len <= head || key_len > MAX_KEY_LEN {
        return Err(Restart);
    }
    Ok(key_len - head + COUNT)
}

/// The stored form of `key` (longer than a node stores whole) whose blob is at `at`.
pub(crate) fn stored_form(key: &[u8], at: Place, page_size: usize) -> Vec<u8> {
    let head = long_head(page_size);
    let mut out = Vec::with_capacity(head + STUB_LEN);
    out.extend_from_slice(&key[..head]);
    out.extend_from_slice(&Stub { at, len: key.len() }.encode());
    out
}

/// Replaces a stored form in `key` by the whole key (a key stored whole is left alone).
/// Optimistic: garbage (but bounded) unless the node the stored form came from validates
/// afterwards.
#[inline]
pub(crate) fn expand(key: &mut Vec<u8>, dir: &Directory) -> Result<(), Restart> {
    let size = dir.page_size();
    match stub_of(key, size) {
        None => Ok(()),
        Some(stub) => expand_stub(key, stub, dir, size),
    }
}

#[cold]
#[inline(never)]
fn expand_stub(key: &mut Vec<u8>, stub: Stub, dir: &Directory, size: usize) -> Result<(), Restart> {
    let len = blob_len(stub.len, size)?;
    key.truncate(long_head(size));
    blob::read_bytes(dir, size, stub.at, len, COUNT, key)
}

/// Compares a stored key with `other`: `page[off..off + len]` holds the stored form's bytes
/// from position `skip` of some key suffix on, whose first `skip` bytes equal
/// `other[..skip]`; the last [`STUB_LEN`] of them are the stub of a long key. The inline
/// bytes are compared first; if they tie, the rest of the key is compared in its blob.
/// Optimistic: the caller validates the page afterwards.
#[cold]
#[inline(never)]
pub(crate) fn compare_stored(
    page: RawPage,
    off: usize,
    len: usize,
    skip: usize,
    other: &[u8],
    dir: &Directory,
) -> Result<Ordering, Restart> {
    let inline = len.checked_sub(STUB_LEN).ok_or(Restart)?;
    let o = other.get(skip..).unwrap_or_default();
    let n = inline.min(o.len());
    let head = page.compare(off, n, &o[..n])?;
    if head != Ordering::Equal {
        return Ok(head);
    }
    if o.len() <= inline {
        // `other` ends within the inline bytes: the long key goes on.
        return Ok(Ordering::Greater);
    }
    let mut b = [0u8; STUB_LEN];
    page.copy_to(off + inline, &mut b)?;
    let size = dir.page_size();
    let stub = Stub::decode(b);
    let blen = blob_len(stub.len, size)?;
    blob::compare_bytes(dir, size, stub.at, blen, COUNT, &o[inline..])
}

/// The stubs of the stored forms in a node: its fences and its keys, one entry per stored
/// form (so a blob named twice appears twice).
pub(crate) fn refs_in(node: &Node, out: &mut Vec<Stub>) -> Result<(), Restart> {
    let size = node.page_size();
    let long = long_key_len(size);
    let mut key = Vec::new();
    for fence in [node.lower_fence()?, node.upper_fence()?]
        .into_iter()
        .flatten()
    {
        if let Some(stub) = stub_of(&fence, size) {
            out.push(stub);
        }
    }
    let plen = node.prefix_len();
    for i in 0..node.count() {
        let e = node.entry(i)?;
        if plen + e.suffix_len == long {
            key.clear();
            node.push_key(i, &mut key)?;
            if let Some(stub) = stub_of(&key, size) {
                out.push(stub);
            }
        }
    }
    Ok(())
}

/// How many entries of `node` hold a long key's stored form.
pub(crate) fn long_entries(node: &Node) -> Result<usize, Restart> {
    let long = long_key_len(node.page_size());
    let plen = node.prefix_len();
    let mut n = 0;
    for i in 0..node.count() {
        n += usize::from(plen + node.entry(i)?.suffix_len == long);
    }
    Ok(n)
}

/// The stored forms a structure change finds in the nodes it changes, counted before the
/// change and after it, to apply the difference to the blobs' reference counts. Empty and
/// free for trees that never stored a long key.
#[derive(Debug, Default)]
pub(crate) struct KeyRefs {
    active: bool,
    before: Vec<Stub>,
    after: Vec<Stub>,
}

impl KeyRefs {
    /// Starts counting for `core`, called with the changed nodes latched.
    pub(crate) fn new(core: &TreeCore) -> KeyRefs {
        KeyRefs {
            active: core.has_long_keys(),
            ..KeyRefs::default()
        }
    }

    /// Counts the stored forms of `node` (latched) before the change.
    pub(crate) fn before(&mut self, node: &Node) {
        if self.active {
            refs_in(node, &mut self.before).expect("a latched node");
        }
    }

    /// Counts the stored forms of `node` (still latched) after the change.
    pub(crate) fn after(&mut self, node: &Node) {
        if self.active {
            refs_in(node, &mut self.after).expect("a latched node");
        }
    }

    /// Applies the additions now (the changed nodes are still latched) and returns the
    /// blobs whose count drops, one entry per dropped stored form, for
    /// [`TreeCore::release_keys`] once the latches are released.
    pub(crate) fn settle(mut self, core: &TreeCore) -> Vec<Stub> {
        if !self.active {
            return Vec::new();
        }
        self.before.sort_unstable();
        self.after.sort_unstable();
        let (mut gained, mut lost) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        while i < self.before.len() || j < self.after.len() {
            match (self.before.get(i), self.after.get(j)) {
                (Some(b), Some(a)) if b == a => {
                    i += 1;
                    j += 1;
                }
                (Some(b), Some(a)) if b < a => {
                    lost.push(*b);
                    i += 1;
                }
                (Some(b), None) => {
                    lost.push(*b);
                    i += 1;
                }
                (_, Some(a)) => {
                    gained.push(*a);
                    j += 1;
                }
                (None, None) => unreachable!(),
            }
        }
        if !gained.is_empty() {
            let mut st = core.heap_lock();
            for stub in gained {
                let n = core.key_refs_of(&st, stub);
                core.set_key_refs(&mut st, stub, n + 1);
            }
        }
        lost
    }
}

impl TreeCore {
    /// Whether this tree ever stored a long key (then structure changes count stored forms).
    #[inline]
    pub(crate) fn has_long_keys(&self) -> bool {
        self.long_keys.load(AtomicOrdering::Acquire)
    }

    /// Writes the rest of `key` (longer than a node stores whole) out of line with a
    /// reference count of 1 and returns its stored form; `OutOfSpace` (changing nothing)
    /// when the budget does not allow it.
    pub(crate) fn write_long_key(&self, key: &[u8]) -> Result<Vec<u8>, Error> {
        // Set before the stored form can reach a node (under that node's latch), so a
        // structure change that latches the node afterwards sees it.
        self.long_keys.store(true, AtomicOrdering::Release);
        let size = self.config().page_size;
        let at = self.write_bytes(&[&1u32.to_le_bytes(), &key[long_head(size)..]])?;
        Ok(stored_form(key, at, size))
    }

    /// The reference count of the key blob `stub` names (under the heap mutex `st`).
    pub(crate) fn key_refs_of(&self, st: &HeapState, stub: Stub) -> u32 {
        let len = blob_len(stub.len, self.config().page_size).expect("a long key");
        u32::from_le_bytes(self.read_unread(st, stub.at, len))
    }

    fn set_key_refs(&self, st: &mut HeapState, stub: Stub, n: u32) {
        let len = blob_len(stub.len, self.config().page_size).expect("a long key");
        self.write_unread(st, stub.at, len, &n.to_le_bytes());
    }

    /// Frees the blob of `form`, a stored form written by
    /// [`write_long_key`](Self::write_long_key) that no node took.
    pub(crate) fn release_long_form(&self, form: &[u8]) {
        let stub = stub_of(form, self.config().page_size).expect("a stored form");
        self.release_keys(&[stub]);
    }

    /// Frees the blob of a long key's stored form, named by no node any more (the caller
    /// owns the tree or holds the count at zero).
    pub(crate) fn free_key_blob(&self, st: &mut HeapState, stub: Stub) {
        let len = blob_len(stub.len, self.config().page_size).expect("a long key");
        match stub.at {
            Place::Chunk(pid, slot) => self.heap_free(st, (pid, slot)),
            Place::Chain(_) => self.free_bytes(stub.at, len),
        }
    }

    /// Drops one reference per entry of `stubs` (stored forms that left the tree under
    /// latches released since) and frees the blobs nobody names any more.
    pub(crate) fn release_keys(&self, stubs: &[Stub]) {
        if stubs.is_empty() {
            return;
        }
        let mut st = self.heap_lock();
        for &stub in stubs {
            let refs = self.key_refs_of(&st, stub);
            assert!(refs > 0, "a key blob released more often than named");
            self.set_key_refs(&mut st, stub, refs - 1);
            if refs == 1 {
                self.free_key_blob(&mut st, stub);
            }
        }
    }
}
