package web

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// TestSessionPageTotals: a session's page shows totals the service is
// still counting as pending, never as a zero, and counted ones as figures.
func TestSessionPageTotals(t *testing.T) {
	t.Parallel()
	pg, err := newPages()
	if err != nil {
		t.Fatal(err)
	}
	zero, none := int64(0), 0.0
	in, out, cost := int64(12_300), int64(450), 0.42
	tests := []struct {
		name      string
		sess      api.Session
		want, not []string
	}{
		{"pending", api.Session{ID: "p1", Adapter: "pi", Status: api.StatusEnded, TotalsPending: true, TokensIn: &zero, TokensOut: &zero, CostUSD: &none},
			[]string{"<dt>tokens</dt><dd>" + text.Pending + "</dd>", "<dt>cost</dt><dd>" + text.Pending + "</dd>"}, []string{"0/0", "$0.00"}},
		{"counted", api.Session{ID: "p2", Adapter: "pi", Status: api.StatusEnded, TokensIn: &in, TokensOut: &out, CostUSD: &cost},
			[]string{"<dt>tokens</dt><dd>12.3k/450</dd>", "<dt>cost</dt><dd>$0.42</dd>"}, []string{text.Pending}},
		{"unknown", api.Session{ID: "p3", Adapter: "pi", Status: api.StatusEnded},
			[]string{"<dt>tokens</dt><dd>-</dd>", "<dt>cost</dt><dd>-</dd>"}, []string{text.Pending}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := sessionPage{S: tc.sess, Row: row{S: &tc.sess}}
			p.Tokens, p.Cost = totalsText(&tc.sess)
			var b bytes.Buffer
			if err := pg.t.ExecuteTemplate(&b, "session.html", p); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}
