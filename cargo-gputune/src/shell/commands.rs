//! The subcommands: each parsed command line becomes calls into the stages.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::host::cargo::{self, Workspace};
use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::{bundle, protocol, search};
use crate::replay;
use crate::results::store::Store;
use crate::results::{self, apply, check, html, merge, plot, present, report, store};
use crate::shell::cli::{self, Command};

fn store_path(ws: &Workspace, db: Option<&PathBuf>) -> PathBuf {
    db.cloned()
        .unwrap_or_else(|| ws.gputune_dir().join("gputune.db"))
}

/// Runs one parsed command line; the exit code on success.
pub fn run(cli: cli::Gputune, out: &mut Output) -> Result<i32> {
    let args = crate::host::cargo::Options::from(&cli.cargo);
    // `report --db FILE` works anywhere, without a workspace.
    let ws = Workspace::discover(&args);
    match cli.command {
        Command::List => list(&ws?, &args, out),
        Command::Search(s) => match &s.captured {
            Some(dir) => super::captured::captured_command(
                &ws?,
                &args,
                dir,
                &search::Settings::from(&s),
                out,
            ),
            None => search_command(&ws?, &args, &search::Settings::from(&s), out),
        },
        Command::Report(r) => report_command(ws, &args, &r, out),
        Command::RunBundle(r) => run_bundle_command(&args, &r, out),
        Command::Merge(m) => merge_command(ws, &args, &m, out),
        Command::Slurm(s) => slurm_command(&args, &s, out),
        Command::Replay(r) => replay_command(ws, &args, &r, out),
        Command::Import(i) => import_command(ws, &args, &i, out),
        Command::Export(e) => export_command(ws, &args, &e, out),
        Command::Apply(a) => apply_command(&ws?, &args, &a, out),
        Command::Check(c) => check_command(ws, &args, &c, out),
    }
}

