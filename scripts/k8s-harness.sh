#!/usr/bin/env bash
# A throwaway one-node Kubernetes cluster on 127.0.0.1, for agentctl's
# cluster tests: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and a kubelet (built by scripts/k8s-build.sh) over a
# private containerd with Debian's runc and CNI plugins. Everything lives in
# one state folder; nothing is pulled from a registry (the test image is
# imported from a tarball: busybox-static plus the agentctl binary).
#
#   scripts/k8s-harness.sh up DIR      start; DIR/kubeconfig, DIR/env
#   scripts/k8s-harness.sh down DIR    stop every process by pid, unmount,
#                                      remove the bridge, remove DIR
#   scripts/k8s-harness.sh image DIR AGENTCTL
#                                      (re)import the test image with AGENTCTL
#   scripts/k8s-harness.sh agent-image DIR NAME NODEPKG
#                                      import image NAME: the test image plus
#                                      node and the npm package at NODEPKG
#   scripts/k8s-harness.sh node DIR    the node's conditions and taints, the
#                                      disk, and the kubelet's last lines
#                                      (after a failed test)
#
# Needs root, containerd, runc, containernetworking-plugins, busybox-static,
# openssl (.ci/run installs them). AGENTCTL (env) is the agentctl binary for
# the test image; built from this checkout when unset.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH:/usr/sbin:/sbin"

# The test image's name: both the sandbox ("pause") image and the agents'.
IMAGE=agentctl.test/agent:1

# The node's name. The API server reaches the kubelet by it (logs, attach:
# the kubelet refuses a loopback node IP, so the node has no address but
# its name), and "localhost" resolves to this machine wherever the tests
# run, which the machine's own hostname need not.
NODE=localhost

die() {
	echo "k8s-harness: $*" >&2
	exit 1
}

# ports DIR: a block of ten free ports, picked once and kept in DIR/ports.
pick_ports() {
	local d=$1 base
	for _ in $(seq 20); do
		base=$((20000 + (RANDOM % 4000) * 10))
		if ! ss -Htln | awk '{print $4}' | grep -qE ":($base|$((base + 1))|$((base + 2))|$((base + 3))|$((base + 4))|$((base + 5))|$((base + 6)))\$"; then
			echo "$base" >"$d/ports"
			return
		fi
	done
	die "no free block of ports"
}

