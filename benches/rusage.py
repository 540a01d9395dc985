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


def main() -> int:
    out, cmd = sys.argv[1], sys.argv[2]
    if cmd == "--":
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        code = subprocess.call(sys.argv[3:], stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        user = ru.ru_utime - before.ru_utime
        system = ru.ru_stime - before.ru_stime
        with open(out, "w") as f:
            f.write(f"{wall:.6f} {user:.6f} {system:.6f} 0\n")
        return code
    # Children this process had before (a launcher's shim may run some,
    # then exec Python) are not the command's.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        code = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", peak.name, "sh", "-c", cmd])
        wall = time.perf_counter() - start
        kib = peak.read().split()[-1] if os.path.getsize(peak.name) else "0"
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = ru.ru_utime - before.ru_utime
    system = ru.ru_stime - before.ru_stime
    with open(out, "w") as f:
        f.write(f"{wall:.6f} {user:.6f} {system:.6f} {kib}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
