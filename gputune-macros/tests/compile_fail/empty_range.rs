use gputune_macros::tune;

#[tune(ipt = 8..=1, base(ipt = 1))]
fn kernel() {}

fn main() {}
