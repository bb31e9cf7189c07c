//! Caches of NVRTC output: on disk across processes, and in memory within one.
//!
//! A search runs a batched binary's variants in one process, one process per batch, each of
//! them compiling the kernels it runs; NVRTC takes about 55 ms per kernel, so 155 variants
//! cost seconds of compilation per search, the same every time the search runs again. Images
//! are therefore kept on disk, keyed by everything that decides what NVRTC produces: the
//! source, the options (defines and target architecture, in order) and NVRTC's version.
//!
//! Where the cache lives ([`cache_dir`]): `$GPUTUNE_KERNEL_CACHE` if set (empty or `off`
//! disables it), else `$XDG_CACHE_HOME/gputune/kernels`, else `~/.cache/gputune/kernels`.
//! Entries are written to a temporary file and renamed into place, so concurrent processes
//! never read half an entry; an entry that fails its checks (wrong magic, key, length or
//! checksum) is ignored and compiled again. Deleting the directory is always safe.
//!
//! Nothing here needs a GPU or NVRTC: the CUDA backend computes the key from NVRTC's version
//! and calls `Memo::get_or_compile` with its compiler.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use gputune_protocol::hash::{Fnv128, Fnv64};

/// Environment variable naming the kernel cache directory; empty or `off` disables the disk
/// cache (the in-process cache still works).
pub const KERNEL_CACHE_ENV: &str = "GPUTUNE_KERNEL_CACHE";

/// Bumped whenever the entry layout or the meaning of the key changes, so old entries miss.
/// 2 added the lowered names of name expressions after the image.
const FORMAT_VERSION: u32 = 2;

/// First bytes of every entry.
const MAGIC: [u8; 4] = *b"GTKC";

/// magic (4) + format (4) + key (16) + kind (1) + padding (3) + length (8) + checksum (8).
const HEADER_LEN: usize = 44;

/// What NVRTC produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// SASS for a real architecture: loads without JIT.
    Cubin,
    /// PTX text, NUL-terminated: the driver JITs it when the module is loaded.
    Ptx,
}

impl ImageKind {
    fn code(self) -> u8 {
        match self {
            ImageKind::Cubin => 1,
            ImageKind::Ptx => 2,
        }
    }

    fn from_code(code: u8) -> Option<ImageKind> {
        match code {
            1 => Some(ImageKind::Cubin),
            2 => Some(ImageKind::Ptx),
            _ => None,
        }
    }
}

/// A compiled module image, ready for `cuModuleLoadData`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Image {
    /// Cubin or PTX.
    pub kind: ImageKind,
    /// The bytes; PTX text ends with its NUL, which the driver needs.
    pub bytes: Vec<u8>,
    /// Each NVRTC name expression compiled with it (`scale<float>`) and the lowered (mangled)
    /// name under which the module holds that kernel.
    pub names: Vec<(String, String)>,
}

impl Image {
    /// PTX text as an image: NUL-terminated, cut at an inner NUL (the driver would stop there).
    pub fn ptx(text: &str) -> Image {
        let mut bytes: Vec<u8> = text.bytes().take_while(|&b| b != 0).collect();
        bytes.push(0);
        Image {
            kind: ImageKind::Ptx,
            bytes,
            names: Vec::new(),
        }
    }

    /// A cubin as an image.
    pub fn cubin(bytes: Vec<u8>) -> Image {
        Image {
            kind: ImageKind::Cubin,
            bytes,
            names: Vec::new(),
        }
    }

    /// The image as a disk cache entry of `key` holds it: checked by [`Image::decode`].
    #[cfg(feature = "cuda")]
    pub fn encode(&self, key: Key) -> Vec<u8> {
        encode(key, self)
    }

    /// The image [`Image::encode`] wrote for `key`; `None` if `data` is anything else.
    #[cfg(feature = "cuda")]
    pub fn decode(data: &[u8], key: Key) -> Option<Image> {
        decode(data, key)
    }
}

