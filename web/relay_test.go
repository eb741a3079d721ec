package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortDir is a folder whose sockets' paths fit the system's limit.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "aw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// The dashboard serves its socket too, mode 0600, behind the same checks;
// a socket left by a dashboard that was killed is replaced, one that is
// served is not taken over, and a file that is no socket is left alone.
func TestSocket(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	path := filepath.Join(dir, "web.sock")
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	sv := serve(t, Config{Socket: path})
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v, want a socket of mode 0600", fi, err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	get := func(cookie bool) (int, string) {
		req, err := http.NewRequest("GET", sv.base+"/new", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie {
			req.AddCookie(&http.Cookie{Name: sv.s.cookie, Value: sv.s.token})
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(false); code != http.StatusUnauthorized {
		t.Fatalf("over the socket without the token: %d, want 401", code)
	}
	if code, page := get(true); code != http.StatusOK || !strings.Contains(page, `name="csrf"`) {
		t.Fatalf("over the socket with the token: %d:\n%s", code, page)
	}

	// Beside TLS, the socket speaks plain HTTP (it stays on this machine)
	// and the port HTTP/2.
	tlsPath := filepath.Join(dir, "tls.sock")
	tsv := serve(t, Config{Socket: tlsPath, TLSGenerate: true})
	plain := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", tlsPath)
	}}}
	if resp, err := plain.Get("http://127.0.0.1:" + port(tsv) + "/"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("plain HTTP over the socket of a TLS dashboard: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp := tsv.do(t, "GET", "/new", nil, true, nil); resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("the TLS port beside a socket: %s %s, want 200 over HTTP/2", resp.Status, resp.Proto)
	}

	cfg := Config{Home: sv.s.cfg.Home, Client: sv.s.c, Listen: "127.0.0.1:0", Socket: path}
	if s, err := New(cfg); err == nil || !strings.Contains(err.Error(), "already serves") {
		if s != nil {
			s.ln.Close()
		}
		t.Fatalf("a second dashboard on a served socket: %v, want a refusal", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	cfg.Socket = file
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a socket at a file's path: %v, want a refusal", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the file was removed: %v", err)
	}
}
