#!/usr/bin/env bash
# Checks the packages `make package` built: installs the .deb with dpkg,
# checks that every file lands where it should (binary, systemd units,
# completions, man pages) and works, purges it and checks that nothing is
# left; lists the .rpm's files with rpm.
#
#   scripts/package-test.sh [DIST]     (default: dist)
#
# Needs root and dpkg; installs rpm with apt-get when missing. Refuses to run
# when an agentctl package or /usr/bin/agentctl is already installed, so it
# never replaces a real installation.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
dist=${1:-$repo/dist}
start=$(date +%s)

log() { printf 'package-test: %s\n' "$*" >&2; }
fails=0
checks=0
ok() {
	checks=$((checks + 1))
	printf '  ok    %s\n' "$1"
}
fail() {
	checks=$((checks + 1))
	fails=$((fails + 1))
	printf '  FAIL  %s\n' "$1"
}
check() { # check DESCRIPTION CMD...
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$what"; else fail "$what"; fi
}

[ "$(id -u)" = 0 ] || {
	log "must run as root (dpkg -i)"
	exit 1
}
command -v dpkg >/dev/null || {
	log "dpkg is required"
	exit 1
}
arch=$(dpkg --print-architecture)
debs=("$dist"/agentctl_*_"$arch".deb)
[ -f "${debs[0]}" ] || {
	log "no $dist/agentctl_*_$arch.deb: run make package"
	exit 1
}
deb=${debs[0]}
if dpkg -s agentctl >/dev/null 2>&1 || [ -e /usr/bin/agentctl ]; then
	log "agentctl is already installed on this machine; not touching it"
	exit 1
fi

installed=0
purge() {
	if [ "$installed" = 1 ]; then
		dpkg --purge agentctl >/dev/null 2>&1 || true
		installed=0
	fi
}
trap purge EXIT

# Every file the package must install, with its mode.
files=(
	"/usr/bin/agentctl 755"
	"/usr/lib/systemd/user/agentctl.service 644"
	"/usr/lib/systemd/system/agentctl@.service 644"
	"/usr/share/bash-completion/completions/agentctl 644"
	"/usr/share/zsh/vendor-completions/_agentctl 644"
	"/usr/share/fish/vendor_completions.d/agentctl.fish 644"
	"/usr/share/man/man1/agentctl.1.gz 644"
	"/usr/share/man/man1/agentctl-service-install.1.gz 644"
	"/usr/share/man/man1/agentctl-run.1.gz 644"
)

echo "package-test: $(basename "$deb")"
dpkg -i "$deb" >/dev/null
installed=1
ok "dpkg -i"
listed=$(dpkg -L agentctl)
for entry in "${files[@]}"; do
	set -- $entry
	if [ -f "$1" ] && [ "$(stat -c %a "$1")" = "$2" ] && grep -qxF "$1" <<<"$listed"; then
		ok "$1 (mode $2, owned by the package)"
	else
		fail "$1 (mode $2, owned by the package)"
	fi
done
check "agentctl --version runs" /usr/bin/agentctl --version
check "agentctl has the service command" /usr/bin/agentctl service --help
check "user unit is packaging/systemd/agentctl.service" cmp /usr/lib/systemd/user/agentctl.service "$repo/packaging/systemd/agentctl.service"
check "system unit is packaging/systemd/agentctl@.service" cmp /usr/lib/systemd/system/agentctl@.service "$repo/packaging/systemd/agentctl@.service"
if command -v systemd-analyze >/dev/null; then
	# An instance of the template, for an account that exists everywhere.
	tmpdir=$(mktemp -d)
	sed 's/%i/root/' /usr/lib/systemd/system/agentctl@.service >"$tmpdir/agentctl@root.service"
	check "systemd-analyze verify accepts the system unit" systemd-analyze verify --man=no "$tmpdir/agentctl@root.service"
	rm -rf "$tmpdir"
