package supervisor

import (
	"net/http"
)

// handleStats answers what sessions cost: those named by id= (any number
// of them), else every running one this service started.
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.core.Stats(r.Context(), r.URL.Query()["id"])
	answer(w, http.StatusOK, st, err)
}
