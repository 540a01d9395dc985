#!/bin/sh
# Times `noma hook pre-commit` on a commit of 1,000 staged 4 KB files and
# one document, for two binaries alternately (e.g. before and after the
# private-key check), 11 runs each; prints each binary's times sorted (ms):
# wall clock, or with CPU=1 the process's user + sys CPU (getrusage, through
# python3), which a machine loaded by other work disturbs less.
#
#   [CPU=1] sh benches/hook_staged_keys.sh OLD_NOMA NEW_NOMA
set -e
old=$(realpath "$1") new=$(realpath "$2")
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cd "$d"
git init -q -b main
git config user.name t
git config user.email t@t
printf '# P\n\n::note{id="a"}\nx\n::\n' > a.noma
git add -A
git commit -qm setup
i=0
while [ $i -lt 1000 ]; do head -c 3000 /dev/urandom | base64 > f$i.txt; i=$((i + 1)); done
printf '# P\n\n::note{id="a"}\ny\n::\n' > a.noma
git add -A
for k in 1 2 3 4 5 6 7 8 9 10 11; do
  for b in "old $old" "new $new"; do
    set -- $b
    if [ -n "${CPU:-}" ]; then
      python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(sys.argv[1], round((r.ru_utime + r.ru_stime) * 1e6))' "$1" "$2" hook pre-commit
    else
      s=$(date +%s%N)
      "$2" hook pre-commit > /dev/null 2>&1
      e=$(date +%s%N)
      echo "$1 $(((e - s) / 1000))"
    fi
  done
done | sort -k1,1 -k2,2n | awk '{t[$1] = t[$1] " " $2 / 1000} END {for (k in t) print k ":" t[k]}'
