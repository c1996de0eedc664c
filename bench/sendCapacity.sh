#!/usr/bin/env bash
# POST /v1/send's capacity (issue 39): the highest rate held for 60 s, trying the given rates in
# order until one is not held. Held: accepted ≥ 98 % of offered, p99 < 250 ms, no non-2xx answer or
# error, and the delivery backlog drained within 5 s of the load's end. Each rate is one
# `bench:send -- 60 batch <rate>` on a fresh stack.
#
#   npm run bench:send-capacity -- 500 650 800 950
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 300 400 500 600 700 800
held_rate=none
for rate in "$@"; do
  out=$(npm run --silent bench:send -- 60 batch "$rate" 2>&1 | grep -v '^\s*$' | grep -v 'accepted/s  ' || true)
  acc=$(awk '/accepted requests\/s \(mean\)/{print $NF}' <<<"$out")
  p99=$(awk '/latency p99/{print $NF}' <<<"$out")
  bad=$(awk '/non-2xx responses|^  errors/{s+=$NF} END{print s+0}' <<<"$out")
  drain=$(awk '/seconds to drain it/{print $NF}' <<<"$out")
  cpu=$(awk '/CPU per send, all processes/{print $NF}' <<<"$out")
  verdict=$(awk -v a="${acc:-0}" -v r="$rate" -v p="${p99:-99999}" -v b="$bad" -v d="${drain:-99999}" \
    'BEGIN{print (a>=0.98*r && p<250 && b==0 && d<5) ? "held" : "not held"}')
  echo "rate $rate/s: accepted $acc/s, p99 $p99 ms, non-2xx + errors $bad, backlog drained in $drain s, CPU $cpu ms a send: $verdict"
  [ "$verdict" = held ] || break
  held_rate=$rate
done
echo "capacity: the highest rate held is $held_rate/s"
