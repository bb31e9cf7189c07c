use gputune_macros::tune;

#[tune(ipt = 1..=4, tpb = [64, 128], ipt = [2], base(ipt = 1, tpb = 64))]
fn kernel() {}

fn main() {}
