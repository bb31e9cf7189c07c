//! The store's tests: round trips, read-only opens, migrations, refusals.

use super::*;

fn sample(variant: &str, rt: &str) -> Measurement {
    Measurement {
        revision: "r".into(),
        device: "d".into(),
        arch: "cpu".into(),
        package: "p".into(),
        bench: "b".into(),
        function: "f".into(),
        ct_workload: "T=f32".into(),
        variant: variant.into(),
        rt_workload: rt.into(),
        rt_weight: 0.6,
        status: Status::Ok,
        message: None,
        center: Some(1e-3),
        noise: Some(0.01),
        bandwidth: None,
        samples: vec![1e-3, 1.1e-3],
        build_seconds: Some(1.0),
        run_seconds: Some(0.5),
        stop: None,
        control: Vec::new(),
        kernels: Vec::new(),
        provenance: None,
        sm_clocks: Vec::new(),
    }
}

/// The columns schema 5 added to `results`.
const PROVENANCE_COLUMNS: &str = "    provenance    TEXT,\n    sm_clocks     TEXT,\n";

fn kernel(name: &str, registers: u32, local_bytes: u32) -> KernelRecord {
    KernelRecord {
        name: name.into(),
        registers,
        local_bytes,
        shared_bytes: 1024,
        options: vec!["-std=c++17".into(), "--maxrregcount=32".into()],
    }
}

