//! Compiling in child processes.
//!
//! NVRTC serialises the compilations of one process: on an H200 host (16 cores, NVRTC 13.0),
//! 30 compilations of a CUB kernel took 57 s on 15 threads of one process, the rate of one
//! thread, and 4.6 s on 15 processes (`scripts/gpu/nvrtc-scaling.py`, BENCHMARKS.md). So the
//! background compilations of a bench ([`CudaHandles::precompile_programs`]) run in copies
//! of the bench binary started as compile workers, one per compile thread.
//!
//! [`crate::main`] answers as a worker when `GPUTUNE_COMPILE_WORKER` is set, before it reads
//! its command line ([`serve_if_asked`]), and otherwise records that its executable can be
//! started so ([`enable`]). A process that never went through it (a test binary, a program
//! calling [`CudaHandles::precompile`] itself) compiles on its threads, as does one whose
//! worker cannot be started (a warning says so once).
//!
//! The wire is the worker's stdin and stdout: frames of `GTCW`, a little-endian `u32` length
//! and that many bytes. A job holds the program (source, file name, headers, include
//! directories, options), its defines and name expressions, the compute capability and the
//! cache key; its answer, the image as the disk cache encodes it (which carries the key and a
//! checksum), or the failure's kind and message. Bytes before a frame's magic are skipped, so
//! a bench whose `main` prints before it calls [`crate::main`] still serves. A worker ends at
//! the end of its stdin: when the bench drops it, or exits.
//!
//! A bench process that will compile starts a few workers ahead of the first job ([`prestart`],
//! from the runner, before it opens the device): each loads NVRTC and compiles an empty
//! kernel while the device opens and the setup runs, and waits among the spares. The
//! background compilation then starts as many more as its images missing from the caches need
//! (`top_up`), none when every image is cached. Compile
//! threads take a spare before they start a process, and give theirs back when they are
//! done; a compilation on the bench's own thread (an input maker in a setup, a kernel nobody
//! precompiled) uses a spare when one is idle, so that NVRTC's loading stays off the
//! measuring thread too.
//!
//! [`CudaHandles::precompile_programs`]: super::CudaHandles::precompile_programs
//! [`CudaHandles::precompile`]: super::CudaHandles::precompile

use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Condvar, Mutex, MutexGuard, Once, OnceLock};

use super::nvrtc::{compile_failed, compile_for, cuda_includes, nvrtc_version, CompileFailed};
use super::program::Program;
use super::quiet::quietly;
use crate::backend::kernel_cache::{Image, Key};
use crate::error::ErrorKind;

/// Set (to `WIRE_VERSION`) in the environment of a bench binary started as a compile worker.
pub const COMPILE_WORKER_ENV: &str = "GPUTUNE_COMPILE_WORKER";

/// The version of the wire; a worker asked for another one refuses to serve.
const WIRE_VERSION: &str = "1";

/// Set in the environment of a worker started ahead of its first job ([`prestart`]): it
/// warms NVRTC up before it reads one.
const WARM_UP_ENV: &str = "GPUTUNE_COMPILE_WORKER_WARM_UP";

/// First bytes of every frame.
const MAGIC: [u8; 4] = *b"GTCW";

/// Largest frame either side accepts: a kernel's source with its headers, or its image.
const MAX_FRAME: usize = 1 << 30;

/// The executable that answers as a compile worker, once [`enable`] has said so.
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Serves compile jobs on stdin and stdout if this process was started as a compile worker,
/// returning the exit code; `None` otherwise.
pub fn serve_if_asked() -> Option<i32> {
    let asked = std::env::var_os(COMPILE_WORKER_ENV)?;
    if asked != WIRE_VERSION {
        eprintln!(
            "error: started as a compile worker of wire version {asked:?}; this gputune-runtime \
             speaks version {WIRE_VERSION}"
        );
        return Some(2);
    }
    lower_priority();
    if std::env::var_os(WARM_UP_ENV).is_some() {
        warm_up();
    }
    match serve(io::stdin().lock(), io::stdout().lock()) {
        Ok(()) => Some(0),
        // The bench went away mid-answer: nothing is left to answer.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Some(0),
        Err(e) => {
            eprintln!("error: compile worker: {e}");
            Some(1)
        }
    }
}

