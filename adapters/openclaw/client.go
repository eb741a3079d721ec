package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// DefaultURL is where a gateway listens unless configured otherwise.
const DefaultURL = "ws://127.0.0.1:18789"

// Scopes an operator client asks for.
const (
	ScopeRead  = "operator.read"
	ScopeWrite = "operator.write"
	ScopeAdmin = "operator.admin"
)

const (
	defaultTimeout = 10 * time.Second
	// readLimit bounds one frame; the gateway's own policy is 25 MiB.
	readLimit = 64 << 20
	// defaultTick is the gateway's tick interval when hello-ok does not say.
	defaultTick = 30 * time.Second
	// Client identity: a backend client of the fixed list the gateway knows.
	clientID   = "gateway-client"
	clientMode = "backend"
	clientName = "agentctl"
	roleOp     = "operator"
)

// Config says which gateway to talk to and how to authenticate.
type Config struct {
	URL      string // ws:// or wss://; DefaultURL when empty
	Token    string // shared gateway token (OPENCLAW_GATEWAY_TOKEN)
	Password string // shared gateway password (OPENCLAW_GATEWAY_PASSWORD)
	// IdentityPath is the device key file, created on first use.
	IdentityPath string
	// Timeout bounds a handshake, and a call whose context has no deadline.
	Timeout time.Duration
	// PageSize is the sessions.list page (default 200).
	PageSize int
}

func (c Config) url() string {
	if c.URL == "" {
		return DefaultURL
	}
	return c.URL
}

func (c Config) pageSize() int {
	if c.PageSize <= 0 {
		return listPageSize
	}
	return c.PageSize
}

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return defaultTimeout
	}
	return c.Timeout
}

// RawEvent is one event frame from the gateway.
type RawEvent struct {
	Name    string
	Seq     *int64
	Payload json.RawMessage
}

// Conn is one authenticated connection to the gateway. Calls may be made
// concurrently; responses are matched to calls by id.
type Conn struct {
	ws      *websocket.Conn
	hello   helloOK
	url     string
	timeout time.Duration
	nextID  atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan inboundFrame
	events  chan RawEvent // nil: events are dropped
	err     error         // why the connection ended
	done    chan struct{}
	stop    context.CancelFunc
}

// DialOption adjusts a connection.
type DialOption func(*dialOptions)

type dialOptions struct {
	events int
}

// WithEvents delivers the gateway's event frames on Conn.Events, buffering
// up to n; a consumer that falls further behind loses the connection (it
// ends with an error), so it resubscribes and re-lists rather than miss
// events silently.
func WithEvents(n int) DialOption {
	return func(o *dialOptions) { o.events = max(n, 1) }
}

// Dial connects to the gateway and performs the handshake asking for the
// given scopes. While the gateway is still starting it asks clients to come
// back; Dial does so until ctx ends.
func Dial(ctx context.Context, cfg Config, scopes []string, opts ...DialOption) (*Conn, error) {
	var o dialOptions
	for _, opt := range opts {
		opt(&o)
	}
	id, err := LoadOrCreateIdentity(cfg.IdentityPath)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout())
		defer cancel()
	}
	for {
		c, err := dialOnce(ctx, cfg, id, scopes, o)
		var ge *GatewayError
		if err == nil || !errors.As(err, &ge) || !ge.retryableStartup() {
			return c, err
		}
		wait := min(max(ge.RetryAfter, 200*time.Millisecond), 2*time.Second)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("openclaw gateway at %s: still starting: %w", cfg.url(), err)
		case <-time.After(wait):
		}
	}
}

func dialOnce(ctx context.Context, cfg Config, id Identity, scopes []string, o dialOptions) (*Conn, error) {
	url := cfg.url()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, dialError(url, err)
	}
	ws.SetReadLimit(readLimit)
	hello, err := handshake(ctx, ws, cfg, id, scopes)
	if err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("openclaw gateway at %s: %w", url, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	c := &Conn{
		ws:      ws,
		hello:   hello,
		url:     url,
		timeout: cfg.timeout(),
		pending: make(map[string]chan inboundFrame),
		done:    make(chan struct{}),
		stop:    stop,
	}
	if o.events > 0 {
		c.events = make(chan RawEvent, o.events)
	}
	go c.readLoop(runCtx)
	return c, nil
}

