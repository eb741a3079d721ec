package supervisor

import (
	"context"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
)

// Dashboard is the web dashboard the service serves while it runs when
// config.json's "web" asks for it. Its maker is the service's caller's (the
// dashboard speaks to the service through the client, over the service's
// own socket, and the service does not link the client).
type Dashboard interface {
	// BaseURL is its address without the token.
	BaseURL() string
	// Fingerprint is its certificate's, with TLS.
	Fingerprint() string
	// Run serves until ctx ends.
	Run(ctx context.Context) error
}

// serveWeb starts the dashboard config.json asks for, if any. A setting it
// refuses, a port already taken or a failure while it serves is logged and
// shown by `daemon status`; the service goes on without it.
func (s *Server) serveWeb(cfg config.Web) {
	if !cfg.On() || s.opts.Web == nil {
		return
	}
	d, err := s.opts.Web(cfg)
	if err != nil {
		s.log.Error("web dashboard not served (config.json \"web\")", "err", err)
		s.setWeb(&api.WebStatus{Error: err.Error()})
		return
	}
	s.setWeb(&api.WebStatus{URL: d.BaseURL(), Fingerprint: d.Fingerprint()})
	s.log.Info("web dashboard served", "url", d.BaseURL())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := d.Run(s.ctx); err != nil {
			s.log.Error("web dashboard stopped", "err", err)
			s.setWeb(&api.WebStatus{Error: err.Error()})
		}
	}()
}

func (s *Server) setWeb(st *api.WebStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.web = st
}

// webStatus is what `daemon status` says of the dashboard.
func (s *Server) webStatus() *api.WebStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.web == nil {
		return nil
	}
	st := *s.web
	return &st
}