/// Identity of one compilation: a 128-bit digest of the NVRTC version, the options in order
/// and the source. Stable across processes, machines and Rust versions (the workspace's
/// FNV-1a, not `std`'s hasher, whose output may change between releases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key(u128);

impl Key {
    /// The key of compiling `source` with `options` (each as NVRTC gets it, so the target
    /// architecture and every `-D` are part of it) by NVRTC `major.minor`.
    #[cfg(test)]
    pub fn new(source: &str, options: &[String], nvrtc_version: (i32, i32)) -> Key {
        Key::with_headers(source, &[], options, nvrtc_version)
    }

    /// [`Key::new`] of a source that NVRTC is handed `headers` with (`(include name,
    /// contents)`, in order): their names and contents are part of the key.
    pub fn with_headers(
        source: &str,
        headers: &[(String, String)],
        options: &[String],
        nvrtc_version: (i32, i32),
    ) -> Key {
        let mut h = Fnv128::new();
        // Every field is length-prefixed, so no two different inputs feed the same bytes.
        h.field(b"gputune kernel");
        h.field(&FORMAT_VERSION.to_le_bytes());
        h.field(&nvrtc_version.0.to_le_bytes());
        h.field(&nvrtc_version.1.to_le_bytes());
        h.field(&(options.len() as u64).to_le_bytes());
        for option in options {
            h.field(option.as_bytes());
        }
        h.field(source.as_bytes());
        // Without headers the key is what it was before headers existed: caches stay warm.
        if !headers.is_empty() {
            h.field(&(headers.len() as u64).to_le_bytes());
            for (name, contents) in headers {
                h.field(name.as_bytes());
                h.field(contents.as_bytes());
            }
        }
        Key(h.finish())
    }

    /// The digest itself, to carry a key to another process.
    #[cfg(feature = "cuda")]
    pub fn bits(self) -> u128 {
        self.0
    }

    /// The key whose [`Key::bits`] are `bits`.
    #[cfg(feature = "cuda")]
    pub fn from_bits(bits: u128) -> Key {
        Key(bits)
    }

    /// 32 lower-case hex digits: the entry's file name.
    pub fn hex(self) -> String {
        format!("{:032x}", self.0)
    }
}

/// The kernel cache directory this process uses, from the environment (see the module
/// documentation); `None` when it is disabled or no home directory is known.
pub fn cache_dir() -> Option<PathBuf> {
    resolve_dir(
        std::env::var_os(KERNEL_CACHE_ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// [`cache_dir`] from the three variables' values.
fn resolve_dir(
    explicit: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return (!dir.is_empty() && dir != "off").then(|| PathBuf::from(dir));
    }
    // The XDG specification says a relative value is invalid and must be ignored.
    if let Some(xdg) = xdg_cache_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Some(xdg.join("gputune").join("kernels"));
    }
    home.filter(|h| !h.is_empty()).map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("gputune")
            .join("kernels")
    })
}

/// Compiled images on disk, one file per key.
#[derive(Debug, Clone)]
pub(crate) struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// The cache in `dir` (created on the first store).
    pub fn at(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The cache [`cache_dir`] names, if any.
    pub fn from_env() -> Option<DiskCache> {
        cache_dir().map(DiskCache::at)
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: Key) -> PathBuf {
        self.dir.join(format!("{}.kernel", key.hex()))
    }

    /// Whether an entry is stored under `key` (not read or checked: a damaged one is found
    /// so only when it is loaded). Cheap enough to ask for every variant of a search before
    /// deciding how many compilers to start.
    pub fn contains(&self, key: Key) -> bool {
        self.path(key).is_file()
    }

    /// The image stored under `key`; `None` when there is none or it fails a check (a
    /// truncated write, another format version, a damaged file): it is then compiled again
    /// and replaced.
    pub fn load(&self, key: Key) -> Option<Image> {
        let data = std::fs::read(self.path(key)).ok()?;
        decode(&data, key)
    }

    /// Stores `image` under `key`: written to a temporary file in the same directory, then
    /// renamed over the entry, so a reader sees the old entry, the new one, or none.
    pub fn store(&self, key: Key, image: &Image) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.hex(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(&encode(key, image))?;
            f.flush()
        });
        let renamed = written.and_then(|()| std::fs::rename(&tmp, self.path(key)));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        renamed
    }
}