/// `search`: into the store, or into a bundle with `--bundle`.
pub(super) fn search_command(
    ws: &Workspace,
    args: &crate::host::cargo::Options,
    s: &search::Settings,
    out: &mut Output,
) -> Result<i32> {
    if let Some(dir) = &s.bundle {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut bundle = bundle::Bundle {
            version: bundle::BUNDLE_VERSION,
            benches: Vec::new(),
        };
        let (counters, _) =
            search::search(ws, args, s, search::Sink::Bundle(dir, &mut bundle), out)?;
        bundle.write(dir)?;
        out.status(&format!(
            "Bundle {}: {} build(s); run it with `{}/cargo-gputune run-bundle {}`",
            dir.display(),
            counters.builds,
            dir.display(),
            dir.display()
        ));
        return Ok(0);
    }
    let path = store_path(ws, args.db.as_ref());
    if let Some(spec) = &s.devices {
        return search_on_devices(ws, args, s, spec, &path, out);
    }
    let _lock = store::SearchLock::acquire(&path)?;
    let store = Store::open(&path)?;
    crate::shell::interrupt::storing();
    out.json = s.json;
    let started = std::time::Instant::now();
    let (counters, touched) = search::search(ws, args, s, search::Sink::Store(&store), out)?;
    out.status(&format!(
        "Done: {} build(s), {} run(s), {} result(s) stored",
        counters.builds, counters.runs, counters.stored
    ));
    if let Some(line) = counters.critical_path(started) {
        out.status(&line);
    }
    if s.objective.needs_energy() {
        let mut groups: Vec<results::Group> = results::groups(store.measurements()?, true)
            .into_iter()
            .filter(|g| touched.contains(&(g.package.clone(), g.bench.clone())))
            .collect();
        results::objective::attach_energy(&mut groups, store.energies()?);
        for g in &groups {
            out.line(&crate::results::present::title(g));
            for line in report::energy::summary(g, s.objective) {
                out.line(&format!("  {line}"));
            }
        }
    }
    if s.json {
        let mut groups: Vec<results::Group> = results::groups(store.measurements()?, true)
            .into_iter()
            .filter(|g| touched.contains(&(g.package.clone(), g.bench.clone())))
            .collect();
        results::objective::attach_energy(&mut groups, store.energies()?);
        let mut doc = report::to_json(&groups, usize::MAX);
        doc["search"] = serde_json::json!({
            "builds": counters.builds,
            "runs": counters.runs,
            "stored": counters.stored,
            "seconds": started.elapsed().as_secs_f64(),
            "first_sample": counters.first_sample_at.map(|t| (t - started).as_secs_f64()),
            "processes": counters.timeline,
            "process_wall": counters.process_wall,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(0)
}

/// `search --devices`: the search built as a bundle in the work area, then run on the GPUs
/// at once (`run-bundle --devices`) into the store at `path`. A guided strategy needs the
/// scores as it goes: the bundle holds the whole space, and the strategy runs over it.
fn search_on_devices(
    ws: &Workspace,
    args: &crate::host::cargo::Options,
    s: &search::Settings,
    spec: &str,
    path: &std::path::Path,
    out: &mut Output,
) -> Result<i32> {
    let guided = !matches!(
        s.strategy,
        cli::StrategyKind::Exhaustive | cli::StrategyKind::Random
    );
    // The binaries are built afresh; what the store holds is not measured again.
    let dir = ws.work_dir(path).join("devices-bundle");
    let _ = std::fs::remove_dir_all(dir.join("bin"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut bundle = bundle::Bundle {
        version: bundle::BUNDLE_VERSION,
        benches: Vec::new(),
    };
    let whole = search::Settings {
        strategy: cli::StrategyKind::Exhaustive,
        max_evals: None,
        time_limit: None,
        ..s.clone()
    };
    let build = if guided { &whole } else { s };
    search::search(
        ws,
        args,
        build,
        search::Sink::Bundle(&dir, &mut bundle),
        out,
    )?;
    bundle.write(&dir)?;
    let ordinals = crate::measure::devices::ordinals(spec, &dir)?;
    let run = bundle::RunBundle {
        dir,
        shard: None,
        no_race: false,
        strategy: guided.then_some(s.strategy),
        seed: s.seed,
        max_evals: s.max_evals,
        time_limit: s.time_limit,
        // A guided strategy's batches of 4, on every GPU.
        batch_size: s
            .batch_size
            .unwrap_or(crate::measure::search::GUIDED_BATCH_SIZE * ordinals.len()),
        device: 0,
        captured: None,
    };
    crate::shell::interrupt::storing();
    crate::measure::devices::run(&run, &ordinals, path, out)
}

/// The store a read command reads and the packages it selects. Without a workspace
/// (`report --db FILE` anywhere), `-p` still selects by name.
fn read_path(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
) -> Result<(PathBuf, Option<Vec<String>>)> {
    Ok(match (&args.db, ws) {
        (Some(db), Ok(ws)) => (db.clone(), ws.selected_packages(args)?),
        (Some(db), Err(_)) => (
            db.clone(),
            (!args.package.is_empty()).then(|| args.package.clone()),
        ),
        (None, Ok(ws)) => (store_path(&ws, None), ws.selected_packages(args)?),
        (None, Err(e)) => return Err(e),
    })
}

/// `replay`: a strategy against the recorded results, per tuned function and seed.
fn replay_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    r: &cli::ReplayArgs,
    out: &mut Output,
) -> Result<i32> {
    if !matches!(r.format, cli::Format::Table | cli::Format::Json) {
        return Err(anyhow::Error::new(Usage(
            "replay prints --format table or json".into(),
        )));
    }
    let settings = crate::strategy::Settings::parse(&r.settings)
        .map_err(|e| anyhow::Error::new(Usage(format!("--settings: {e}"))))?;
    let (path, selected) = read_path(ws, args)?;
    let (store, groups) = results_at(&path, selected.as_deref())?;
    let specs = plot::specs(&groups, &store)?;
    let limits = replay::Limits {
        batch_size: r.batch_size,
        max_evals: r.max_evals,
        time_limit: r.time_limit,
    };
    let mut replayed = Vec::new();
    for g in &groups {
        let spec = specs.get(&(g.package.clone(), g.function.clone()));
        let Some(record) = replay::Recorded::of(g, spec) else {
            out.status(&format!(
                "{} / {}.{} [{}]: no variant scored; nothing to replay",
                g.package, g.bench, g.function, g.ct_workload
            ));
            continue;
        };
        if spec.is_none() {
            out.status(&format!(
                "{}: the store keeps no #[tune] attribute for it; replaying over the measured \
                 variants, without their parameter structure",
                record.title
            ));
        }
        if record.partial() {
            out.status(&format!(
                "{}: the store recorded {} of the space's {} points; replaying over those {} \
                 (a point it never measured is not an evaluation)",
                record.title,
                record.recorded_points(),
                record.declared,
                record.recorded_points()
            ));
        }
        let runs = (r.seed..r.seed.saturating_add(r.seeds))
            .map(|seed| replay::replay_settings(&record, r.strategy, seed, limits, settings))
            .collect::<Result<Vec<_>>>()?;
        replayed.push(replay::Replayed { record, runs });
    }
    match r.format {
        cli::Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&replay::to_json(&replayed, r.strategy, limits))?
        ),
        _ => print!("{}", replay::table(&replayed, r.strategy, limits)),
    }
    Ok(0)
}

/// `report`: tables, coverage and plots from a store.
fn report_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    r: &cli::ReportArgs,
    out: &mut Output,
) -> Result<i32> {
    let (path, selected) = read_path(ws, args)?;
    let (store, mut groups) = results_at(&path, selected.as_deref())?;
    if let Some(pattern) = &r.function {
        let re = regex::Regex::new(pattern)
            .map_err(|e| anyhow::Error::new(Usage(format!("--function {pattern}: {e}"))))?;
        let known: Vec<String> = groups.iter().map(|g| g.function.clone()).collect();
        groups.retain(|g| re.is_match(&g.function) || re.is_match(&g.bench));
        if groups.is_empty() {
            let mut known = known;
            known.sort();
            known.dedup();
            return Err(anyhow::Error::new(Usage(format!(
                "--function {pattern}: no results of a matching function; the store has {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))));
        }
    }
    // Plots first: a bad --plot-params is a usage error before anything is printed.
    let plots = match &r.plot {
        Some(dir) => {
            let specs = plot::specs(&groups, &store)?;
            let plots = plot::write(dir, &groups, &specs, r.top, &r.plot_params)
                .with_context(|| format!("--plot {}", dir.display()))?;
            Some((dir, plots))
        }
        None => None,
    };
    if let Some(file) = &r.html {
        let specs = plot::specs(&groups, &store)?;
        let dated = store.dated_measurements()?;
        html::write(file, &path.display().to_string(), &groups, &specs, &dated)
            .with_context(|| format!("--html {}", file.display()))?;
        let variants: usize = groups.iter().map(|g| g.variants.len()).sum();
        out.status(&format!(
            "Wrote the HTML report of {} to {}",
            present::count(variants, "variant"),
            file.display()
        ));
    }
    if r.coverage {
        print!("{}", report::coverage(&groups, &store, r.format)?);
    } else if r.per_size {
        print!(
            "{}",
            crate::results::per_size::report::render(&groups, r.format)
        );
    } else {
        print!("{}", report::render(&groups, r.top, r.format));
        // The energy table is text: a JSON or CSV report stays one document.
        if matches!(r.format, report::Format::Table | report::Format::Markdown) {
            print!("{}", report::energy::render(&groups, r.objective, r.top));
        }
    }
    if let Some((dir, plots)) = plots {
        for note in &plots.notes {
            out.status(note);
        }
        out.status(&format!(
            "Wrote {} SVG plot(s) to {}",
            plots.files.len(),
            dir.display()
        ));
    }
    Ok(0)
}

/// `run-bundle`: the search of a bundle built elsewhere, into its store.
fn run_bundle_command(
    args: &crate::host::cargo::Options,
    r: &cli::RunBundleArgs,
    out: &mut Output,
) -> Result<i32> {
    let name = r
        .shard
        .map_or_else(|| "gputune.db".to_string(), |s| s.store_name());
    let path = args.db.clone().unwrap_or_else(|| r.dir.join(name));
    let run = bundle::RunBundle::from(r);
    if let Some(spec) = &r.devices {
        let ordinals = crate::measure::devices::ordinals(spec, &r.dir)?;
        crate::shell::interrupt::storing();
        return crate::measure::devices::run(&run, &ordinals, &path, out);
    }
    let _lock = store::SearchLock::acquire(&path)?;
    let store = Store::open(&path)?;
    crate::shell::interrupt::storing();
    let started = std::time::Instant::now();
    let counters = bundle::run_bundle(&run, &store, out)?;
    out.status(&format!(
        "Done: {} run(s), {} result(s) stored in {}",
        counters.runs,
        counters.stored,
        path.display()
    ));
    if let Some(line) = counters.critical_path(started) {
        out.status(&line);
    }
    Ok(0)
}

/// `slurm`: submits the bundle's shards as a job array; with `--wait`, merges them and exits
/// 1 when a task did not finish.
fn slurm_command(
    args: &crate::host::cargo::Options,
    s: &cli::SlurmArgs,
    out: &mut Output,
) -> Result<i32> {
    let submitted = crate::measure::slurm::submit(
        &crate::measure::slurm::Submission::from(s),
        args.db.as_deref(),
        out,
    )?;
    println!("{}", submitted.job);
    let Some((store, unfinished)) = submitted.merged else {
        return Ok(0);
    };
    if unfinished.is_empty() {
        out.status(&format!(
            "Done: job {}, every shard finished and merged into {}",
            submitted.job,
            store.display()
        ));
        return Ok(0);
    }
    let tasks: Vec<String> = unfinished.iter().map(usize::to_string).collect();
    out.status(&format!(
        "Job {}: task(s) {} did not finish (see {}/task-I.out); what finished is merged into \
         {}. Submit again to resume them: nothing measured is measured twice",
        submitted.job,
        tasks.join(", "),
        submitted
            .script
            .parent()
            .map_or_else(String::new, |p| p.display().to_string()),
        store.display()
    ));
    Ok(1)
}

/// `merge`: the sources into the `--db` store (the workspace's by default), under its search
/// lock, so that no search writes to it meanwhile.
fn merge_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    m: &cli::MergeArgs,
    out: &mut Output,
) -> Result<i32> {
    // On a GPU host there is often no workspace: the bundle's own binary merges with --db.
    let path = match (&args.db, ws) {
        (Some(db), _) => db.clone(),
        (None, Ok(ws)) => store_path(&ws, None),
        (None, Err(e)) => {
            return Err(anyhow::Error::new(Usage(format!(
                "merge writes into the store given by --db FILE, else into the workspace's, \
                 and no workspace was found here ({}): pass --db FILE",
                format!("{e:#}").lines().next().unwrap_or_default().trim()
            ))))
        }
    };
    // Dropped after the store and its lock (in reverse order): a refused merge into a new
    // store leaves no empty one behind.
    let created = store::Created::watch(&path);
    let _lock = store::SearchLock::acquire(&path)?;
    let store = Store::open(&path)?;
    crate::shell::interrupt::storing();
    let merged = merge::merge(&store, &m.sources, out)?;
    created.keep();
    out.status(&format!(
        "Done: {} merged into {}: {} variant measurement(s) added, {} replaced, {} row(s) written",
        crate::results::present::count(merged.len(), "store"),
        path.display(),
        merged.iter().map(|m| m.added).sum::<usize>(),
        merged.iter().map(|m| m.replaced).sum::<usize>(),
        merged.iter().map(|m| m.rows).sum::<usize>(),
    ));
    Ok(0)
}

/// The workspace's store, read-only, and the result groups of the selected packages.
fn workspace_results(
    ws: &Workspace,
    args: &crate::host::cargo::Options,
) -> Result<(Store, Vec<results::Group>)> {
    results_at(
        &store_path(ws, args.db.as_ref()),
        ws.selected_packages(args)?.as_deref(),
    )
}

/// The store at `path`, read-only, and its result groups of the `selected` packages.
fn results_at(
    path: &std::path::Path,
    selected: Option<&[String]>,
) -> Result<(Store, Vec<results::Group>)> {
    let store = Store::open_read_only(path)?;
    let mut groups =
        results::select_packages(results::groups(store.measurements()?, true), selected, path)?;
    results::objective::attach_energy(&mut groups, store.energies()?);
    Ok((store, groups))
}

/// `apply`: significant, verified winners into `gputune.toml`.
fn apply_command(
    ws: &Workspace,
    args: &crate::host::cargo::Options,
    a: &cli::ApplyArgs,
    out: &mut Output,
) -> Result<i32> {
    let (store, groups) = workspace_results(ws, args)?;
    if a.objective.needs_energy() && !groups.iter().any(results::Group::has_energy) {
        return Err(anyhow::Error::new(Usage(format!(
            "apply --objective {}: the store holds no energy measurements; search with \
             --objective {} on a GPU whose energy counter NVML reads",
            a.objective.as_str(),
            a.objective.as_str()
        ))));
    }
    let options = apply::Options {
        dry_run: a.dry_run,
        arch_only: a.arch_only,
        per_size: a.per_size,
        size_axis: a.size_axis.clone(),
        objective: a.objective,
    };
    let n = apply::apply(ws, &groups, &store, &options, out)?;
    out.status(&format!(
        "{n} winner(s) {}",
        if a.dry_run {
            "would be applied"
        } else {
            "applied"
        }
    ));
    Ok(0)
}

/// `check`: the CI gate against a baseline and a minimum score; exit 0 pass, 1 regression, 3
/// undecided, 4 provenance differs under `--strict-provenance` ([`check::GateResult`]).
fn check_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    c: &cli::CheckArgs,
    out: &mut Output,
) -> Result<i32> {
    let outcome = super::check::outcome(ws, args, c, out)?;
    let md = check::markdown::render(&outcome);
    match c.format {
        cli::CheckFormat::Table => print!("{md}"),
        cli::CheckFormat::Json => print!(
            "{}",
            check::json::render(&outcome).context("cannot write the check as JSON")?
        ),
    }
    if let Some(path) = &c.junit {
        let xml = check::junit::render(
            &outcome,
            &check::junit::timestamp_now(),
            &check::junit::hostname(),
        );
        write_file(path, &xml, "--junit")?;
    }
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty() && !c.no_step_summary)
        .map(PathBuf::from);
    if let Some(path) = &c.markdown {
        // `--markdown $GITHUB_STEP_SUMMARY` would replace what earlier steps wrote there; the
        // append below writes it once, after theirs.
        if !step_summary.as_ref().is_some_and(|s| same_file(s, path)) {
            write_file(path, &md, "--markdown")?;
        }
    }
    if let Some(path) = &step_summary {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(format!("{md}\n").as_bytes()))
            .with_context(|| {
                format!(
                    "cannot append the summary to $GITHUB_STEP_SUMMARY ({}); --no-step-summary leaves it alone",
                    path.display()
                )
            })?;
    }
    Ok(outcome.result().exit_code())
}

/// Writes `text` to `path`, given by `flag`, creating its directory.
fn write_file(path: &std::path::Path, text: &str, flag: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{flag}: cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("{flag}: cannot write {}", path.display()))
}

