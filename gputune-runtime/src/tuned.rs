//! Which variant of a `#[tune]` function runs: the run-time half of the generated dispatch.
//!
//! The build helper ([`crate::build`], feature `build`) writes, for each tuned function, a
//! `match` over the *arms* compiled into this build: arm 0 is always `base`, then the
//! entries applied in `gputune.toml`, then the variants that `GPUTUNE_VARIANTS` selected.
//! The generated code keeps a [`Cache`] per function; the first call for a compile-time
//! workload resolves the arm here and every later call is two relaxed loads and the `match`.
//! A new [`request`] (a bench process running several variants one after another, or
//! verification running base for its reference) makes every cache resolve again.
//!
//! Resolution:
//! - a bench process asked to run a variant (`--variant`, see [`request`]) runs that arm of
//!   the function the bench tunes, or records that the variant is not compiled in;
//! - otherwise the applied entry for the workload and the running device's architecture
//!   ([`arch`]) runs, else base.
//!
//! What a bench may ask: [`planned`], the variants this process was asked to run (so that it
//! can prepare them all up front, for example compile their kernels in parallel), and
//! [`Variant::parse`], a label's parameter values (with the `NAME_PARAMS` constant that
//! `#[tune]` declares next to each function).
//!
//! Nothing else here is meant to be called by hand except [`arch`], [`request`] and
//! [`resolved`]; the rest is public for the generated code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::Error;

/// Overrides the architecture that picks applied entries (`sm_90`, `cpu`, …).
pub const ARCH_ENV: &str = "GPUTUNE_ARCH";

/// Value of an unresolved [`Cache`] slot: its generation half never matches.
const UNRESOLVED: u64 = u64::MAX;

/// Bumped by every [`request`]; a cache slot resolved in an older generation resolves again.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// Bumped by every [`plan`]: a kernel handle prepares (compiles in the background) what is
/// planned once per plan, so a further pass of the process (`--more-on-stdin`) gets its new
/// variants compiled ahead too.
static PLANS: AtomicU64 = AtomicU64::new(0);

/// How many times variants were planned in this process (see [`plan`]).
#[cfg(feature = "cuda")]
pub(crate) fn plans() -> u64 {
    PLANS.load(Ordering::SeqCst)
}

/// What the generated dispatch of one tuned function knows, as plain data.
#[derive(Debug)]
pub struct Table {
    /// The function's name (`scale`).
    pub function: &'static str,
    /// The label of each arm, in `match` order; `arms[0]` is `"base"`.
    pub arms: &'static [&'static str],
    /// Applied entries from `gputune.toml`.
    pub policy: &'static [Entry],
}

/// One applied entry: on `arch`, compile-time workload `workload` runs arm `arm`.
#[derive(Debug)]
pub struct Entry {
    /// Index of the compile-time workload, as the generated code numbers them.
    pub workload: usize,
    /// Device architecture: `sm_90` for compute capability 9.0, `cpu` for the CPU backend.
    pub arch: &'static str,
    /// Index into [`Table::arms`].
    pub arm: u32,
}

/// The resolved arm per compile-time workload of one function (one slot per workload, plus
/// one for workloads without an entry). A slot holds the generation it was resolved in (high
/// half) and the arm (low half).
#[derive(Debug)]
pub struct Cache<const N: usize>([AtomicU64; N]);

impl<const N: usize> Cache<N> {
    /// An empty cache, for a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Cache<N> {
        Cache([const { AtomicU64::new(UNRESOLVED) }; N])
    }

    /// The arm for workload `workload`: two relaxed loads once resolved.
    #[inline(always)]
    pub fn arm(&self, table: &Table, workload: usize) -> u32 {
        let slot = &self.0[workload.min(N - 1)];
        let generation = GENERATION.load(Ordering::Relaxed);
        let value = slot.load(Ordering::Relaxed);
        if (value >> 32) as u32 == generation && value != UNRESOLVED {
            return value as u32;
        }
        let arm = resolve(table, workload);
        slot.store(
            u64::from(generation) << 32 | u64::from(arm),
            Ordering::Relaxed,
        );
        arm
    }
}

