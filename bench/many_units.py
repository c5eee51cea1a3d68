#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""many_units.py - writes and builds a large C program for the symbolizer
benchmark (issue 17): UNITS translation units of FUNCS functions each,
every function calling static inline helpers (so the binary has inlined
chains two and three deep) and a function of the next unit, built with the
system cc at -O2 -g (DWARF 5, .debug_aranges, .debug_rnglists) into one
executable with a GNU build id.

  python3 bench/many_units.py OUT [UNITS=400] [FUNCS=40]

The sources are generated from a fixed pattern (no randomness), so the
binary is the same on every run with the same compiler.  Prints OUT.
"""
import os
import subprocess
import sys
import tempfile


def unit_source(u, units, funcs):
    nxt = (u + 1) % units
    out = ['#include <stdint.h>',
           'extern uint64_t u%d_f0(uint64_t);' % nxt,
           'static inline uint64_t mix%d(uint64_t x) { return (x ^ (x >> 13)) * %du; }'
           % (u, 2 * u + 3),
           'static inline uint64_t step%d(uint64_t x, int i) '
           '{ return mix%d(x + (uint64_t)i) + (x & 7 ? mix%d(x >> 3) : 1); }' % (u, u, u),
           'static inline uint64_t deep%d(uint64_t x) '
           '{ uint64_t s = 0; for (int i = 0; i < (int)(x & 3) + 1; i++) '
           's += step%d(x, i); return s; }' % (u, u)]
    for f in range(funcs):
        body = ('uint64_t s = deep%d(x + %d);' % (u, f),
                'if (s & 1) s = step%d(s, %d); else s = mix%d(s);' % (u, f, u),
                'for (int i = 0; i < %d; i++) s += (s << i) ^ mix%d(s + (uint64_t)i);'
                % (f % 5 + 1, u))
        tail = ('return x > %d ? u%d_f0(x - 1) + s : s;' % (units, nxt) if f == 0
                else 'return s ^ u%d_f%d(x);' % (u, f - 1))
        out.append('__attribute__((noinline)) uint64_t u%d_f%d(uint64_t x) { %s %s }'
                   % (u, f, ' '.join(body), tail))
    return '\n'.join(out) + '\n'


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    units = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    funcs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    with tempfile.TemporaryDirectory(prefix='spanprof-units-') as d:
        objs = []
        for u in range(units):
            with open(os.path.join(d, 'u%d.c' % u), 'w') as f:
                f.write(unit_source(u, units, funcs))
        with open(os.path.join(d, 'main.c'), 'w') as f:
            f.write('#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
                    'extern uint64_t u0_f%d(uint64_t);\n'
                    'int main(int c, char **v) { printf("%%llu\\n", (unsigned long long)'
                    'u0_f%d(c > 1 ? strtoull(v[1], 0, 0) : 3)); return 0; }\n'
                    % (funcs - 1, funcs - 1))
        with open(os.path.join(d, 'Makefile'), 'w') as f:
            srcs = ['u%d.c' % u for u in range(units)] + ['main.c']
            objs = [s[:-2] + '.o' for s in srcs]
            f.write('prog: %s\n\tcc -g -Wl,--build-id -o $@ $^\n'
                    '%%.o: %%.c\n\tcc -O2 -g -c $< -o $@\n' % ' '.join(objs))
        subprocess.run(['make', '-s', '-C', d, '-j%d' % (os.cpu_count() or 1), 'prog'],
                       check=True)
        os.replace(os.path.join(d, 'prog'), out)
    print(out)


if __name__ == '__main__':
    main()
