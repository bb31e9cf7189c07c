use super::*;

const SOURCE: &str = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = IPT; }";
const BROKEN: &str = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = IPT }";

fn program() -> Program {
    Program::new(SOURCE)
        .file_name("k.cu")
        .header("a.cuh", "#define A 1\n")
        .header("b.cuh", "")
        .include_dir("/opt/mine")
        .option("--use_fast_math")
}

/// What this process compiles for `program` with `IPT=value`, as the memo would keep it.
fn local(program: &Program, value: &str) -> std::result::Result<Image, CompileFailed> {
    compile_for(program, &[("IPT", value.to_string())], &[], 90).map_err(compile_failed)
}

fn job_payload(key: u128, program: &Program, value: &str) -> Vec<u8> {
    let defines = [("IPT", value.to_string())];
    let job = Job {
        key: Key::from_bits(key),
        program,
        defines: &defines,
        names: &[],
        cc: 90,
    };
    encode_job(&job).expect("encodes")
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, payload).expect("writes");
    out
}

#[test]
fn jobs_cross_the_wire_whole() {
    let program = program();
    let defines = [("IPT", "4".to_string()), ("TPB", "256".to_string())];
    let job = Job {
        key: Key::from_bits(0x1234_5678_9abc_def0_0fed_cba9_8765_4321),
        program: &program,
        defines: &defines,
        names: &["k", "ns::f<float>"],
        cc: 90,
    };
    let back = decode_job(&encode_job(&job).expect("encodes")).expect("decodes");
    assert_eq!(back.key, job.key);
    assert_eq!(back.cc, 90);
    assert_eq!(back.program, program);
    assert_eq!(
        back.defines,
        vec![("IPT".into(), "4".into()), ("TPB".into(), "256".into())]
    );
    assert_eq!(back.names, vec!["k".to_string(), "ns::f<float>".into()]);
    // Cut anywhere, or with a byte too many, it is no job.
    let bytes = encode_job(&job).expect("encodes");
    for cut in [0, 10, 20, bytes.len() - 1] {
        assert!(decode_job(&bytes[..cut]).is_none(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode_job(&longer).is_none());
}

#[test]
fn answers_cross_the_wire_whole_and_only_for_their_key() {
    let key = Key::from_bits(7);
    let mut image = Image::cubin(vec![1, 2, 3]);
    image.names = vec![("k".into(), "_Z1kPf".into())];
    let ok = encode_result(key, &Ok(image.clone()));
    assert_eq!(decode_result(&ok, key), Some(Ok(image)));
    assert_eq!(decode_result(&ok, Key::from_bits(8)), None);
    for (kind, wire_kind) in [
        (ErrorKind::Compile, ErrorKind::Compile),
        (ErrorKind::Launch, ErrorKind::Launch),
        (ErrorKind::Other, ErrorKind::Launch),
    ] {
        let failed = encode_result(key, &Err((kind, "no: ü".into())));
        assert_eq!(
            decode_result(&failed, key),
            Some(Err((wire_kind, "no: ü".into())))
        );
    }
    assert_eq!(decode_result(&[], key), None);
    assert_eq!(decode_result(&[2, 0], key), None);
}

#[test]
fn frames_skip_what_precedes_their_magic_and_end_with_the_input() {
    let mut input = b"running 1 test\nGTC".to_vec();
    input.extend(framed(b"first"));
    input.extend(framed(b""));
    input.extend(b"trailing words");
    let mut reader = &input[..];
    assert_eq!(
        read_frame(&mut reader).expect("reads"),
        Some(b"first".to_vec())
    );
    assert_eq!(read_frame(&mut reader).expect("reads"), Some(Vec::new()));
    assert_eq!(read_frame(&mut reader).expect("reads"), None);
    // A frame cut short is an error, not a shorter frame.
    let cut = framed(b"payload");
    assert!(read_frame(&mut &cut[..cut.len() - 2]).is_err());
}

#[test]
fn a_worker_answers_each_job_as_this_process_would_compile_it() {
    // Whether or not NVRTC is installed here: the answers are what compiling on this thread
    // gives (an image, a compile error of the broken source, or the plain "no NVRTC" error).
    let good = program();
    let broken = Program::new(BROKEN);
    let mut input = framed(&job_payload(1, &good, "4"));
    input.extend(framed(&job_payload(2, &broken, "4")));
    input.extend(framed(b"not a job"));
    let mut output = Vec::new();
    serve(&input[..], &mut output).expect("serves");
    let mut answers = &output[..];
    let mut next = |key: u128| {
        let frame = read_frame(&mut answers).expect("reads").expect("an answer");
        decode_result(&frame, Key::from_bits(key)).expect("a well-formed answer")
    };
    assert_eq!(next(1), local(&good, "4"));
    let broken_answer = next(2);
    assert_eq!(broken_answer, local(&broken, "4"));
    assert!(broken_answer.is_err());
    let malformed = next(0).expect_err("a malformed job is an error");
    assert!(malformed.1.contains("malformed job"), "{malformed:?}");
    assert_eq!(read_frame(&mut answers).expect("reads"), None);
}

/// The entry point of the worker processes the next tests start: this test binary run again
/// with only this test selected and the worker variable set. Run as an ordinary test (the
/// variable unset) it does nothing.
#[test]
fn worker_process_entry() {
    if let Some(code) = serve_if_asked() {
        std::process::exit(code);
    }
}

fn test_worker_command() -> Option<Command> {
    let mut command = Command::new(std::env::current_exe().ok()?);
    command.args([
        "backend::cuda::compile_worker::tests::worker_process_entry",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    Some(command)
}

fn no_worker() -> Option<Command> {
    None
}

fn failing_worker() -> Option<Command> {
    Some(Command::new("/nonexistent/gputune-compile-worker"))
}

#[test]
fn a_worker_process_compiles_what_this_process_would_and_its_death_is_reported() {
    let good = program();
    let defines = [("IPT", "8".to_string())];
    let job = Job {
        key: Key::from_bits(11),
        program: &good,
        defines: &defines,
        names: &[],
        cc: 90,
    };
    let command = test_worker_command().expect("the test binary's path");
    let mut worker = Worker::spawn(command).expect("the worker starts");
    let frame = encode_job(&job).expect("encodes");
    assert_eq!(worker.compile(&frame, job.key), Ok(local(&good, "8")));
    // Another job in the same worker.
    let job2 = Job {
        key: Key::from_bits(12),
        ..job
    };
    let frame2 = encode_job(&job2).expect("encodes");
    assert!(worker.compile(&frame2, job2.key).is_ok());
    worker.child.kill().expect("kills");
    let _ = worker.child.wait();
    let died = worker
        .compile(&frame, job.key)
        .expect_err("a dead worker is a failure of the worker");
    assert!(died.contains("compile worker"), "{died}");
}

#[test]
fn a_slot_starts_its_worker_once_and_compiles_here_without_one() {
    let good = program();
    let defines = [("IPT", "2".to_string())];
    let job = Job {
        key: Key::from_bits(21),
        program: &good,
        defines: &defines,
        names: &[],
        cc: 90,
    };
    let mut slot = WorkerSlot {
        command: test_worker_command,
        ..WorkerSlot::default()
    };
    assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "2"));
    assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "2"));
    assert_eq!(slot.started, 1, "one worker serves every job of its thread");
    // A worker that died is replaced, and the job still gets its answer.
    if let Some(w) = slot.worker.as_mut() {
        w.child.kill().expect("kills");
        let _ = w.child.wait();
    }
    assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "2"));
    assert_eq!(slot.started, 2);

    for command in [no_worker as fn() -> Option<Command>, failing_worker] {
        let mut slot = WorkerSlot {
            command,
            ..WorkerSlot::default()
        };
        assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "2"));
        assert_eq!(slot.started, 0);
    }
}

