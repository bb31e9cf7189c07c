#!/usr/bin/env bash
# Makes the candle that tuned/ builds against: candle-nn and candle-core 0.11.1 as crates.io
# ships them (from cargo's registry; `cargo fetch` in this workspace fetches them if missing),
# copied to target/candle-patched/{candle-nn,candle-core} with patches/ applied:
#   candle-nn.diff            the launch chooser of rmsnorm, layernorm and softmax (src/ops.rs)
#   candle-core.diff          the matrix-vector launcher chooser (src/quantized/fast_mmvq.rs)
# Idempotent: a copy that already matches is left as it is (its timestamps too, so cargo does
# not rebuild it); a diff that does not apply exactly fails the script and names it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=0.11.1
dest=$here/target/candle-patched
registry=${CARGO_HOME:-$HOME/.cargo}/registry/src

pristine() { # the registry's unpacked crate $1, if any
  local d
  for d in "$registry"/*/"$1-$version"; do
    if [ -f "$d/Cargo.toml" ]; then echo "$d"; return 0; fi
  done
  return 1
}

if ! pristine candle-nn > /dev/null || ! pristine candle-core > /dev/null; then
  echo "patch.sh: candle $version not unpacked under $registry: cargo fetch" >&2
  cargo fetch --manifest-path "$here/Cargo.toml"
fi

apply() { # crate, then its diffs
  local crate=$1 src work
  shift
  src=$(pristine "$crate") || { echo "patch.sh: no $crate-$version under $registry" >&2; exit 1; }
  work=$dest/.$crate.new
  rm -rf "$work"
  mkdir -p "$dest"
  cp -r "$src" "$work"
  # The registry's bookkeeping files are not part of the crate.
  rm -f "$work/.cargo-ok"
  for diff in "$@"; do
    if ! patch -p1 --fuzz=0 --batch --forward --silent -d "$work" < "$here/patches/$diff"; then
      rm -rf "$work"
      echo "patch.sh: patches/$diff does not apply to $crate $version ($src)" >&2
      exit 1
    fi
  done
  # patch leaves *.orig files where it had to use offsets; none belong in the copy.
  find "$work" -name '*.orig' -delete
  if [ -d "$dest/$crate" ] && diff -r -q "$work" "$dest/$crate" > /dev/null; then
    rm -rf "$work"
    echo "patch.sh: $dest/$crate is up to date"
  else
    rm -rf "${dest:?}/$crate"
    mv "$work" "$dest/$crate"
    echo "patch.sh: $dest/$crate patched ($*)"
  fi
}

apply candle-nn candle-nn.diff
apply candle-core candle-core.diff
