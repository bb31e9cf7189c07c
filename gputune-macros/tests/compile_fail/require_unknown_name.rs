use gputune_macros::tune;

#[tune(ipt = 1..=4, require(ipt * tbp <= 1024), base(ipt = 1))]
fn kernel() {}

fn main() {}