#[test]
fn round_trips_and_replaces_by_key() {
    let dir = std::env::temp_dir().join(format!("gputune-store-{}", std::process::id()));
    let path = dir.join("s.db");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).expect("opens");
    store.put(&[sample("base", "N=1")]).expect("put");
    store.put(&[sample("x_1", "N=1")]).expect("put");
    let mut again = sample("x_1", "N=1");
    again.center = Some(2e-3);
    again.kernels = vec![kernel("scale", 40, 0), kernel("ns::sum<float>", 32, 16)];
    store.put(std::slice::from_ref(&again)).expect("replace");
    let all = store.measurements().expect("read");
    assert_eq!(all.len(), 2);
    assert_eq!(all[1], again, "kernels and all");
    assert!(all[0].kernels.is_empty());
    // No kernels are stored as NULL, not as an empty list.
    let nulls: i64 = store
        .conn
        .query_row(
            "SELECT COUNT(*) FROM results WHERE kernels IS NULL",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(nulls, 1);
    assert_eq!(store.integrity().expect("check"), "ok");
    drop(store);
    assert!(Store::open(&path).is_ok(), "reopens");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn read_only_opens_create_and_change_nothing() {
    let dir = std::env::temp_dir().join(format!("gputune-store-ro-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("odd name?#%.db");
    let store = Store::open(&path).expect("opens");
    store.put(&[sample("base", "N=1")]).expect("put");
    drop(store);
    let listing = || {
        let mut l: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        l.sort();
        l
    };
    let digest = || gputune_protocol::hash::Fnv64::of(&std::fs::read(&path).expect("bytes"));
    let before = (listing(), digest());
    let ro = Store::open_read_only(&path).expect("reads");
    assert_eq!(ro.measurements().expect("rows").len(), 1);
    assert!(ro.put(&[sample("x_1", "N=1")]).is_err(), "read only");
    drop(ro);
    assert_eq!((listing(), digest()), before, "nothing created or changed");
    // While a search writes (its log is pending), a reader sees what it committed.
    let writer = Store::open(&path).expect("opens");
    writer.put(&[sample("x_2", "N=1")]).expect("put");
    let ro = Store::open_read_only(&path).expect("reads");
    assert_eq!(ro.measurements().expect("rows").len(), 2);
    drop((ro, writer));

    let err = |p: &Path| format!("{:#}", Store::open_read_only(p).err().expect("refused"));
    assert!(err(&dir).contains("is a directory"), "{}", err(&dir));
    assert!(err(&dir.join("none.db")).contains("no store at"));
    assert!(!dir.join("none.db").exists(), "nothing created");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_1_store_is_read_as_it_is_and_migrated_by_a_search() {
    let dir = std::env::temp_dir().join(format!("gputune-store-v1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("v1.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        conn.execute_batch(
            &SCHEMA
                .replace("    stop          TEXT,\n", "")
                .replace("    control       TEXT,\n", "")
                .replace("    kernels       TEXT,\n", "")
                .replace(PROVENANCE_COLUMNS, ""),
        )
        .expect("schema 1");
        conn.execute_batch(
            "INSERT INTO meta VALUES ('schema_version', '1');
             INSERT INTO results (revision, device, arch, package, bench, function,
                 ct_workload, variant, rt_workload, rt_weight, status, message, samples)
             VALUES ('r', 'd', 'cpu', 'p', 'b', 'f', '*', 'x_1', '*', 1.0, 'ok',
                 'raced: stopped after 20 samples', '[1.0]');",
        )
        .expect("a row");
    }
    let ro = Store::open_read_only(&path).expect("reads version 1");
    assert_eq!(ro.measurements().expect("rows")[0].stop, None);
    drop(ro);
    let rw = Store::open(&path).expect("migrates");
    let rows = rw.measurements().expect("rows");
    assert_eq!(
        rows[0].stop,
        Some(StopReason::Raced),
        "backfilled from the message"
    );
    assert!(rows[0].control.is_empty() && rows[0].kernels.is_empty());
    assert_eq!(rw.schema, SCHEMA_VERSION);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_3_store_reads_with_no_kernels_and_is_migrated_by_a_search() {
    let dir = std::env::temp_dir().join(format!("gputune-store-v3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("v3.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        conn.execute_batch(
            &SCHEMA
                .replace("    kernels       TEXT,\n", "")
                .replace(PROVENANCE_COLUMNS, ""),
        )
        .expect("schema 3");
        conn.execute_batch(
            "INSERT INTO meta VALUES ('schema_version', '3');
             INSERT INTO results (revision, device, arch, package, bench, function,
                 ct_workload, variant, rt_workload, rt_weight, status, center, samples,
                 stop, control)
             VALUES ('r', 'd', 'sm_90', 'p', 'b', 'f', '*', 'x_1', 'N=1', 1.0, 'ok', 1.0,
                 '[1.0]', 'criterion', '[2.0, 2.0]');",
        )
        .expect("a row");
    }
    let ro = Store::open_read_only(&path).expect("reads version 3");
    assert_eq!(ro.schema(), 3);
    let rows = ro.measurements().expect("rows");
    assert!(rows[0].kernels.is_empty());
    assert_eq!(rows[0].control, [2.0, 2.0]);
    drop(ro);
    let rw = Store::open(&path).expect("migrates");
    assert_eq!(rw.schema(), SCHEMA_VERSION);
    let version = rw.schema_version().expect("meta");
    assert_eq!(version, Some(SCHEMA_VERSION.to_string()));
    let old = rw.measurements().expect("rows");
    assert_eq!(old[0].stop, Some(StopReason::Criterion));
    assert!(old[0].kernels.is_empty());
    let mut new = sample("x_2", "N=1");
    new.kernels = vec![kernel("scale", 255, 64)];
    rw.put(std::slice::from_ref(&new)).expect("put");
    assert_eq!(rw.measurements().expect("rows")[1], new);
    assert_eq!(rw.integrity().expect("check"), "ok");
    drop(rw);
    assert!(Store::open(&path).is_ok(), "reopens migrated");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn foreign_and_corrupt_files_are_refused() {
    let dir = std::env::temp_dir().join(format!("gputune-store-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let foreign = dir.join("foreign.db");
    let conn = Connection::open(&foreign).expect("sqlite");
    conn.execute_batch("CREATE TABLE t (x)").expect("table");
    drop(conn);
    let err = format!("{:#}", Store::open(&foreign).err().expect("refused"));
    assert!(err.contains("foreign database"), "{err}");
    let junk = dir.join("junk.db");
    std::fs::write(&junk, b"this is not sqlite at all, not even close........").expect("write");
    assert!(Store::open(&junk).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

fn provenance(host: &str, driver: &str) -> Provenance {
    Provenance {
        host: Some(host.into()),
        gputune: "0.1.0".into(),
        rustc: Some("rustc 1.89.0".into()),
        profile: Some("release".into()),
        opt_level: Some("3".into()),
        debug_assertions: Some(false),
        cuda: Some(gputune_protocol::CudaProvenance {
            device: 0,
            uuid: None,
            pci_bus_id: Some("0000:65:00.0".into()),
            driver: Some(driver.into()),
            driver_api: Some(13000),
            nvrtc: Some("13.0".into()),
            application_sm_clock: Some(1.98e9),
            application_memory_clock: Some(2.619e9),
            power_limit: Some(700.0),
            persistence_mode: Some(true),
            ecc_mode: Some(true),
            nvml_error: None,
        }),
    }
}

#[test]
fn provenance_and_sm_clocks_round_trip_and_a_pass_s_provenance_is_kept_once() {
    let dir = std::env::temp_dir().join(format!("gputune-store-prov-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir.join("s.db")).expect("opens");
    let pass = std::sync::Arc::new(provenance("node-1", "580.159.04"));
    let mut rows = vec![sample("base", "N=1"), sample("base", "N=2")];
    for row in &mut rows {
        row.provenance = Some(pass.clone());
        row.sm_clocks = vec![1.98e9, 1.755e9];
    }
    store.put(&rows).expect("put");
    let mut other = sample("x_1", "N=1");
    other.provenance = Some(std::sync::Arc::new(provenance("node-2", "575.57.08")));
    store.put(std::slice::from_ref(&other)).expect("put");
    let read = store.measurements().expect("read");
    assert_eq!(read[..2], rows[..]);
    assert_eq!(read[2], other);
    assert!(read[2].sm_clocks.is_empty());
    let distinct: i64 = store
        .conn
        .query_row("SELECT COUNT(*) FROM provenance", [], |r| r.get(0))
        .expect("count");
    assert_eq!(distinct, 2, "one row per distinct provenance");
    // The rows of one pass share one value in memory too.
    assert!(std::sync::Arc::ptr_eq(
        read[0].provenance.as_ref().expect("some"),
        read[1].provenance.as_ref().expect("some")
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_4_store_reads_without_provenance_and_is_migrated_by_a_search() {
    let dir = std::env::temp_dir().join(format!("gputune-store-v4-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("v4.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        conn.execute_batch(&SCHEMA.replace(PROVENANCE_COLUMNS, ""))
            .expect("schema 4");
        conn.execute_batch(
            "INSERT INTO meta VALUES ('schema_version', '4');
             INSERT INTO results (revision, device, arch, package, bench, function,
                 ct_workload, variant, rt_workload, rt_weight, status, center, samples,
                 stop, kernels)
             VALUES ('r', 'd', 'sm_90', 'p', 'b', 'f', '*', 'x_1', 'N=1', 1.0, 'ok', 1.0,
                 '[1.0]', 'criterion', '[{\"name\": \"k\", \"registers\": 32, \"local_bytes\": 0, \"shared_bytes\": 0, \"options\": []}]');",
        )
        .expect("a row");
    }
    let ro = Store::open_read_only(&path).expect("reads version 4");
    assert_eq!(ro.schema(), 4);
    let rows = ro.measurements().expect("rows");
    assert!(rows[0].provenance.is_none() && rows[0].sm_clocks.is_empty());
    assert_eq!(rows[0].kernels[0].registers, 32);
    drop(ro);
    let rw = Store::open(&path).expect("migrates");
    assert_eq!(rw.schema(), SCHEMA_VERSION);
    assert_eq!(
        rw.schema_version().expect("meta"),
        Some(SCHEMA_VERSION.to_string())
    );
    let old = rw.measurements().expect("rows");
    assert_eq!(
        old[0].kernels[0].registers, 32,
        "kept through the migration"
    );
    assert!(old[0].provenance.is_none());
    let mut new = sample("x_2", "N=1");
    new.provenance = Some(std::sync::Arc::new(provenance("node-1", "580.159.04")));
    new.sm_clocks = vec![1.9e9, 1.9e9];
    rw.put(std::slice::from_ref(&new)).expect("put");
    assert_eq!(rw.measurements().expect("rows")[1], new);
    assert_eq!(rw.integrity().expect("check"), "ok");
    drop(rw);
    assert!(Store::open(&path).is_ok(), "reopens migrated");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_merge_writes_the_provenance_of_the_rows_it_writes() {
    let dir = std::env::temp_dir().join(format!("gputune-store-merge-prov-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let source = Store::open(&dir.join("source.db")).expect("opens");
    let mut row = sample("x_1", "N=1");
    row.provenance = Some(std::sync::Arc::new(provenance("node-1", "580.159.04")));
    row.sm_clocks = vec![1.98e9, 1.98e9];
    source.put(std::slice::from_ref(&row)).expect("put");
    let dated = source.dated_measurements().expect("read");
    let target = Store::open(&dir.join("target.db")).expect("opens");
    target
        .replace_variants(&[&dated[..]], &[])
        .expect("merge writes");
    let merged = target.measurements().expect("read");
    assert_eq!(
        merged,
        [row],
        "provenance and clocks travel with their rows"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_5_store_gains_the_energy_table_and_energy_round_trips() {
    use super::energy::{Energy, RowKey};
    let dir = std::env::temp_dir().join(format!("gputune-store-v5-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("v5.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        conn.execute_batch(SCHEMA).expect("schema 5");
        conn.execute_batch(provenance::TABLE).expect("provenance");
        conn.execute_batch(
            "INSERT INTO meta VALUES ('schema_version', '5');
             INSERT INTO results (revision, device, arch, package, bench, function,
                 ct_workload, variant, rt_workload, rt_weight, status, center, samples)
             VALUES ('r', 'd', 'sm_90', 'p', 'b', 'f', '*', 'x_1', 'N=1', 1.0, 'ok', 1.0,
                 '[1.0]');",
        )
        .expect("a row");
    }
    let ro = Store::open_read_only(&path).expect("reads version 5");
    assert_eq!(ro.schema(), 5);
    assert!(
        ro.energies().expect("none").is_empty(),
        "no table, no energy"
    );
    drop(ro);
    let rw = Store::open(&path).expect("migrates");
    assert_eq!(
        rw.schema_version().expect("meta"),
        Some(SCHEMA_VERSION.to_string())
    );
    assert_eq!(rw.measurements().expect("rows").len(), 1, "kept");
    let row = sample("x_2", "N=1");
    let energy = Energy {
        joules: vec![0.02, 0.021],
        watts: vec![400.0, 410.0],
        control: vec![0.03, 0.031],
        counter_interval: Some(0.02),
    };
    rw.put_with_energy(
        std::slice::from_ref(&row),
        &[(RowKey::of(&row), energy.clone())],
    )
    .expect("put");
    assert_eq!(rw.energies().expect("read"), [(RowKey::of(&row), energy)]);
    // Measured again without energy: no energy of the old measurement stays beside it.
    rw.put_with_energy(std::slice::from_ref(&row), &[])
        .expect("put again");
    assert!(rw.energies().expect("read").is_empty());
    assert_eq!(rw.integrity().expect("check"), "ok");
    drop(rw);
    let _ = std::fs::remove_dir_all(&dir);
}
