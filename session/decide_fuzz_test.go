package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// FuzzDecide drives a decide request's body through what the service does
// with it before anything reaches an agent: decode (as the route does),
// the checks of the decision's form, and the match against the pending
// request. Whatever the body, an approval gets through only naming the
// pending request, and a refusal is a kind the service maps, in a message
// of bounded length.
func FuzzDecide(f *testing.F) {
	for _, seed := range []struct {
		body    string
		pending string
	}{
		{`{"action":"approve","request":"5f3a9c0d2e1b4a77"}`, "5f3a9c0d2e1b4a77"},
		{`{"action":"approve","request":"5f3a9c0d2e1b4a77"}`, "0b1c2d3e4f506172"},
		{`{"action":"approve"}`, "5f3a9c0d2e1b4a77"},
		{`{"action":"deny","reason":"not in this repository"}`, "5f3a9c0d2e1b4a77"},
		{`{"action":"deny","request":"per_9f2c1a7e4b3d","reason":"no"}`, "per_9f2c1a7e4b3d"},
		{`{"action":"answer","text":"yes"}`, ""},
		{`{"action":"answer"}`, ""},
		{`{"action":"approve","request":"\u001b]0;x\u0007"}`, "5f3a9c0d2e1b4a77"},
		{`{"action":"maybe","request":"5f3a9c0d2e1b4a77"}`, "5f3a9c0d2e1b4a77"},
		{`{"action":"approve","request":""}`, ""},
		{`{"action":1}`, "x"},
		{`[]`, "x"},
	} {
		f.Add([]byte(seed.body), seed.pending)
	}
	f.Fuzz(func(t *testing.T, body []byte, pending string) {
		var d api.Decision
		if json.NewDecoder(bytes.NewReader(body)).Decode(&d) != nil {
			return // the route answers 400 before the core
		}
		err := checkDecision(d)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%+v refused as %v, want ErrInvalid", d, err)
			}
			if len(err.Error()) > 512 {
				t.Fatalf("a refusal of %d bytes", len(err.Error()))
			}
			return
		}
		switch d.Action {
		case api.DecisionApprove, api.DecisionDeny, api.DecisionAnswer:
		default:
			t.Fatalf("action %q passed the checks", d.Action)
		}
		if len(d.Request) > maxRequestID || hasControl(d.Request) {
			t.Fatalf("request %q passed the checks", d.Request)
		}
		now := api.Waiting{For: api.WaitingPermission, Request: pending, Tool: "Bash", Input: "rm -rf ~"}
		err = sameRequest("s1", d, now)
		if err == nil {
			if d.Request != "" && d.Request != pending {
				t.Fatalf("%s of request %q taken for pending %q", d.Action, d.Request, pending)
			}
			if d.Action == api.DecisionApprove && d.Request != pending {
				t.Fatalf("approval of %q taken for pending %q", d.Request, pending)
			}
			return
		}
		if d.Action == api.DecisionApprove && d.Request == "" {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("an approval naming no request refused as %v, want ErrInvalid", err)
			}
			return
		}
		if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), pending) {
			t.Fatalf("refusal %v: want ErrChanged naming %q", err, pending)
		}
	})
}