/// Says that this process's executable answers as a compile worker (it runs
/// [`serve_if_asked`] first thing), so background compilations may start it.
pub fn enable() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = EXECUTABLE.set(exe);
    }
}

/// The command that starts a compile worker, if this process may start one.
pub(super) fn worker_command() -> Option<Command> {
    EXECUTABLE.get().map(Command::new)
}

/// The `nice` value a compile worker gives itself: compilations are background work, and the
/// bench's measuring thread and the driver's own threads come first when the cores are all
/// busy (a bench starts one worker per core but one, while its device opens).
const WORKER_NICE: i32 = 10;

/// Lowers this process's CPU priority to [`WORKER_NICE`] (where the OS lets it; a failure
/// only leaves the priority as it was).
fn lower_priority() {
    #[cfg(unix)]
    // SAFETY: setpriority changes this process's nice value and touches no memory.
    unsafe {
        let _ = libc::setpriority(libc::PRIO_PROCESS, 0, WORKER_NICE);
    }
}

/// Loads NVRTC, finds CUDA's headers and compiles an empty kernel (which loads NVRTC's
/// builtins): what a worker started ahead of its first job does while its bench opens the
/// device. A failure here (no NVRTC) is the first job's to report.
fn warm_up() {
    if nvrtc_version().is_ok() {
        let _ = cuda_includes();
        let _ = quietly(|| cudarc::nvrtc::compile_ptx("extern \"C\" __global__ void w() {}"));
    }
}

/// Idle compile workers: started ahead of their first job, or given back by a compile thread
/// that is done. Taking one is cheaper than starting a process, and waiting for one that is
/// being started is cheaper than starting another.
#[derive(Default)]
pub(super) struct Spares {
    /// The idle workers, and how many [`prestart`] has yet to add.
    idle: Mutex<(Vec<Worker>, usize)>,
    /// Notified when a worker is added or a start is given up.
    changed: Condvar,
}

impl Spares {
    const fn new() -> Spares {
        Spares {
            idle: Mutex::new((Vec::new(), 0)),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (Vec<Worker>, usize)> {
        // A poisoned lock only means a thread panicked while pushing or popping.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle worker, waiting for one being started if none is idle; `None` when none is
    /// idle or coming.
    fn take(&self) -> Option<Worker> {
        let mut idle = self.lock();
        loop {
            if let Some(worker) = idle.0.pop() {
                return Some(worker);
            }
            if idle.1 == 0 {
                return None;
            }
            idle = self.changed.wait(idle).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn put(&self, worker: Worker) {
        self.lock().0.push(worker);
        self.changed.notify_one();
    }

    /// Says that `count` more workers are being started.
    fn coming(&self, count: usize) {
        self.lock().1 += count;
    }

    /// One that was coming has arrived (`Some`) or will not (`None`).
    fn arrived(&self, worker: Option<Worker>) {
        let mut idle = self.lock();
        idle.1 = idle.1.saturating_sub(1);
        if let Some(worker) = worker {
            idle.0.push(worker);
        }
        drop(idle);
        self.changed.notify_all();
    }

    /// Idle workers and those being started.
    fn on_hand(&self) -> usize {
        let idle = self.lock();
        idle.0.len() + idle.1
    }

    /// Idle workers now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().0.len()
    }
}

/// This process's idle compile workers.
pub(super) static SPARES: Spares = Spares::new();

/// Starts `count` compile workers in the background, ahead of the first compilation, where
/// this process may start them (a bench binary, [`enable`]): each loads NVRTC while the bench
/// opens its device and runs its setup, so that the first variant's compilation pays for
/// neither a process start nor NVRTC's loading. Compile threads that find no idle worker wait
/// for these rather than start their own. The runner calls it around opening the device, for
/// as many as the background compilation will use
/// (`precompile::compile_threads`).
pub fn prestart(count: usize) {
    prestart_into(&SPARES, count, worker_command);
}

/// Starts as many compile workers as it takes to have `wanted` idle or on their way (where this
/// process may start them): [`prestart`] for what compilations that are known to be needed
/// will use, on top of the few started before the device opened.
pub(super) fn top_up(wanted: usize) {
    top_up_into(&SPARES, wanted, worker_command);
}

/// [`top_up`] into `spares`, starting workers with `command`; the thread that starts them, if
/// any.
pub(super) fn top_up_into(
    spares: &'static Spares,
    wanted: usize,
    command: fn() -> Option<Command>,
) -> Option<std::thread::JoinHandle<()>> {
    prestart_into(spares, wanted.saturating_sub(spares.on_hand()), command)
}

/// [`prestart`] into `spares`, starting workers with `command`; the thread that starts them,
/// if any.
pub(super) fn prestart_into(
    spares: &'static Spares,
    count: usize,
    command: fn() -> Option<Command>,
) -> Option<std::thread::JoinHandle<()>> {
    if count == 0 {
        return None;
    }
    command()?;
    spares.coming(count);
    let started = std::thread::Builder::new()
        .name("gputune-compile-workers".into())
        .spawn(move || {
            for _ in 0..count {
                // One that cannot start is reported by the compile thread that needs it.
                let worker = command().and_then(|mut command| {
                    command.env(WARM_UP_ENV, "1");
                    Worker::spawn(command).ok()
                });
                spares.arrived(worker);
            }
        });
    match started {
        Ok(handle) => Some(handle),
        Err(_) => {
            for _ in 0..count {
                spares.arrived(None);
            }
            None
        }
    }
}

/// Answers every job read from `input` on `output`, until `input` ends.
pub(super) fn serve(mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    while let Some(frame) = read_frame(&mut input)? {
        let reply = match decode_job(&frame) {
            Some(job) => {
                let defines: Vec<(&str, String)> = job
                    .defines
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.clone()))
                    .collect();
                let names: Vec<&str> = job.names.iter().map(String::as_str).collect();
                let result =
                    compile_for(&job.program, &defines, &names, job.cc).map_err(compile_failed);
                encode_result(job.key, &result)
            }
            None => encode_result(
                Key::from_bits(0),
                &Err((
                    ErrorKind::Other,
                    "the compile worker got a malformed job".into(),
                )),
            ),
        };
        write_frame(&mut output, &reply)?;
        output.flush()?;
    }
    Ok(())
}

/// One compilation as the worker is asked for it.
pub(super) struct Job<'a> {
    /// The cache key of the compilation: the answer carries it back.
    pub key: Key,
    /// What NVRTC compiles.
    pub program: &'a Program,
    /// `-D` defines, in order.
    pub defines: &'a [(&'a str, String)],
    /// Name expressions whose lowered names the answer holds.
    pub names: &'a [&'a str],
    /// The device's compute capability, `major * 10 + minor`.
    pub cc: i32,
}

