// Package client is the CLI's side of the agentctl API: it reaches the
// service on its unix socket (starting it when nothing answers, unless told
// not to), sends every request, and decodes the streams. It offers the same
// session operations as the service's session core (Sessions).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// Sessions is what can be asked about and done to sessions, wherever they
// are: the service's session core answers it in-process, a Client over the
// socket. Views (the live view, several hosts) are written against it.
type Sessions interface {
	Launch(ctx context.Context, req api.RunRequest) (api.Session, error)
	List(ctx context.Context, o api.ListOptions) (api.SessionList, error)
	Get(ctx context.Context, id string) (api.Session, error)
	Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error)
	Input(ctx context.Context, id string, data []byte) (api.Session, error)
	Transcript(ctx context.Context, id string, n int) (api.Transcript, error)
	Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error
}

var _ Sessions = (*Client)(nil)

// Client talks to the service over its unix socket, starting it first when
// nothing answers (unless autostart is off), or to another host's service
// through a Dialer.
type Client struct {
	home      home.Home
	exe       string
	autostart bool
	// remote, when set, makes every connection (another host's service);
	// home and exe are then unused.
	remote Dialer
	http   *http.Client
	// silence is how long a stream may stay silent (streamSilence).
	silence time.Duration
	// onVersion hears, once, the version the service says it runs.
	onVersion   func(version string)
	versionSeen sync.Once
	// limits bound what an answer may hold and how long it may take.
	limits limits
	// startInstalled, when set, is tried before the client starts a
	// service of its own (StartInstalledWith).
	startInstalled InstalledStarter
}

// InstalledStarter starts the service of home through its service manager
// when an installed unit serves that home, and waits until it answers;
// handled is false when no unit serves it. The CLI passes the one of
// package service: the client does not link the unit code itself (the
// cluster helper, which uses the client, has no systemd to talk to).
type InstalledStarter func(ctx context.Context, home string) (handled bool, err error)

// StartInstalledWith has the client's auto-start go through start first:
// a service the client spawned itself while an installed unit's service
// restarts would hold the home's lock, and the unit's service would fail
// on every restart.
func (c *Client) StartInstalledWith(start InstalledStarter) { c.startInstalled = start }

// OnServiceVersion has f told, once, which version the service runs (its
// every answer names it), so a CLI can say when it talks to an older one.
func (c *Client) OnServiceVersion(f func(version string)) { c.onVersion = f }

// HostEnv names the host (or hosts) commands act on; -H sets it for the
// command and what it runs.
const HostEnv = "AGENTCTL_HOST"

// ErrNoService means the service is not running and was not started.
var ErrNoService = errors.New("the agentctl service is not running")

// New returns a client for h. exe is the agentctl binary used to start the
// service; autostart says whether to.
func New(h home.Home, exe string, autostart bool) *Client {
	c := &Client{home: h, exe: exe, autostart: autostart, silence: streamSilence, limits: defaultLimits()}
	c.http = c.newHTTP()
	return c
}

// Dialer makes a connection to another host's service, the far end
// starting that service first when autostart says so. String names the
// host in messages.
type Dialer interface {
	Dial(ctx context.Context, autostart bool) (net.Conn, error)
	String() string
}

// NewRemote returns a client whose connections d makes.
func NewRemote(d Dialer, autostart bool) *Client {
	c := &Client{remote: d, autostart: autostart, silence: streamSilence, limits: defaultLimits()}
	c.http = c.newHTTP()
	return c
}

// WithoutAutostart is a client for the same service that never starts it:
// for views that wait for a service stopped on purpose to come back.
func (c *Client) WithoutAutostart() *Client {
	if c.remote != nil {
		return NewRemote(c.remote, false)
	}
	return New(c.home, c.exe, false)
}

// Remote reports whether the service is another host's.
func (c *Client) Remote() bool { return c.remote != nil }

// ServiceClient returns c: a host that is an agentctl service answers with
// its client (hosts.Service) for what only a service has.
func (c *Client) ServiceClient() *Client { return c }

// where names the service in messages: its socket, or its host.
func (c *Client) where() string {
	if c.remote != nil {
		return c.remote.String()
	}
	return c.home.Socket()
}

func (c *Client) newHTTP() *http.Client {
	tr := &http.Transport{
		DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) },
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeader,
	}
	return &http.Client{Transport: tr}
}

// Home is the state directory the client talks about ("" for another
// host's service).
func (c *Client) Home() home.Home { return c.home }

// Dial connects to the service, starting it first when nothing answers
// (if allowed): the raw connection the API is spoken over.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	conn, err := c.dial(ctx)
	var de *dialError
	if errors.As(err, &de) {
		return nil, de.err
	}
	return conn, err
}

