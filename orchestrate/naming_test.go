package orchestrate

import (
	"bytes"
	"regexp"
	"slices"
	"testing"
)

func TestNewGroupID(t *testing.T) {
	g, err := NewGroupID(bytes.NewReader([]byte{0xab, 0x01, 0xff}))
	if err != nil || g != "g-ab01ff" {
		t.Fatalf("NewGroupID = %q, %v; want g-ab01ff", g, err)
	}
	re := regexp.MustCompile(`^g-[0-9a-f]{6}$`)
	seen := map[string]bool{}
	for range 50 {
		g, err := NewGroupID(nil)
		if err != nil || !re.MatchString(g) {
			t.Fatalf("NewGroupID = %q, %v", g, err)
		}
		seen[g] = true
	}
	if len(seen) < 45 {
		t.Errorf("50 random group ids gave only %d distinct ones", len(seen))
	}
	if _, err := NewGroupID(bytes.NewReader([]byte{1})); err == nil {
		t.Error("a short random source gave no error")
	}
}

func TestValidGroup(t *testing.T) {
	for g, want := range map[string]bool{
		"g-ab01ff": true, "review_2": true, "v1.2": true,
		"": false, "-x": false, ".x": false, "a/b": false, "a b": false, "a..b": false,
		"x.lock": false, "x.": false, string(make([]byte, 65)): false,
	} {
		if got := ValidGroup(g); got != want {
			t.Errorf("ValidGroup(%q) = %v, want %v", g, got, want)
		}
	}
}

func TestModelShort(t *testing.T) {
	for model, want := range map[string]string{
		"":                           "default",
		"claude-opus-4-1":            "opus",
		"claude-3-5-Sonnet-20241022": "sonnet",
		"anthropic/claude-haiku-4-5": "haiku",
		"gpt-5.2-codex":              "gpt5-codex",
		"gpt-5":                      "gpt5",
		"openai/gpt-4.1-mini":        "gpt4-mini",
		"GPT5":                       "gpt5",
		"gpt 4o":                     "gpt4-o",
		"qwen3:8b":                   "8b",
		"fake/fake-model":            "model",
		"gemini-2.5-pro":             "pro",
		"x/":                         "default",
		"weird_name!":                "weirdname",
	} {
		if got := ModelShort(model); got != want {
			t.Errorf("ModelShort(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestSuffixes(t *testing.T) {
	m := func(a, model string) Member { return Member{Adapter: a, Model: model} }
	tests := []struct {
		name    string
		members []Member
		taken   []string
		want    []string
	}{
		{"distinct adapters", []Member{m("claude", "opus"), m("codex", "gpt-5"), m("pi-rust", ""), m("claude-code", "")},
			nil, []string{"cc", "codex", "pi-rs", "cc-2"}},
		{"same adapter twice: models named", []Member{m("claude", "opus"), m("claude", "sonnet"), m("codex", "")},
			nil, []string{"cc-opus", "cc-sonnet", "codex"}},
		{"same adapter and model", []Member{m("pi", "fake/a-model"), m("pi", "fake/b-model"), m("pi", "")},
			nil, []string{"pi-model", "pi-model-2", "pi-default"}},
		{"taken in the repository", []Member{m("codex", ""), m("pi", "")},
			[]string{"codex", "codex-2"}, []string{"codex-3", "pi"}},
		{"a bump does not steal a later member's name", []Member{m("codex", "x"), m("codex", "x"), m("codex", "x")},
			[]string{"codex-x-2"}, []string{"codex-x", "codex-x-3", "codex-x-4"}},
		{"odd adapter names are made safe", []Member{m("My Agent!", "")}, nil, []string{"myagent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Suffixes(tt.members, func(s string) bool { return slices.Contains(tt.taken, s) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("Suffixes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBranchAndWorktreeNames(t *testing.T) {
	b := BranchName("g-a1b2c3", "cc-opus")
	if b != "try/g-a1b2c3/cc-opus" {
		t.Errorf("BranchName = %q", b)
	}
	if p := WorktreePath("/src/app/", b); p != "/src/app-try-g-a1b2c3-cc-opus" {
		t.Errorf("WorktreePath = %q", p)
	}
	if p := WorktreePath("/src/app", "feature/x"); p != "/src/app-feature-x" {
		t.Errorf("WorktreePath = %q", p)
	}
}