/// Whether the type parameter `T` is the type named `name` (`f32`, `my_crate::Half`, or just
/// `Half`). `name` is how a bench's type axis names it.
#[inline(always)]
pub fn type_is<T: ?Sized>(name: &str) -> bool {
    let full = std::any::type_name::<T>();
    full == name
        || (full.len() > name.len() + 2
            && full.ends_with(name)
            && full[..full.len() - name.len()].ends_with("::"))
}

/// What a tuned function resolved to in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The label of the arm that runs (`base` when a requested variant is missing).
    pub label: String,
    /// The requested variant that is not compiled into this build, if that happened.
    pub missing: Option<String>,
}

#[derive(Default)]
struct Registry {
    /// Function → requested label (set by a bench process).
    requested: HashMap<String, String>,
    /// Function → every label this process will request, in order (see [`plan`]).
    planned: HashMap<String, Vec<String>>,
    /// Function → what it resolved to last.
    resolved: HashMap<String, Resolved>,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    // A poisoned lock only means another thread panicked while holding it; the maps are
    // still consistent (every update is a single insert).
    let mut guard = registry()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut guard)
}

/// Asks every later call of `function` to run variant `label` (`ipt_8.tpb_128` or `base`).
/// The bench runner calls this for each `--variant` in turn, and verification to run base.
pub fn request(function: &str, label: &str) {
    with_registry(|r| {
        r.requested.insert(function.to_string(), label.to_string());
        r.resolved.remove(function);
    });
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Withdraws a [`request`]: `function` runs its production choice again.
pub fn withdraw(function: &str) {
    with_registry(|r| {
        r.requested.remove(function);
        r.resolved.remove(function);
    });
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The variant requested for `function`, if any.
pub fn requested(function: &str) -> Option<String> {
    with_registry(|r| r.requested.get(function).cloned())
}

/// Records the variants of `function` this process will run, in order. The bench runner
/// calls this with the `--variant` list before the first state, so a bench can read it with
/// [`planned`].
pub fn plan(function: &str, labels: &[&str]) {
    with_registry(|r| {
        r.planned.insert(
            function.to_string(),
            labels.iter().map(|l| (*l).to_string()).collect(),
        );
    });
    PLANS.fetch_add(1, Ordering::SeqCst);
}

/// The variants of `function` this process was asked to run (`--variant`), in the order it
/// runs them, as labels without the function's name (`ipt_8.tpb_128`, `base`). Empty when
/// no variant was requested: the process then runs the production choice (an applied
/// `gputune.toml` entry, else base).
///
/// Verification against base ([`State::verify`](crate::State::verify)) also runs `base` in
/// every state of another variant; a bench preparing the variants should prepare base too.
///
/// ```
/// use gputune_runtime::tuned;
///
/// tuned::plan("scale", &["ipt_8.tpb_128", "ipt_1.tpb_64"]);
/// assert_eq!(tuned::planned("scale"), ["ipt_8.tpb_128", "ipt_1.tpb_64"]);
/// assert!(tuned::planned("other").is_empty());
/// ```
pub fn planned(function: &str) -> Vec<String> {
    with_registry(|r| r.planned.get(function).cloned().unwrap_or_default())
}

/// What a bench process should prepare for `function` (compile, say): [`planned`] with `base`
/// in front when it is not there already, since verification runs base in every state of
/// another variant. Empty when nothing is planned (the production choice runs, one variant).
///
/// ```
/// use gputune_runtime::tuned;
///
/// tuned::plan("saxpy", &["ipt_8.tpb_128"]);
/// assert_eq!(tuned::to_prepare("saxpy"), ["base", "ipt_8.tpb_128"]);
/// assert!(tuned::to_prepare("other").is_empty());
/// ```
pub fn to_prepare(function: &str) -> Vec<String> {
    let mut labels = planned(function);
    if !labels.is_empty() && !labels.iter().any(|l| l == "base") {
        labels.insert(0, "base".to_string());
    }
    labels
}

/// One variant of a tuned function: its label and the value of each parameter.
///
/// `#[tune]` declares, next to each function `name`, a constant `NAME_PARAMS: &[(&str, &str)]`
/// (same visibility as the function): each parameter's name and base value, in declaration
/// order. With it, a label turns into values:
///
/// ```
/// use gputune_runtime::tuned::Variant;
///
/// // What #[tune(ipt = [1, 2, 4, 8], tpb = …, base(ipt = 4, tpb = 256))] fn scale declares:
/// const SCALE_PARAMS: &[(&str, &str)] = &[("ipt", "4"), ("tpb", "256")];
///
/// let v = Variant::parse("ipt_8.tpb_128", SCALE_PARAMS)?;
/// assert_eq!(v.get::<u32>("ipt")?, 8);
/// assert_eq!(v.get::<u32>("tpb")?, 128);
/// let base = Variant::parse("base", SCALE_PARAMS)?;
/// assert_eq!(base.get::<u32>("ipt")?, 4);
/// # Ok::<(), gputune_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The label (`ipt_8.tpb_128`, or `base`).
    pub label: String,
    /// Each parameter's name and value as the label writes it, in declaration order.
    pub values: Vec<(&'static str, String)>,
}

impl Variant {
    /// Parses `label` (with or without the function's name in front: `scale.ipt_8.tpb_128`
    /// is read as `ipt_8.tpb_128` when the first parameter is not called `scale`) against
    /// `params`, the function's `NAME_PARAMS`. `base` gives the base values.
    ///
    /// Labels are `name_value` pairs joined by `.` in declaration order, so knowing the
    /// names makes them unambiguous even when names or values contain `_` or `.`.
    pub fn parse(label: &str, params: &[(&'static str, &'static str)]) -> Result<Variant, Error> {
        let bad = |why: &str| {
            let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
            Error::Usage(format!(
                "`{label}` is not a variant label of parameters ({}): {why}",
                names.join(", ")
            ))
        };
        if label == "base" {
            return Ok(Variant {
                label: label.to_string(),
                values: params.iter().map(|(n, v)| (*n, (*v).to_string())).collect(),
            });
        }
        let mut rest = label;
        if let Some((first, _)) = params.first() {
            // `function.label`: drop a leading segment that cannot start the first pair.
            if !rest.starts_with(&format!("{first}_")) {
                if let Some((_, after)) = rest.split_once('.') {
                    if after == "base" {
                        return Variant::parse("base", params).map(|v| Variant {
                            label: label.to_string(),
                            ..v
                        });
                    }
                    rest = after;
                }
            }
        }
        let mut values = Vec::with_capacity(params.len());
        for (i, (name, _)) in params.iter().enumerate() {
            let pair = rest
                .strip_prefix(&format!("{name}_"))
                .ok_or_else(|| bad(&format!("expected `{name}_…` at `{rest}`")))?;
            let end = match params.get(i + 1) {
                Some((next, _)) => pair
                    .find(&format!(".{next}_"))
                    .ok_or_else(|| bad(&format!("no `{next}_…` after `{name}`")))?,
                None => pair.len(),
            };
            values.push((*name, pair[..end].to_string()));
            rest = pair[end..].strip_prefix('.').unwrap_or(&pair[end..]);
        }
        Ok(Variant {
            label: label.to_string(),
            values,
        })
    }

    /// The value of parameter `name`, parsed as `T` (`usize`, `u32`, `bool`, `String`, …).
    pub fn get<T: std::str::FromStr>(&self, name: &str) -> Result<T, Error> {
        let (_, text) = self
            .values
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "variant `{}` has no parameter `{name}`",
                    self.label
                ))
            })?;
        text.parse().map_err(|_| {
            Error::Usage(format!(
                "parameter `{name}` of variant `{}` is `{text}`, not a {}",
                self.label,
                std::any::type_name::<T>()
            ))
        })
    }
}

