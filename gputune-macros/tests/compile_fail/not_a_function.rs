use gputune_macros::tune;

#[tune(ipt = 1..=4, base(ipt = 1))]
struct NotAFunction;


fn main() {}
