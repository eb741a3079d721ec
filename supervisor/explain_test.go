package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
)

func evidenceOf(ex api.Explanation, kind string) []api.Evidence {
	var out []api.Evidence
	for _, e := range ex.Evidence {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// explain answers, through the API, with the evidence the status rule read:
// for a launched session, its records and the pid + start stamp checks,
// before and after it ends; for a native one, what its adapter said.
func TestExplain(t *testing.T) {
	gw := &keyedGateway{keys: []string{"agent:main:dashboard:7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b"}, running: map[string]bool{}}
	svc := startServiceWith(t, newHome(t), []adapters.Adapter{gw})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "30"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := svc.client.Explain(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Session.ID != sess.ID || ex.Rule != api.RuleLaunched || !strings.HasPrefix(ex.Reason, "running:") {
		t.Fatalf("explain of a running session: %+v", ex)
	}
	if e := evidenceOf(ex, api.EvidenceExitRecord); len(e) != 1 || !strings.HasPrefix(e[0].Says, "none") {
		t.Errorf("exit record: %+v", e)
	}
	if e := evidenceOf(ex, api.EvidenceProcess); len(e) != 1 || e[0].PID != sess.PID || !strings.Contains(e[0].Says, "alive with the recorded start stamp") {
		t.Errorf("process: %+v (pid %d)", e, sess.PID)
	}
	if e := evidenceOf(ex, api.EvidenceMonitor); len(e) != 1 || !strings.Contains(e[0].Says, "alive") {
		t.Errorf("monitor: %+v", e)
	}

	if _, err := svc.client.Stop(ctx, sess.ID, api.StopRequest{}); err != nil {
		t.Fatal(err)
	}
	ex, err = svc.client.Explain(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ex.Reason, string(ex.Session.Status)+": the exit record") {
		t.Errorf("reason after stop: %q (status %s)", ex.Reason, ex.Session.Status)
	}
	if e := evidenceOf(ex, api.EvidenceExitRecord); len(e) != 1 || !strings.Contains(e[0].Says, "killed by SIGTERM") {
		t.Errorf("exit record after stop: %+v", e)
	}
	if e := evidenceOf(ex, api.EvidenceProcess); len(e) != 1 || strings.Contains(e[0].Says, "is alive") {
		t.Errorf("process after stop: %+v", e)
	}

	// A gateway session, by its key: what the adapter said.
	key := gw.keys[0]
	ex, err = svc.client.Explain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Session.ID != key || ex.Rule != api.RuleNative || !strings.HasPrefix(ex.Reason, "ended:") {
		t.Fatalf("explain of a gateway session: %+v", ex)
	}
	if e := evidenceOf(ex, api.EvidenceStore); len(e) != 1 || !strings.Contains(e[0].Says, "the last turn is done") {
		t.Errorf("store: %+v", e)
	}
	if _, err := svc.client.Explain(ctx, "../../etc"); api.CodeOf(err) != api.CodeInvalid {
		t.Errorf("explain of a path: %v", err)
	}
}
