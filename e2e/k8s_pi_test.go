package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

// piImage is the test image with node and the Pi package
// (scripts/k8s-harness.sh agent-image).
const piImage = "agentctl.test/pi:1"

// npmPrefix is the npm prefix an agent CLI's command bin was installed in
// (PREFIX/node_modules/.bin/NAME, as scripts/install-agents.sh links it).
func npmPrefix(t *testing.T, bin string) string {
	t.Helper()
	link, err := os.Readlink(bin)
	if err != nil {
		t.Fatalf("%s: %v: want a link into an npm prefix (scripts/install-agents.sh)", bin, err)
	}
	if !filepath.IsAbs(link) {
		link = filepath.Join(filepath.Dir(bin), link)
	}
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(link)))
	if _, err := os.Stat(filepath.Join(prefix, "node_modules")); err != nil {
		t.Fatalf("%s: no npm prefix above %s: %v", bin, link, err)
	}
	return prefix
}

// A real agent on the cluster: Pi (node and its npm package in the image)
// against the fake model on the node's loopback (network=host), its store
// on the work volume. Launched with a first message at its interactive
// prompt: running with its native id, idle once it answered, busy with a
// message sent and idle again, as the agentctl in the pod reads its session
// file; peek shows its answer from that file,
// explain shows the pod's evidence, stop removes the pod; a resume
// continues the same native session in a new pod.
func TestClusterAsHostPi(t *testing.T) {
	c := newTestCluster(t)
	pkg := npmPrefix(t, piBin(t))
	srv := agenttest.FakeModel(t)

	t0 := time.Now()
	if out, err := exec.Command("bash", "../scripts/k8s-harness.sh", "agent-image", c.dir, piImage, pkg).CombinedOutput(); err != nil {
		t.Fatalf("make the Pi image: %v: %s", err, out)
	}
	t.Logf("the Pi image was made and imported in %s", time.Since(t0).Round(100*time.Millisecond))

	work := t.TempDir()
	agentDir := filepath.Join(work, ".pi-agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"fakeopenai":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"fake-key",
  "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},"models":[{"id":"fake-model"}]}}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	e := NewEnv(t)
	e.Setenv("KUBECONFIG", c.kubeconfig)
	e.MustRun("host", "add", "pi", "k8s:///"+c.ns+"?image="+piImage+"&pull=Never&network=host&volume=host:"+work)
	piFlags := []string{"--cwd", "/work", "--model", "fakeopenai/fake-model", "--env", "PI_CODING_AGENT_DIR=/work/.pi-agent"}

	began := time.Now()
	step := func(what string) { t.Logf("%s: %s", time.Since(began).Round(100*time.Millisecond), what) }
	var s api.Session
	e.JSON(&s, append([]string{"-H", "pi", "launch", "pi", "--json", "-i", "-p", "hello [[text: first answer]]"}, piFlags...)...)
	if s.Status != api.StatusRunning || s.NativeID == "" || s.Adapter != "pi" {
		t.Fatalf("launched %+v: want pi running, its native id learned from the pod", s)
	}
	h := "pi/" + s.ID
	step("launched, running with its native id")
	idle := func() bool {
		st := e.Session(h)
		return st.Status == api.StatusRunning && (st.Activity == api.ActivityIdle || st.Activity == api.ActivityWaiting)
	}
	// Pi writes its session file once its first turn is answered: busy is
	// seen on the next turn, typed through the API's attach.
	WaitFor(t, 90*time.Second, "pi idle at its prompt after its first answer", idle)
	step("idle after its first answer")
	e.MustRun("send", h, "second [[delay: 5]] [[text: hi from the pod]]")
	WaitFor(t, 60*time.Second, "pi busy with the message sent, as its session file in the pod says", func() bool {
		return e.Session(h).Activity == api.ActivityBusy
	})
	WaitFor(t, 90*time.Second, "pi idle again after its answer", idle)
	if st := e.Session(h); st.NativeID != s.NativeID || st.Model == "" {
		t.Errorf("status %+v: want native id %s and the model from Pi's own file", st, s.NativeID)
	}
	step("busy with the message sent, then idle")
	var tr api.Transcript
	e.JSON(&tr, "peek", "--json", "-n", "1", h)
	if got := texts(tr); len(got) != 1 || got[0] != "hi from the pod" {
		t.Errorf("peek = %q (source %s), want Pi's answer from its session file", got, tr.Source)
	}
	var ex api.Explanation
	e.JSON(&ex, "explain", "--json", h)
	pod := false
	for _, ev := range ex.Evidence {
		pod = pod || ev.Kind == "pod"
	}
	if !pod || len(ex.Evidence) < 2 || ex.Reason == "" {
		t.Errorf("explain: %+v: want the pod's state and the evidence read in the pod", ex)
	}
	var list api.SessionList
	e.JSON(&list, "list", "--json", "-H", "pi")
	if len(list.Sessions) != 1 || list.Sessions[0].NativeID != s.NativeID || list.Sessions[0].Status != api.StatusRunning {
		t.Errorf("list: %+v: want the session running with its native id", list.Sessions)
	}

	step("peek, explain, list")
	var stopped api.Session
	e.JSON(&stopped, "stop", "--json", h)
	if stopped.Status != api.StatusKilled {
		t.Errorf("stop: %+v, want killed", stopped)
	}
	if out := c.kube(t, "-n", c.ns, "get", "pods", "-l", "agentctl.dev/id="+s.ID, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("pods left after stop: %s", out)
	}

	step("stopped, the pod gone")
	// The store is on the volume: a resume continues the native session.
	var r api.Session
	e.JSON(&r, "resume", "--json", h, "again [[text: resumed ok]]")
	if r.NativeID != s.NativeID || r.ResumeOf != s.ID {
		t.Fatalf("resume: %+v, want a new run of native session %s", r, s.NativeID)
	}
	if done := e.WaitStatus("pi/"+r.ID, api.StatusExited, 90*time.Second); done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("the resumed run ended %+v, want exit 0", done)
	}
	step("the resumed run exited 0")
	if out := e.MustRun("logs", "pi/"+r.ID); !strings.Contains(out, "resumed ok") {
		t.Errorf("the resumed run's output lacks its answer:\n%s", out)
	}
}
