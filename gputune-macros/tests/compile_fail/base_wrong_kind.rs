use gputune_macros::tune;

#[tune(ipt = 1..=4, vectorize = [true, false], base(ipt = 1, vectorize = 2))]
fn kernel() {}

fn main() {}