fi
check "man page is a gzipped roff page for agentctl" sh -c 'zcat /usr/share/man/man1/agentctl.1.gz | grep -q "^\.TH \"AGENTCTL\" \"1\""'
check "bash completion parses" bash -n /usr/share/bash-completion/completions/agentctl
check "bash completion completes subcommands" bash -c '. /usr/share/bash-completion/completions/agentctl && complete -p agentctl'
check "zsh completion declares itself" grep -q '^#compdef agentctl' /usr/share/zsh/vendor-completions/_agentctl
check "fish completion registers agentctl" grep -q 'complete -c agentctl' /usr/share/fish/vendor_completions.d/agentctl.fish

# The packaged user unit on a real systemd user manager (the harness of
# scripts/systemd-harness.sh), started the way its users start it.
harness=$repo/scripts/systemd-harness.sh
if [ -x /lib/systemd/systemd ] && "$harness" up >/dev/null 2>&1; then
	trap '"$harness" down >/dev/null 2>&1 || true; purge' EXIT
	as_user() { "$harness" run-user "$@"; }
	if as_user systemctl --user enable --now agentctl.service >/dev/null 2>&1; then
		ok "systemctl --user enable --now agentctl (packaged unit)"
		served=""
		for _ in $(seq 100); do
			main=$(as_user systemctl --user show -p MainPID --value agentctl.service 2>/dev/null || true)
			served=$(as_user env AGENTCTL_NO_AUTOSTART=1 /usr/bin/agentctl daemon status --json 2>/dev/null | sed -n 's/^ *"pid": *\([0-9]*\).*/\1/p')
			[ -n "$served" ] && [ "$served" = "$main" ] && break
			sleep 0.1
		done
		if [ -n "$served" ] && [ "$served" = "$main" ]; then
			ok "the packaged unit's service (pid $main) answers the CLI on ~/.agentctl"
		else
			fail "the packaged unit's service answers the CLI on ~/.agentctl (MainPID ${main:-none}, served by ${served:-nobody})"
		fi
		check "agentctl service status reports the packaged unit" sh -c "\"$harness\" run-user /usr/bin/agentctl service status --json | grep -q '\"unit_path\": \"/usr/lib/systemd/user/agentctl.service\"'"
		as_user systemctl --user disable --now agentctl.service >/dev/null 2>&1 || true
	else
		fail "systemctl --user enable --now agentctl (packaged unit)"
	fi
	"$harness" down >/dev/null 2>&1 || true
	trap purge EXIT
else
	log "no systemd user manager harness on this machine: the packaged unit was not started"
fi

dpkg --purge agentctl >/dev/null
installed=0
left=0
for entry in "${files[@]}"; do
	set -- $entry
	[ -e "$1" ] && left=1
done
if [ "$left" = 0 ] && ! dpkg -s agentctl >/dev/null 2>&1 && ! ls /usr/share/man/man1/agentctl* >/dev/null 2>&1; then
	ok "dpkg --purge removes every file"
else
	fail "dpkg --purge removes every file"
fi

rpms=("$dist"/agentctl-*.rpm)
if [ -f "${rpms[0]}" ]; then
	if ! command -v rpm >/dev/null; then
		log "installing rpm with apt-get to read the .rpm"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rpm >/dev/null
	fi
	rpm_files=$(rpm -qlp "${rpms[0]}" 2>/dev/null)
	for want in /usr/bin/agentctl /usr/lib/systemd/user/agentctl.service /usr/lib/systemd/system/agentctl@.service \
		/usr/share/bash-completion/completions/agentctl /usr/share/zsh/site-functions/_agentctl \
		/usr/share/fish/vendor_completions.d/agentctl.fish /usr/share/man/man1/agentctl.1.gz; do
		if grep -qxF "$want" <<<"$rpm_files"; then ok "rpm holds $want"; else fail "rpm holds $want"; fi
	done
else
	fail "an .rpm next to the .deb"
fi

echo "package-test: $((checks - fails)) passed, $fails failed ($(($(date +%s) - start)) s)"
[ "$fails" = 0 ]
