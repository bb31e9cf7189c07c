//! Bench registration: a name, a function over a [`State`], and the axes it is run over.

use crate::axis::{Axis, AxisValues};
use crate::device::BackendKind;
use crate::error::BenchResult;
use crate::state::State;

/// A bench function: sets up one state's workload and calls [`State::exec`] on it.
pub type BenchFn = Box<dyn Fn(&mut State<'_>) -> BenchResult>;

/// One instantiation of a generic bench: the type names, one per type axis, and the
/// function monomorphised for them. [`type_instances!`](crate::type_instances) builds these.
pub struct TypeInstance {
    /// Type names in type-axis order (`["f32"]`).
    pub types: Vec<String>,
    /// The bench function for those types.
    pub function: BenchFn,
}

/// Builds the [`TypeInstance`]s of a generic bench function for each listed type (one type
/// axis) or each pair in the Cartesian product of two lists (two type axes).
///
/// ```
/// use gputune_runtime::{type_instances, Bench, BenchResult, State};
///
/// fn fill<T: Default + Clone>(state: &mut State<'_>) -> BenchResult {
///     let n = state.get_int64("Elements")? as usize;
///     state.exec(|_| { std::hint::black_box(vec![T::default(); n]); Ok(()) });
///     Ok(())
/// }
///
/// let bench = Bench::with_types("fill", &["T{ct}"], type_instances!(fill; [f32, f64]))
///     .add_int64_axis("Elements", [1024]);
/// assert_eq!(bench.state_count(), 2);
/// ```
#[macro_export]
macro_rules! type_instances {
    ($f:ident; [$($a:ty),+ $(,)?]) => {
        vec![$(
            $crate::bench::TypeInstance {
                types: vec![stringify!($a).to_string()],
                function: Box::new($f::<$a>),
            }
        ),+]
    };
    ($f:ident; [$($a:ty),+ $(,)?], $b:tt) => {{
        let mut v = Vec::new();
        $( v.extend($crate::type_instances!(@second $f; $a; $b)); )+
        v
    }};
    (@second $f:ident; $a:ty; [$($b:ty),+ $(,)?]) => {
        vec![$(
            $crate::bench::TypeInstance {
                types: vec![stringify!($a).to_string(), stringify!($b).to_string()],
                function: Box::new($f::<$a, $b>),
            }
        ),+]
    };
}

/// A registered bench.
pub struct Bench {
    pub(crate) name: String,
    pub(crate) type_axis_names: Vec<String>,
    pub(crate) instances: Vec<TypeInstance>,
    pub(crate) axes: Vec<Axis>,
    pub(crate) backend: BackendKind,
    pub(crate) tunes: Option<String>,
}

impl Bench {
    /// A bench without type axes. It runs on the CPU backend unless [`Bench::backend`] says
    /// otherwise.
    pub fn new(name: &str, function: impl Fn(&mut State<'_>) -> BenchResult + 'static) -> Bench {
        Bench {
            name: name.to_string(),
            type_axis_names: Vec::new(),
            instances: vec![TypeInstance {
                types: Vec::new(),
                function: Box::new(function),
            }],
            axes: Vec::new(),
            backend: BackendKind::Cpu,
            tunes: None,
        }
    }

    /// A generic bench instantiated once per type combination (compile-time workloads).
    /// Axis names usually carry `{ct}`: `T{ct}`.
    pub fn with_types(name: &str, type_axes: &[&str], instances: Vec<TypeInstance>) -> Bench {
        let mut axes = Vec::new();
        for (i, axis) in type_axes.iter().enumerate() {
            let mut values: Vec<String> = Vec::new();
            for inst in &instances {
                if let Some(t) = inst.types.get(i) {
                    if !values.contains(t) {
                        values.push(t.clone());
                    }
                }
            }
            axes.push(Axis {
                name: axis.to_string(),
                values: AxisValues::Type(values),
            });
        }
        Bench {
            name: name.to_string(),
            type_axis_names: type_axes.iter().map(|s| s.to_string()).collect(),
            instances,
            axes,
            backend: BackendKind::Cpu,
            tunes: None,
        }
    }

    fn add_axis(mut self, name: &str, values: AxisValues) -> Bench {
        self.axes.retain(|a| a.name != name);
        self.axes.push(Axis {
            name: name.to_string(),
            values,
        });
        self
    }

    /// An integer axis.
    pub fn add_int64_axis(self, name: &str, values: impl IntoIterator<Item = i64>) -> Bench {
        self.add_axis(name, AxisValues::Int64(values.into_iter().collect()))
    }

    /// A power-of-two axis given by exponents: `[16, 20]` means 2^16 and 2^20.
    pub fn add_int64_power_of_two_axis(
        self,
        name: &str,
        exponents: impl IntoIterator<Item = u32>,
    ) -> Bench {
        self.add_axis(name, AxisValues::Int64Pow2(exponents.into_iter().collect()))
    }

    /// A floating-point axis.
    pub fn add_float64_axis(self, name: &str, values: impl IntoIterator<Item = f64>) -> Bench {
        self.add_axis(name, AxisValues::Float64(values.into_iter().collect()))
    }

    /// A string axis.
    pub fn add_string_axis<S: Into<String>>(
        self,
        name: &str,
        values: impl IntoIterator<Item = S>,
    ) -> Bench {
        self.add_axis(
            name,
            AxisValues::String(values.into_iter().map(Into::into).collect()),
        )
    }

    /// Which backend measures this bench's states. Default: [`BackendKind::Cpu`].
    pub fn backend(mut self, backend: BackendKind) -> Bench {
        self.backend = backend;
        self
    }

    /// Names the `#[tune]` function this bench tunes; other tuned functions it calls run at
    /// their production values.
    pub fn tunes(mut self, function: &str) -> Bench {
        self.tunes = Some(function.to_string());
        self
    }

    /// The bench's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its axes, type axes first.
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// Number of states: type instances times the product of the value axes' lengths.
    pub fn state_count(&self) -> usize {
        let values: usize = self
            .axes
            .iter()
            .filter(|a| !matches!(a.values, AxisValues::Type(_)))
            .map(|a| a.values.len())
            .product();
        self.live_instances().count() * values
    }

    /// The instances whose every type is still among its axis's values (after `-a`).
    pub(crate) fn live_instances(&self) -> impl Iterator<Item = (usize, &TypeInstance)> {
        self.instances.iter().enumerate().filter(|(_, inst)| {
            inst.types.iter().enumerate().all(|(i, t)| {
                self.type_axis_names
                    .get(i)
                    .and_then(|n| self.axes.iter().find(|a| &a.name == n))
                    .is_some_and(|a| matches!(&a.values, AxisValues::Type(v) if v.contains(t)))
            })
        })
    }
}

impl std::fmt::Debug for Bench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bench")
            .field("name", &self.name)
            .field("axes", &self.axes)
            .field("backend", &self.backend)
            .field("tunes", &self.tunes)
            .finish_non_exhaustive()
    }
}
