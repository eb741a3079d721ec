package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// csp runs only the dashboard's own scripts: no inline script, no eval, no
// other origin. Inline styles are allowed: xterm.js sizes its rows with them.
const csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// public paths need no token: a phone's home screen fetches the manifest
// and its icon without cookies, and they hold nothing of the user's.
var public = map[string]bool{"/manifest.webmanifest": true, "/assets/icon.svg": true, "/assets/icon-180.png": true}

// guard is every check before a handler, in order: the Host (DNS
// rebinding), the Origin and fetch site (another site's page), the token
// (a cookie, or once in the URL), then for a state change the method and
// the CSRF token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			// The path only: a query may hold the token.
			s.log.Info("web request", "method", r.Method, "path", r.URL.Path, "status", rec.code, "remote", r.RemoteAddr, "took", time.Since(start).Round(time.Microsecond))
		}()
		h := rec.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hosts[strings.ToLower(r.Host)] {
			http.Error(rec, "agentctl web: this address is not one the dashboard serves (Host "+r.Host+"); add it with --allow-host", http.StatusForbidden)
			return
		}
		// Under Referrer-Policy no-referrer a browser's own form post
		// says Origin "null": taken only where the browser vouches that
		// the request comes from this very origin.
		site := r.Header.Get("Sec-Fetch-Site")
		if o := r.Header.Get("Origin"); o != "" && !s.origins[strings.ToLower(o)] && (o != "null" || site != "same-origin") {
			http.Error(rec, "agentctl web: requests from another site are refused", http.StatusForbidden)
			return
		}
		if site == "cross-site" || site == "same-site" {
			http.Error(rec, "agentctl web: requests from another site are refused", http.StatusForbidden)
			return
		}
		if public[r.URL.Path] && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			next.ServeHTTP(rec, r)
			return
		}
		if q := r.URL.Query(); q.Has("token") {
			if r.Method != http.MethodGet || !same(q.Get("token"), s.token) {
				s.unauthorized(rec)
				return
			}
			http.SetCookie(rec, &http.Cookie{
				Name: s.cookie, Value: s.token, Path: "/", MaxAge: 30 * 24 * 3600,
				HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.tls != nil,
			})
			// The token leaves the URL (history, screenshots, a
			// shoulder): the same page without it.
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(rec, r, u.String(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(s.cookie); err != nil || !same(c.Value, s.token) {
			s.unauthorized(rec)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			// A form or fetch from the page carries the CSRF token that
			// only the page knows; SameSite and Origin already stop most
			// cross-site posts, this stops the rest.
			r.Body = http.MaxBytesReader(rec, r.Body, 1<<20)
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				got = r.PostFormValue("csrf")
			}
			if !same(got, s.csrf) {
				http.Error(rec, "agentctl web: the form is missing its CSRF token (reload the page)", http.StatusForbidden)
				return
			}
		default:
			rec.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(rec, "agentctl web: method not allowed", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(rec, r)
	})
}

func (s *Server) unauthorized(w http.ResponseWriter) {
	http.Error(w, "agentctl web: open the address 'agentctl web' printed (it carries the token once; a cookie then keeps you in)", http.StatusUnauthorized)
}

// statusRecorder keeps the status for the request's log line; Unwrap lets
// http.ResponseController reach the connection (flush, deadlines, hijack).
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes through, for the streams.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
