use gputune_macros::tune;

#[tune(
    ipt = 1..=16,
    tpb = pow2(6..=10),
    offset = [-1, 0, 1],
    vectorize = [true, false],
    load = [ldg, ldca],
    require(ipt * tpb <= 8192),
    base(ipt = 4, tpb = 256, offset = -1, vectorize = true, load = ldg)
)]
fn kernel() -> (usize, isize, bool, &'static str) {
    const TPB32: u32 = TPB as u32;
    assert_eq!(TPB32, 256);
    (IPT * TPB, OFFSET, VECTORIZE, LOAD)
}

fn main() {
    assert_eq!(kernel(), (1024, -1, true, "ldg"));
}