/// What `function` resolved to in this process, if it was called.
pub fn resolved(function: &str) -> Option<Resolved> {
    with_registry(|r| r.resolved.get(function).cloned())
}

/// The architecture that picks applied entries: [`ARCH_ENV`] if set; else, with the `cuda`
/// feature, `sm_XY` of the current CUDA context's device (or device 0); else `cpu`.
pub fn arch() -> &'static str {
    static ARCH: OnceLock<String> = OnceLock::new();
    ARCH.get_or_init(|| {
        std::env::var(ARCH_ENV)
            .ok()
            .filter(|a| !a.is_empty())
            .or_else(device_arch)
            .unwrap_or_else(|| "cpu".to_string())
    })
}

#[cfg(feature = "cuda")]
fn device_arch() -> Option<String> {
    crate::backend::cuda::current_arch()
}

#[cfg(not(feature = "cuda"))]
fn device_arch() -> Option<String> {
    None
}

#[cold]
#[inline(never)]
fn resolve(table: &Table, workload: usize) -> u32 {
    let requested = with_registry(|r| r.requested.get(table.function).cloned());
    let arm = choose(table, workload, requested.as_deref(), arch());
    // Record a miss so the runner can fail the state instead of timing base.
    let resolved = Resolved {
        label: table.arms[arm.unwrap_or(0) as usize].to_string(),
        missing: requested.filter(|_| arm.is_none()),
    };
    with_registry(|r| {
        r.resolved.insert(table.function.to_string(), resolved);
    });
    arm.unwrap_or(0)
}

