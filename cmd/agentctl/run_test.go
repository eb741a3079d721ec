package main

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/config"
)

func TestOpenclawIdentity(t *testing.T) {
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
	f := &runFlags{}
	cmd := &cobra.Command{}
	f.register(cmd, true)
	if err := cmd.ParseFlags([]string{"--label", "a=1", "--meta", "b=2", "--label", "c=3", "--cwd", "/"}); err != nil {
		t.Fatal(err)
	}
	req, err := f.request(config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"a": "1", "b": "2", "c": "3"} {
		if req.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, req.Labels[k], v, req.Labels)
		}
	}
}
