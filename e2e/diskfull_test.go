package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// diskFullScript runs inside a private mount namespace whose
// AGENTCTL_HOME is a small tmpfs: a session writes until the disk is full,
// ends while it is full, and space comes back afterwards.
const diskFullScript = `
set -eu
bin=$1 home=$2 stop=$3
mount -t tmpfs -o size=16m tmpfs "$home"
export AGENTCTL_HOME="$home"
say() { printf '== %s\n' "$*"; }
"$bin" daemon start >/dev/null
dd if=/dev/zero of="$home/filler" bs=1M count=11 2>/dev/null
id=$("$bin" run --json -- sh -c 'i=0; while [ ! -e '"$stop"' ]; do echo "line $i of output that fills the disk"; i=$((i+1)); done; exit 7' | sed -n 's/^  "id": "\(.*\)",$/\1/p')
say "session $id"
for i in $(seq 100); do
	if "$bin" status "$id" | grep -q 'output dropped since'; then break; fi
	sleep 0.1
done
say "while full:"; "$bin" status "$id" | grep -E 'status|output dropped' || true
touch "$stop"
for i in $(seq 100); do
	if "$bin" status "$id" | grep -q 'exited'; then break; fi
	sleep 0.1
done
say "ended while full:"; "$bin" status "$id" | grep -E '^status'
rm -f "$home/filler"
for i in $(seq 100); do
	if [ -s "$home/sessions/$id/ended.json" ]; then break; fi
	sleep 0.2
done
say "space back:"; "$bin" status "$id" | grep -E '^status'
say "events:"; grep -c '"type":"session.stopped".*"'"$id"'"' "$home/events.jsonl" || true
"$bin" daemon stop >/dev/null
`

// A session that ends while $AGENTCTL_HOME's disk is full keeps its exit
// code, says its output was dropped while it was, and its end is announced
// once space comes back.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs in a private mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", diskFullScript, "diskfull", agentctlBin, home, filepath.Join(dir, "stop"))
	cmd.Env = append(os.Environ(), "AGENTCTL_NO_AUTOSTART=")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("disk-full script: %v", err)
	}
	text := string(out)
	section := func(name string) string {
		_, after, _ := strings.Cut(text, "== "+name)
		before, _, _ := strings.Cut(after, "== ")
		return before
	}
	if s := section("while full:"); !strings.Contains(s, "output dropped since") || !strings.Contains(s, "no space left on device") {
		t.Errorf("while the disk was full, status said %q; want a warning that output is being dropped and why", s)
	}
	if s := section("ended while full:"); !strings.Contains(s, "exited(7)") {
		t.Errorf("a session that ended on a full disk reads %q; want exited(7)", s)
	}
	if s := section("space back:"); !strings.Contains(s, "exited(7)") {
		t.Errorf("after space came back the session reads %q; want exited(7)", s)
	}
	if s := strings.TrimSpace(section("events:")); s != "1" {
		t.Errorf("session.stopped journaled %s times once space came back; want once", s)
	}
}
