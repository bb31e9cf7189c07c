use gputune_macros::tune;

#[tune(ipt = [1, 2], size = n, base(ipt = 1))]
fn kernel(n: usize) -> usize {
    n * IPT
}

fn main() {}
