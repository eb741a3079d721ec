// Package web serves agentctl's dashboard to a browser: the live session
// list, a session's page with its evidence, output and answers, a terminal,
// and a launch form. It speaks to the service only through the client
// package, so what it does is what the CLI could do, audited the same way.
//
// Safety is built in rather than configured: a random token (a 0600 file in
// the agentctl home) that leaves the URL on first use for an HttpOnly,
// SameSite=Strict cookie; Host and Origin checked on every request (DNS
// rebinding); every state change a POST carrying a CSRF token; a CSP that
// runs no inline script; no bind beyond loopback without TLS and an
// explicit flag.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// DefaultListen is where the dashboard listens unless told otherwise.
const DefaultListen = "127.0.0.1:7387"

// Service is what the dashboard shows and acts on: one host's service (a
// *client.Client), or several hosts as one (a hosts.View, whose session ids
// are HOST/ID handles and whose answers go to each session's host).
type Service interface {
	client.Sessions
	Decide(ctx context.Context, id string, d api.Decision) (api.Session, error)
	Explain(ctx context.Context, id string) (api.Explanation, error)
	Restart(ctx context.Context, id string, req api.RestartRequest) (api.Session, error)
	Attach(ctx context.Context, id string, rows, cols uint16) (*client.Attachment, error)
	Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error
	// Remote reports whether the sessions are another machine's: the
	// launch form then offers no directory of this one.
	Remote() bool
}

// Config says where the dashboard listens and what it talks to.
type Config struct {
	// Client is the service the dashboard shows and acts on.
	Client Service
	// Home holds the token file and a generated certificate.
	Home home.Home
	// Listen is host:port; port 0 picks a free one.
	Listen string
	// AllowHosts are further names the browser may use to reach the
	// dashboard (a tailnet name, an SSH tunnel's other port): "name" or
	// "name:port".
	AllowHosts []string
	// TLSCert and TLSKey are a certificate and key to serve HTTPS with;
	// TLSGenerate makes (once) and uses a self-signed one instead.
	TLSCert, TLSKey string
	TLSGenerate     bool
	// Expose allows a bind beyond loopback (with TLS only).
	Expose bool
	// Socket is a unix socket to serve the dashboard on as well (plain
	// HTTP, mode 0600), for an SSH tunnel to forward to (ssh -L
	// 7387:SOCKET): the kernel names the process that connects, where
	// over TCP the tunnel's end is sshd's, which the user cannot see.
	Socket string
	// Env is the environment sessions launched from the page get (the
	// CLI gives its own, as `agentctl run` does).
	Env []string
	// Log receives one line per request (never its query: the token may
	// be in it) and the server's errors.
	Log *slog.Logger
	// InConfig says the settings come from config.json's "web" (the
	// service serves the dashboard): a refusal names its keys, not flags.
	InConfig bool
}

