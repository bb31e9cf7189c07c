//! A part of a bundle's variants, as `run-bundle --shard I/N` names it: which variants it
//! runs and where its store goes.

/// `--shard I/N`: part `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// I, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

impl Shard {
    /// The indices of the items of this shard among `len` items: a contiguous block, the
    /// blocks of shards 1 to N following each other and differing in size by at most one.
    /// Contiguous rather than every N-th, so that each shard runs as few of the bundle's
    /// batched binaries as it can: every bench process pays a start-up.
    pub fn range(&self, len: usize) -> std::ops::Range<usize> {
        (self.index - 1) * len / self.count..self.index * len / self.count
    }

    /// The name of this shard's store in a bundle.
    pub fn store_name(&self) -> String {
        format!("gputune-shard-{}-of-{}.db", self.index, self.count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let parse = |t: &str| t.trim().parse::<usize>().ok();
        match s.split_once('/').map(|(i, n)| (parse(i), parse(n))) {
            Some((Some(index), Some(count))) if (1..=count).contains(&index) => {
                Ok(Shard { index, count })
            }
            Some((Some(_), Some(_))) => Err(format!(
                "`{s}`: I must be between 1 and N (shards are numbered from 1)"
            )),
            _ => Err(format!("`{s}` is not I/N (e.g. 2/4)")),
        }
    }
}
