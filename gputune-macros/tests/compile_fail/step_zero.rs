use gputune_macros::tune;

#[tune(tpb = (64..=1024).step_by(0), base(tpb = 64))]
fn kernel() {}

fn main() {}
