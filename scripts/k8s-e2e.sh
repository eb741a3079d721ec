#!/usr/bin/env bash
# The Kubernetes tier: starts a throwaway cluster (scripts/k8s-harness.sh),
# runs the cluster backend's tests against it, and tears it down, whatever
# happened. Needs root; skips loudly without it or without the tools.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH:/usr/sbin:/sbin"

if [ "$(id -u)" != 0 ]; then
	echo "k8s-e2e: SKIP: the test cluster needs root (a kubelet and containerd run here); the Kubernetes tests did not run"
	exit 0
fi
for tool in containerd runc ctr openssl /bin/busybox /usr/lib/cni/bridge; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "k8s-e2e: SKIP: $tool is missing (apt-get install containerd runc containernetworking-plugins busybox-static openssl); the Kubernetes tests did not run"
		exit 0
	fi
done

state=$(mktemp -d /tmp/agentctl-k8s.XXXXXX)
trap 'bash scripts/k8s-harness.sh down "$state"' EXIT
t0=$SECONDS
bash scripts/k8s-harness.sh up "$state"
echo "k8s-e2e: cluster up in $((SECONDS - t0))s"
failed=0
AGENTCTL_TEST_K8S=$state nice go test -race -count=1 -timeout 15m -v ${K8S_TESTS:+-run "$K8S_TESTS"} ./cluster/... || failed=1
# The cluster as a host of the real CLI (e2e/k8s_test.go).
AGENTCTL_TEST_K8S=$state nice go test -race -count=1 -timeout 15m -v -run 'TestClusterAsHost' ./e2e/ || failed=1
if [ "$failed" = 1 ]; then
	# What the node was like: a scheduler's "untolerated taint" or a lost
	# log stream is the node's state more often than the code's.
	bash scripts/k8s-harness.sh node "$state" || true
	exit 1
fi
