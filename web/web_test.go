package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
)

// syncBuffer is a log destination the server's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a dashboard running on 127.0.0.1 for one test, in front of a
// service that is not there: the checks answer before any handler asks it.
type served struct {
	s    *Server
	log  *syncBuffer
	base string
	hc   *http.Client
}

func serve(t *testing.T, cfg Config) *served {
	t.Helper()
	h := home.Home(t.TempDir())
	logs := &syncBuffer{}
	cfg.Home = h
	if cfg.Client == nil {
		cfg.Client = client.New(h, "", false)
	}
	cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	hc := &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the test's own self-signed certificate
	}
	return &served{s: s, log: logs, base: strings.TrimSuffix(s.BaseURL(), "/"), hc: hc}
}

// do sends one request: path, optional form body, and header changes
// (a "Host" entry sets the Host).
func (sv *served) do(t *testing.T, method, path string, form url.Values, cookie bool, hdr map[string]string) *http.Response {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, sv.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie {
		req.AddCookie(&http.Cookie{Name: sv.s.cookie, Value: sv.s.token})
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := sv.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestGuard(t *testing.T) {
	t.Parallel()
	sv := serve(t, Config{})
	self := sv.base
	csrf := url.Values{"csrf": {sv.s.csrf}}
	tests := []struct {
		name   string
		method string
		path   string
		form   url.Values
		cookie bool
		hdr    map[string]string
		want   int
	}{
		{"no token", "GET", "/", nil, false, nil, http.StatusUnauthorized},
		{"no token for a stream", "GET", "/events", nil, false, nil, http.StatusUnauthorized},
		{"no token for an action", "POST", "/s/x/stop", csrf, false, nil, http.StatusUnauthorized},
		{"a wrong token", "GET", "/?token=" + strings.Repeat("0", 64), nil, false, nil, http.StatusUnauthorized},
		{"a wrong cookie", "GET", "/", nil, false, map[string]string{"Cookie": sv.s.cookie + "=" + strings.Repeat("0", 64)}, http.StatusUnauthorized},
		{"the token in a POST's URL", "POST", "/s/x/stop?token=" + sv.s.token, csrf, false, nil, http.StatusUnauthorized},
		{"DNS rebinding: another Host", "GET", "/", nil, true, map[string]string{"Host": "attacker.example:" + port(sv)}, http.StatusForbidden},
		{"another Host even with the token", "GET", "/?token=" + sv.s.token, nil, false, map[string]string{"Host": "attacker.example"}, http.StatusForbidden},
		{"another site's Origin", "GET", "/", nil, true, map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"another port's Origin", "GET", "/", nil, true, map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"a cross-site form post", "POST", "/s/x/stop", csrf, true, map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{"a cross-site fetch", "POST", "/s/x/stop", csrf, true, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a post without its CSRF token", "POST", "/s/x/stop", url.Values{}, true, map[string]string{"Origin": self}, http.StatusForbidden},
		{"a post with a wrong CSRF token", "POST", "/s/x/stop", url.Values{"csrf": {sv.s.token}}, true, map[string]string{"Origin": self}, http.StatusForbidden},
		{"an opaque origin from elsewhere", "POST", "/s/x/stop", csrf, true, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"another site on this host (same-site)", "POST", "/s/x/stop", csrf, true, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"another method", "PUT", "/s/x/stop", csrf, true, nil, http.StatusMethodNotAllowed},
		{"the manifest, public", "GET", "/manifest.webmanifest", nil, false, nil, http.StatusOK},
		{"an asset needs the cookie", "GET", "/assets/app.js", nil, false, nil, http.StatusUnauthorized},
		{"an asset with it", "GET", "/assets/app.js", nil, true, nil, http.StatusOK},
		{"a tunnel's loopback name", "GET", "/assets/app.js", nil, true, map[string]string{"Host": "localhost:" + port(sv)}, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := sv.do(t, tc.method, tc.path, tc.form, tc.cookie, tc.hdr)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: %s, want %d", tc.method, tc.path, resp.Status, tc.want)
			}
			for k, v := range map[string]string{"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if c := resp.Header.Get("Content-Security-Policy"); !strings.Contains(c, "script-src 'self';") || strings.Contains(c, "unsafe-eval") {
				t.Errorf("CSP %q: want script-src 'self' and nothing inline", c)
			}
		})
	}
	// Past the checks, a post with its CSRF token reaches the service
	// (absent here: not a refusal of the guard's).
	for _, hdr := range []map[string]string{
		{"Origin": self},
		// A form post under Referrer-Policy no-referrer.
		{"Origin": "null", "Sec-Fetch-Site": "same-origin"},
	} {
		resp := sv.do(t, "POST", "/s/x/stop", csrf, true, hdr)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			t.Fatalf("a same-origin post (%v) with its CSRF token: %s, want it past the checks", hdr, resp.Status)
		}
	}
}

func port(sv *served) string { return sv.base[strings.LastIndex(sv.base, ":")+1:] }

// The token is traded for a cookie and leaves the URL; the page after the
// load does not hold it, nor does the log.
func TestTokenLeavesTheURL(t *testing.T) {
	t.Parallel()
	sv := serve(t, Config{})
	resp := sv.do(t, "GET", "/?q=x&token="+sv.s.token, nil, false, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?q=x" {
		t.Fatalf("first load: %s to %q, want 303 to /?q=x", resp.Status, resp.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, x := range resp.Cookies() {
		if x.Name == sv.s.cookie {
			c = x
		}
	}
	if c == nil || c.Value != sv.s.token || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure {
		t.Fatalf("cookie %+v: want the token, HttpOnly, SameSite=Strict (not Secure without TLS)", c)
	}
	for _, path := range []string{"/", "/new", "/s/x"} {
		page := sv.do(t, "GET", path, nil, true, nil)
		var b bytes.Buffer
		b.ReadFrom(page.Body)
		if strings.Contains(b.String(), sv.s.token) {
			t.Errorf("%s holds the token", path)
		}
		if path == "/new" && !strings.Contains(b.String(), sv.s.csrf) {
			t.Errorf("%s lacks its CSRF token", path)
		}
	}
	if strings.Contains(sv.log.String(), sv.s.token) {
		t.Fatalf("the log holds the token:\n%s", sv.log.String())
	}
	if !strings.Contains(sv.log.String(), "web request") {
		t.Fatalf("the log has no requests (the check above proves nothing):\n%s", sv.log.String())
	}
}

// The token is made once, private, and kept: a bookmark outlives a restart.
func TestTokenFile(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	a, err := loadToken(h)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(h.WebToken())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || len(a) != 64 {
		t.Fatalf("token file mode %v, token of %d characters: want 0600 and 64", st.Mode().Perm(), len(a))
	}
	if err := os.Chmod(h.WebToken(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := loadToken(h)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(h.WebToken()); b != a || st.Mode().Perm() != 0o600 {
		t.Fatalf("second load: same token %v, mode %v: want the same, tightened to 0600", a == b, st.Mode().Perm())
	}
}

// Beyond loopback takes TLS and --expose; neither alone.
func TestBindRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"all addresses, plain", Config{Listen: "0.0.0.0:0"}, "needs TLS"},
		{"all addresses, exposed but plain", Config{Listen: "0.0.0.0:0", Expose: true}, "needs TLS"},
		{"an address, with TLS but not exposed", Config{Listen: "192.0.2.1:0", TLSGenerate: true}, "--expose"},
		{"a name, plain", Config{Listen: "example.com:7387", Expose: true}, "needs TLS"},
		{"no port", Config{Listen: "127.0.0.1"}, "host:port"},
		// The service's dashboard, from config.json: the same rules, in
		// the words of its keys.
		{"config.json, plain", Config{Listen: "0.0.0.0:0", InConfig: true}, `"listen" 0.0.0.0:0 is not a loopback address: serving beyond this machine needs TLS ("tls_cert" and "tls_key", or "tls_generate") and "expose"`},
		{"config.json, not exposed", Config{Listen: "192.0.2.1:0", TLSGenerate: true, InConfig: true}, `add "expose" to mean it`},
		{"config.json, half a certificate", Config{Listen: "127.0.0.1:0", TLSCert: "c.pem", InConfig: true}, `TLS needs both "tls_cert" and "tls_key"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := home.Home(t.TempDir())
			tc.cfg.Home, tc.cfg.Client = h, client.New(h, "", false)
			s, err := New(tc.cfg)
			if err == nil {
				s.ln.Close()
				t.Fatalf("New(%s) served, want refused (%s)", tc.cfg.Listen, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%s): %v, want it to say %q", tc.cfg.Listen, err, tc.want)
			}
			if tc.cfg.InConfig && strings.Contains(err.Error(), "--") {
				t.Fatalf("New(%s) from config.json: %v names a flag", tc.cfg.Listen, err)
			}
		})
	}
}

// With TLS the cookie is Secure and the fingerprint is that of the
// certificate served.
func TestTLSGenerate(t *testing.T) {
	t.Parallel()
	sv := serve(t, Config{TLSGenerate: true})
	if !strings.HasPrefix(sv.base, "https://") || len(sv.s.Fingerprint()) != 95 {
		t.Fatalf("base %s, fingerprint %q: want https and a SHA-256 fingerprint", sv.base, sv.s.Fingerprint())
	}
	resp := sv.do(t, "GET", "/?token="+sv.s.token, nil, false, nil)
	if c := resp.Cookies(); len(c) != 1 || !c[0].Secure {
		t.Fatalf("cookies %+v: want one, Secure", c)
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatal("no certificate served")
	}
	// HTTP/2: a browser's pages share a connection, so more than 6 open
	// pages (each holding a stream) do not starve each other.
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	if resp := sv.do(t, "GET", "/", nil, true, map[string]string{"Origin": "http://" + strings.TrimPrefix(sv.base, "https://")}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an http Origin on https: %s, want 403", resp.Status)
	}
}

func TestANSIHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"plain <b>&", "plain &lt;b&gt;&amp;"},
		{"\x1b[31mred\x1b[0m after", `<span class="f1">red</span> after`},
		{"\x1b[1;92mbold\x1b[22m", `<span class="f10 bo">bold</span><span class="f10"></span>`},
		{"\x1b[38;5;208mx", `<span style="color:#ff8700">x</span>`},
		{"\x1b[48;2;1;2;3my", `<span style="background-color:#010203">y</span>`},
		{"\x1b[2Kcleared\x1b]0;title\x07 \x1b]9;note\x1b\\end\r", "cleared end"},
		{"\x1b[", ""},
		{"two\nlines\r\x00", "two\nlines"},
	}
	for _, tc := range tests {
		var st sgr
		if got := ansiHTML(tc.in, &st); got != tc.want {
			t.Errorf("ansiHTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Colour carries to the next line, as on a terminal.
	var st sgr
	ansiHTML("\x1b[34mblue", &st)
	if got := ansiHTML("still", &st); got != `<span class="f4">still</span>` {
		t.Fatalf("next line: %q", got)
	}
}

// A form's "back" is a path of this site, never another site.
func TestBack(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/":                "/",
		"/s/abc":           "/s/abc",
		"//evil.example/":  "/fallback",
		"/\\evil.example":  "/fallback",
		"https://evil.ex/": "/fallback",
		"":                 "/fallback",
		"/x\r\nSet-Cookie": "/fallback",
	} {
		r, _ := http.NewRequest("POST", "/", strings.NewReader(url.Values{"back": {in}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if got := back(r, "/fallback"); got != want {
			t.Errorf("back(%q) = %q, want %q", in, got, want)
		}
	}
}

// Over several hosts a session's pages are /s/HOST/ID, and what they ask
// goes to that host; a host that does not answer is a warning on a page
// that still renders. The host here is a home with no service (no
// autostart): every answer is its refusal, named by the view.
func TestSeveralHosts(t *testing.T) {
	t.Parallel()
	far := home.Home(t.TempDir())
	view := &hosts.View{Hosts: []hosts.Host{{Name: "far", API: client.New(far, "", false)}}}
	sv := serve(t, Config{Client: view})
	csrf := url.Values{"csrf": {sv.s.csrf}}
	read := func(resp *http.Response) string {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return b.String()
	}
	tests := []struct {
		name, method, path string
		form               url.Values
		want               []string
	}{
		{"the list", "GET", "/", nil, []string{"host far did not answer", "no host answered"}},
		{"a session's page", "GET", "/s/far/0123abcd", nil, []string{"host far:"}},
		{"its terminal", "GET", "/s/far/0123abcd/term", nil, []string{"host far:"}},
		{"an action", "POST", "/s/far/0123abcd/stop", csrf, []string{"host far:"}},
		{"an answer", "POST", "/s/far/0123abcd/answer", url.Values{"csrf": {sv.s.csrf}, "text": {"yes"}}, []string{"host far:"}},
		{"the launch form asks on which host", "GET", "/new", nil, []string{`<select name="host"><option>far</option></select>`}},
		{"a launch on a host", "POST", "/new", url.Values{"csrf": {sv.s.csrf}, "host": {"far"}, "command": {"true"}, "cwd": {"/"}}, []string{"host far:"}},
		{"a launch on none of the hosts", "POST", "/new", url.Values{"csrf": {sv.s.csrf}, "host": {"near"}, "command": {"true"}, "cwd": {"/"}}, []string{"is none of these hosts (far)"}},
		{"a handle of no host", "GET", "/s/0123abcd", nil, []string{"names no session of these hosts (far): give HOST/ID"}},
		{"another host", "GET", "/s/near/0123abcd", nil, []string{"names no session of these hosts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page := read(sv.do(t, tc.method, tc.path, tc.form, true, map[string]string{"Origin": sv.base}))
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("%s %s: the page does not say %q:\n%s", tc.method, tc.path, w, page)
				}
			}
		})
	}
	// The live list's snapshot carries the warnings too (a host that
	// stops answering while the page is open is said on it), and the
	// stream stays open.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", sv.base+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: sv.s.cookie, Value: sv.s.token})
	resp, err := sv.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "event: snapshot" {
			continue
		}
		sc.Scan()
		var snap snapshot
		if err := json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &snap); err != nil {
			t.Fatalf("snapshot %q: %v", sc.Text(), err)
		}
		if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "host far did not answer") {
			t.Fatalf("the snapshot's warnings are %q, want host far's", snap.Warnings)
		}
		return
	}
	t.Fatalf("the stream ended without a snapshot: %v (%s)", sc.Err(), resp.Status)
}

// The home-screen icon iOS takes (a PNG; it takes no SVG) is served
// without the token, as the manifest and the SVG are, is 180×180, and the
// pages and the manifest name it.
func TestTouchIcon(t *testing.T) {
	t.Parallel()
	sv := serve(t, Config{})
	resp := sv.do(t, "GET", "/assets/icon-180.png", nil, false, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("the touch icon without the token: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 180 || b.Dy() != 180 {
		t.Fatalf("the touch icon is %v, want 180×180", b)
	}
	read := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }
	if m := read(sv.do(t, "GET", "/manifest.webmanifest", nil, false, nil)); !strings.Contains(m, `"src": "/assets/icon-180.png", "sizes": "180x180", "type": "image/png"`) {
		t.Fatalf("the manifest does not name the PNG icon:\n%s", m)
	}
	if page := read(sv.do(t, "GET", "/new", nil, true, nil)); !strings.Contains(page, `<link rel="apple-touch-icon" href="/assets/icon-180.png">`) {
		t.Fatalf("the page does not link the touch icon:\n%s", page)
	}
}