/// Whether `a` and `b` name the same file (the same path, or, where both exist, the same
/// file by another path).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b
        || matches!(
            (a.canonicalize(), b.canonicalize()),
            (Ok(x), Ok(y)) if x == y
        )
}

/// `list`: benches, tuned functions, parameters, space sizes and compile-time workloads.
fn list(ws: &Workspace, args: &crate::host::cargo::Options, out: &mut Output) -> Result<i32> {
    for target in ws.bench_targets(args)? {
        let revision = cargo::revision(ws, args, &target)?;
        let (bin, manifest, _) =
            search::production(ws, args, &target, &revision, &mut Default::default(), out)?;
        for b in protocol::list(&bin, &[])? {
            out.line(&format!("{} / {} ({})", target.package, b.name, b.backend));
            for a in &b.axes {
                out.line(&format!(
                    "  axis {}{}: {}",
                    a.name,
                    if a.compile_time {
                        " (compile-time workload)"
                    } else {
                        ""
                    },
                    a.input_strings().join(", ")
                ));
            }
            let Some(f) = b.tunes.as_deref() else {
                out.line("  tunes nothing");
                continue;
            };
            match manifest.as_ref().and_then(|m| m.function(f)) {
                Some(func) => {
                    out.line(&format!(
                        "  tunes {}: {} variants ({})",
                        func.name, func.space_size, func.file
                    ));
                    for p in &func.params {
                        let values: Vec<String> = p
                            .values
                            .iter()
                            .map(|v| v.to_string().trim_matches('"').to_string())
                            .collect();
                        out.line(&format!(
                            "    {} ({}, base {}): {}",
                            p.name,
                            p.rust_type,
                            func.base
                                .get(&p.name)
                                .map(|v| v.to_string())
                                .unwrap_or_default(),
                            values.join(", ")
                        ));
                    }
                }
                None => out.line(&format!("  tunes {f}, which has no generated variants")),
            }
        }
    }
    Ok(0)
}