#[test]
fn a_worker_that_never_answers_fails_the_job_after_two_tries() {
    fn silent() -> Option<Command> {
        // Reads its input and exits without a word.
        let mut command = Command::new("sh");
        command.args(["-c", "head -c 1 >/dev/null"]);
        Some(command)
    }
    let good = program();
    let job = Job {
        key: Key::from_bits(31),
        program: &good,
        defines: &[],
        names: &[],
        cc: 90,
    };
    let mut slot = WorkerSlot {
        command: silent,
        ..WorkerSlot::default()
    };
    let (kind, message) = compile_in_worker(&mut slot, &job).expect_err("no answer, no image");
    assert_eq!(kind, ErrorKind::Compile);
    assert!(message.contains("failed twice"), "{message}");
    assert_eq!(slot.started, 2);
}

#[cfg(unix)]
#[test]
fn a_job_the_wire_cannot_carry_compiles_here() {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/opt/not-utf8-\xff"));
    let odd = program().include_dir(dir);
    let job = Job {
        key: Key::from_bits(41),
        program: &odd,
        defines: &[],
        names: &[],
        cc: 90,
    };
    assert!(encode_job(&job).is_err());
    let mut slot = WorkerSlot {
        command: test_worker_command,
        ..WorkerSlot::default()
    };
    let here = local_compile(&job);
    assert_eq!(compile_in_worker(&mut slot, &job), here);
    assert_eq!(slot.started, 0, "no worker for it");
}

