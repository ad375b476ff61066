#!/usr/bin/env bash
# The machine's CPU time over a stretch of work, from the kernel's /proc/stat (Linux), so that a
# run's log says how much work it was beside how long it took: the same commit's `npm test` took
# 899 CPU-s on one machine of our kind and 1,561 on another, and a run can end no sooner than its
# busy CPU-s over the cores whatever the order of its lanes.
#
#   scripts/machine-cpu.sh now            the CPU time so far: "busy idle steal" in clock ticks
#   scripts/machine-cpu.sh since "<now>"  one line: the busy CPU-s since then, of how many, the
#                                         share taken by the hypervisor (steal), and the floor
#
# Busy is user, nice, system, irq and softirq (guest time is inside user); idle is idle and iowait;
# steal is time the hypervisor gave another machine. Busy counts every process of the machine:
# on a quiet machine, the work's own. Prints nothing where /proc/stat cannot be read.
# CITY_PROC_STAT, CITY_CLK_TCK and CITY_CPU_CORES stand in for the kernel's figures (the script's test).
set -euo pipefail

STAT="${CITY_PROC_STAT:-/proc/stat}"
[ -r "$STAT" ] || exit 0

now() {
  awk '$1 == "cpu" { printf "%d %d %d\n", $2 + $3 + $4 + $7 + $8, $5 + $6, $9; exit }' "$STAT"
}

case "${1:-}" in
  now) now ;;
  since)
    [ -n "${2:-}" ] || exit 0
    awk -v start="$2" -v end="$(now)" -v hz="${CITY_CLK_TCK:-$(getconf CLK_TCK)}" -v cores="${CITY_CPU_CORES:-$(nproc)}" 'BEGIN {
      split(start, s, " "); split(end, e, " ")
      busy = (e[1] - s[1]) / hz; idle = (e[2] - s[2]) / hz; steal = (e[3] - s[3]) / hz
      all = busy + idle + steal
      if (all <= 0) exit
      printf "machine CPU: %d CPU-s busy of %d on %d cores (%d %%), %d CPU-s stolen by the hypervisor; this much work ends no sooner than %d s\n",
        busy, all, cores, 100 * busy / all, steal, busy / cores
    }'
    ;;
  *)
    echo "usage: scripts/machine-cpu.sh now | since \"<busy idle steal>\"" >&2
    exit 2
    ;;
esac
