//! A store with corrupt pages.

use gputune_tests::fuzz;

use super::scratch;

#[test]
fn a_corrupt_store_is_an_error_not_a_crash() {
    use cargo_gputune::results::store::Store;
    // A real store: the seed cache imported.
    let template = scratch("template.db");
    let _ = std::fs::remove_file(&template);
    {
        let cache = fuzz::seeds("import")
            .into_iter()
            .find(|s| s.starts_with(b"{\n\"device_name\""))
            .expect("the Kernel Tuner cache seed");
        let seed_path = scratch("seed-cache.json");
        std::fs::write(&seed_path, &cache).expect("writes");
        let file = cargo_gputune::results::import::read(&seed_path).expect("the seed imports");
        let plan = cargo_gputune::results::import::plan(vec![file], None).expect("plans");
        let store = Store::open(&template).expect("a new store");
        store.put_all(&plan.rows, &plan.spaces).expect("writes");
    }
    let clean = std::fs::read(&template).expect("the store file");
    assert!(clean.len() >= 4096, "a store of pages");
    let path = scratch("corrupt.db");
    fuzz::run(
        "store",
        |rng| {
            let mut bytes = clean.clone();
            let pages = bytes.len() / 4096;
            for _ in 0..=rng.below(4) {
                let page = rng.below(pages);
                // Mostly inside a page (a torn write), sometimes the header or a whole page.
                match rng.below(4) {
                    0 => {
                        let i = page * 4096;
                        let fill = rng.next_u64() as u8;
                        bytes[i..i + 4096].fill(fill);
                    }
                    1 => bytes[rng.below(100)] = rng.next_u64() as u8,
                    _ => {
                        let i = page * 4096 + rng.below(4096);
                        bytes[i] ^= 1 << rng.below(8);
                    }
                }
            }
            if rng.one_in(8) {
                bytes.truncate(rng.below(bytes.len()));
            }
            bytes
        },
        |input| {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            std::fs::write(&path, input).map_err(|e| e.to_string())?;
            if let Ok(store) = Store::open_read_only(&path) {
                let _ = store.measurements();
                let _ = store.dated_measurements();
                let _ = store.spaces();
            }
            if let Ok(store) = Store::open(&path) {
                let _ = store.measurements().map(|rows| store.put(&rows));
            }
            Ok(())
        },
    );
}
