package k8shelper

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// A helper that floods its output or its standard error, or says nothing,
// costs bounded memory and time: each call ends with an error that names
// the helper and what it exceeded.
func TestBrokenHelperIsBounded(t *testing.T) {
	t.Parallel()
	const flood = "head -c 8388608 /dev/zero | tr '\\0' a"
	for _, tc := range []struct {
		name, script string
		call         func(context.Context, *Sessions) error
		want         error
		says         string
	}{
		{"list floods", flood + "\nexec sleep 60", func(ctx context.Context, s *Sessions) error {
			_, err := s.List(ctx, api.ListOptions{})
			return err
		}, client.ErrTooLarge, "a line over its bound of 1 MiB"},
		{"list of empty sessions", `printf '{"result":{"sessions":['
yes '{},' | head -n 100001 | tr -d '\n'
printf '{}]}}\n'`, func(ctx context.Context, s *Sessions) error {
			_, err := s.List(ctx, api.ListOptions{})
			return err
		}, client.ErrTooLarge, "more than 100000 sessions"},
		{"get says nothing", "exec sleep 60", func(ctx context.Context, s *Sessions) error {
			_, err := s.Get(ctx, "x")
			return err
		}, client.ErrStalled, "no answer within 2s"},
		{"logs say nothing", "exec sleep 60", func(ctx context.Context, s *Sessions) error {
			return s.Logs(ctx, "x", api.LogOptions{}, func(api.LogChunk) error { return nil })
		}, client.ErrStalled, "nothing came for 300ms"},
		{"events flood", flood + "\nexec sleep 60", func(ctx context.Context, s *Sessions) error {
			return s.Events(ctx, client.EventOptions{}, nil, func(api.Event) error { return nil })
		}, client.ErrTooLarge, "a line over its bound of 512 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(helperScript(t, tc.script), Target{})
			s.limits = limits{list: 1 << 20, line: 512 << 10, total: 2 * time.Second, silence: 300 * time.Millisecond}
			// The test's own bound: a call that waits for the helper
			// fails here rather than hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := tc.call(ctx, s)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			for _, w := range []string{"Kubernetes helper", tc.says} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// What a failing helper writes on its standard error is kept only in
// part: 8 MiB of it make an error of at most 64 KiB.
func TestHelperStderrIsBounded(t *testing.T) {
	t.Parallel()
	s := New(helperScript(t, "head -c 8388608 /dev/zero | tr '\\0' e >&2\nexit 1"), Target{})
	_, err := s.List(context.Background(), api.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "answered nothing: eee") {
		t.Fatalf("%v, want the start of what it said", err)
	}
	if len(err.Error()) > maxStderr+1024 {
		t.Errorf("error of %d bytes", len(err.Error()))
	}
}

func helperScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentctl-k8s")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}
