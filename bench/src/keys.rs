//! Key and value encoding: how an item id becomes the key bytes every peer receives.
//!
//! - [`KeyKind::Int`]: the id as an 8-byte big-endian integer, so byte order is numeric order
//!   and adjacent ids sit in the same leaf.
//! - [`KeyKind::Str`]: YCSB-style `"user"` followed by the decimal FNV-1a hash of the id, a
//!   variable-length string (about 20 to 24 bytes) whose order is unrelated to the id.
//! - [`KeyKind::Long`]: a file path or URL of 50 to 200 bytes from a generator seeded by the
//!   id ([`long_key`]): a few dozen shared roots (hosts, home and data directories), then
//!   directory names from a small vocabulary, then the id in hex and an extension. Keys share
//!   long prefixes, as real path and URL sets do, and are unique because the id is in them.
//!
//! Values are `value_size` bytes derived from the id (and an update counter), so a reader can
//! tell whose value it got without any allocation.

use crate::generators::rng::{fnv1a64, FastRng};

/// The longest key any [`KeyKind`] produces, in bytes.
pub const MAX_KEY_LEN: usize = LONG_MAX;

/// Shortest and longest [`KeyKind::Long`] key.
pub const LONG_MIN: usize = 50;
/// See [`LONG_MIN`].
pub const LONG_MAX: usize = 200;

/// How ids are turned into keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyKind {
    /// 8-byte big-endian integers.
    Int,
    /// "user" plus the decimal hash of the id (YCSB).
    Str,
    /// File paths and URLs of 50 to 200 bytes.
    Long,
}

impl KeyKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Int => "int",
            KeyKind::Str => "str",
            KeyKind::Long => "long",
        }
    }

    /// The longest key of this kind, in bytes.
    pub fn max_len(self) -> usize {
        match self {
            KeyKind::Int => 8,
            KeyKind::Str => 24,
            KeyKind::Long => LONG_MAX,
        }
    }
}

/// A key on the stack. Short keys (`int`, `str`) fill only a 32-byte array, so making one
/// costs what it did before long keys existed; long keys use the larger variant.
#[derive(Debug, Clone, Copy)]
pub enum KeyBuf {
    /// Up to 32 bytes.
    Short {
        /// Key bytes (the first `len`).
        bytes: [u8; 32],
        /// Key length.
        len: u8,
    },
    /// Up to [`LONG_MAX`] bytes.
    Long {
        /// Key bytes (the first `len`).
        bytes: [u8; LONG_MAX],
        /// Key length.
        len: u8,
    },
}

impl KeyBuf {
    /// Encodes `id` under `kind`.
    #[inline]
    pub fn new(kind: KeyKind, id: u64) -> Self {
        match kind {
            KeyKind::Int => {
                let mut bytes = [0u8; 32];
                bytes[..8].copy_from_slice(&id.to_be_bytes());
                KeyBuf::Short { bytes, len: 8 }
            }
            KeyKind::Str => {
                let mut bytes = [0u8; 32];
                bytes[..4].copy_from_slice(b"user");
                let mut digits = [0u8; 20];
                let mut n = fnv1a64(id);
                let mut i = digits.len();
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                let d = &digits[i..];
                bytes[4..4 + d.len()].copy_from_slice(d);
                KeyBuf::Short {
                    bytes,
                    len: (4 + d.len()) as u8,
                }
            }
            KeyKind::Long => {
                let mut bytes = [0u8; LONG_MAX];
                let len = long_key(id, &mut bytes) as u8;
                KeyBuf::Long { bytes, len }
            }
        }
    }

    /// An integer key from a raw `u64` (big-endian).
    #[inline]
    pub fn int(id: u64) -> Self {
        Self::new(KeyKind::Int, id)
    }

    /// A key that no id encodes, next to this one in key order: this key and a zero byte
    /// (sorted right after it, before the next key), or, for a long key of the longest
    /// length, this key without its last byte. For reads of absent keys in the leaves the
    /// present ones live in (`ycsb --miss`).
    #[inline]
    pub fn absent_neighbour(mut self) -> Self {
        match &mut self {
            KeyBuf::Short { len, .. } if (*len as usize) < 32 => *len += 1,
            KeyBuf::Long { len, .. } if (*len as usize) < LONG_MAX => *len += 1,
            KeyBuf::Short { len, .. } | KeyBuf::Long { len, .. } => *len -= 1,
        }
        self
    }

    /// The key bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            KeyBuf::Short { bytes, len } => &bytes[..*len as usize],
            KeyBuf::Long { bytes, len } => &bytes[..*len as usize],
        }
    }
}

const HOSTS: [&str; 16] = [
    "www.example.com",
    "docs.rs",
    "github.com",
    "en.wikipedia.org",
    "news.ycombinator.com",
    "cdn.jsdelivr.net",
    "storage.googleapis.com",
    "static.example.org",
    "api.weather.gov",
    "archive.org",
    "www.bbc.co.uk",
    "images.unsplash.com",
    "registry.npmjs.org",
    "crates.io",
    "stackoverflow.com",
    "maps.openstreetmap.org",
];

