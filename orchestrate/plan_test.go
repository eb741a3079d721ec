package orchestrate

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// The flags a command line may combine, and the ones it may not: every
// refusal is a usage error naming the rule.
func TestNewPlanRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	matrix := filepath.Join(dir, "m.yaml")
	writeFile(t, matrix, []byte("prompt: p\nmatrix:\n  - adapter: [claude, codex]\n"))
	claude, codex := Member{Adapter: "claude"}, Member{Adapter: "codex"}
	tests := []struct {
		name string
		in   PlanInput
		want string
	}{
		{"an argument and --adapter", PlanInput{Positional: "claude", Adapters: []Member{codex}, Prompt: "p"}, "not both"},
		{"a matrix and --adapter", PlanInput{Matrix: matrix, Adapters: []Member{claude}}, "--matrix lists the adapters"},
		{"a matrix and --model", PlanInput{Matrix: matrix, Model: "opus"}, "--matrix lists the adapters"},
		{"a matrix file missing", PlanInput{Matrix: filepath.Join(dir, "none.yaml")}, "matrix file"},
		{"--model before two adapters", PlanInput{Adapters: []Member{claude, codex}, Model: "opus", Prompt: "p"}, "must follow the --adapter"},
		{"a command without its command", PlanInput{DefaultAdapter: api.ExecAdapter}, "no command given"},
		{"agent arguments for two kinds of agent", PlanInput{Adapters: []Member{claude, codex}, Prompt: "p", Args: []string{"-v"}}, "one agent's command line"},
		{"a permission mode for a command", PlanInput{DefaultAdapter: api.ExecAdapter, Args: []string{"make"}, PermissionMode: "plan"}, "--permission-mode is for agents"},
		{"a group without a prompt", PlanInput{Adapters: []Member{claude, codex}}, "a group needs a prompt"},
		{"context files for a command", PlanInput{DefaultAdapter: api.ExecAdapter, Args: []string{"make"}, Files: []string{"a.md"}}, "--file and --spec"},
		{"a branch without a worktree", PlanInput{DefaultAdapter: "claude", Branch: "fix"}, "need --worktree"},
		{"--cwd and --worktree", PlanInput{DefaultAdapter: "claude", Worktree: ".", CwdGiven: true}, "--cwd and --worktree"},
		{"a group id with a slash", PlanInput{DefaultAdapter: "claude", Group: "g/1"}, "--group"},
		{"--wait for a group", PlanInput{Adapters: []Member{claude, codex}, Prompt: "p", Wait: true}, "--wait follows one session"},
		{"a size that is none", PlanInput{DefaultAdapter: "claude", MaxFileSize: "big"}, "--max-file-size"},
		{"worktrees on another host", PlanInput{DefaultAdapter: "claude", Worktree: ".", Remote: true}, "on another host"},
		{"context files on another host", PlanInput{DefaultAdapter: "claude", Spec: "s.md", Remote: true}, "on another host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.in.Command = "launch"
			_, err := NewPlan(tt.in)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewPlan: %v, want a usage error saying %q", err, tt.want)
			}
		})
	}
}

