use gputune_macros::tune;

#[tune(ipt = 1..=4, tpb = [64, 128], base(ipt = 1))]
fn kernel() {}

fn main() {}
