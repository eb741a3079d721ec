package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/agentctl/agentctl/adapters"
)

// Codex 0.169's TUI runs its turns, and their tools, in a background
// app-server (`codex app-server --managed-daemon`) shared by every TUI of
// the store: started by the first TUI, reparented to PID 1, and left
// running after the TUI quits. Signalling the TUI does not end a turn
// there. The daemon listens on a Unix socket in the store, speaking
// JSON-RPC (without the "jsonrpc" member) in WebSocket text messages; the
// TUI interrupts a turn with turn/interrupt, and `/stop` ends the
// terminals a turn left running with thread/backgroundTerminals/clean.

// controlSocket is where a store's daemon listens (a link to its socket
// under the temporary folder).
func controlSocket(codexHome string) string {
	return filepath.Join(codexHome, "app-server-control", "app-server-control.sock")
}

// errNoDaemon: no app-server answers for the store.
var errNoDaemon = errors.New("no codex app-server daemon runs for this store")

// appServer is one connection to a store's daemon.
type appServer struct {
	ws   *websocket.Conn
	next int
}

// dialAppServer connects to the daemon of the store at codexHome and
// introduces itself. It never starts a daemon: errNoDaemon when none runs.
func dialAppServer(ctx context.Context, codexHome string) (*appServer, error) {
	sock := controlSocket(codexHome)
	// The link's target is short: a socket's path is limited to about 100
	// bytes, which a deep CODEX_HOME exceeds.
	target, err := filepath.EvalSymlinks(sock)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoDaemon
	}
	if err != nil {
		return nil, fmt.Errorf("find the codex app-server socket: %w", err)
	}
	sock = target
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	ws, _, err := websocket.Dial(ctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, errNoDaemon
		}
		return nil, fmt.Errorf("connect to the codex app-server at %s: %w", sock, err)
	}
	ws.SetReadLimit(16 << 20)
	s := &appServer{ws: ws}
	// Experimental methods include thread/backgroundTerminals/*.
	init := map[string]any{
		"clientInfo":   map[string]string{"name": "agentctl", "version": "1"},
		"capabilities": map[string]bool{"experimentalApi": true},
	}
	if err := s.call(ctx, "initialize", init, nil); err != nil {
		s.close()
		return nil, err
	}
	if err := s.notify(ctx, "initialized"); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *appServer) close() { s.ws.Close(websocket.StatusNormalClosure, "") }

func (s *appServer) notify(ctx context.Context, method string) error {
	b, err := json.Marshal(map[string]string{"method": method})
	if err != nil {
		return err
	}
	if err := s.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("codex app-server %s: %w", method, err)
	}
	return nil
}

// call sends one request and decodes its result into out (when not nil),
// passing over the notifications and server requests that come between.
func (s *appServer) call(ctx context.Context, method string, params, out any) error {
	s.next++
	id := s.next
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := s.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("codex app-server %s: %w", method, err)
	}
	for {
		_, msg, err := s.ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("codex app-server %s: %w", method, err)
		}
		var reply struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(msg, &reply) != nil || reply.ID == nil || *reply.ID != id || reply.Method != "" {
			continue
		}
		if reply.Error != nil {
			return fmt.Errorf("codex app-server %s: %s (%d)", method, reply.Error.Message, reply.Error.Code)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(reply.Result, out); err != nil {
			return fmt.Errorf("codex app-server %s: decode the result: %w", method, err)
		}
		return nil
	}
}

// loaded says whether the daemon has thread id in memory (a TUI works on
// it, or did within the last minute or so).
func (s *appServer) loaded(ctx context.Context, id string) (bool, error) {
	var res struct {
		Data []string `json:"data"`
	}
	if err := s.call(ctx, "thread/loaded/list", map[string]any{}, &res); err != nil {
		return false, err
	}
	return slices.Contains(res.Data, id), nil
}

