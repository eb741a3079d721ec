package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// A cluster holds a launch to the contract a machine's service holds it to
// (api.RunRequest.Normalize), before it asks the API server anything: the
// server here refuses every connection, so only the contract can answer.
func TestLaunchHoldsTheContract(t *testing.T) {
	t.Parallel()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`), 0o600)
	c, err := New(Config{Kubeconfig: kubeconfig, Image: "agent:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  api.RunRequest
		want string
	}{
		{"a relative cwd", api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "work"}, "absolute path"},
		{"a label with a newline", api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "/work", Labels: map[string]string{"k": "a\nb"}}, "label"},
		{"a name with an escape", api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "/work", Name: "x\x1b[2J"}, "control characters"},
		{"an unknown permission mode", api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "/work", PermissionMode: "yolo"}, "permission mode"},
		{"a command without its command", api.RunRequest{Cwd: "/work"}, "no command given"},
		{"agent arguments for a command", api.RunRequest{Command: []string{"true"}, Cwd: "/work", AgentArgs: []string{"-v"}}, "are for agents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Launch(context.Background(), tc.req)
			if api.CodeOf(err) != api.CodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("launch: %v (code %q), want an invalid request saying %q", err, api.CodeOf(err), tc.want)
			}
		})
	}
}