#[test]
fn prestarted_workers_wait_as_spares_and_serve_the_slots_and_the_bench_s_own_thread() {
    let spares: &'static Spares = Box::leak(Box::default());
    prestart_into(spares, 2, test_worker_command)
        .expect("a thread starts them")
        .join()
        .expect("it ends");
    assert_eq!(spares.len(), 2);
    let good = program();
    let defines = [("IPT", "16".to_string())];
    let job = Job {
        key: Key::from_bits(51),
        program: &good,
        defines: &defines,
        names: &[],
        cc: 90,
    };
    // A slot takes a spare instead of starting a process (a command that cannot start
    // would fall back to compiling here), and gives it back when released.
    let mut slot = WorkerSlot {
        command: failing_worker,
        spares,
        ..WorkerSlot::default()
    };
    assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "16"));
    assert_eq!((slot.started, spares.len()), (1, 1));
    slot.release();
    assert_eq!(spares.len(), 2);
    // The bench's own compilations borrow one and give it back.
    assert_eq!(compile_on_spare_of(spares, &job), local(&good, "16"));
    assert_eq!(spares.len(), 2);
    // Nothing to start with: no thread, no spares, and the compilation happens here.
    let empty: &'static Spares = Box::leak(Box::default());
    assert!(prestart_into(empty, 0, test_worker_command).is_none());
    assert!(prestart_into(empty, 3, no_worker).is_none());
    assert_eq!(compile_on_spare_of(empty, &job), local(&good, "16"));
    assert_eq!(empty.len(), 0);
}

#[test]
fn topping_up_starts_only_the_workers_missing_from_those_on_hand() {
    let spares: &'static Spares = Box::leak(Box::default());
    prestart_into(spares, 2, test_worker_command)
        .expect("a thread starts them")
        .join()
        .expect("it ends");
    // Two on hand: wanting one or two starts nothing; wanting three starts one.
    assert!(top_up_into(spares, 1, test_worker_command).is_none());
    assert!(top_up_into(spares, 2, test_worker_command).is_none());
    assert_eq!(spares.len(), 2);
    top_up_into(spares, 3, test_worker_command)
        .expect("a thread starts the third")
        .join()
        .expect("it ends");
    assert_eq!(spares.len(), 3);
    // Those being started count as on hand.
    let coming: &'static Spares = Box::leak(Box::default());
    coming.coming(2);
    assert!(top_up_into(coming, 2, test_worker_command).is_none());
    coming.arrived(None);
    coming.arrived(None);
}

#[test]
fn a_spare_that_died_is_replaced_for_its_job() {
    let spares: &'static Spares = Box::leak(Box::default());
    let mut dead = Worker::spawn(test_worker_command().expect("the test binary's path"))
        .expect("the worker starts");
    dead.child.kill().expect("kills");
    let _ = dead.child.wait();
    spares.put(dead);
    let good = program();
    let job = Job {
        key: Key::from_bits(61),
        program: &good,
        defines: &[("IPT", "3".to_string())],
        names: &[],
        cc: 90,
    };
    let mut slot = WorkerSlot {
        command: test_worker_command,
        spares,
        ..WorkerSlot::default()
    };
    assert_eq!(compile_in_worker(&mut slot, &job), local(&good, "3"));
    assert_eq!(slot.started, 2, "the dead spare, then a new worker");
}

#[test]
fn taking_waits_for_a_worker_being_started_and_not_for_one_given_up() {
    let spares: &'static Spares = Box::leak(Box::default());
    spares.coming(2);
    let arriving = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let worker = Worker::spawn(test_worker_command().expect("the test binary's path"));
        spares.arrived(Some(worker.expect("the worker starts")));
        std::thread::sleep(std::time::Duration::from_millis(50));
        spares.arrived(None);
    });
    assert!(spares.take().is_some(), "the first one, waited for");
    assert!(spares.take().is_none(), "the second was given up");
    arriving.join().expect("the thread ends");
}
