#!/usr/bin/env bash
# graphzero-mine against GraphPi and G2Miner (issue 22): the table of scripts/bench/graphzero_vs_peers.py.
#   scripts/bench/graphzero_vs_peers.sh BUILD [PEERS] [graphzero_vs_peers.py options...]
# BUILD: a build folder with bin/graphzero-mine. PEERS (default $TOOLKIT_PEERS, else ../peers beside the
# checkout): the peers built by hand, PEERS/GraphMiner (bin/*_omp_base), PEERS/GraphPi
# (build/bin/graphpi_count), and PEERS/graphs/GRAPH/ with their inputs (graph.* for G2Miner, graphpi.txt for
# GraphPi). A missing peer is left out of the table. Datasets: $TOOLKIT_DATASETS or ../shared/datasets.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 BUILD [PEERS] [options]" >&2
  exit 2
fi
build="$1"
shift
peers="${TOOLKIT_PEERS:-$root/../peers}"
if [[ $# -gt 0 && "$1" != -* ]]; then
  peers="$1"
  shift
fi
datasets="${TOOLKIT_DATASETS:-$root/../shared/datasets}"
args=(--bin "$build/bin/graphzero-mine" --peer-graphs "$peers/graphs" --datasets "$datasets/graphs")
[[ -d "$peers/GraphMiner/bin" ]] && args+=(--g2miner "$peers/GraphMiner")
[[ -x "$peers/GraphPi/build/bin/graphpi_count" ]] && args+=(--graphpi "$peers/GraphPi")
exec python3 "$root/scripts/bench/graphzero_vs_peers.py" "${args[@]}" "$@"
