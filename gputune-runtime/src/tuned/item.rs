//! `TUNED`: what `#[tune]` gives every variant's body, as plain data. It lives here, not
//! with the CUDA kernel handle that reads it, because every `#[tune]` function declares it,
//! CPU ones too.

/// What separates a variant's values in its [`Tuned`] (`\u{1f}`, the unit separator): the
/// grammar's `VALUE_SEPARATOR`, which writes them.
pub const VALUE_SEPARATOR: &str = "\u{1f}";

/// What `#[tune]` gives every variant's body as `TUNED`: the tuned function's name, its table
/// of parameters (per parameter: its declared name, its `const` name and base's value as a
/// define writes it; one table for every variant of the function) and this variant's values,
/// as defines write them, in declaration order. A kernel handle (`Kernel::get`, feature
/// `cuda`) makes the variant's `-D` options from it, and those of every other variant the
/// process will run.
///
/// ```
/// use gputune_runtime::tuned::Tuned;
///
/// const TUNED: Tuned = Tuned::new("scale", &[("ipt", "IPT", "4"), ("tpb", "TPB", "256")], "8\u{1f}128");
/// let entries: Vec<_> = TUNED.entries().collect();
/// assert_eq!(entries, [("ipt", "IPT", "8", "4"), ("tpb", "TPB", "128", "256")]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuned {
    function: &'static str,
    params: &'static [(&'static str, &'static str, &'static str)],
    values: &'static str,
}

impl Tuned {
    /// A variant of `function` whose parameter table is `params` and whose values are
    /// `values`, separated by [`VALUE_SEPARATOR`].
    pub const fn new(
        function: &'static str,
        params: &'static [(&'static str, &'static str, &'static str)],
        values: &'static str,
    ) -> Tuned {
        Tuned {
            function,
            params,
            values,
        }
    }

    /// Nothing tuned: a kernel compiled with its fixed defines alone (`Kernel::fixed`).
    pub const UNTUNED: Tuned = Tuned::new("", &[], "");

    /// The tuned function's name.
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// The function's table: per parameter, its declared name, its `const` name and base's
    /// value as a define writes it.
    pub fn params(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        self.params
    }

    /// This variant's values, as defines write them, separated by [`VALUE_SEPARATOR`]: with
    /// the function's name, what tells variants apart.
    pub fn values(&self) -> &'static str {
        self.values
    }

    /// Per parameter, in declaration order: its declared name, its `const` name, this
    /// variant's value and base's value, as defines write them.
    pub fn entries(
        &self,
    ) -> impl Iterator<Item = (&'static str, &'static str, &'static str, &'static str)> {
        let values = self.values;
        let mut split = (!self.params.is_empty())
            .then(|| values.split(VALUE_SEPARATOR))
            .into_iter()
            .flatten();
        self.params.iter().map(move |(name, const_name, base)| {
            (*name, *const_name, split.next().unwrap_or(""), *base)
        })
    }
}