// dialError says why no gateway answered: refused and timed-out connections
// are ErrUnreachable, so callers can report "gateway down" plainly.
func dialError(url string, err error) error {
	var op *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("openclaw gateway at %s: %w: %w", url, ErrUnreachable, err)
	}
	return fmt.Errorf("openclaw gateway at %s: connect: %w", url, err)
}

// handshake waits for the challenge, answers it with connect, and returns
// the gateway's hello.
func handshake(ctx context.Context, ws *websocket.Conn, cfg Config, id Identity, scopes []string) (helloOK, error) {
	var ch challenge
	for {
		f, err := readFrame(ctx, ws)
		if err != nil {
			return helloOK{}, fmt.Errorf("wait for connect challenge: %w", err)
		}
		if f.Type == frameEvent && f.Event == "connect.challenge" {
			if err := json.Unmarshal(f.Payload, &ch); err != nil || ch.Nonce == "" {
				return helloOK{}, fmt.Errorf("connect challenge without nonce: %s", f.Payload)
			}
			break
		}
	}
	signedAt := ch.TS
	if signedAt == 0 {
		signedAt = time.Now().UnixMilli()
	}
	params := connectParams{
		MinProtocol: ProtocolVersion,
		MaxProtocol: ProtocolVersion,
		Client: clientInfo{
			ID:          clientID,
			Version:     clientVersion(),
			Platform:    runtime.GOOS,
			Mode:        clientMode,
			DisplayName: clientName,
		},
		Role:   roleOp,
		Scopes: scopes,
		Caps:   []string{},
	}
	if cfg.Token != "" || cfg.Password != "" {
		params.Auth = &connectAuth{Token: cfg.Token, Password: cfg.Password}
	}
	params.Device = id.prove(signedFields{
		DeviceID:   id.DeviceID,
		ClientID:   clientID,
		ClientMode: clientMode,
		Role:       roleOp,
		Scopes:     scopes,
		SignedAtMs: signedAt,
		Token:      cfg.Token,
		Nonce:      ch.Nonce,
		Platform:   runtime.GOOS,
	})
	const connectID = "connect"
	if err := writeJSON(ctx, ws, requestFrame{Type: frameRequest, ID: connectID, Method: "connect", Params: params}); err != nil {
		return helloOK{}, fmt.Errorf("send connect: %w", err)
	}
	for {
		f, err := readFrame(ctx, ws)
		if err != nil {
			return helloOK{}, fmt.Errorf("wait for connect answer: %w", err)
		}
		if f.Type != frameResponse || f.ID != connectID {
			continue
		}
		if !f.OK {
			if f.Error == nil {
				return helloOK{}, fmt.Errorf("connect failed without an error object")
			}
			return helloOK{}, newGatewayError("connect", f.Error)
		}
		var h helloOK
		if err := json.Unmarshal(f.Payload, &h); err != nil {
			return helloOK{}, fmt.Errorf("decode hello: %w", err)
		}
		if h.Protocol != ProtocolVersion {
			return helloOK{}, fmt.Errorf("gateway answered with protocol %d, want %d", h.Protocol, ProtocolVersion)
		}
		return h, nil
	}
}

func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func readFrame(ctx context.Context, ws *websocket.Conn) (inboundFrame, error) {
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return inboundFrame{}, closeError(err)
		}
		if typ != websocket.MessageText {
			continue
		}
		return decodeFrame(data)
	}
}

// closeError names the gateway's close code and reason when it closed the
// socket, which says more than "EOF".
func closeError(err error) error {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Reason != "" {
			return fmt.Errorf("gateway closed the connection (%d %s): %w", int(ce.Code), ce.Reason, err)
		}
		return fmt.Errorf("gateway closed the connection (%d): %w", int(ce.Code), err)
	}
	return err
}

