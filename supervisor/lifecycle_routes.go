package supervisor

import (
	"net/http"
	"os"

	"github.com/agentctl/agentctl/api"
)

// lifecycleRoutes are restart, remove, signal and rename.
func (s *Server) lifecycleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/restart", s.handleRestart)
	mux.HandleFunc("DELETE /v1/sessions/{id}", s.handleRemove)
	mux.HandleFunc("POST /v1/sessions/{id}/signal", s.handleSignal)
	mux.HandleFunc("POST /v1/sessions/{id}/rename", s.handleRename)
}

func (s *Server) handleRename(w http.ResponseWriter, r *http.Request) {
	var req api.RenameRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.core.Rename(r.Context(), r.PathValue("id"), req.Name)
	answer(w, http.StatusOK, sess, err)
}

func (s *Server) handleSignal(w http.ResponseWriter, r *http.Request) {
	var req api.SignalRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.core.Signal(r.Context(), r.PathValue("id"), req)
	answer(w, http.StatusOK, sess, err)
}

func (s *Server) handleRestart(w http.ResponseWriter, r *http.Request) {
	var req api.RestartRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	if req.Env == nil {
		req.Env = os.Environ() // a caller on another host sends none (see handleLaunch)
	}
	sess, err := s.core.Restart(r.Context(), r.PathValue("id"), req)
	answer(w, http.StatusCreated, sess, err)
}

func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	req := api.RemoveRequest{Force: r.URL.Query().Get("force") == "true"}
	sess, err := s.core.Remove(r.Context(), r.PathValue("id"), req)
	answer(w, http.StatusOK, sess, err)
}