# make_image DIR AGENTCTL [NAME NODEPKG]: a Docker-archive tarball with one
# layer (busybox and its applets, agentctl), imported into the private
# containerd as NAME (default the test image). With NODEPKG (an npm prefix:
# NODEPKG/node_modules/.bin/BIN) the layer also holds this machine's node,
# the shared libraries ldd lists for it, and that package, with each of its
# .bin commands on PATH: an agent CLI's image.
make_image() {
	local d=$1 agentctl=$2 name=${3:-$IMAGE} pkg=${4:-}
	local img=$d/image pkgtar=()
	rm -rf "$img"
	mkdir -p "$img/root/bin" "$img/root/usr/local/bin" "$img/root/tmp" "$img/root/etc" "$img/root/work" "$img/root/root"
	cp /bin/busybox "$img/root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$img/root/bin/$applet"
	done
	cp "$agentctl" "$img/root/usr/local/bin/agentctl"
	if [ -n "$pkg" ]; then
		local node lib bin
		node=$(command -v node) || die "node is missing: an agent image needs it (apt-get install nodejs)"
		cp "$node" "$img/root/usr/local/bin/node"
		for lib in $(ldd "$node" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
			mkdir -p "$img/root$(dirname "$lib")"
			cp -L "$lib" "$img/root$lib"
		done
		# Scripts start with #!/usr/bin/env node.
		mkdir -p "$img/root/usr/bin" "$img/root/opt/agent"
		ln -sf /bin/busybox "$img/root/usr/bin/env"
		# The package goes into the layer straight from NODEPKG (below): a
		# copy of its many small files first would cost seconds.
		pkgtar=(-C "$pkg" --transform 's,^node_modules,opt/agent/node_modules,S' node_modules)
		for bin in "$pkg"/node_modules/.bin/*; do
			ln -sf "/opt/agent/node_modules/.bin/$(basename "$bin")" "$img/root/usr/local/bin/$(basename "$bin")"
		done
	fi
	echo 'root:x:0:0:root:/root:/bin/sh' >"$img/root/etc/passwd"
	echo 'root:x:0:' >"$img/root/etc/group"
	chmod 1777 "$img/root/tmp"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -cf "$img/layer.tar" -C "$img/root" . "${pkgtar[@]}"
	local diff
	diff=$(sha256sum "$img/layer.tar" | cut -d' ' -f1)
	cat >"$img/config.json" <<EOF
{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z",
 "config":{"Env":["PATH=/usr/local/bin:/bin","HOME=/root"],"Cmd":["/bin/sleep","2147483647"],"WorkingDir":"/"},
 "rootfs":{"type":"layers","diff_ids":["sha256:$diff"]}}
EOF
	local cfg
	cfg=$(sha256sum "$img/config.json" | cut -d' ' -f1)
	mv "$img/config.json" "$img/$cfg.json"
	echo "[{\"Config\":\"$cfg.json\",\"RepoTags\":[\"$name\"],\"Layers\":[\"layer.tar\"]}]" >"$img/manifest.json"
	tar -C "$img" -cf "$d/image.tar" manifest.json "$cfg.json" layer.tar
	rm -rf "$img"
	ctr --address "$d/containerd.sock" -n k8s.io images import "$d/image.tar" >/dev/null
	rm -f "$d/image.tar"
}

# certs DIR: a throwaway CA, the API server's serving certificate, client
# certificates (admin in system:masters; a user with no rights), the
# service-account key pair.
make_certs() {
	local d=$1/pki host=$NODE
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=agentctl-test-ca \
		-keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
	cert() { # name subject [san]
		openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
		if [ -n "${3:-}" ]; then
			printf 'subjectAltName=%s\n' "$3" >"$d/$1.ext"
		else
			: >"$d/$1.ext"
		fi
		openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
			-days 2 -extfile "$d/$1.ext" -out "$d/$1.crt" 2>/dev/null
		rm -f "$d/$1.csr" "$d/$1.ext"
	}
	cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:$host"
	cert admin "/O=system:masters/CN=admin"
	cert node "/O=system:nodes/CN=system:node:$host"
	cert nobody "/CN=nobody"
	openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
	openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
}

# kubeconfig FILE USER SERVER: a kubeconfig with the CA and USER's certificate.
kubeconfig() {
	local f=$1 user=$2 server=$3 pki=$4
	cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: $user
  context: {cluster: test, user: $user, namespace: default}
current-context: $user
EOF
}

# start NAME cmd...: start a component in the background, its pid in
# DIR/pids (one "NAME PID" a line), its output in DIR/log/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$state/log/$name.log" 2>&1 </dev/null &
	echo "$name $!" >>"$state/pids"
}

# wait_for WHAT SECONDS cmd...: run cmd until it succeeds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	local until=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $until ]; then
			echo "k8s-harness: $what not ready after ${secs}s; its log:" >&2
			tail -n 30 "$state/log/$what.log" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.5
	done
}

up() {
	state=$1
	[ "$(id -u)" = 0 ] || die "needs root (a kubelet and containerd run here)"
	for tool in containerd runc ctr openssl ss ip setsid /bin/busybox /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback; do
		command -v "$tool" >/dev/null 2>&1 || die "$tool is missing: apt-get install containerd runc containernetworking-plugins busybox-static openssl iproute2"
	done
	[ -e "$state/pids" ] && die "$state holds a cluster already; run: $0 down $state"
	mkdir -p "$state/log"
	state=$(cd "$state" && pwd -P)
	local t0=$SECONDS bin
	bin=$(bash "$repo/scripts/k8s-build.sh")
	echo "k8s-harness: components ready in $((SECONDS - t0))s" >&2
	local agentctl=${AGENTCTL:-}
	if [ -z "$agentctl" ]; then
		agentctl=$state/agentctl
		(cd "$repo" && CGO_ENABLED=0 go build -o "$agentctl" ./cmd/agentctl)
	fi
	pick_ports "$state"
	local base host
	base=$(cat "$state/ports")
	host=$NODE
	local p_etcd=$base p_peer=$((base + 1)) p_api=$((base + 2)) p_cm=$((base + 3)) p_sched=$((base + 4)) p_kubelet=$((base + 5)) p_khealth=$((base + 6))
	# A bridge name of our own, short enough for the kernel's 15 bytes.
	local bridge=actl$((base / 10 % 10000))
	echo "$bridge" >"$state/bridge"
	make_certs "$state"
	local pki=$state/pki server=https://127.0.0.1:$p_api
	kubeconfig "$state/kubeconfig" admin "$server" "$pki"
	kubeconfig "$state/node.kubeconfig" node "$server" "$pki"
	kubeconfig "$state/nobody.kubeconfig" nobody "$server" "$pki"

	# containerd, private: its own root, state, socket, CNI config.
	mkdir -p "$state/cni/conf" "$state/cni/ipam" "$state/containerd"
	cat >"$state/cni/conf/10-agentctl.conflist" <<EOF
{"cniVersion":"0.4.0","name":"agentctl-test","plugins":[
 {"type":"bridge","bridge":"$bridge","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","dataDir":"$state/cni/ipam","ranges":[[{"subnet":"10.244.$((base / 10 % 200)).0/24"}]]}},
 {"type":"loopback"}]}
EOF
	local runtime_binary=runc
	# Without CAP_SYS_RESOURCE, runc cannot give the sandbox the negative
	# oom_score_adj the kubelet asks for: a wrapper raises it to 0.
	local capeff
	capeff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
	if (((0x$capeff >> 24 & 1) == 0)); then
		cat >"$state/runc" <<'EOF'
#!/bin/sh
# Raise a negative oomScoreAdj to 0: this machine's root cannot lower it.
prev=
for a in "$@"; do
	if [ "$prev" = --bundle ] || [ "$prev" = -b ]; then
		sed -i -E 's/"oomScoreAdj":-[0-9]+/"oomScoreAdj":0/' "$a/config.json"
	fi
	prev=$a
done
exec runc "$@"
EOF
		chmod +x "$state/runc"
		runtime_binary=$state/runc
	fi
	cat >"$state/containerd.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
[grpc]
  address = "$state/containerd.sock"
[ttrpc]
  address = "$state/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$runtime_binary"
        Root = "$state/runc-root"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/conf"
EOF
	# Containers' cgroups go under k8s.io in each hierarchy: the folders
	# made there are removed by down.
	for c in /sys/fs/cgroup/*/; do
		[ -d "$c/k8s.io" ] || echo "${c}k8s.io"
	done >"$state/cgroups"
	# Folders outside DIR the kubelet, containerd's shims and the CNI plugins
	# make at fixed paths: down removes those that were not there before.
	for f in /run/containerd /var/lib/cni /var/lib/kubelet /var/log/containers; do
		[ -e "$f" ] || echo "$f"
	done >"$state/made"
	start containerd containerd --config "$state/containerd.toml"
	wait_for containerd 30 ctr --address "$state/containerd.sock" version
	make_image "$state" "$agentctl"

	start etcd "$bin/etcd" --name test --data-dir "$state/etcd" \
		--listen-client-urls "http://127.0.0.1:$p_etcd" --advertise-client-urls "http://127.0.0.1:$p_etcd" \
		--listen-peer-urls "http://127.0.0.1:$p_peer" --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
		--initial-cluster "test=http://127.0.0.1:$p_peer" --log-level warn
	start kube-apiserver "$bin/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$p_etcd" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$p_api" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--client-ca-file "$pki/ca.crt" \
		--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-cluster-ip-range 10.0.0.0/24 \
		--authorization-mode Node,RBAC \
		--endpoint-reconciler-type none \
		--kubelet-preferred-address-types Hostname,InternalIP \
		--kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key"
	local curl_api=(curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key")
	wait_for kube-apiserver 90 "${curl_api[@]}" "$server/readyz"
	start kube-controller-manager "$bin/kube-controller-manager" \
		--kubeconfig "$state/kubeconfig" --bind-address 127.0.0.1 --secure-port "$p_cm" \
		--controllers '*,-node-ipam-controller' --leader-elect=false \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt"
	start kube-scheduler "$bin/kube-scheduler" \
		--kubeconfig "$state/kubeconfig" --bind-address 127.0.0.1 --secure-port "$p_sched" --leader-elect=false

	mkdir -p "$state/kubelet" "$state/pod-logs"
	# No eviction for the disk ("0%" turns a signal off): the node shares
	# the machine's disk, and the kubelet measures free space against its
	# whole size. On a big disk with a few GB free (1% of 250 GB is 2.5 GB)
	# it would call that pressure and taint the node, and no test pod could
	# be placed. Image garbage collection is off too: the test images are
	# imported, not pulled, and must stay.
	cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $p_kubelet
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $p_khealth
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$state/containerd.sock
podLogsDir: $state/pod-logs
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {"memory.available": "1Mi", "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%", "imagefs.inodesFree": "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
	start kubelet "$bin/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$state/node.kubeconfig" \
		--root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" --hostname-override "$host"
	wait_for kubelet 120 node_ready "$state" "$server" "$host"
	# The default service account: pods wait for it.
	wait_for kube-controller-manager 60 "${curl_api[@]}" "$server/api/v1/namespaces/default/serviceaccounts/default"
	# A node can carry a taint after it is Ready (not-ready, a pressure),
	# until the controller manager sees it well: the scheduler places no pod
	# on it meanwhile.
	if ! wait_for kube-controller-manager 60 node_untainted "$state" "$server" "$host"; then
		node_state "$state" >&2
		return 1
	fi
	cat >"$state/env" <<EOF
KUBECONFIG=$state/kubeconfig
K8S_IMAGE=$IMAGE
K8S_BIN=$bin
K8S_NOBODY_KUBECONFIG=$state/nobody.kubeconfig
EOF
	echo "k8s-harness: cluster up in $((SECONDS - t0))s; KUBECONFIG=$state/kubeconfig" >&2
}

# node_json DIR SERVER HOST: the node object, compact JSON on one line (the
# API server indents its answers to a user agent named curl).
node_json() {
	local state=$1 server=$2 host=$3
	curl -sf -A k8s-harness --cacert "$state/pki/ca.crt" --cert "$state/pki/admin.crt" --key "$state/pki/admin.key" \
		"$server/api/v1/nodes/$host"
}

node_ready() {
	node_json "$@" | grep -q '"type":"Ready","status":"True"'
}

# node_untainted DIR SERVER HOST: the node is Ready and carries no taint.
node_untainted() {
	local json
	json=$(node_json "$@") || return 1
	grep -q '"type":"Ready","status":"True"' <<<"$json" && ! grep -q '"taints":' <<<"$json"
}

# node DIR: what the cluster says of its node, for a reader of a failed run.
node_state() {
	state=$(cd "$1" && pwd -P)
	local server json
	server=https://127.0.0.1:$(($(cat "$state/ports") + 2))
	if ! json=$(node_json "$state" "$server" "$NODE"); then
		echo "k8s-harness: the API server does not answer for node $NODE" >&2
		return 1
	fi
	echo "k8s-harness: node $NODE:"
	grep -o '"conditions":\[[^]]*\]' <<<"$json" | sed 's/},{/},\n  {/g; s/^/  /'
	echo "  $(grep -o '"taints":\[[^]]*\]' <<<"$json" || echo 'no taints')"
	echo "k8s-harness: the disk under $state:"
	df -h "$state" | sed 's/^/  /'
	echo "k8s-harness: the kubelet's last lines:"
	tail -n 20 "$state/log/kubelet.log"
	echo
}

image() {
	state=$(cd "$1" && pwd -P)
	make_image "$state" "$2"
}

# agent_image DIR NAME NODEPKG: the test image with node and an agent CLI's
# npm package (make_image), as NAME, with the agentctl of the cluster's test
# image. Made on demand (a test of a real agent asks for it): it is large,
# and the other tests do not need it.
agent_image() {
	state=$(cd "$1" && pwd -P)
	[ -d "$3/node_modules/.bin" ] || die "$3 is not an npm prefix with node_modules/.bin (scripts/install-agents.sh makes one)"
	[ -x "$state/agentctl" ] || die "$state/agentctl is missing: the cluster was started with AGENTCTL set; make the image with that binary"
	local t0=$SECONDS
	make_image "$state" "$state/agentctl" "$2" "$3"
	echo "k8s-harness: image $2 made and imported in $((SECONDS - t0))s" >&2
}

# stop_pid PID: SIGTERM, then SIGKILL after 5 s; waits for the end.
stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# others_run: a kubelet or containerd (or a containerd shim) runs here.
others_run() {
	local c
	for c in /proc/[0-9]*/comm; do
		case $(cat "$c" 2>/dev/null) in kubelet | containerd*) return 0 ;; esac
	done
	return 1
}

down() {
	[ -d "$1" ] || return 0
	state=$(cd "$1" && pwd -P)
	local sock=$state/containerd.sock
	# The control plane and the kubelet first, in reverse order.
	if [ -f "$state/pids" ]; then
		for name in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
			local pid
			pid=$(awk -v n="$name" '$1 == n {print $2}' "$state/pids")
			if [ -n "$pid" ]; then
				local t=$SECONDS
				stop_pid "$pid"
				[ $((SECONDS - t)) -lt 5 ] || echo "k8s-harness: $name needed SIGKILL" >&2
			fi
		done
	fi
	# Every container of the private containerd: kill and delete, which
	# ends its shim. The shims are found by the socket they serve.
	if [ -S "$sock" ]; then
		local ctr=(ctr --address "$sock" -n k8s.io)
		for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
		done
		sleep 0.5
		for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
			"${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
		done
		for c in $("${ctr[@]}" containers ls -q 2>/dev/null); do
			"${ctr[@]}" containers delete "$c" >/dev/null 2>&1 || true
		done
	fi
	for p in /proc/[0-9]*; do
		local pid=${p#/proc/}
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "-address $sock "; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	if [ -f "$state/pids" ]; then
		local pid
		pid=$(awk '$1 == "containerd" {print $2}' "$state/pids")
		[ -n "$pid" ] && stop_pid "$pid"
	fi
	# Mounts under the state folder (rootfs, shm, network namespaces),
	# deepest first.
	local m
	for m in $(awk -v d="$state/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	if [ -f "$state/bridge" ]; then
		ip link del "$(cat "$state/bridge")" 2>/dev/null || true
	fi
	# The kubelet's links to the containers' logs, then what was made outside
	# DIR.
	local l
	for l in /var/log/containers/*; do
		[ -L "$l" ] && case $(readlink "$l") in "$state"/*) rm -f "$l" ;; esac
	done
	# Another cluster on this machine (ours are stopped by now) shares those
	# folders: they stay while it runs.
	if others_run; then
		if [ -s "$state/made" ]; then
			echo "k8s-harness: another kubelet or containerd runs here: leaving $(tr '\n' ' ' <"$state/made")" >&2
		fi
	else
		if [ -f "$state/made" ]; then
			while read -r f; do
				rm -rf "$f"
			done <"$state/made"
		fi
		if [ -f "$state/cgroups" ]; then
			while read -r c; do
				rmdir "$c" 2>/dev/null || true
			done <"$state/cgroups"
		fi
	fi
	local left
	left=$(awk -v d="$state/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)
	[ "$left" = 0 ] || echo "k8s-harness: WARNING: $left mounts under $state are left" >&2
	rm -rf "$state"
}

case "${1:-}" in
up) up "${2:?usage: $0 up DIR}" ;;
down) down "${2:?usage: $0 down DIR}" ;;
image) image "${2:?usage: $0 image DIR AGENTCTL}" "${3:?usage: $0 image DIR AGENTCTL}" ;;
agent-image) agent_image "${2:?usage: $0 agent-image DIR NAME NODEPKG}" "${3:?usage: $0 agent-image DIR NAME NODEPKG}" "${4:?usage: $0 agent-image DIR NAME NODEPKG}" ;;
node) node_state "${2:?usage: $0 node DIR}" ;;
*)
	echo "usage: $0 up|down|node DIR, or $0 image DIR AGENTCTL, or $0 agent-image DIR NAME NODEPKG" >&2
	exit 2
	;;
esac
