use gputune_macros::tune;

// Without a build script the size is not read: base's constants, whatever the size.
#[tune(ipt = [1, 2], base(ipt = 2), size(Elements = x.len()))]
fn total(x: &[u32]) -> usize {
    x.len() * IPT
}

fn main() {
    assert_eq!(total(&[1, 2, 3]), 6);
}