/// A job as the worker decodes it.
struct OwnedJob {
    key: Key,
    cc: i32,
    program: Program,
    defines: Vec<(String, String)>,
    names: Vec<String>,
}

/// A compile worker: a child process and the two ends of its pipes.
pub(super) struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    /// Starts `command` as a compile worker.
    pub(super) fn spawn(mut command: Command) -> io::Result<Worker> {
        command
            .env(COMPILE_WORKER_ENV, WIRE_VERSION)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other(
                "the compile worker's pipes were not opened",
            ));
        };
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Has the worker compile the job `frame` ([`encode_job`]) of cache key `key`. `Err`
    /// means the worker failed (it died, or answered something else than an answer to this
    /// job), not the compilation: start another.
    fn compile(
        &mut self,
        frame: &[u8],
        key: Key,
    ) -> std::result::Result<std::result::Result<Image, CompileFailed>, String> {
        let sent = write_frame(&mut self.stdin, frame).and_then(|()| self.stdin.flush());
        let answer = sent.and_then(|()| read_frame(&mut self.stdout));
        match answer {
            Ok(Some(reply)) => decode_result(&reply, key)
                .ok_or_else(|| "the compile worker's answer is malformed".to_string()),
            Ok(None) | Err(_) => Err(match self.child.try_wait() {
                Ok(Some(status)) => format!("the compile worker process ended ({status})"),
                _ => match answer {
                    Err(e) => format!("the compile worker's pipe failed: {e}"),
                    _ => "the compile worker closed its output".to_string(),
                },
            }),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // A compilation it may still run is nobody's any more.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The compile worker of one compile thread, taken from the spares or started on first use.
pub(super) struct WorkerSlot {
    worker: Option<Worker>,
    /// Where a worker comes from; `None` from it means compiling on this thread.
    command: fn() -> Option<Command>,
    /// Idle workers to take before starting one, and where [`WorkerSlot::release`] puts it.
    spares: &'static Spares,
    /// Workers this slot started or took.
    pub started: usize,
}

impl Default for WorkerSlot {
    fn default() -> Self {
        WorkerSlot {
            worker: None,
            command: worker_command,
            spares: &SPARES,
            started: 0,
        }
    }
}

impl WorkerSlot {
    /// Gives the slot's worker back to the spares, for whoever compiles next.
    pub(super) fn release(&mut self) {
        if let Some(worker) = self.worker.take() {
            self.spares.put(worker);
        }
    }
}

/// Compiles `job` in an idle worker if there is one (giving it back after), else on this
/// thread: a compilation the bench waits for that nobody started in the background.
pub(super) fn compile_on_spare(job: &Job<'_>) -> std::result::Result<Image, CompileFailed> {
    compile_on_spare_of(&SPARES, job)
}

fn compile_on_spare_of(
    spares: &'static Spares,
    job: &Job<'_>,
) -> std::result::Result<Image, CompileFailed> {
    let Some(worker) = spares.take() else {
        return local_compile(job);
    };
    let mut slot = WorkerSlot {
        worker: Some(worker),
        spares,
        ..WorkerSlot::default()
    };
    let result = compile_in_worker(&mut slot, job);
    slot.release();
    result
}

/// Compiles `job` in the slot's worker (started on first use, and again once if it fails),
/// or on this thread where no worker can be started.
pub(super) fn compile_in_worker(
    slot: &mut WorkerSlot,
    job: &Job<'_>,
) -> std::result::Result<Image, CompileFailed> {
    let worker = &mut slot.worker;
    // A job the wire cannot carry (an include directory that is not UTF-8) compiles here.
    let Ok(frame) = encode_job(job) else {
        return local_compile(job);
    };
    let mut failures = Vec::new();
    while failures.len() < 2 {
        if worker.is_none() {
            if let Some(spare) = slot.spares.take() {
                *worker = Some(spare);
                slot.started += 1;
            }
        }
        if worker.is_none() {
            let Some(command) = (slot.command)() else {
                return local_compile(job);
            };
            let program = command.get_program().to_owned();
            match Worker::spawn(command) {
                Ok(w) => {
                    *worker = Some(w);
                    slot.started += 1;
                }
                Err(e) => {
                    cannot_start(Path::new(&program), &e);
                    return local_compile(job);
                }
            }
        }
        let Some(w) = worker.as_mut() else {
            return local_compile(job);
        };
        match w.compile(&frame, job.key) {
            Ok(result) => return result,
            Err(why) => {
                *worker = None;
                failures.push(why);
            }
        }
    }
    // Twice in a row on this kernel: NVRTC itself most likely crashes on it, which in this
    // process would have ended the bench.
    Err((
        ErrorKind::Compile,
        format!(
            "NVRTC's process failed twice compiling this kernel: {}",
            failures.join("; ")
        ),
    ))
}

/// `job` compiled on this thread.
fn local_compile(job: &Job<'_>) -> std::result::Result<Image, CompileFailed> {
    compile_for(job.program, job.defines, job.names, job.cc).map_err(compile_failed)
}

/// Warns once that compile workers cannot be started, so compilations share one process.
fn cannot_start(exe: &Path, e: &io::Error) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "warning: cannot start a compile worker ({}: {e}); kernels compile on this \
             process's threads, which NVRTC runs one at a time",
            exe.display()
        );
    });
}