fn encode(key: Key, image: &Image) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + image.bytes.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&key.0.to_le_bytes());
    out.extend_from_slice(&[image.kind.code(), 0, 0, 0]);
    out.extend_from_slice(&(image.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&Fnv64::of(&image.bytes).to_le_bytes());
    out.extend_from_slice(&image.bytes);
    // The names follow the image: a count, then each expression and lowered name, each
    // length-prefixed.
    out.extend_from_slice(&(image.names.len() as u32).to_le_bytes());
    for (expression, lowered) in &image.names {
        for text in [expression, lowered] {
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
    }
    out
}

/// The names trailer of an entry; `None` if it is not exactly a well-formed one.
fn decode_names(mut rest: &[u8]) -> Option<Vec<(String, String)>> {
    let take_u32 = |rest: &mut &[u8]| -> Option<usize> {
        let (n, after) = rest.split_first_chunk::<4>()?;
        *rest = after;
        usize::try_from(u32::from_le_bytes(*n)).ok()
    };
    let count = take_u32(&mut rest)?;
    let mut names = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let mut text = || -> Option<String> {
            let len = take_u32(&mut rest)?;
            let bytes = rest.get(..len)?;
            rest = &rest[len..];
            String::from_utf8(bytes.to_vec()).ok()
        };
        let expression = text()?;
        let lowered = text()?;
        names.push((expression, lowered));
    }
    rest.is_empty().then_some(names)
}

fn decode(data: &[u8], key: Key) -> Option<Image> {
    let header = data.get(..HEADER_LEN)?;
    let u32_at = |i: usize| {
        header
            .get(i..i + 4)?
            .try_into()
            .ok()
            .map(u32::from_le_bytes)
    };
    let u64_at = |i: usize| {
        header
            .get(i..i + 8)?
            .try_into()
            .ok()
            .map(u64::from_le_bytes)
    };
    let stored_key = header
        .get(8..24)?
        .try_into()
        .ok()
        .map(u128::from_le_bytes)?;
    if header[..4] != MAGIC || u32_at(4)? != FORMAT_VERSION || stored_key != key.0 {
        return None;
    }
    let kind = ImageKind::from_code(header[24])?;
    let len = usize::try_from(u64_at(28)?).ok()?;
    let payload = data.get(HEADER_LEN..HEADER_LEN.checked_add(len)?)?;
    if u64_at(36)? != Fnv64::of(payload) {
        return None;
    }
    let names = decode_names(&data[HEADER_LEN + len..])?;
    if payload.is_empty() || (kind == ImageKind::Ptx && payload.last() != Some(&0)) {
        return None;
    }
    Some(Image {
        kind,
        bytes: payload.to_vec(),
        names,
    })
}

/// Where an image came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Already compiled (or being compiled) in this process.
    Memory,
    /// Read from the disk cache.
    Disk,
    /// Compiled by NVRTC just now.
    Compiled,
}

/// One slot per key; its `OnceLock` makes concurrent requests for the same key wait for one
/// compilation instead of running NVRTC twice.
type Slot<E> = Arc<OnceLock<Result<Arc<Image>, E>>>;

/// The in-process cache: each key is compiled (or read from disk) at most once per process,
/// failures included (a source that does not compile fails the same way every time; saying
/// so again costs nothing, compiling it again costs NVRTC's time).
/// `E` is what a failed compilation leaves for later callers (it must be cloneable).
#[derive(Debug)]
pub(crate) struct Memo<E = String> {
    slots: Mutex<HashMap<Key, Slot<E>>>,
}

impl<E> Default for Memo<E> {
    fn default() -> Self {
        Memo {
            slots: Mutex::default(),
        }
    }
}