// dial connects to the service: one dial when it runs; when nothing
// listens, the service is started (if allowed) and dialled again.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.remote != nil {
		conn, err := c.remote.Dial(ctx, c.autostart)
		if err != nil {
			return nil, &dialError{err}
		}
		return conn, nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.home.Socket())
	if err == nil {
		return conn, nil
	}
	if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
		return nil, &dialError{fmt.Errorf("talk to the agentctl service at %s: %w", c.home.Socket(), err)}
	}
	if !c.autostart {
		return nil, &dialError{fmt.Errorf("%w (socket %s); start it with `agentctl daemon start` or unset AGENTCTL_NO_AUTOSTART", ErrNoService, c.home.Socket())}
	}
	if _, err := c.Start(ctx); err != nil {
		return nil, &dialError{err}
	}
	if conn, err = d.DialContext(ctx, "unix", c.home.Socket()); err != nil {
		return nil, &dialError{fmt.Errorf("talk to the agentctl service at %s: %w", c.home.Socket(), err)}
	}
	return conn, nil
}

// dialError is a failure to reach the service, which says all there is to
// say without the request around it.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// alive reports whether the service answers on its socket.
func (c *Client) alive(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.home.Socket())
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Start makes sure the service runs: it starts `agentctl daemon run`
// detached from the caller (its own session, no inherited descriptors,
// output to the home's daemon.log) unless one answers already, and returns
// once the socket answers. started says whether this call started it.
func (c *Client) Start(ctx context.Context) (started bool, err error) {
	if c.alive(ctx) {
		return false, nil
	}
	// An installed unit serving this home is started through its manager:
	// a service spawned here while the unit restarts would take the lock
	// and make the unit fail on every restart.
	if c.startInstalled != nil {
		if handled, err := c.startInstalled(ctx, string(c.home)); handled || err != nil {
			return handled && err == nil, err
		}
	}
	if err := c.home.Ensure(); err != nil {
		return false, err
	}
	logf, err := os.OpenFile(c.home.DaemonLog(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return false, fmt.Errorf("start the agentctl service: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(c.exe, "daemon", "run")
	cmd.Dir = "/"
	// A service started from inside a session is not that session's, and
	// the host a command was pointed at is not its sessions'.
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, home.SessionEnv+"=") && !strings.HasPrefix(kv, HostEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "AGENTCTL_HOME="+string(c.home))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start the agentctl service (%s daemon run): %w", c.exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if c.alive(ctx) {
			// The service runs on without us; cmd.Wait's goroutine ends
			// with this process.
			return true, nil
		}
		select {
		case err := <-exited:
			// Another client may have started it at the same moment: the
			// loser exits because the lock is taken. Give the winner time.
			for i := 0; i < 200 && !c.alive(ctx); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if c.alive(ctx) {
				return false, nil
			}
			return false, fmt.Errorf("the agentctl service exited at start (%v); see %s", err, c.home.DaemonLog())
		case <-deadline.C:
			return false, fmt.Errorf("the agentctl service did not answer within 10s; see %s", c.home.DaemonLog())
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		}
	}
}

// WaitStopped returns once no service holds the home's lock: the kernel
// drops the lock when the service's process ends.
func (c *Client) WaitStopped(ctx context.Context) error {
	f, err := os.OpenFile(c.home.LockFile(), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("watch the service's lock %s: %w", c.home.LockFile(), err)
	}
	defer f.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// do sends one request and decodes the answer, one value, into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body, c.limits.reply)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return c.readFailed(method, path, err)
	}
	return nil
}

// readFailed says that an answer could not be read: a bound it exceeded
// says so itself, naming the service.
func (c *Client) readFailed(method, path string, err error) error {
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrStalled) {
		return err
	}
	path, _, _ = strings.Cut(path, "?")
	return fmt.Errorf("read the answer of the agentctl service at %s to %s %s: %w", c.where(), method, path, err)
}

// send performs a request and turns error answers into *api.Error. An
// answer that is one value is bounded by max bytes (and in time); max 0
// is a stream, which its reader bounds.
func (c *Client) send(ctx context.Context, method, path string, body any, max int64) (*http.Response, error) {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	return c.sendRequest(req, max)
}

// stream marks a request whose answer is a stream (send's max).
const stream = 0