func writeJSON(ctx context.Context, ws *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.Write(ctx, websocket.MessageText, data)
}

// Scopes are the scopes the gateway granted.
func (c *Conn) Scopes() []string { return c.hello.Auth.Scopes }

// HasScope reports whether the gateway granted scope.
func (c *Conn) HasScope(scope string) bool {
	for _, s := range c.hello.Auth.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// ServerVersion is the gateway's version from its hello.
func (c *Conn) ServerVersion() string { return c.hello.Server.Version }

// Events delivers event frames when the connection was dialled WithEvents;
// it is closed when the connection ends.
func (c *Conn) Events() <-chan RawEvent { return c.events }

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it lives.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ErrClosed is the reason of a connection its owner closed.
var ErrClosed = errors.New("connection closed")

// Close ends the connection with a normal close handshake.
func (c *Conn) Close() error {
	c.setErr(ErrClosed)
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	c.stop()
	<-c.done
	if err != nil && !isClosed(err) {
		return fmt.Errorf("close gateway connection: %w", err)
	}
	return nil
}

func isClosed(err error) bool {
	return websocket.CloseStatus(err) != -1 || errors.Is(err, net.ErrClosed)
}

// setErr records the first reason the connection ended.
func (c *Conn) setErr(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// fail records why the connection ended and stops the reader.
func (c *Conn) fail(err error) {
	c.setErr(err)
	c.stop()
}

// idleLimit is how long the gateway may stay silent before the connection
// counts as dead: it sends a tick event every tick interval.
func (c *Conn) idleLimit() time.Duration {
	tick := time.Duration(c.hello.Policy.TickIntervalMs) * time.Millisecond
	if tick <= 0 {
		tick = defaultTick
	}
	return 2*tick + 5*time.Second
}

func (c *Conn) readLoop(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		pending := c.pending
		c.pending = nil
		c.mu.Unlock()
		for _, ch := range pending {
			close(ch)
		}
		if c.events != nil {
			close(c.events)
		}
		c.ws.CloseNow()
		close(c.done)
	}()
	for {
		readCtx, cancel := context.WithTimeout(ctx, c.idleLimit())
		f, err := readFrame(readCtx, c.ws)
		timedOut := readCtx.Err() == context.DeadlineExceeded
		cancel()
		if err != nil {
			if timedOut {
				err = fmt.Errorf("gateway silent for %s: %w", c.idleLimit(), err)
			}
			c.fail(fmt.Errorf("openclaw gateway at %s: %w", c.url, err))
			return
		}
		switch f.Type {
		case frameResponse:
			c.mu.Lock()
			ch := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case frameEvent:
			if c.events == nil {
				continue
			}
			select {
			case c.events <- RawEvent{Name: f.Event, Seq: f.Seq, Payload: f.Payload}:
			default:
				c.fail(fmt.Errorf("openclaw gateway at %s: event consumer fell %d events behind", c.url, cap(c.events)))
				return
			}
		}
	}
}

// Call sends one request and decodes the response payload into out (unless
// out is nil). Without a deadline on ctx, the connection's timeout applies.
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	id := "agentctl-" + strconv.FormatUint(c.nextID.Add(1), 10)
	ch := make(chan inboundFrame, 1)
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.pending != nil {
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}
	if err := writeJSON(ctx, c.ws, requestFrame{Type: frameRequest, ID: id, Method: method, Params: params}); err != nil {
		forget()
		return fmt.Errorf("%s: send: %w", method, err)
	}
	select {
	case <-ctx.Done():
		forget()
		return fmt.Errorf("%s: no answer from the gateway: %w", method, ctx.Err())
	case f, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w", method, c.Err())
		}
		if !f.OK {
			if f.Error == nil {
				return fmt.Errorf("%s: failed without an error object", method)
			}
			return newGatewayError(method, f.Error)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(f.Payload, out); err != nil {
			return fmt.Errorf("%s: decode answer: %w", method, err)
		}
		return nil
	}
}
