package openclaw

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// testGateway speaks the gateway side of protocol 4 as documented: the
// challenge, the closed connect schema, device signature checks, scopes,
// and the session methods agentctl calls. It serves on 127.0.0.1 and ends
// with the test.
type testGateway struct {
	t      *testing.T
	srv    *httptest.Server
	token  string
	minPro int // lowest protocol accepted from operators

	mu sync.Mutex
	// grantWrite, grantAdmin: whether operator.write and operator.admin are
	// granted when asked for.
	grantWrite, grantAdmin bool
	// unavailable: how many connects to refuse as "still starting".
	unavailable int
	rows        []map[string]any // sessions, newest first
	history     map[string][]map[string]any
	// active maps keys with an active run to the run owner's device id
	// ("" for a run without an owner, which anyone may abort).
	active  map[string]string
	aborted []string
	calls   []string
	// beforePage runs before each sessions.list page is answered.
	beforePage func(offset int)
	// conns are the live connections, for pushing events.
	conns    []*gatewayConn
	connects int
	// silent methods are never answered.
	silent map[string]bool
}

type gatewayConn struct {
	ws         *websocket.Conn
	mu         sync.Mutex
	subscribed bool
	seq        int64
}

func (c *gatewayConn) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

const testToken = "test-token-0123456789abcdef"

func newTestGateway(t *testing.T) *testGateway {
	t.Helper()
	g := &testGateway{
		t:          t,
		token:      testToken,
		minPro:     4,
		grantWrite: true,
		history:    map[string][]map[string]any{},
		active:     map[string]string{},
		silent:     map[string]bool{},
	}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *testGateway) url() string { return "ws" + g.srv.URL[len("http"):] }

func (g *testGateway) config(t *testing.T, token string) Config {
	return Config{
		URL:          g.url(),
		Token:        token,
		IdentityPath: filepath.Join(t.TempDir(), IdentityFile),
		Timeout:      5 * time.Second,
	}
}

func (g *testGateway) connectCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.connects
}

func (g *testGateway) callLog() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// connectRequest mirrors the connect params schema; unknown fields are
// rejected as the gateway's closed schema does.
type connectRequest struct {
	MinProtocol int `json:"minProtocol"`
	MaxProtocol int `json:"maxProtocol"`
	Client      struct {
		ID          string `json:"id"`
		Version     string `json:"version"`
		Platform    string `json:"platform"`
		Mode        string `json:"mode"`
		DisplayName string `json:"displayName"`
	} `json:"client"`
	Role   string   `json:"role"`
	Scopes []string `json:"scopes"`
	Caps   []string `json:"caps"`
	Auth   *struct {
		Token    string `json:"token"`
		Password string `json:"password"`
	} `json:"auth"`
	Device *struct {
		ID        string `json:"id"`
		PublicKey string `json:"publicKey"`
		Signature string `json:"signature"`
		SignedAt  int64  `json:"signedAt"`
		Nonce     string `json:"nonce"`
	} `json:"device"`
	UserAgent string `json:"userAgent"`
	Locale    string `json:"locale"`
}

var knownClientIDs = map[string]bool{"cli": true, "gateway-client": true, "openclaw-tui": true, "webchat": true, "test": true, "openclaw-probe": true}
var knownClientModes = map[string]bool{"cli": true, "ui": true, "backend": true, "node": true, "probe": true, "test": true, "webchat": true, "worker": true}

func errFrame(id, code, msg string, details map[string]any) map[string]any {
	e := map[string]any{"code": code, "message": msg}
	if details != nil {
		e["details"] = details
	}
	return map[string]any{"type": "res", "id": id, "ok": false, "error": e}
}

