#!/usr/bin/env python3
"""Runs `sh -c CMD` and writes `wall user system peak_kib` to OUT, like
`/usr/bin/time -f '%e %U %S %M' -o OUT`, but with microsecond CPU times
(getrusage of the children) where GNU time prints 10 ms steps: a command
of 50 ms of CPU then gives a ratio finer than one part in five.

The peak is still GNU time's `%M`, run under this script: a child forked
from Python starts as a copy of the interpreter, whose resident size
would count as the command's. Its own CPU (well under a millisecond) is
counted on both sides of a comparison alike.

Usage: rusage.py OUT CMD                 (exit status: the command's)
       rusage.py OUT -- PROGRAM ARGS...  the program alone, no shell and no
                                         GNU time (peak written as 0), its
                                         stdout thrown away: nothing but the
                                         program is timed
"""
import os
import resource
import subprocess
import sys
import tempfile
import time


def timed(argv, **kw):
    """Runs argv; its exit status, wall seconds and CPU seconds (user,
    system). Children this process had before (a launcher's shim may run
    some, then exec Python) are not the command's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.call(argv, **kw)
    wall = time.perf_counter() - start
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return code, wall, ru.ru_utime - before.ru_utime, ru.ru_stime - before.ru_stime


def main() -> int:
    out, cmd = sys.argv[1], sys.argv[2]
    if cmd == "--":
        code, wall, user, system = timed(sys.argv[3:], stdout=subprocess.DEVNULL)
        kib = "0"
    else:
        with tempfile.NamedTemporaryFile("r") as peak:
            code, wall, user, system = timed(
                ["/usr/bin/time", "-f", "%M", "-o", peak.name, "sh", "-c", cmd]
            )
            kib = peak.read().split()[-1] if os.path.getsize(peak.name) else "0"
    with open(out, "w") as f:
        f.write(f"{wall:.6f} {user:.6f} {system:.6f} {kib}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