// opt names a setting as the user gave it: a flag of `agentctl web`, or a
// key of config.json's "web".
func (c Config) opt(flag string) string {
	if !c.InConfig {
		return flag
	}
	return `"` + strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_") + `"`
}

// Server is a configured, listening dashboard.
type Server struct {
	cfg         Config
	c           Service
	log         *slog.Logger
	ln          net.Listener
	unix        net.Listener // Config.Socket's, or nil
	tls         *tls.Config
	fingerprint string
	token       string
	csrf        string
	cookie      string
	hosts       map[string]bool
	origins     map[string]bool
	pages       *pages
	handler     http.Handler
}

// New checks cfg's bind against the rules, loads or makes the token, and
// listens. Run serves.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("web: no client")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("%s %s: want host:port (127.0.0.1:7387): %w", cfg.opt("--listen"), cfg.Listen, err)
	}
	useTLS := cfg.TLSGenerate || cfg.TLSCert != "" || cfg.TLSKey != ""
	if !loopback(host) {
		if !useTLS {
			return nil, fmt.Errorf("%s %s is not a loopback address: serving beyond this machine needs TLS (%s and %s, or %s) and %s; or keep 127.0.0.1 and reach it over an SSH tunnel (ssh -L)",
				cfg.opt("--listen"), cfg.Listen, cfg.opt("--tls-cert"), cfg.opt("--tls-key"), cfg.opt("--tls-generate"), cfg.opt("--expose"))
		}
		if !cfg.Expose {
			return nil, fmt.Errorf("%s %s is not a loopback address: anyone who can reach it may try the token; add %s to mean it", cfg.opt("--listen"), cfg.Listen, cfg.opt("--expose"))
		}
	}
	s := &Server{cfg: cfg, c: cfg.Client, log: cfg.Log}
	if useTLS {
		if s.tls, s.fingerprint, err = loadTLS(cfg); err != nil {
			return nil, err
		}
	}
	if s.token, err = loadToken(cfg.Home); err != nil {
		return nil, err
	}
	s.csrf = derive(s.token, "csrf")
	if s.pages, err = newPages(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("web: listen on %s: %w", cfg.Listen, err)
	}
	s.ln = ln
	if cfg.Socket != "" {
		if s.unix, err = listenUnix(cfg.Socket); err != nil {
			ln.Close()
			return nil, fmt.Errorf("web: %s %s: %w", cfg.opt("--socket"), cfg.Socket, err)
		}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s.cookie = "agentctl_web_" + strconv.Itoa(port)
	s.hosts, s.origins = allowed(host, port, s.scheme(), cfg.AllowHosts)
	s.handler = s.routes()
	return s, nil
}

func (s *Server) scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// loopback reports whether a listen host stays on this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowed lists the Host values (and so Origins) a browser may use: the
// loopback names on the port, the listen address, every address of an
// unspecified bind, and the names the user added.
func allowed(host string, port int, scheme string, extra []string) (map[string]bool, map[string]bool) {
	p := strconv.Itoa(port)
	names := []string{"127.0.0.1", "localhost", "::1"}
	ip := net.ParseIP(host)
	switch {
	case ip != nil && ip.IsUnspecified():
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					names = append(names, n.IP.String())
				}
			}
		}
	case host != "":
		names = append(names, host)
	}
	hosts := map[string]bool{}
	for _, n := range names {
		hosts[net.JoinHostPort(n, p)] = true
	}
	for _, e := range extra {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(e); err == nil {
			hosts[e] = true
			continue
		}
		hosts[net.JoinHostPort(e, p)] = true
		if (scheme == "https" && p == "443") || (scheme == "http" && p == "80") {
			hosts[e] = true
		}
	}
	origins := map[string]bool{}
	for h := range hosts {
		origins[scheme+"://"+h] = true
	}
	return hosts, origins
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// BaseURL is the dashboard's address without the token.
func (s *Server) BaseURL() string {
	a := s.ln.Addr().(*net.TCPAddr)
	host := s.cfg.Listen[:strings.LastIndex(s.cfg.Listen, ":")]
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return s.scheme() + "://" + net.JoinHostPort(host, strconv.Itoa(a.Port)) + "/"
}

// URL is the address to open: BaseURL with the token, which the first
// load trades for a cookie. Print it to the user; never log it.
func (s *Server) URL() string { return withToken(s.BaseURL(), s.token) }

// OpenURL is the address to open for a dashboard served at base (a
// BaseURL, such as the service's, which `daemon status` shows) with the
// token of home h. Print it to the user; never log it.
func OpenURL(base string, h home.Home) (string, error) {
	tok, err := loadToken(h)
	if err != nil {
		return "", err
	}
	return withToken(base, tok), nil
}

func withToken(base, token string) string { return base + "?token=" + url.QueryEscape(token) }

// Fingerprint is the SHA-256 fingerprint of the served certificate ("" without TLS).
func (s *Server) Fingerprint() string { return s.fingerprint }

// Handler is the dashboard with every check in front of it.
func (s *Server) Handler() http.Handler { return s.handler }

// Run serves until ctx ends, then shuts down, giving open requests a
// moment (streams end with ctx).
func (s *Server) Run(ctx context.Context) error {
	newServer := func() *http.Server {
		return &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
			BaseContext:       func(net.Listener) context.Context { return ctx },
			ConnContext:       withConn,
		}
	}
	errc := make(chan error, 2)
	srv := newServer()
	servers := []*http.Server{srv}
	go func() {
		var err error
		if s.tls == nil {
			err = srv.Serve(s.ln)
		} else {
			// ServeTLS offers HTTP/2, under which a browser's tabs share
			// one connection rather than 6 per host, each page's stream
			// holding one.
			srv.TLSConfig = s.tls.Clone()
			err = srv.ServeTLS(s.ln, "", "")
		}
		errc <- fmt.Errorf("web: serve on %s: %w", s.ln.Addr(), err)
	}()
	if s.unix != nil {
		// A server of its own: plain HTTP, whatever the port speaks.
		usrv := newServer()
		servers = append(servers, usrv)
		go func() {
			err := usrv.Serve(s.unix)
			errc <- fmt.Errorf("web: serve on %s: %w", s.unix.Addr(), err)
		}()
	}
	var failed error
	waiting := len(servers)
	select {
	case failed = <-errc:
		waiting--
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	}
	for ; waiting > 0; waiting-- {
		<-errc
	}
	return failed
}

// derive is a value bound to the token that does not reveal it: what the
// pages carry as their CSRF token.
func derive(token, purpose string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(purpose))
	return hex.EncodeToString(m.Sum(nil))
}

func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
