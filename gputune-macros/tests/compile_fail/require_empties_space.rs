use gputune_macros::tune;

#[tune(ipt = 1..=4, tpb = pow2(6..=10), require(ipt * tpb > 4096), base(ipt = 1, tpb = 64))]
fn kernel() {}

fn main() {}
