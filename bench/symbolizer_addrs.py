#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""symbolizer_addrs.py - address sets for bench/symbolizer_bench.sh.

  symbolizer_addrs.py ELF cold N SEED  > cold.txt
  symbolizer_addrs.py ELF hot N SEED [HOT] > hot.txt

Addresses are ELF virtual addresses inside sized FUNC symbols of the
executable's .symtab (or its /usr/lib/debug/.build-id debug file's, or
.dynsym), read with `readelf -sW` (binutils), one "0x..." per line.
  cold: N distinct addresses, uniform over all bytes of all functions
        (every address a different lookup: nothing to reuse).
  hot:  N addresses drawn from HOT (default 300) distinct ones with Zipf
        weights 1/rank (a profile's shape: a few hot leaves, a long tail).
Deterministic for a given ELF, N and SEED.
"""
import random
import subprocess
import sys


def symbol_file(elf):
    """The ELF itself, or its separate debug file (/usr/lib/debug/.build-id)
    when the ELF has no .symtab (a stripped Debian binary with -dbg)."""
    secs = subprocess.run(["readelf", "-SW", elf], capture_output=True, text=True).stdout
    if ".symtab" in secs:
        return elf
    notes = subprocess.run(["readelf", "-n", elf], capture_output=True, text=True).stdout
    for line in notes.splitlines():
        if "Build ID:" in line:
            bid = line.split("Build ID:")[1].strip()
            dbg = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
            try:
                open(dbg, "rb").close()
                return dbg
            except OSError:
                pass
    return elf


def functions(elf):
    out = subprocess.run(["readelf", "-sW", symbol_file(elf)], capture_output=True, text=True,
                         check=True).stdout
    seen, funcs = set(), []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[3] != "FUNC" or f[6] in ("UND", "ABS"):
            continue
        try:
            start, size = int(f[1], 16), int(f[2], 0)
        except ValueError:
            continue
        if size > 0 and start and (start, size) not in seen:
            seen.add((start, size))
            funcs.append((start, size))
    if not funcs:
        sys.exit("no sized FUNC symbols in %s" % elf)
    return sorted(funcs)


def main():
    if len(sys.argv) < 5 or sys.argv[2] not in ("cold", "hot"):
        sys.exit(__doc__)
    elf, kind, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    hot_n = int(sys.argv[5]) if len(sys.argv) > 5 else 300
    rng = random.Random(seed)
    funcs = functions(elf)
    # every byte of every function once, deduplicated (aliases overlap)
    spans, total = [], 0
    last_end = 0
    for start, size in funcs:
        s = max(start, last_end)
        e = start + size
        if e > s:
            spans.append((s, e - s, total))
            total += e - s
            last_end = e
    if kind == "cold" and n > total:
        sys.exit("%s has only %d function bytes, %d asked" % (elf, total, n))
    picks = rng.sample(range(total), n if kind == "cold" else hot_n)
    offs = [p for p in picks]
    starts = [t for _, _, t in spans]

    def addr(k):
        import bisect
        i = bisect.bisect_right(starts, k) - 1
        s, _, t = spans[i]
        return s + (k - t)

    addrs = [addr(k) for k in offs]
    if kind == "hot":
        weights = [1.0 / (r + 1) for r in range(hot_n)]
        addrs = rng.choices(addrs, weights=weights, k=n)
    sys.stdout.write("".join("0x%x\n" % a for a in addrs))


if __name__ == "__main__":
    main()