impl<E: Clone> Memo<E> {
    /// Whether `key` is settled in memory (an image, or a failure remembered).
    pub fn holds(&self, key: Key) -> bool {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.get(&key).is_some_and(|slot| slot.get().is_some())
    }

    /// The image for `key`: from memory, else from `disk`, else from `compile` (whose result
    /// is then stored on `disk`; a failed store only costs the next process a compilation,
    /// so it is reported through `on_store_error` and otherwise ignored).
    pub fn get_or_compile(
        &self,
        key: Key,
        disk: Option<&DiskCache>,
        compile: impl FnOnce() -> Result<Image, E>,
        on_store_error: impl FnOnce(&Path, std::io::Error),
    ) -> (Result<Arc<Image>, E>, Origin) {
        let slot = {
            // A poisoned lock only means a thread panicked while inserting; the map is whole.
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.entry(key).or_default().clone()
        };
        let mut origin = Origin::Memory;
        let result = slot.get_or_init(|| {
            if let Some(image) = disk.and_then(|d| d.load(key)) {
                origin = Origin::Disk;
                return Ok(Arc::new(image));
            }
            origin = Origin::Compiled;
            let image = compile()?;
            if let Some(d) = disk {
                if let Err(e) = d.store(key, &image) {
                    on_store_error(d.dir(), e);
                }
            }
            Ok(Arc::new(image))
        });
        (result.clone(), origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn options(defines: &[&str]) -> Vec<String> {
        std::iter::once("--gpu-architecture=sm_90".to_string())
            .chain(defines.iter().map(|d| format!("-D{d}")))
            .collect()
    }

    /// A fresh directory under the system temp directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "gputune-kernel-cache-{name}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn fake_cubin(seed: u8) -> Image {
        Image::cubin((0..200u8).map(|i| i.wrapping_mul(seed)).collect())
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let src = "extern \"C\" __global__ void k() {}";
        let base = Key::new(src, &options(&["IPT=4", "TPB=256"]), (13, 0));
        assert_eq!(
            base,
            Key::new(src, &options(&["IPT=4", "TPB=256"]), (13, 0)),
            "the same inputs give the same key"
        );
        let others = [
            Key::new(
                "extern \"C\" __global__ void k() { }",
                &options(&["IPT=4", "TPB=256"]),
                (13, 0),
            ),
            Key::new(src, &options(&["IPT=8", "TPB=256"]), (13, 0)),
            Key::new(src, &options(&["IPT=4", "TPB=128"]), (13, 0)),
            Key::new(src, &options(&["TPB=256", "IPT=4"]), (13, 0)),
            Key::new(src, &options(&["IPT=4"]), (13, 0)),
            Key::new(
                src,
                &[
                    "--gpu-architecture=sm_100".to_string(),
                    "-DIPT=4".into(),
                    "-DTPB=256".into(),
                ],
                (13, 0),
            ),
            Key::new(
                src,
                &[
                    "--gpu-architecture=compute_90".to_string(),
                    "-DIPT=4".into(),
                    "-DTPB=256".into(),
                ],
                (13, 0),
            ),
            Key::new(src, &options(&["IPT=4", "TPB=256"]), (13, 1)),
            Key::new(src, &options(&["IPT=4", "TPB=256"]), (12, 0)),
        ];
        for (i, k) in others.iter().enumerate() {
            assert_ne!(*k, base, "input change {i} kept the key");
        }
        // Field boundaries count: moving a character between option and source changes it.
        assert_ne!(
            Key::new("ab", &["c".to_string()], (13, 0)),
            Key::new("b", &["ca".to_string()], (13, 0))
        );
        assert_ne!(
            Key::new("x", &["-DA=1".to_string(), "-DB=2".to_string()], (13, 0)),
            Key::new("x", &["-DA=1-DB=2".to_string()], (13, 0))
        );
        assert_eq!(base.hex().len(), 32);
        assert!(base.hex().bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn the_key_is_stable_across_builds() {
        // Changing this digest invalidates every cache on disk: bump FORMAT_VERSION instead
        // of changing the hash silently.
        // Format 2 (with lowered names); format 1 gave 27c183d7a7f477e86c1e44b365089337.
        assert_eq!(
            Key::new("s", &["-DX=1".to_string()], (13, 0)).hex(),
            "0aff1969d863083346d6f517ebcf07e0"
        );
        // An entry's checksum is FNV-1a 64 of its payload (the specification's value for "a").
        let entry = encode(Key(0), &Image::cubin(b"a".to_vec()));
        assert_eq!(entry[36..44], 0xaf63_dc4c_8601_ec8c_u64.to_le_bytes());
    }

    #[test]
    fn lowered_names_travel_with_the_image_and_a_bad_trailer_is_a_miss() {
        let mut image = Image::cubin(b"cubin".to_vec());
        image.names = vec![("scale<float>".into(), "_Z5scaleIfEvPKT_PS0_".into())];
        let entry = encode(Key(7), &image);
        assert_eq!(decode(&entry, Key(7)), Some(image.clone()));
        assert_eq!(decode(&entry[..entry.len() - 1], Key(7)), None, "cut short");
        let mut longer = entry.clone();
        longer.push(0);
        assert_eq!(decode(&longer, Key(7)), None, "trailing bytes");
    }

    #[test]
    fn the_cache_directory_follows_the_environment() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            resolve_dir(os("/data/k"), os("/xdg"), os("/home/u")),
            Some(PathBuf::from("/data/k"))
        );
        assert_eq!(resolve_dir(os(""), os("/xdg"), os("/home/u")), None);
        assert_eq!(resolve_dir(os("off"), os("/xdg"), os("/home/u")), None);
        assert_eq!(
            resolve_dir(None, os("/xdg"), os("/home/u")),
            Some(PathBuf::from("/xdg/gputune/kernels"))
        );
        assert_eq!(
            resolve_dir(None, os("relative"), os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/gputune/kernels"))
        );
        assert_eq!(
            resolve_dir(None, None, os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/gputune/kernels"))
        );
        assert_eq!(resolve_dir(None, None, None), None);
        assert_eq!(resolve_dir(None, os(""), os("")), None);
    }

    #[test]
    fn entries_round_trip_and_other_keys_miss() {
        let dir = TempDir::new("round-trip");
        let cache = DiskCache::at(&dir.0);
        let k1 = Key::new("a", &options(&["IPT=1"]), (13, 0));
        let k2 = Key::new("a", &options(&["IPT=2"]), (13, 0));
        assert_eq!(cache.load(k1), None, "an empty cache misses");
        assert!(!cache.contains(k1));
        let cubin = fake_cubin(3);
        cache.store(k1, &cubin).expect("store");
        assert_eq!(cache.load(k1), Some(cubin.clone()));
        assert!(cache.contains(k1) && !cache.contains(k2));
        assert_eq!(cache.load(k2), None);
        let ptx = Image::ptx(".version 8.0\n.target sm_90\n");
        cache.store(k2, &ptx).expect("store");
        let loaded = cache.load(k2).expect("hit");
        assert_eq!(loaded.kind, ImageKind::Ptx);
        assert_eq!(loaded.bytes.last(), Some(&0));
        // Storing again replaces the entry; no temporary file is left behind.
        cache.store(k1, &fake_cubin(5)).expect("store");
        assert_eq!(cache.load(k1), Some(fake_cubin(5)));
        let names: Vec<String> = std::fs::read_dir(&dir.0)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().all(|n| n.ends_with(".kernel")), "{names:?}");
    }

    #[test]
    fn a_damaged_entry_is_ignored() {
        let dir = TempDir::new("damaged");
        let cache = DiskCache::at(&dir.0);
        let key = Key::new("a", &options(&[]), (13, 0));
        let image = fake_cubin(7);
        cache.store(key, &image).expect("store");
        let path = cache.path(key);
        let good = std::fs::read(&path).expect("read");

        let mut flipped = good.clone();
        *flipped.last_mut().expect("payload") ^= 1;
        let truncated = good[..good.len() - 10].to_vec();
        let header_only = good[..HEADER_LEN].to_vec();
        let mut wrong_magic = good.clone();
        wrong_magic[0] = b'X';
        let mut wrong_version = good.clone();
        wrong_version[4] = 99;
        let mut wrong_kind = good.clone();
        wrong_kind[24] = 9;
        // An entry renamed to another key's file must not be taken for it.
        let other = Key::new("b", &options(&[]), (13, 0));
        for (what, bytes) in [
            ("flipped", flipped),
            ("truncated", truncated),
            ("header only", header_only),
            ("empty", Vec::new()),
            ("magic", wrong_magic),
            ("version", wrong_version),
            ("kind", wrong_kind),
        ] {
            std::fs::write(&path, &bytes).expect("write");
            assert_eq!(cache.load(key), None, "{what}");
        }
        std::fs::write(cache.path(other), &good).expect("write");
        assert_eq!(cache.load(other), None, "another key's entry");

        // Through the memo: the damaged entry is compiled again and replaced.
        std::fs::write(&path, b"garbage").expect("write");
        let memo = Memo::<String>::default();
        let (got, origin) = memo.get_or_compile(
            key,
            Some(&cache),
            || Ok(image.clone()),
            |_, e| panic!("{e}"),
        );
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(got.as_deref(), Ok(&image));
        assert_eq!(cache.load(key), Some(image));
    }

    #[test]
    fn the_memo_compiles_once_then_reads_memory_then_disk() {
        let dir = TempDir::new("memo");
        let cache = DiskCache::at(dir.0.join("nested").join("kernels"));
        let key = Key::new("k", &options(&["IPT=4"]), (13, 0));
        let calls = AtomicUsize::new(0);
        let compile = || {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(fake_cubin(11))
        };
        let memo = Memo::<String>::default();
        assert!(!memo.holds(key));
        let (first, o1) = memo.get_or_compile(key, Some(&cache), compile, |_, e| panic!("{e}"));
        assert!(memo.holds(key));
        let (second, o2) = memo.get_or_compile(key, Some(&cache), compile, |_, e| panic!("{e}"));
        assert_eq!((o1, o2), (Origin::Compiled, Origin::Memory));
        assert_eq!(first, second);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // A new process (a new memo) finds the entry on disk and compiles nothing.
        let (third, o3) =
            Memo::<String>::default()
                .get_or_compile(key, Some(&cache), compile, |_, e| panic!("{e}"));
        assert_eq!(o3, Origin::Disk);
        assert_eq!(third, first);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn concurrent_requests_compile_once_and_failures_are_remembered() {
        let memo = Memo::<String>::default();
        let key = Key::new("k", &options(&["IPT=16"]), (13, 0));
        let calls = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let (r, _) = memo.get_or_compile(
                        key,
                        None,
                        || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Err("syntax error".to_string())
                        },
                        |_, _| {},
                    );
                    assert_eq!(r, Err("syntax error".to_string()));
                });
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_cache_that_cannot_be_written_still_compiles() {
        let dir = TempDir::new("unwritable");
        // A file where the directory should be: every store fails.
        std::fs::write(&dir.0, b"not a directory").expect("write");
        let cache = DiskCache::at(dir.0.join("kernels"));
        let key = Key::new("k", &options(&[]), (13, 0));
        let mut reported = None;
        let (r, origin) = Memo::<String>::default().get_or_compile(
            key,
            Some(&cache),
            || Ok(fake_cubin(2)),
            |d, _| reported = Some(d.to_path_buf()),
        );
        assert_eq!(origin, Origin::Compiled);
        assert!(r.is_ok());
        assert_eq!(reported, Some(dir.0.join("kernels")));
        let _ = std::fs::remove_file(&dir.0);
    }

    #[test]
    fn ptx_images_are_nul_terminated_once() {
        assert_eq!(Image::ptx("abc").bytes, b"abc\0");
        assert_eq!(Image::ptx("ab\0junk").bytes, b"ab\0");
    }
}
