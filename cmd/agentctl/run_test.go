package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/config"
)

func TestOpenclawIdentity(t *testing.T) {
	t.Parallel()
	env := []string{
		"OPENCLAW_SHELL=exec", "OPENCLAW_CLI=1", "OPENCLAW_GATEWAY_PORT=18789",
		"OPENCLAW_GATEWAY_TOKEN=secret", "OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_CHANNEL_CONTEXT={}",
		"PATH=/bin", "OPENCLAW_GATEWAY_URL=",
	}
	want := map[string]string{"OPENCLAW_SHELL": "exec", "OPENCLAW_CLI": "1", "OPENCLAW_GATEWAY_PORT": "18789", "OPENCLAW_CHANNEL_CONTEXT": "{}"}
	if got := openclawIdentity(env); !reflect.DeepEqual(got, want) {
		t.Fatalf("openclawIdentity = %v, want %v", got, want)
	}
}

func TestLabelAndMetaBothCount(t *testing.T) {
	t.Parallel()
	f := &runFlags{}
	cmd := &cobra.Command{}
	f.register(cmd, true)
	if err := cmd.ParseFlags([]string{"--label", "a=1", "--meta", "b=2", "--label", "c=3", "--cwd", "/"}); err != nil {
		t.Fatal(err)
	}
	req, err := f.request(testCLI(t), config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"a": "1", "b": "2", "c": "3"} {
		if req.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, req.Labels[k], v, req.Labels)
		}
	}
}

func TestReadEnvFile(t *testing.T) {
	t.Parallel()
	caller := func(k string) (string, bool) {
		if k == "FROM_CALLER" {
			return "mine", true
		}
		return "", false
	}
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("env%d", len(body)))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readEnvFile(write("# a comment\n\nA=1\r\n  B = two words \nC=x=y\nFROM_CALLER\nNOT_SET_ANYWHERE_X\nEMPTY=\n"), caller)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=1", "B= two words ", "C=x=y", "FROM_CALLER=mine", "EMPTY="}
	if !slices.Equal(got, want) {
		t.Errorf("readEnvFile = %q, want %q", got, want)
	}
	if _, err := readEnvFile(write("BAD KEY=1\n"), caller); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a key with a space: %v", err)
	}
	if _, err := readEnvFile(filepath.Join(dir, "missing"), caller); err == nil {
		t.Error("a missing file read")
	}
	f := runFlags{envFiles: []string{write("A=from-file\n")}, env: []string{"A=from-flag"}}
	if got, _ := f.envOverrides(caller); !slices.Equal(got, []string{"A=from-file", "A=from-flag"}) {
		t.Errorf("envOverrides = %q: --env must come last (it wins)", got)
	}
}
