use gputune_macros::tune;

#[tune(ipt = [1, 2], base(ipt = 1), size(n))]
fn kernel(n: usize) -> usize {
    n * IPT
}

fn main() {}