fn write_frame(out: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME)
        .ok_or_else(|| io::Error::other("a compile job or answer over 1 GiB"))?;
    out.write_all(&MAGIC)?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(payload)
}

/// The next frame's payload, skipping whatever precedes its magic; `None` at the end.
fn read_frame(input: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut window = [0u8; 4];
    let mut have = 0usize;
    let mut byte = [0u8; 1];
    while window != MAGIC || have < 4 {
        if input.read(&mut byte)? == 0 {
            return Ok(None);
        }
        window.rotate_left(1);
        window[3] = byte[0];
        have += 1;
    }
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::other(format!("a frame of {len} bytes")));
    }
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload)?;
    Ok(Some(payload))
}

/// Length-prefixed fields in a buffer.
#[derive(Default)]
struct Fields(Vec<u8>);

impl Fields {
    fn u32(&mut self, n: usize) -> std::result::Result<&mut Self, String> {
        let n = u32::try_from(n).map_err(|_| format!("{n} is too large for the wire"))?;
        self.0.extend_from_slice(&n.to_le_bytes());
        Ok(self)
    }

    fn text(&mut self, text: &str) -> std::result::Result<&mut Self, String> {
        self.u32(text.len())?;
        self.0.extend_from_slice(text.as_bytes());
        Ok(self)
    }

