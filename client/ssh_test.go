package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

func TestSSHArgv(t *testing.T) {
	t.Parallel()
	s := &SSH{Name: "build", User: "me", Host: "build01", Port: "2222", Agentctl: "/opt/my agentctl", Command: []string{"ssh", "-F", "/cfg"}, ControlDir: "/h/ssh"}
	got := strings.Join(s.Argv(false), " ")
	want := "ssh -F /cfg -o ControlMaster=auto -o ControlPath=/h/ssh/%C -o ControlPersist=600 -T -e none -l me -p 2222 -- build01 '/opt/my agentctl' dial-stdio --no-autostart"
	if got != want {
		t.Fatalf("argv:\n got %s\nwant %s", got, want)
	}
	plain := strings.Join((&SSH{Host: "gpu"}).Argv(true), " ")
	if plain != "ssh -T -e none -- gpu agentctl dial-stdio" {
		t.Fatalf("argv: %s", plain)
	}
}

func TestDialFailureSaysWhatToDo(t *testing.T) {
	t.Parallel()
	s := &SSH{Name: "build", Host: "build01", Version: "1.4.0"}
	for _, tc := range []struct {
		code   int
		stderr string
		kind   error
		says   []string
	}{
		{255, "ssh: connect to host build01 port 22: Connection refused", ErrUnreachable, []string{"host build", "Connection refused"}},
		{127, "bash: line 1: agentctl: command not found", ErrNoAgentctl, []string{"host build has no agentctl", "command not found", "ssh://build01?agentctl="}},
		{1, `Error: unknown command "dial-stdio" for "agentctl"`, ErrTooOld, []string{"upgrade agentctl on build to 1.4.0"}},
		{1, "the agentctl service exited at start", ErrRemoteFailed, []string{"on host build", "exited at start"}},
	} {
		err := s.dialFailure(tc.code, tc.stderr, errors.New("EOF"))
		if !errors.Is(err, tc.kind) {
			t.Errorf("exit %d %q: %v, want %v", tc.code, tc.stderr, err, tc.kind)
		}
		for _, w := range tc.says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("exit %d: %q does not say %q", tc.code, err, w)
			}
		}
	}
}

func TestCheckProtocolNamesBothVersions(t *testing.T) {
	t.Parallel()
	s := &SSH{Name: "build", Version: "1.4.0"}
	if err := s.checkProtocol(api.Protocol, "1.3.9"); err != nil {
		t.Fatal(err)
	}
	older := s.checkProtocol(api.Protocol-1, "0.9.0")
	newer := s.checkProtocol(api.Protocol+1, "2.0.0")
	for err, want := range map[error]string{older: "upgrade agentctl on build", newer: "upgrade this agentctl"} {
		if !errors.Is(err, ErrVersionSkew) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "1.4.0") {
			t.Errorf("%v: want %q and both versions", err, want)
		}
	}
}

func TestDialGreetingRoundTrip(t *testing.T) {
	t.Parallel()
	line := strings.TrimSuffix(api.DialGreeting(3, "1.2.3"), "\n")
	p, v, ok := api.ParseDialGreeting(line)
	if !ok || p != 3 || v != "1.2.3" {
		t.Fatalf("%q: %d %q %v", line, p, v, ok)
	}
	for _, bad := range []string{"", "Welcome to build01!", "agentctl-dial-stdio protocol=x"} {
		if _, _, ok := api.ParseDialGreeting(bad); ok {
			t.Errorf("%q taken for a greeting", bad)
		}
	}
}
