//! Compile tests of `#[tune]`: every malformed attribute fails with the message checked in
//! next to it, and well-formed ones compile.

#[test]
fn malformed_attributes_fail_with_their_messages() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
    t.pass("tests/pass/*.rs");
}