/// The arm to run: the requested variant if any (`None` when it is not compiled in), else the
/// applied entry for `workload` on `arch`, else base.
pub fn choose(table: &Table, workload: usize, requested: Option<&str>, arch: &str) -> Option<u32> {
    if let Some(label) = requested {
        return table
            .arms
            .iter()
            .position(|a| *a == label)
            .map(|i| i as u32);
    }
    Some(
        table
            .policy
            .iter()
            .find(|e| e.workload == workload && e.arch == arch)
            .map_or(0, |e| e.arm),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: Table = Table {
        function: "scale",
        arms: &["base", "ipt_8.tpb_128", "ipt_4.tpb_512", "ipt_1.tpb_64"],
        policy: &[
            Entry {
                workload: 0,
                arch: "sm_90",
                arm: 1,
            },
            Entry {
                workload: 1,
                arch: "sm_90",
                arm: 2,
            },
            Entry {
                workload: 0,
                arch: "sm_80",
                arm: 2,
            },
        ],
    };

    #[test]
    fn production_picks_the_entry_for_the_architecture_else_base() {
        assert_eq!(choose(&TABLE, 0, None, "sm_90"), Some(1));
        assert_eq!(choose(&TABLE, 1, None, "sm_90"), Some(2));
        assert_eq!(choose(&TABLE, 0, None, "sm_80"), Some(2));
        // No entry for this workload on sm_80, none at all for sm_100 or an unknown workload.
        assert_eq!(choose(&TABLE, 1, None, "sm_80"), Some(0));
        assert_eq!(choose(&TABLE, 0, None, "sm_100"), Some(0));
        assert_eq!(choose(&TABLE, 2, None, "sm_90"), Some(0));
    }

    #[test]
    fn a_request_wins_over_the_policy_and_a_missing_one_is_reported() {
        assert_eq!(choose(&TABLE, 0, Some("ipt_1.tpb_64"), "sm_90"), Some(3));
        assert_eq!(choose(&TABLE, 0, Some("base"), "sm_90"), Some(0));
        assert_eq!(choose(&TABLE, 0, Some("ipt_2.tpb_64"), "sm_90"), None);
    }

    #[test]
    fn the_cache_resolves_once_and_records_what_ran() {
        static T: Table = Table {
            function: "tuned_test_cache",
            arms: &["base", "x_1", "x_2"],
            policy: &[],
        };
        static C: Cache<1> = Cache::new();
        request("tuned_test_cache", "x_2");
        assert_eq!(C.arm(&T, 0), 2);
        assert_eq!(
            resolved("tuned_test_cache"),
            Some(Resolved {
                label: "x_2".into(),
                missing: None
            })
        );
        // A later request resolves again; withdrawing it runs the production choice (base).
        request("tuned_test_cache", "x_1");
        assert_eq!(resolved("tuned_test_cache"), None);
        assert_eq!(C.arm(&T, 0), 1);
        withdraw("tuned_test_cache");
        assert_eq!(C.arm(&T, 0), 0);
        assert_eq!(
            resolved("tuned_test_cache").map(|r| r.label),
            Some("base".into())
        );
    }

    #[test]
    fn a_missing_variant_runs_base_and_says_so() {
        static T: Table = Table {
            function: "tuned_test_missing",
            arms: &["base", "x_1"],
            policy: &[],
        };
        static C: Cache<1> = Cache::new();
        request("tuned_test_missing", "x_9");
        assert_eq!(C.arm(&T, 0), 0);
        assert_eq!(
            resolved("tuned_test_missing"),
            Some(Resolved {
                label: "base".into(),
                missing: Some("x_9".into())
            })
        );
    }

    const PARAMS: &[(&str, &str)] = &[("ipt", "4"), ("tpb", "256")];

    #[test]
    fn labels_parse_into_values_and_base_into_the_base_values() {
        let v = Variant::parse("ipt_16.tpb_1024", PARAMS).expect("valid");
        assert_eq!(
            v.values,
            [("ipt", "16".to_string()), ("tpb", "1024".to_string())]
        );
        assert_eq!(v.get::<usize>("tpb").expect("int"), 1024);
        let prefixed = Variant::parse("scale.ipt_16.tpb_1024", PARAMS).expect("valid");
        assert_eq!(prefixed.values, v.values);
        for base in ["base", "scale.base"] {
            let b = Variant::parse(base, PARAMS).expect("base");
            assert_eq!(b.get::<u32>("ipt").expect("int"), 4);
            assert_eq!(b.get::<u32>("tpb").expect("int"), 256);
            assert_eq!(b.label, base);
        }
    }

    #[test]
    fn names_and_values_with_underscores_and_dots_parse() {
        const P: &[(&str, &str)] = &[("items_per", "1"), ("load", "ld_global"), ("fast", "true")];
        let v = Variant::parse("items_per_2.load_ld_ca.v2.fast_false", P).expect("valid");
        assert_eq!(
            v.values,
            [
                ("items_per", "2".to_string()),
                ("load", "ld_ca.v2".to_string()),
                ("fast", "false".to_string())
            ]
        );
        assert!(!v.get::<bool>("fast").expect("bool"));
        assert_eq!(v.get::<String>("load").expect("text"), "ld_ca.v2");
    }

    #[test]
    fn malformed_labels_and_wrong_types_are_usage_errors() {
        for label in ["ipt_8", "tpb_128.ipt_8", "ipt8.tpb_128", "", "x.y"] {
            match Variant::parse(label, PARAMS) {
                Err(Error::Usage(msg)) => assert!(msg.contains("ipt, tpb"), "{msg}"),
                other => panic!("{label}: {other:?}"),
            }
        }
        let v = Variant::parse("ipt_8.tpb_128", PARAMS).expect("valid");
        assert!(matches!(v.get::<u32>("wpt"), Err(Error::Usage(_))));
        assert!(matches!(v.get::<bool>("ipt"), Err(Error::Usage(_))));
    }

    #[test]
    fn the_plan_is_per_function_and_replaced_whole() {
        plan("tuned_test_plan", &["a_1", "base"]);
        assert_eq!(planned("tuned_test_plan"), ["a_1", "base"]);
        plan("tuned_test_plan", &[]);
        assert!(planned("tuned_test_plan").is_empty());
        assert!(planned("tuned_test_never_planned").is_empty());
    }

    #[test]
    fn type_names_match_short_and_full_paths() {
        assert!(type_is::<f32>("f32"));
        assert!(!type_is::<f64>("f32"));
        assert!(type_is::<String>("String"));
        assert!(type_is::<String>("alloc::string::String"));
        assert!(!type_is::<String>("ring"));
    }
}
