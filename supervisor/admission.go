package supervisor

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
)

// admissionConfig is config.json's "admission" as the service applies it
// now: read again when the file changes, so a cap or the memory floor
// changed in the file applies to the queue without a restart.
type admissionConfig struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex
	size  int64
	mtime time.Time
	gone  bool
	cur   api.Admission
}

func newAdmissionConfig(h home.Home, cfg config.Config, log *slog.Logger) *admissionConfig {
	a := &admissionConfig{path: config.Path(string(h)), log: log, cur: cfg.Admission.Policy()}
	if st, err := os.Stat(a.path); err == nil {
		a.size, a.mtime = st.Size(), st.ModTime()
	} else {
		a.gone = true
	}
	return a
}

// policy is the admission now. A file in error keeps the policy before it
// (logged): a typo does not lift every cap.
func (a *admissionConfig) policy() api.Admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, err := os.Stat(a.path)
	switch {
	case err != nil && a.gone:
		return a.cur
	case err != nil:
		a.gone = true
		a.cur = api.Admission{}
		return a.cur
	case !a.gone && st.Size() == a.size && st.ModTime().Equal(a.mtime):
		return a.cur
	}
	a.gone, a.size, a.mtime = false, st.Size(), st.ModTime()
	cfg, _, err := config.Load(a.path)
	if err != nil {
		a.log.Error("admission: configuration not applied; the caps before it stay", "err", err)
		return a.cur
	}
	a.cur = cfg.Admission.Policy()
	a.log.Info("admission: configuration applied", "policy", a.cur)
	return a.cur
}
