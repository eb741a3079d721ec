package opencode

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/adapters"
)

// interactive builds `opencode --port P [--model M] [--prompt PROMPT]`: the
// TUI, with its server on a port of 127.0.0.1 chosen now, so that its
// permission requests (GET /permission, the permission.asked event) can be
// read and answered (POST /permission/{id}/reply) without the terminal.
// Headless `opencode run` never waits: it rejects what its configuration
// would ask about by itself.
func (a *Adapter) interactive(req adapters.LaunchRequest) (adapters.LaunchSpec, error) {
	if len(req.Prompt) > maxArgPrompt {
		return adapters.LaunchSpec{}, fmt.Errorf("launch opencode: an interactive prompt is at most %d bytes", maxArgPrompt)
	}
	port, err := freePort()
	if err != nil {
		return adapters.LaunchSpec{}, fmt.Errorf("launch opencode: %w", err)
	}
	argv := []string{a.Binary(), "--port", strconv.Itoa(port), "--hostname", "127.0.0.1"}
	if m := strings.TrimSpace(req.Model); m != "" {
		argv = append(argv, "--model", m)
	}
	argv = append(argv, req.Args...)
	if req.Prompt != "" {
		argv = append(argv, "--prompt", req.Prompt)
	}
	return adapters.LaunchSpec{Argv: argv, Env: append([]string(nil), req.Env...), Server: "http://127.0.0.1:" + strconv.Itoa(port)}, nil
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for its server: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