func (c *Client) sendRequest(req *http.Request, max int64) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	stopWatch := c.watch(ctx, cancel)
	resp, err := c.http.Do(req.WithContext(ctx))
	stopWatch()
	if err != nil {
		defer cancel(nil)
		if cause := context.Cause(ctx); errors.Is(cause, errNotAnswering) {
			return nil, cause
		}
		var de *dialError
		if errors.As(err, &de) {
			return nil, de.err
		}
		return nil, fmt.Errorf("talk to the agentctl service at %s: %w", c.where(), err)
	}
	if v := resp.Header.Get(api.HeaderServiceVersion); v != "" && c.onVersion != nil {
		c.versionSeen.Do(func() { c.onVersion(v) })
	}
	release := func() { cancel(nil) }
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body = &releasingConn{ReadWriteCloser: rw, release: release}
		return resp, nil
	}
	failed := resp.StatusCode >= 300
	if failed {
		max = c.limits.errorReply
	}
	if max != stream {
		what := fmt.Sprintf("the answer of the agentctl service at %s to %s %s", c.where(), req.Method, req.URL.Path)
		resp.Body = newBoundedBody(resp.Body, cancel, what, max, c.limits)
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	if failed {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	return resp, nil
}

func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agentctl"+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := c.setRelay(ctx, req); err != nil {
		return nil, err
	}
	return req, nil
}

// How long a request may wait for the service's answer to begin, and how
// often a slow one checks whether the service is stopped.
const (
	answerTimeout = 2 * time.Minute
	frozenCheck   = time.Second
)

// errNotAnswering marks a request the service did not answer.
var errNotAnswering = errors.New("the agentctl service is not answering")

// watch cancels a request whose answer does not begin in time: at once when
// the service's process is stopped (SIGSTOP: the kernel still accepts the
// connection, and nothing would ever answer), else after answerTimeout. The
// returned stop ends the watch once the answer began.
func (c *Client) watch(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(frozenCheck)
		defer tick.Stop()
		deadline := time.NewTimer(answerTimeout)
		defer deadline.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-deadline.C:
				cancel(c.notAnswering(fmt.Sprintf("no answer within %s", answerTimeout), false))
				return
			case <-tick.C:
				if c.remote != nil {
					continue // another host's process table is not ours to read
				}
				pid := home.LockHolder(c.home.LockFile())
				if p, err := proc.Lookup(pid); err == nil && p.Stopped {
					cancel(c.notAnswering("its process is stopped", true))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// notAnswering says which service does not answer, why, and what to do:
// a stopped process is resumed; one that runs but did not answer in time is
// busy or stuck, and its log says which.
func (c *Client) notAnswering(why string, stopped bool) error {
	if c.remote != nil {
		return fmt.Errorf("%w (%s; %s)", errNotAnswering, why, c.remote)
	}
	pid := home.LockHolder(c.home.LockFile())
	if pid <= 0 {
		return fmt.Errorf("%w (%s; socket %s): see %s, or `agentctl daemon restart`", errNotAnswering, why, c.home.Socket(), c.home.DaemonLog())
	}
	if stopped {
		return fmt.Errorf("%w (pid %d: %s): resume it with `kill -CONT %d`, or `agentctl daemon restart`", errNotAnswering, pid, why, pid)
	}
	return fmt.Errorf("%w (pid %d runs, %s): it may be busy; try again, see %s, or `agentctl daemon restart`", errNotAnswering, pid, why, c.home.DaemonLog())
}

// releasingBody releases the request's watch context once the answer has
// been read.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// releasingConn is releasingBody for a connection that switched protocols.
type releasingConn struct {
	io.ReadWriteCloser
	release func()
}

func (b *releasingConn) Close() error {
	err := b.ReadWriteCloser.Close()
	b.release()
	return err
}

// errorOf decodes an error answer.
func errorOf(resp *http.Response) error {
	var e api.Error
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorReply)).Decode(&e); err != nil || e.Code == "" {
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrStalled) {
			return fmt.Errorf("the agentctl service answered %s: %w", resp.Status, err)
		}
		return fmt.Errorf("the agentctl service answered %s", resp.Status)
	}
	return &e
}

func sessionPath(id string, rest string) string {
	return "/v1/sessions/" + url.PathEscape(id) + rest
}

// Launch starts a session.
func (c *Client) Launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, "/v1/sessions", req, &s)
	return s, err
}

// List returns sessions.
func (c *Client) List(ctx context.Context, o api.ListOptions) (api.SessionList, error) {
	path := "/v1/sessions?" + o.Query().Encode()
	resp, err := c.send(ctx, http.MethodGet, path, nil, c.limits.list)
	if err != nil {
		return api.SessionList{}, err
	}
	defer resp.Body.Close()
	var out api.SessionList
	// The count the service announces sizes the list before it is read:
	// the decoder would grow it, copying every session each time. It is a
	// hint: a wrong one costs only that.
	if n, err := strconv.Atoi(resp.Header.Get(api.HeaderListCount)); err == nil && n > 0 {
		out.Sessions = make([]api.Session, 0, min(n, c.limits.sessions))
	}
	what := fmt.Sprintf("the answer of the agentctl service at %s to GET /v1/sessions", c.where())
	if err := decodeList(resp.Body, &out, c.limits.sessions, c.limits.session, what); err != nil {
		return api.SessionList{}, c.readFailed(http.MethodGet, path, err)
	}
	return out, nil
}

