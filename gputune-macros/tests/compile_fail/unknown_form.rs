use gputune_macros::tune;

#[tune(ipt = 1..=4, tpb = sixteen(4), base(ipt = 1, tpb = 4))]
fn kernel() {}

fn main() {}
