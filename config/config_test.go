package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		content  string // "" with noFile: no file at all
		noFile   bool
		want     Config
		warnings []string // substrings, one per expected warning
		err      string   // substring of the expected error
	}{
		{name: "missing file is the default", noFile: true},
		{name: "empty file is the default", content: "  \n"},
		{
			name: "old tool's keys",
			content: `{"adapter": "claude-code", "model": "opus", "cwd": "~/code",
 "webhook_url": "http://127.0.0.1:9/hook", "webhook_secret": "s3cret"}`,
			want: Config{Adapter: "claude-code", Model: "opus", Cwd: "~/code", WebhookURL: "http://127.0.0.1:9/hook", WebhookSecret: "s3cret"},
		},
		{name: "metrics port", content: `{"metrics_port": 9200}`, want: Config{MetricsPort: 9200}},
		{name: "named hosts", content: `{"hosts": {"build": "ssh://me@build01"}}`, want: Config{Hosts: map[string]string{"build": "ssh://me@build01"}}},
		{name: "a host that is no URL", content: `{"hosts": {"build": "build01"}}`, err: `"build01" is not a URL`},
		{
			name:     "unknown key warns and the rest applies",
			content:  `{"model": "m", "webhok_url": "x"}`,
			want:     Config{Model: "m"},
			warnings: []string{`unknown key "webhok_url"`},
		},
		{
			name:     "key case must match exactly",
			content:  `{"Model": "m"}`,
			warnings: []string{`unknown key "Model"`},
		},
		{
			name:     "old unused timeout is accepted with a warning",
			content:  `{"timeout": 30}`,
			warnings: []string{`key "timeout" is ignored`},
		},
		{name: "syntax error names line and column", content: "{\n  \"model\": \"m\",\n  \"cwd\" \"x\"\n}", err: "config.json:3:9: invalid JSON"},
		{name: "truncated file", content: "{\n  \"model\": \"m\"", err: "config.json:2:15: invalid JSON"},
		{name: "type error names key and position", content: "{\n  \"metrics_port\": \"9200\"\n}", err: `config.json:2:19: key "metrics_port": expected an integer, found a string`},
		{name: "fractional port", content: `{"metrics_port": 1.5}`, err: `expected an integer, found a fractional number`},
		{name: "array is not a configuration", content: "[1]", err: "config.json:1:1: the configuration must be a JSON object, found an array"},
		{name: "null is not a configuration", content: "null", err: "found null"},
		{name: "port out of range", content: `{"metrics_port": 70000}`, err: "metrics_port 70000"},
		{
			name:    "resume after a usage limit",
			content: `{"on_limit": "resume", "limit_resume": {"margin": "30s", "interval": "2m", "prompt": "go on"}}`,
			want:    Config{OnLimit: "resume", LimitResume: LimitResume{Margin: "30s", Interval: "2m", Prompt: "go on"}},
		},
		{name: "on_limit is wait or resume", content: `{"on_limit": "retry"}`, err: `on_limit "retry": want wait or resume`},
		{name: "limit_resume durations", content: `{"limit_resume": {"interval": "soon"}}`, err: `limit_resume.interval "soon"`},
		{name: "webhook must be http", content: `{"webhook_url": "ftp://x"}`, err: `webhook_url (7 characters) must be an http or https URL`},
		{
			name:    "the service serves the dashboard",
			content: `{"web": {"listen": "100.64.0.1:7387", "tls_generate": true, "expose": true, "allow_hosts": ["box.tailnet.ts.net"], "socket": "/run/user/1000/agentctl-web.sock"}}`,
			want:    Config{Web: Web{Listen: "100.64.0.1:7387", TLSGenerate: true, Expose: true, AllowHosts: []string{"box.tailnet.ts.net"}, Socket: "/run/user/1000/agentctl-web.sock"}},
		},
		{
			name:     "a misspelt dashboard option warns",
			content:  `{"web": {"listen": "127.0.0.1:7387", "expos": true}}`,
			want:     Config{Web: Web{Listen: "127.0.0.1:7387"}},
			warnings: []string{`unknown key "expos" in "web" ignored (known keys: allow_hosts, expose, listen, socket, tls_cert, tls_generate, tls_key)`},
		},
		{name: "a dashboard option's type", content: "{\"web\": {\n  \"listen\": 7387}}", err: `config.json:2:16: key "web.listen": expected a string, found a number`},
		{name: "the dashboard is an object", content: `{"web": "127.0.0.1:7387"}`, err: `key "web": expected an object, found a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if !tt.noFile {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, warnings, err := Load(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d matching %q", warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A directory where the file should be cannot be read as a file.
	path := filepath.Join(dir, FileName)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want one naming %s", err, path)
	}
}

func TestWithEnv(t *testing.T) {
	t.Parallel()
	base := Config{WebhookURL: "http://127.0.0.1:1/file", WebhookSecret: "file", MetricsPort: 9200}
	tests := []struct {
		name string
		env  map[string]string
		want Config
		err  string
	}{
		{name: "no overrides", want: base},
		{
			name: "env wins",
			env:  map[string]string{EnvWebhookURL: "https://127.0.0.1:2/env", EnvWebhookSecret: "env", EnvMetricsPort: "0"},
			// "0" is a real value: it turns metrics off.
			want: Config{WebhookURL: "https://127.0.0.1:2/env", WebhookSecret: "env", MetricsPort: 0},
		},
		{name: "port override", env: map[string]string{EnvMetricsPort: "9300"}, want: Config{WebhookURL: base.WebhookURL, WebhookSecret: "file", MetricsPort: 9300}},
		{name: "bad port", env: map[string]string{EnvMetricsPort: "many"}, err: EnvMetricsPort},
		{name: "bad url", env: map[string]string{EnvWebhookURL: "nope"}, err: "environment: webhook_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.WithEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestExpandCwd(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cwd, want string }{
		{"", ""},
		{"~", "/home/u"},
		{"~/code/mono", "/home/u/code/mono"},
		{"/abs", "/abs"},
		{"~other/x", "~other/x"},
	} {
		if got := (Config{Cwd: tt.cwd}).ExpandCwd("/home/u"); got != tt.want {
			t.Errorf("ExpandCwd(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
}

func TestSetHostsKeepsTheOtherKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"model": "opus", "future_key": [1, 2]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SetHosts(path, map[string]string{"gpu": "ssh://gpu-1"}); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Load(path)
	if err != nil || c.Model != "opus" || c.Hosts["gpu"] != "ssh://gpu-1" || len(warnings) != 1 {
		t.Fatalf("after adding a host: %+v %q %v", c, warnings, err)
	}
	if err := SetHosts(path, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "hosts") || !strings.Contains(string(b), "future_key") {
		t.Fatalf("after removing the last host: %s", b)
	}
}

// A refused webhook URL is not quoted: its secret would reach the log.
func TestRefusedWebhookURLIsNotEchoed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"webhook_url": "ftp://alice:pa55word@example.com/t0ken?key=k3y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path)
	if err == nil {
		t.Fatal("an ftp webhook URL was accepted")
	}
	for _, secret := range []string{"alice", "pa55word", "t0ken", "k3y"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q shows %q", err, secret)
		}
	}
}

// Per-adapter limits are read as the service applies them; a bad size is
// refused with its key.
func TestSessionLimits(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("config.json", []byte(`{"limits": {"claude": {"memory_max": "4G", "cpus": 2}, "exec": {"pids_max": 100}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.SessionLimits()
	if got["claude"] != (api.Limits{MemoryMaxBytes: 4 << 30, CPUs: 2}) || got["exec"] != (api.Limits{PidsMax: 100}) || len(got) != 2 {
		t.Errorf("limits %+v", got)
	}
	if _, _, err := Parse("config.json", []byte(`{"limits": {"pi": {"memory_max": "lots"}}}`)); err == nil || !strings.Contains(err.Error(), `"pi": memory_max`) {
		t.Errorf("a bad size: %v", err)
	}
}

// "admission" reads into the policy the service applies; a value that
// cannot be a cap or a size is refused naming its key, and an unknown key
// inside it is a warning.
func TestAdmission(t *testing.T) {
	t.Parallel()
	c, warnings, err := Parse("config.json", []byte(`{"admission": {"max_sessions": 4, "per_adapter": {"claude": 2}, "per_provider": {"openai": 1}, "per_group": {"*": 2}, "memory_floor": "2G", "max_session": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Admission.Policy()
	if p.MaxSessions != 4 || p.PerAdapter["claude"] != 2 || p.PerProvider["openai"] != 1 || p.PerGroup[api.AdmissionAny] != 2 || p.MemoryFloorBytes != 2<<30 {
		t.Errorf("policy %+v", p)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"max_session"`) {
		t.Errorf("warnings %q, want the misspelt key named", warnings)
	}
	for _, tc := range []struct{ cfg, want string }{
		{`{"admission": {"max_sessions": -1}}`, "max_sessions"},
		{`{"admission": {"per_group": {"g": -2}}}`, `per_group: "g"`},
		{`{"admission": {"memory_floor": "plenty"}}`, "memory_floor"},
	} {
		if _, _, err := Parse("config.json", []byte(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if !(Admission{}).Policy().Zero() {
		t.Error("no admission key is a policy that admits everything")
	}
}

func TestLimitResumePolicy(t *testing.T) {
	t.Parallel()
	p, err := LimitResume{}.Policy()
	if err != nil || p != (ResumePolicy{Margin: DefaultResumeMargin, Interval: DefaultResumeInterval, UnknownReset: DefaultUnknownReset, Prompt: DefaultResumePrompt}) {
		t.Errorf("defaults: %+v, %v", p, err)
	}
	p, err = LimitResume{Margin: "0s", UnknownReset: "3h"}.Policy()
	if err != nil || p.Margin != 0 || p.UnknownReset != 3*time.Hour {
		t.Errorf("given: %+v, %v", p, err)
	}
}

// A permission hook waits as long as its agent's setting says: Codex's by
// default not at all (Codex shows its own prompt only once the hook
// returns), the others DefaultPermissionWait.
func TestIntegrateWaitFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     Integrate
		agent  string
		want   time.Duration
		errSay string
	}{
		{"claude default", Integrate{}, "claude", DefaultPermissionWait, ""},
		{"codex default", Integrate{}, "codex", 0, ""},
		{"codex set", Integrate{CodexPermissionWait: "2m"}, "codex", 2 * time.Minute, ""},
		{"codex not from the others'", Integrate{PermissionWait: "1m"}, "codex", 0, ""},
		{"opencode set", Integrate{PermissionWait: "0s", CodexPermissionWait: "5m"}, "opencode", 0, ""},
		{"codex bad", Integrate{CodexPermissionWait: "soon"}, "codex", 0, "integrate.codex_permission_wait"},
		{"negative", Integrate{PermissionWait: "-1m"}, "pi", 0, "integrate.permission_wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.in.WaitFor(tc.agent)
			if tc.errSay != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSay) {
					t.Fatalf("WaitFor(%s) = %v, %v; want an error naming %s", tc.agent, got, err, tc.errSay)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("WaitFor(%s) = %v, %v; want %v", tc.agent, got, err, tc.want)
			}
		})
	}
}