    fn texts<'a>(
        &mut self,
        texts: impl ExactSizeIterator<Item = &'a str>,
    ) -> std::result::Result<&mut Self, String> {
        self.u32(texts.len())?;
        for t in texts {
            self.text(t)?;
        }
        Ok(self)
    }
}

/// Reads what [`Fields`] wrote; every read is `None` past the end.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<usize> {
        let bytes: [u8; 4] = self.take(4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(bytes)).ok()
    }

    fn text(&mut self) -> Option<String> {
        let n = self.u32()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }

    fn texts(&mut self) -> Option<Vec<String>> {
        let n = self.u32()?;
        (0..n).map(|_| self.text()).collect()
    }
}

/// Pairs flattened for [`Fields::texts`], and back.
fn pairs(texts: Vec<String>) -> Option<Vec<(String, String)>> {
    if texts.len() % 2 != 0 {
        return None;
    }
    let mut it = texts.into_iter();
    let mut out = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Some(out)
}

fn encode_job(job: &Job<'_>) -> std::result::Result<Vec<u8>, String> {
    let p = job.program;
    let dirs: Vec<&str> = p
        .include_dirs()
        .iter()
        .map(|d| {
            d.to_str()
                .ok_or_else(|| format!("the include directory {} is not UTF-8", d.display()))
        })
        .collect::<std::result::Result<_, _>>()?;
    let mut f = Fields::default();
    f.0.extend_from_slice(&job.key.bits().to_le_bytes());
    f.0.extend_from_slice(&job.cc.to_le_bytes());
    f.text(p.source())?.text(p.name())?;
    f.texts(
        p.headers()
            .iter()
            .flat_map(|(n, c)| [n.as_str(), c.as_str()])
            .collect::<Vec<_>>()
            .into_iter(),
    )?;
    f.texts(dirs.into_iter())?;
    f.texts(p.options().iter().map(String::as_str))?;
    f.texts(
        job.defines
            .iter()
            .flat_map(|(n, v)| [*n, v.as_str()])
            .collect::<Vec<_>>()
            .into_iter(),
    )?;
    f.texts(job.names.iter().copied())?;
    Ok(f.0)
}

fn decode_job(frame: &[u8]) -> Option<OwnedJob> {
    let mut c = Cursor(frame);
    let key = Key::from_bits(u128::from_le_bytes(c.take(16)?.try_into().ok()?));
    let cc = i32::from_le_bytes(c.take(4)?.try_into().ok()?);
    let mut program = Program::new(&c.text()?).file_name(&c.text()?);
    for (name, contents) in pairs(c.texts()?)? {
        program = program.header(&name, &contents);
    }
    for dir in c.texts()? {
        program = program.include_dir(dir);
    }
    for option in c.texts()? {
        program = program.option(option);
    }
    let defines = pairs(c.texts()?)?;
    let names = c.texts()?;
    c.0.is_empty().then_some(OwnedJob {
        key,
        cc,
        program,
        defines,
        names,
    })
}

fn encode_result(key: Key, result: &std::result::Result<Image, CompileFailed>) -> Vec<u8> {
    match result {
        Ok(image) => {
            let mut out = vec![0u8];
            out.extend_from_slice(&image.encode(key));
            out
        }
        Err((kind, message)) => {
            let mut out = vec![1u8, u8::from(*kind == ErrorKind::Compile)];
            out.extend_from_slice(message.as_bytes());
            out
        }
    }
}

fn decode_result(reply: &[u8], key: Key) -> Option<std::result::Result<Image, CompileFailed>> {
    match reply.split_first()? {
        (0, encoded) => Image::decode(encoded, key).map(Ok),
        (1, rest) => {
            let (&compile, message) = rest.split_first()?;
            let kind = if compile == 1 {
                ErrorKind::Compile
            } else {
                ErrorKind::Launch
            };
            Some(Err((kind, String::from_utf8_lossy(message).into_owned())))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