/// The store a writing command without a search writes: --db, else the workspace's.
fn write_path(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    what: &str,
) -> Result<PathBuf> {
    match (&args.db, ws) {
        (Some(db), _) => Ok(db.clone()),
        (None, Ok(ws)) => Ok(store_path(&ws, None)),
        (None, Err(e)) => Err(anyhow::Error::new(Usage(format!(
            "{what} writes into the store given by --db FILE, else into the workspace's, and no \
             workspace was found here ({}): pass --db FILE",
            format!("{e:#}").lines().next().unwrap_or_default().trim()
        )))),
    }
}

/// `import`: every file read and planned first, then one transaction; a bad file is a usage
/// error and nothing is written.
fn import_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    i: &cli::ImportArgs,
    out: &mut Output,
) -> Result<i32> {
    let path = write_path(ws, args, "import")?;
    let files = i
        .files
        .iter()
        .map(|f| crate::results::import::read(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::Error::new(Usage(e.to_string())))?;
    let plan = crate::results::import::plan(files, i.base.as_deref())
        .map_err(|e| anyhow::Error::new(Usage(e.to_string())))?;
    let created = store::Created::watch(&path);
    let _lock = store::SearchLock::acquire(&path)?;
    let store = Store::open(&path)?;
    crate::shell::interrupt::storing();
    store
        .put_all(&plan.rows, &plan.spaces)
        .with_context(|| format!("cannot write the import into {}", path.display()))?;
    created.keep();
    for imp in &plan.imported {
        let statuses: Vec<String> = imp
            .statuses
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        out.status(&format!(
            "Imported {} as package `{}` ({} on {}): {} ({}); base: {} ({})",
            imp.path.display(),
            imp.package,
            imp.kernel,
            imp.device,
            present::count(imp.statuses.values().sum(), "configuration"),
            statuses.join(", "),
            imp.base,
            imp.why
        ));
    }
    out.status(&format!(
        "Done: {} into {}: {} row(s) written",
        present::count(plan.imported.len(), "file"),
        path.display(),
        plan.rows.len()
    ));
    Ok(0)
}

/// `export`: one group of the store in a community format, to a file or stdout.
fn export_command(
    ws: Result<Workspace>,
    args: &crate::host::cargo::Options,
    e: &cli::ExportArgs,
    out: &mut Output,
) -> Result<i32> {
    let (path, selected) = read_path(ws, args)?;
    let (store, groups) = results_at(&path, selected.as_deref())?;
    let format = match e.format {
        crate::shell::cli::ExportFormat::T4 => crate::results::export::ExportFormat::T4,
        crate::shell::cli::ExportFormat::KtCache => crate::results::export::ExportFormat::KtCache,
    };
    let text = crate::results::export::export(&store, &groups, format, e.workload.as_deref())
        .map_err(|err| anyhow::Error::new(Usage(err.to_string())))?;
    match &e.output {
        None => println!("{text}"),
        Some(file) => {
            let bytes = if file.extension().is_some_and(|x| x == "gz") {
                use std::io::Write;
                let mut gz =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                gz.write_all(text.as_bytes())
                    .and_then(|()| gz.finish())
                    .with_context(|| format!("cannot compress {}", file.display()))?
            } else {
                text.into_bytes()
            };
            std::fs::write(file, bytes)
                .with_context(|| format!("cannot write {}", file.display()))?;
            out.status(&format!("Wrote {}", file.display()));
        }
    }
    Ok(0)
}