// runningTurn returns the id of the thread's turn in progress, or "".
func (s *appServer) runningTurn(ctx context.Context, thread string) (string, error) {
	var res struct {
		Data []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := s.call(ctx, "thread/turns/list", map[string]any{"threadId": thread, "limit": 1}, &res); err != nil {
		return "", err
	}
	if len(res.Data) > 0 && res.Data[0].Status == "inProgress" {
		return res.Data[0].ID, nil
	}
	return "", nil
}

// terminals returns the commands of the thread's tools still running.
func (s *appServer) terminals(ctx context.Context, thread string) ([]string, error) {
	var res struct {
		Data []struct {
			Command string `json:"command"`
		} `json:"data"`
	}
	if err := s.call(ctx, "thread/backgroundTerminals/list", map[string]any{"threadId": thread}, &res); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Data))
	for _, t := range res.Data {
		out = append(out, t.Command)
	}
	return out, nil
}

// interruptSettle bounds how long an interrupt waits for the daemon to show
// that nothing of the turn runs any more.
const interruptSettle = 5 * time.Second

// InterruptTurn implements adapters.TurnInterrupter: when the store's
// daemon holds the session (an interactive Codex works on it there), it
// interrupts the running turn, as Esc does in the TUI, ends the tools it
// left running, as /stop does, and checks that neither runs any more.
// Without a daemon, or when the daemon does not hold the session, the turn
// runs in the session's own process (codex exec, --no-daemon), and there
// is nothing to do here.
func (a *Adapter) InterruptTurn(ctx context.Context, nativeID string) error {
	if !uuidOnly().MatchString(nativeID) {
		return nil
	}
	s, err := dialAppServer(ctx, a.home())
	if errors.Is(err, errNoDaemon) {
		return nil
	}
	if err != nil {
		return err
	}
	defer s.close()
	if ok, err := s.loaded(ctx, nativeID); err != nil || !ok {
		return err
	}
	turn, err := s.runningTurn(ctx, nativeID)
	if err != nil {
		return err
	}
	if turn != "" {
		if err := s.call(ctx, "turn/interrupt", map[string]string{"threadId": nativeID, "turnId": turn}, nil); err != nil {
			return err
		}
	}
	// An interrupted turn hands the tool it was running to the thread's
	// background terminals as it winds down (the TUI then says "1
	// background terminal running"): wait for the turn to end, then end
	// those, again for any that appears meanwhile.
	deadline := time.Now().Add(interruptSettle)
	for {
		turn, err := s.runningTurn(ctx, nativeID)
		if err != nil {
			return err
		}
		var cmds []string
		if turn == "" {
			if err := s.call(ctx, "thread/backgroundTerminals/clean", map[string]string{"threadId": nativeID}, nil); err != nil {
				return err
			}
			if cmds, err = s.terminals(ctx, nativeID); err != nil {
				return err
			}
			if len(cmds) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("codex session %s: after the interrupt, the daemon still runs turn %q and tools %q", nativeID, turn, cmds)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop implements adapters.Stopper for a Codex session agentctl did not
// start whose turn runs in the daemon: the turn and its tools end, and the
// TUI stays open at its prompt, as after Esc.
func (a *Adapter) Stop(ctx context.Context, nativeID string) error {
	if !uuidOnly().MatchString(nativeID) {
		return fmt.Errorf("stop codex session %q: %w", nativeID, adapters.ErrNoSession)
	}
	s, err := dialAppServer(ctx, a.home())
	if errors.Is(err, errNoDaemon) {
		return fmt.Errorf("codex session %s does not run in a codex app-server (stop it where it runs): %w", nativeID, adapters.ErrNotRunning)
	}
	if err != nil {
		return err
	}
	ok, err := s.loaded(ctx, nativeID)
	s.close()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("codex session %s does not run in the codex app-server (stop it where it runs): %w", nativeID, adapters.ErrNotRunning)
	}
	return a.InterruptTurn(ctx, nativeID)
}
