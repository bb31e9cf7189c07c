use gputune_macros::tune;

#[tune(ipt = 1..=4)]
fn kernel() {}

fn main() {}
