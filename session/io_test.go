package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/home"
)

// longTurn is an adapter whose one session ends in a long run of tool calls
// after its last answer, as an agent deep in a turn has.
type longTurn struct {
	msgs  []adapters.Message
	asked []int
}

func (l *longTurn) Name() string { return "lt" }

func (l *longTurn) Discover(context.Context) ([]adapters.NativeSession, error) {
	return []adapters.NativeSession{{Adapter: "lt", NativeID: "s1", State: adapters.NativeBusy, CreatedAt: time.Now()}}, nil
}

func (l *longTurn) Transcript(_ context.Context, _ string, n int) ([]adapters.Message, error) {
	l.asked = append(l.asked, n)
	if n > 0 && len(l.msgs) > n {
		return l.msgs[len(l.msgs)-n:], nil
	}
	return l.msgs, nil
}

// A peek finds the last answer even behind hundreds of tool calls, reading
// further back only as far as it must.
func TestPeekLooksPastALongRunOfToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools int
		want  string
		reads int
	}{
		{"answer near the end", 3, "the answer", 1},
		{"answer behind 500 tool calls", 500, "the answer", 3},
		{"no answer at all", -1, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := &longTurn{}
			if tc.tools >= 0 {
				lt.msgs = append(lt.msgs, adapters.Message{Role: "user", Text: "go"}, adapters.Message{Role: "assistant", Text: "the answer"})
				for i := range tc.tools {
					lt.msgs = append(lt.msgs, adapters.Message{Role: "tool", Text: fmt.Sprint("call ", i)})
				}
			} else {
				lt.msgs = []adapters.Message{{Role: "user", Text: "go"}}
			}
			got, err := lastAssistant(context.Background(), lt, "s1", 1)
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			if len(got) > 0 {
				text = got[len(got)-1].Text
			}
			if text != tc.want || len(lt.asked) != tc.reads {
				t.Errorf("last answer %q after %d reads (asked %v), want %q after %d", text, len(lt.asked), lt.asked, tc.want, tc.reads)
			}
		})
	}
	// The whole path, through the core.
	lt := &longTurn{msgs: []adapters.Message{{Role: "assistant", Text: "deep answer"}}}
	for i := range 300 {
		lt.msgs = append(lt.msgs, adapters.Message{Role: "tool", Text: fmt.Sprint("call ", i)})
	}
	core := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(lt)})
	tr, err := core.Transcript(context.Background(), "s1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || tr.Messages[0].Text != "deep answer" || tr.Source != "native" {
		t.Errorf("peek = %+v", tr)
	}
}
