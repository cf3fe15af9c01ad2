#!/usr/bin/env bash
# `make check-helm`: the chart checked without a cluster. helm lint --strict, then
# helm template with the default and the production values, every rendered object
# decoded strictly into the k8s.io/api types and checked by deploy/check/k8s (pinned
# images, probes, resources, non-root, PodDisruptionBudgets, credentials from Secrets,
# nothing exposed but through the Ingress). helm and the checker are built from the Go
# module proxy on first use and cached (deploy/local/install.sh tools).
set -euo pipefail
. "$(dirname "$0")/../local/env.sh"
bash "$ROOT/deploy/local/install.sh" tools

CHART="$ROOT/deploy/helm/peertrain"
# helm built with `go install` assumes Kubernetes 1.20 without a cluster; the chart
# needs 1.27 or later (Chart.yaml kubeVersion).
KUBE_VERSION=1.33.0
# helm follows the chart's symlinks into deploy/ (the gateway template, the dashboards)
# and says so on every load; that note is not a problem.
quiet() { grep -v 'found symbolic link in path' >&2 || true; }

for values in default production; do
  args=(--kube-version "$KUBE_VERSION")
  [[ $values == production ]] && args+=(-f "$ROOT/deploy/helm/values-production.yaml")
  echo "== $values values"
  "$HELM_BIN" lint --strict "$CHART" "${args[@]}" 2> >(quiet)
  "$HELM_BIN" template peertrain "$CHART" --namespace peertrain "${args[@]}" 2> >(quiet) |
    "$CHECKERS_DIR/k8s-check" -
done