// ListIndented returns the service's answer to a list as `list --json`
// prints it: indented JSON, as encoding/json indents the decoded list. The
// answer is re-indented, not decoded and encoded again, which for a large
// store was most of the command's time; an answer that decoding would
// change (text that is not UTF-8, which the encoder replaces) goes the
// long way, so the output is the same either way.
func (c *Client) ListIndented(ctx context.Context, o api.ListOptions) ([]byte, error) {
	path := "/v1/sessions?" + o.Query().Encode()
	resp, err := c.send(ctx, http.MethodGet, path, nil, c.limits.list)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	// The count the service announces sizes the buffer (a session is
	// about 500 bytes of answer), so it is not grown and copied.
	if n, err := strconv.Atoi(resp.Header.Get(api.HeaderListCount)); err == nil && n > 0 {
		body.Grow(int(min(int64(n)*600, c.limits.list)))
	}
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, c.readFailed(http.MethodGet, path, err)
	}
	what := fmt.Sprintf("the answer of the agentctl service at %s to GET /v1/sessions", c.where())
	if utf8.Valid(body.Bytes()) {
		out, err := indentJSON(make([]byte, 0, indentedSize(body.Len())), body.Bytes())
		if err != nil {
			return nil, c.readFailed(http.MethodGet, path, fmt.Errorf("%s: %w", what, err))
		}
		return out, nil
	}
	var list api.SessionList
	if err := decodeList(&body, &list, c.limits.sessions, c.limits.session, what); err != nil {
		return nil, c.readFailed(http.MethodGet, path, err)
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Get returns one session by id or unique prefix.
func (c *Client) Get(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodGet, sessionPath(id, ""), nil, &s)
	return s, err
}

// Explain returns a session with the evidence behind its status.
func (c *Client) Explain(ctx context.Context, id string) (api.Explanation, error) {
	var ex api.Explanation
	err := c.do(ctx, http.MethodGet, sessionPath(id, "/explain"), nil, &ex)
	return ex, err
}

// Stop stops a session and returns its final state.
func (c *Client) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/stop"), req, &s)
	return s, err
}

// Input writes to a session's terminal.
func (c *Client) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, sessionPath(id, "/input"), api.InputRequest{Data: data}, &s)
	return s, err
}

// Transcript returns the last n assistant messages.
func (c *Client) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	var t api.Transcript
	err := c.do(ctx, http.MethodGet, sessionPath(id, "/transcript?n="+strconv.Itoa(n)), nil, &t)
	return t, err
}

// Prune removes ended sessions older than d.
func (c *Client) Prune(ctx context.Context, olderThan time.Duration) (api.PruneResult, error) {
	var out api.PruneResult
	req := api.PruneRequest{}
	if olderThan > 0 {
		req.OlderThan = olderThan.String()
	}
	err := c.do(ctx, http.MethodPost, "/v1/prune", req, &out)
	return out, err
}

// DaemonStatus describes the running service.
func (c *Client) DaemonStatus(ctx context.Context) (api.DaemonStatus, error) {
	var out api.DaemonStatus
	err := c.do(ctx, http.MethodGet, "/v1/daemon", nil, &out)
	return out, err
}

// Shutdown asks the service to exit; sessions keep running.
func (c *Client) Shutdown(ctx context.Context) (int, error) {
	var out struct {
		PID int `json:"pid"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/daemon/shutdown", nil, &out)
	return out.PID, err
}

// Logs streams a session's output to emit, chunk by chunk; the last chunk
// has End set.
func (c *Client) Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	resp, err := c.send(ctx, http.MethodGet, sessionPath(id, "/logs?"+o.Query().Encode()), nil, stream)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ended := false
	var emitErr error
	err = readLines(resp.Body, c.silence, c.limits.line, func(line []byte) error {
		ch, err := decodeLogChunk(line)
		if err != nil {
			return err
		}
		if emitErr = emit(ch); emitErr != nil {
			return emitErr
		}
		if ch.End {
			ended = true
			return io.EOF
		}
		return nil
	})
	switch {
	case ended:
		return nil
	case emitErr != nil:
		return emitErr
	case err != nil:
		return fmt.Errorf("read the log stream of the agentctl service at %s: %w", c.where(), err)
	}
	return fmt.Errorf("the log stream ended early (the service stopped?)")
}
