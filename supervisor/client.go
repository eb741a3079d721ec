package supervisor

import (
	"bufio"
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
	"syscall"
	"time"

	"github.com/agentctl/agentctl/api"
	units "github.com/agentctl/agentctl/service"
)

// Client talks to the service over its unix socket, starting it first when
// nothing answers (unless autostart is off).
type Client struct {
	home      Home
	exe       string
	autostart bool
	http      *http.Client
}

// ErrNoService means the service is not running and was not started.
var ErrNoService = errors.New("the agentctl service is not running")

// NewClient returns a client for home. exe is the agentctl binary used to
// start the service; autostart says whether to.
func NewClient(home Home, exe string, autostart bool) *Client {
	sock := home.Socket()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 30 * time.Second,
	}
	return &Client{home: home, exe: exe, autostart: autostart, http: &http.Client{Transport: tr}}
}

// Home is the state directory the client talks about.
func (c *Client) Home() Home { return c.home }

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

// Ensure makes sure the service runs, starting it when allowed.
func (c *Client) Ensure(ctx context.Context) error {
	if c.alive(ctx) {
		return nil
	}
	if !c.autostart {
		return fmt.Errorf("%w (socket %s); start it with `agentctl daemon start` or unset AGENTCTL_NO_AUTOSTART", ErrNoService, c.home.Socket())
	}
	return c.StartDaemon(ctx)
}

// StartDaemon starts `agentctl daemon run` detached from the caller: its
// own session, no inherited descriptors, output to the home's daemon.log.
// It returns once the socket answers.
func (c *Client) StartDaemon(ctx context.Context) error {
	// An installed unit serving this home is started through its manager:
	// a service spawned here while the unit restarts would take the lock
	// and make the unit fail on every restart.
	if handled, err := units.StartInstalled(ctx, string(c.home)); handled || err != nil {
		return err
	}
	if err := c.home.Ensure(); err != nil {
		return err
	}
	logf, err := os.OpenFile(c.home.DaemonLog(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start the agentctl service: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(c.exe, "daemon", "run")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "AGENTCTL_HOME="+string(c.home))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the agentctl service (%s daemon run): %w", c.exe, err)
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
			return nil
		}
		select {
		case err := <-exited:
			// Another client may have started it at the same moment: the
			// loser exits because the lock is taken. Give the winner time.
			for i := 0; i < 200 && !c.alive(ctx); i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if c.alive(ctx) {
				return nil
			}
			return fmt.Errorf("the agentctl service exited at start (%v); see %s", err, c.home.DaemonLog())
		case <-deadline.C:
			return fmt.Errorf("the agentctl service did not answer within 10s; see %s", c.home.DaemonLog())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// do sends one request and decodes the answer into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the service's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// send performs a request and turns error answers into *api.Error.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	if err := c.Ensure(ctx); err != nil {
		return nil, err
	}
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
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("talk to the agentctl service at %s: %w", c.home.Socket(), err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var e api.Error
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e); err != nil || e.Code == "" {
			return nil, fmt.Errorf("the agentctl service answered %s", resp.Status)
		}
		return nil, &e
	}
	return resp, nil
}

// Run starts a session.
func (c *Client) Run(ctx context.Context, req api.RunRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, "/v1/sessions", req, &s)
	return s, err
}

// ListOptions narrow a list.
type ListOptions struct {
	All     bool
	Status  string
	Adapter string
	Group   string
	Labels  []string
	Since   time.Duration
}

// List returns sessions.
func (c *Client) List(ctx context.Context, o ListOptions) (api.SessionList, error) {
	q := url.Values{}
	if o.All {
		q.Set("all", "1")
	}
	if o.Status != "" {
		q.Set("status", o.Status)
	}
	if o.Adapter != "" {
		q.Set("adapter", o.Adapter)
	}
	if o.Group != "" {
		q.Set("group", o.Group)
	}
	for _, l := range o.Labels {
		q.Add("label", l)
	}
	if o.Since > 0 {
		q.Set("since", o.Since.String())
	}
	var out api.SessionList
	err := c.do(ctx, http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &out)
	return out, err
}

// Get returns one session by id or unique prefix.
func (c *Client) Get(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &s)
	return s, err
}

// Stop stops a session and returns its final state.
func (c *Client) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	var s api.Session
	err := c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/stop", req, &s)
	return s, err
}

// Input writes to a session's terminal.
func (c *Client) Input(ctx context.Context, id string, data []byte) error {
	return c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/input", api.InputRequest{Data: data}, nil)
}

// Transcript returns the last n assistant messages.
func (c *Client) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	var t api.Transcript
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/transcript?n="+strconv.Itoa(n), nil, &t)
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

// LogOptions select what Logs streams.
type LogOptions struct {
	Lines  int
	Raw    bool
	Follow bool
}

// Logs streams a session's output to fn, chunk by chunk; the last chunk has
// End set.
func (c *Client) Logs(ctx context.Context, id string, o LogOptions, fn func(api.LogChunk) error) error {
	q := url.Values{}
	q.Set("n", strconv.Itoa(o.Lines))
	if o.Raw {
		q.Set("raw", "1")
	}
	if o.Follow {
		q.Set("follow", "1")
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/logs?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ch api.LogChunk
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			return fmt.Errorf("read log stream: %w", err)
		}
		if err := fn(ch); err != nil {
			return err
		}
		if ch.End {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read log stream: %w", err)
	}
	return fmt.Errorf("the log stream ended early (the service stopped?)")
}