func (g *testGateway) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	defer ws.CloseNow()
	c := &gatewayConn{ws: ws}
	nonceBytes := make([]byte, 16)
	rand.Read(nonceBytes)
	nonce := hex.EncodeToString(nonceBytes)
	ts := time.Now().UnixMilli()
	if c.send(ctx, map[string]any{"type": "event", "event": "connect.challenge", "payload": map[string]any{"nonce": nonce, "ts": ts}}) != nil {
		return
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		return
	}
	var req struct {
		Type   string          `json:"type"`
		ID     string          `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &req) != nil || req.Type != "req" || req.Method != "connect" {
		ws.Close(websocket.StatusPolicyViolation, "expected connect")
		return
	}
	var p connectRequest
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "invalid connect params: "+err.Error(), nil))
		return
	}
	g.mu.Lock()
	g.connects++
	unavailable := g.unavailable > 0
	if unavailable {
		g.unavailable--
	}
	g.mu.Unlock()
	if unavailable {
		e := errFrame(req.ID, "UNAVAILABLE", "gateway starting", map[string]any{"reason": "startup-sidecars"})
		e["error"].(map[string]any)["retryable"] = true
		e["error"].(map[string]any)["retryAfterMs"] = 50
		c.send(ctx, e)
		ws.Close(websocket.StatusTryAgainLater, "gateway starting")
		return
	}
	if p.MinProtocol > 4 || p.MaxProtocol < g.minPro {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "protocol mismatch", map[string]any{"code": "PROTOCOL_MISMATCH"}))
		ws.Close(websocket.StatusProtocolError, "protocol mismatch")
		return
	}
	if !knownClientIDs[p.Client.ID] || !knownClientModes[p.Client.Mode] || p.Client.Version == "" || p.Client.Platform == "" {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "invalid client", nil))
		return
	}
	token := ""
	if p.Auth != nil {
		token = p.Auth.Token
	}
	switch {
	case token == "":
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "unauthorized: gateway token missing", map[string]any{"code": "AUTH_TOKEN_MISSING"}))
		return
	case token != g.token:
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "unauthorized: gateway token mismatch", map[string]any{"code": "AUTH_TOKEN_MISMATCH"}))
		return
	}
	if p.Device == nil || p.Device.Nonce != nonce {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "device nonce mismatch", map[string]any{"code": "DEVICE_AUTH_NONCE_MISMATCH"}))
		return
	}
	pub, err := base64.RawURLEncoding.DecodeString(p.Device.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "bad public key", map[string]any{"code": "DEVICE_AUTH_PUBLIC_KEY_INVALID"}))
		return
	}
	sum := sha256.Sum256(pub)
	if hex.EncodeToString(sum[:]) != p.Device.ID {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "device id mismatch", map[string]any{"code": "DEVICE_AUTH_DEVICE_ID_MISMATCH"}))
		return
	}
	sig, _ := base64.RawURLEncoding.DecodeString(p.Device.Signature)
	payload := fmt.Sprintf("v3|%s|%s|%s|%s|%s|%d|%s|%s|%s|%s", p.Device.ID, p.Client.ID, p.Client.Mode, p.Role,
		joinComma(p.Scopes), p.Device.SignedAt, token, nonce, p.Client.Platform, "")
	if !ed25519.Verify(pub, []byte(payload), sig) {
		c.send(ctx, errFrame(req.ID, "INVALID_REQUEST", "device signature invalid", map[string]any{"code": "DEVICE_AUTH_SIGNATURE_INVALID"}))
		return
	}
	granted := map[string]bool{}
	g.mu.Lock()
	for _, s := range p.Scopes {
		if s == ScopeRead || (s == ScopeWrite && g.grantWrite) || (s == ScopeAdmin && g.grantAdmin) {
			granted[s] = true
		}
	}
	g.mu.Unlock()
	var grantedList []string
	for s := range granted {
		grantedList = append(grantedList, s)
	}
	sort.Strings(grantedList)
	hello := map[string]any{
		"type": "hello-ok", "protocol": 4,
		"server":   map[string]any{"version": "test", "connId": "c1"},
		"features": map[string]any{"methods": []string{"sessions.list"}, "events": []string{"sessions.changed"}},
		"auth":     map[string]any{"role": "operator", "scopes": grantedList, "method": "token"},
		"policy":   map[string]any{"maxPayload": 25 << 20, "tickIntervalMs": 30000},
	}
	// Registered before the hello, so a test that acts once Dial returns
	// finds the connection.
	g.mu.Lock()
	g.conns = append(g.conns, c)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		for i, x := range g.conns {
			if x == c {
				g.conns = append(g.conns[:i], g.conns[i+1:]...)
				break
			}
		}
		g.mu.Unlock()
	}()
	if c.send(ctx, map[string]any{"type": "res", "id": req.ID, "ok": true, "payload": hello}) != nil {
		return
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if json.Unmarshal(data, &req) != nil || req.Type != "req" {
			return
		}
		g.mu.Lock()
		g.calls = append(g.calls, req.Method)
		silent := g.silent[req.Method]
		g.mu.Unlock()
		if silent {
			continue
		}
		payload, errRes := g.handle(c, req.Method, req.Params, granted, p.Device.ID)
		if errRes != nil {
			errRes["id"] = req.ID
			c.send(ctx, errRes)
			continue
		}
		c.send(ctx, map[string]any{"type": "res", "id": req.ID, "ok": true, "payload": payload})
	}
}

func joinComma(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (g *testGateway) handle(c *gatewayConn, method string, raw json.RawMessage, granted map[string]bool, device string) (any, map[string]any) {
	need := ScopeRead
	if method == "sessions.abort" {
		need = ScopeWrite
	}
	if !granted[need] {
		return nil, errFrame("", "FORBIDDEN", "missing scope: "+need, map[string]any{"code": "MISSING_SCOPE", "missingScope": need, "requiredScopes": []string{need}})
	}
	var p map[string]any
	json.Unmarshal(raw, &p)
	num := func(k string, def int) int {
		if v, ok := p[k].(float64); ok {
			return int(v)
		}
		return def
	}
	switch method {
	case "sessions.list":
		limit, offset := num("limit", 100), num("offset", 0)
		if g.beforePage != nil {
			g.beforePage(offset)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		total := len(g.rows)
		end := min(offset+limit, total)
		page := []map[string]any{}
		if offset < total {
			page = g.rows[offset:end]
		}
		var next any
		hasMore := end < total
		if hasMore {
			next = end
		}
		return map[string]any{
			"ts": time.Now().UnixMilli(), "path": "(test)", "count": len(page), "totalCount": total,
			"limitApplied": limit, "hasMore": hasMore, "nextOffset": next,
			"defaults": map[string]any{"model": "default-model", "modelProvider": "fake"},
			"sessions": page,
		}, nil
	case "sessions.preview":
		g.mu.Lock()
		defer g.mu.Unlock()
		var previews []map[string]any
		keys, _ := p["keys"].([]any)
		for _, k := range keys {
			key := k.(string)
			status := "missing"
			for _, r := range g.rows {
				if r["key"] == key {
					status = "ok"
				}
			}
			previews = append(previews, map[string]any{"key": key, "status": status, "items": []any{}})
		}
		return map[string]any{"ts": time.Now().UnixMilli(), "previews": previews}, nil
	case "chat.history":
		g.mu.Lock()
		defer g.mu.Unlock()
		msgs := g.history[p["sessionKey"].(string)]
		limit, offset := num("limit", 200), num("offset", 0)
		total := len(msgs)
		end := max(total-offset, 0)
		start := max(end-limit, 0)
		res := map[string]any{"sessionKey": p["sessionKey"], "messages": msgs[start:end], "totalMessages": total, "hasMore": start > 0}
		if start > 0 {
			res["nextOffset"] = offset + (end - start)
		}
		return res, nil
	case "sessions.abort":
		g.mu.Lock()
		defer g.mu.Unlock()
		key, _ := p["key"].(string)
		owner, ok := g.active[key]
		if !ok {
			return map[string]any{"ok": true, "abortedRunId": nil, "status": "no-active-run"}, nil
		}
		// Only the run's owner or an admin may abort it.
		if owner != "" && owner != device && !granted[ScopeAdmin] {
			return nil, errFrame("", "INVALID_REQUEST", "unauthorized", nil)
		}
		delete(g.active, key)
		g.aborted = append(g.aborted, key)
		return map[string]any{"ok": true, "abortedRunId": "run-1", "status": "aborted"}, nil
	case "sessions.subscribe":
		c.mu.Lock()
		c.subscribed = true
		c.mu.Unlock()
		return map[string]any{"subscribed": true}, nil
	}
	return nil, errFrame("", "INVALID_REQUEST", "unknown method "+method, nil)
}

// push sends a sessions.changed event to every subscribed connection.
func (g *testGateway) push(key, reason string, row map[string]any) {
	g.mu.Lock()
	conns := append([]*gatewayConn(nil), g.conns...)
	g.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		sub := c.subscribed
		c.seq++
		seq := c.seq
		c.mu.Unlock()
		if !sub {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.send(ctx, map[string]any{"type": "event", "event": "sessions.changed", "seq": seq, "payload": map[string]any{
			"sessionKey": key, "agentId": "main", "reason": reason, "ts": time.Now().UnixMilli(), "session": row,
		}})
		cancel()
	}
}

// dropAll closes every live connection as a restarting gateway does.
func (g *testGateway) dropAll() {
	g.mu.Lock()
	conns := append([]*gatewayConn(nil), g.conns...)
	g.mu.Unlock()
	for _, c := range conns {
		c.ws.Close(websocket.StatusServiceRestart, "restarting")
	}
}

func row(key string, extra map[string]any) map[string]any {
	r := map[string]any{"key": key, "sessionId": "sid-" + key, "agentId": "main", "kind": "direct", "createdAt": 1700000000000, "updatedAt": 1700000001000}
	for k, v := range extra {
		r[k] = v
	}
	return r
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