const ROOTS: [&str; 16] = [
    "/home/alice",
    "/home/bob/projects",
    "/var/lib/postgresql/15/main",
    "/usr/share/doc",
    "/srv/www/htdocs",
    "/opt/data/warehouse",
    "/tmp/build",
    "/mnt/backup/2024",
    "/home/carol/Documents",
    "/var/log/nginx",
    "/usr/local/lib/python3.11/site-packages",
    "/data/lake/raw",
    "/home/dave/.cache",
    "/nix/store",
    "/var/cache/apt/archives",
    "/opt/models/checkpoints",
];

const WORDS: [&str; 32] = [
    "src",
    "images",
    "2024",
    "archive",
    "users",
    "projects",
    "reports",
    "assets",
    "thumbnails",
    "v1",
    "api",
    "static",
    "docs",
    "build",
    "release",
    "config",
    "logs",
    "data",
    "cache",
    "modules",
    "components",
    "include",
    "lib",
    "tests",
    "photos",
    "videos",
    "2023",
    "downloads",
    "shared",
    "public",
    "quarterly",
    "internal",
];

const EXTS: [&str; 8] = [
    ".html", ".json", ".jpg", ".txt", ".rs", ".tar.gz", ".csv", ".pdf",
];

/// Writes the long key of `id` (a URL or a file path of [`LONG_MIN`] to [`LONG_MAX`]
/// bytes) into `out` and returns its length. Deterministic in `id`; distinct ids give
/// distinct keys (the id is written in hex before the extension).
pub fn long_key(id: u64, out: &mut [u8; LONG_MAX]) -> usize {
    let mut rng = FastRng::new(fnv1a64(id));
    let mut len = 0;
    let mut push = |s: &[u8], len: &mut usize| {
        out[*len..*len + s.len()].copy_from_slice(s);
        *len += s.len();
    };
    // Half URLs, half file paths, each under one of 16 shared roots.
    let r = rng.next_u64();
    if r & 1 == 0 {
        push(b"https://", &mut len);
        push(HOSTS[(r >> 1) as usize % HOSTS.len()].as_bytes(), &mut len);
    } else {
        push(ROOTS[(r >> 1) as usize % ROOTS.len()].as_bytes(), &mut len);
    }
    push(b"/", &mut len);
    let ext = EXTS[(r >> 8) as usize % EXTS.len()].as_bytes();
    // The tail: "name-" + 16 hex digits of the id + extension.
    let name = WORDS[(r >> 16) as usize % WORDS.len()].as_bytes();
    let tail = name.len() + 1 + 16 + ext.len();
    // A target length, uniform over [LONG_MIN, LONG_MAX]; directories fill up to it.
    let target = LONG_MIN + rng.below((LONG_MAX - LONG_MIN + 1) as u64) as usize;
    loop {
        let w = WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes();
        if len + w.len() + 1 + tail > target {
            break;
        }
        push(w, &mut len);
        push(b"/", &mut len);
    }
    // Pad a short key with a directory of its own length so it reaches LONG_MIN.
    while len + tail < LONG_MIN {
        push(b"x", &mut len);
    }
    push(name, &mut len);
    push(b"-", &mut len);
    let mut hex = [0u8; 16];
    for (i, h) in hex.iter_mut().enumerate() {
        let nibble = (id >> (60 - 4 * i)) & 0xF;
        *h = b"0123456789abcdef"[nibble as usize];
    }
    push(&hex, &mut len);
    push(ext, &mut len);
    len
}

/// Fills `out` (its length is the value size) with bytes derived from `id` and `version`.
#[inline]
pub fn fill_value(out: &mut [u8], id: u64, version: u64) {
    let word = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ version).to_le_bytes();
    for (i, b) in out.iter_mut().enumerate() {
        *b = word[i % 8];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_keys_sort_like_ids() {
        let a = KeyBuf::int(5);
        let b = KeyBuf::int(300);
        assert!(a.as_bytes() < b.as_bytes());
        assert_eq!(a.as_bytes().len(), 8);
    }

    #[test]
    fn str_keys_look_like_ycsb() {
        let k = KeyBuf::new(KeyKind::Str, 42);
        let s = std::str::from_utf8(k.as_bytes()).unwrap();
        assert!(s.starts_with("user"));
        assert!(s[4..].bytes().all(|c| c.is_ascii_digit()));
        assert_ne!(k.as_bytes(), KeyBuf::new(KeyKind::Str, 43).as_bytes());
    }

    #[test]
    fn long_keys_are_paths_or_urls_of_50_to_200_bytes_and_unique() {
        let mut seen = std::collections::HashSet::new();
        let mut total = 0;
        for id in 0..100_000u64 {
            let k = KeyBuf::new(KeyKind::Long, id);
            let b = k.as_bytes();
            assert!((LONG_MIN..=LONG_MAX).contains(&b.len()), "{}", b.len());
            assert!(b.starts_with(b"https://") || b.starts_with(b"/"));
            assert!(seen.insert(b.to_vec()), "duplicate key for id {id}");
            assert_eq!(b, KeyBuf::new(KeyKind::Long, id).as_bytes());
            total += b.len();
        }
        let mean = total / 100_000;
        assert!((100..=150).contains(&mean), "mean length {mean}");
    }
}
