package pi

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/testutil/agenttest"
)

func TestProbeLimit(t *testing.T) {
	w := newPiWorld(t)
	a := w.adapter
	spec, _ := a.Launch(adapters.LaunchRequest{BinaryPath: filepath.Join(agenttest.BinDir(t), a.Binary()),
		Prompt: "go [[limit: 600]]", Model: "fakeopenai/fake-model", Cwd: w.proj, Env: w.env(), SessionDir: t.TempDir()})
	_, out, _ := w.start(t, spec)
	for i := 0; i < 4; i++ {
		time.Sleep(10 * time.Second)
		s := w.session(t, spec.NativeID)
		t.Logf("%+v", s)
		b, _ := os.ReadFile(s.Path)
		t.Logf("FILE %s", b)
		for _, r := range w.server.Requests() {
			t.Logf("REQ %v %s", r.Time, r.Reply)
		}
	}
	t.Logf("OUT %s", out.String())
}