// What a plan starts: its members, whether they form a group in
// worktrees, and the request each gets.
func TestPlanRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "spec.md"), []byte("do X\n"))
	matrix := filepath.Join(dir, "m.yaml")
	writeFile(t, matrix, []byte("prompt: from the file\ncwd: "+dir+"\nbase_branch: main\nmatrix:\n  - adapter: claude\n    model: [opus, sonnet]\n"))
	claude, codexMini := Member{Adapter: "claude"}, Member{Adapter: "codex", Model: "mini"}
	tests := []struct {
		name      string
		in        PlanInput
		req       api.RunRequest // what the other flags built
		members   []Member
		group     bool
		worktrees bool
		adapter   string // the one member's
		check     func(t *testing.T, r Request)
	}{
		{
			name: "a plain command", in: PlanInput{DefaultAdapter: api.ExecAdapter, Args: []string{"make", "test"}, Group: "g-1"},
			req: api.RunRequest{Adapter: api.ExecAdapter, Cwd: dir}, members: []Member{{Adapter: api.ExecAdapter}}, adapter: api.ExecAdapter,
			check: func(t *testing.T, r Request) {
				if !reflect.DeepEqual(r.Template.Command, []string{"make", "test"}) || r.Template.AgentArgs != nil || r.Template.Group != "g-1" {
					t.Errorf("template %+v", r.Template)
				}
			},
		},
		{
			name: "an agent with its own arguments and a model from config.json", in: PlanInput{Positional: "claude", Args: []string{"--verbose"}, Prompt: "p"},
			req: api.RunRequest{Adapter: "claude", Model: "opus", Prompt: "p", Cwd: dir}, members: []Member{{Adapter: "claude", Model: "opus"}}, adapter: "claude",
			check: func(t *testing.T, r Request) {
				if r.Template.Command != nil || !reflect.DeepEqual(r.Template.AgentArgs, []string{"--verbose"}) {
					t.Errorf("template %+v", r.Template)
				}
			},
		},
		{
			name: "--model before the one --adapter", in: PlanInput{Adapters: []Member{claude}, Model: "opus", Prompt: "p"},
			req: api.RunRequest{Adapter: "claude", Model: "opus", Prompt: "p", Cwd: dir}, members: []Member{{Adapter: "claude", Model: "opus"}}, adapter: "claude",
		},
		{
			name: "a spec in front of the prompt", in: PlanInput{DefaultAdapter: "claude", Prompt: "go", Spec: "spec.md"},
			req: api.RunRequest{Adapter: "claude", Prompt: "go", Cwd: dir}, members: []Member{claude}, adapter: "claude",
			check: func(t *testing.T, r Request) {
				if !strings.Contains(r.Template.Prompt, "do X") || !strings.HasSuffix(r.Template.Prompt, "go") {
					t.Errorf("prompt %q", r.Template.Prompt)
				}
			},
		},
		{
			name: "one member in a worktree", in: PlanInput{DefaultAdapter: "claude", Prompt: "p", Worktree: dir, Branch: "fix"},
			req: api.RunRequest{Adapter: "claude", Prompt: "p", Cwd: "/elsewhere"}, members: []Member{claude}, worktrees: true, adapter: "claude",
			check: func(t *testing.T, r Request) {
				if r.Repo != dir || r.Branch != "fix" || r.Template.Group != "" {
					t.Errorf("request %+v", r)
				}
			},
		},
		{
			name: "several adapters", in: PlanInput{Adapters: []Member{claude, codexMini}, Prompt: "p", BaseBranch: "dev"},
			req: api.RunRequest{Prompt: "p", Cwd: dir}, members: []Member{claude, codexMini}, group: true, worktrees: true,
			check: func(t *testing.T, r Request) {
				if r.Repo != dir || r.Base != "dev" {
					t.Errorf("request %+v", r)
				}
			},
		},
		{
			name: "a matrix file", in: PlanInput{Matrix: matrix},
			req: api.RunRequest{Prompt: "from the file", Cwd: "/elsewhere"}, members: []Member{{Adapter: "claude", Model: "opus"}, {Adapter: "claude", Model: "sonnet"}}, group: true, worktrees: true,
			check: func(t *testing.T, r Request) {
				if r.Repo != dir || r.Template.Cwd != dir || r.Base != "main" {
					t.Errorf("request %+v", r)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.in.Command = "launch"
			p, err := NewPlan(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.Group != tt.group || p.Worktrees != tt.worktrees || p.Adapter != tt.adapter {
				t.Errorf("group %v, worktrees %v, adapter %q; want %v, %v, %q", p.Group, p.Worktrees, p.Adapter, tt.group, tt.worktrees, tt.adapter)
			}
			r, err := p.Request(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Members, tt.members) {
				t.Errorf("members %+v, want %+v", r.Members, tt.members)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}
