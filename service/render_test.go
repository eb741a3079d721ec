package service

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the rendered text (go test -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

const testPath = "/home/alice/.local/bin:/usr/local/bin:/usr/bin:/bin"

var renderCases = []struct {
	name string
	spec Spec
}{
	{"user", Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/local/bin/agentctl", Home: "/home/alice/.agentctl", Path: testPath}},
	{"system", Spec{Scope: ScopeSystem, User: "alice", Exe: "/usr/bin/agentctl", Home: "/home/alice/.agentctl", Path: testPath}},
	{"quoting", Spec{
		Scope: ScopeUser, User: "bob",
		Exe:  `/opt/my tools/agent$ctl`,
		Args: []string{"daemon", "run", "--label", `a "b" c\d`, "50%", ";", ""},
		Home: `/home/bob/state dir/100% "x" \y $HOME`,
		Path: "/usr/bin:/opt/my tools/bin",
	}},
}

func TestRenderSystemdUnitGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderSystemdUnit(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "systemd-"+tc.name+".service", got)
		})
	}
}

func TestRenderLaunchdPlistGolden(t *testing.T) {
	for _, tc := range renderCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderLaunchdPlist(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "launchd-"+tc.name+".plist", got)
		})
	}
}

// The properties the service depends on, stated once more so a careless
// golden update cannot drop them silently.
func TestSystemdUnitEssentials(t *testing.T) {
	for _, tc := range renderCases {
		got, err := RenderSystemdUnit(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		text := string(got)
		want := []string{"KillMode=process\n", "Restart=on-failure\n", "RestartSec=1\n"}
		if tc.spec.Scope == ScopeUser {
			want = append(want, "WantedBy=default.target\n")
		} else {
			want = append(want, "WantedBy=multi-user.target\n", "User="+tc.spec.User+"\n")
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: unit lacks %q", tc.name, w)
			}
		}
	}
}

func TestLaunchdPlistEssentials(t *testing.T) {
	got, err := RenderLaunchdPlist(renderCases[0].spec)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	for _, w := range []string{
		"<key>RunAtLoad</key>\n\t<true/>",
		"<key>KeepAlive</key>",
		"<key>AbandonProcessGroup</key>\n\t<true/>",
		"<string>/home/alice/.agentctl/service.err.log</string>",
		"<string>/home/alice/.agentctl/service.out.log</string>",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("plist lacks %q", w)
		}
	}
}

func TestSystemdExecWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/agentctl", "/usr/bin/agentctl"},
		{"run", "run"},
		{"", `""`},
		{";", `";"`},
		{"a b", `"a b"`},
		{"50%", "50%%"},
		{"$HOME", "$$HOME"},
		{`say "hi"`, `"say \"hi\""`},
		{`c:\x`, `"c:\\x"`},
		{"it's", `"it's"`},
		{"a\tb", `"a\tb"`},
	} {
		if got := systemdExecWord(tc.in); got != tc.want {
			t.Errorf("systemdExecWord(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestSystemdEnvAssignment(t *testing.T) {
	for _, tc := range []struct{ k, v, want string }{
		{"AGENTCTL_HOME", "/home/a/.agentctl", `"AGENTCTL_HOME=/home/a/.agentctl"`},
		{"AGENTCTL_HOME", "/home/a/my state", `"AGENTCTL_HOME=/home/a/my state"`},
		{"X", `50% "q" \ $V`, `"X=50%% \"q\" \\ $V"`},
	} {
		if got := systemdEnvAssignment(tc.k, tc.v); got != tc.want {
			t.Errorf("systemdEnvAssignment(%q, %q) = %s, want %s", tc.k, tc.v, got, tc.want)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	good := Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: "/home/alice/.agentctl"}
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		errHas string
	}{
		{"ok", func(*Spec) {}, ""},
		{"ok packaged user unit", func(s *Spec) { s.Home, s.User = "", "" }, ""},
		{"ok template", func(s *Spec) { s.Scope, s.User = ScopeSystem, TemplateUser }, ""},
		{"bad scope", func(s *Spec) { s.Scope = "global" }, "unknown scope"},
		{"system without user", func(s *Spec) { s.Scope, s.User = ScopeSystem, "" }, "--user NAME"},
		{"user template", func(s *Spec) { s.User = TemplateUser }, "cannot be a template"},
		{"bad user", func(s *Spec) { s.Scope, s.User = ScopeSystem, "al ice" }, "invalid user name"},
		{"traversal user", func(s *Spec) { s.Scope, s.User = ScopeSystem, "../root" }, "invalid user name"},
		{"relative exe", func(s *Spec) { s.Exe = "agentctl" }, "not absolute"},
		{"relative home", func(s *Spec) { s.Home = ".agentctl" }, "not absolute"},
		{"newline", func(s *Spec) { s.Home = "/a\nb" }, "line break"},
		{"newline in arg", func(s *Spec) { s.Args = []string{"x\ny"} }, "line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.mutate(&s)
			err := s.Validate()
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("error = %v, want one containing %q", err, tc.errHas)
			}
		})
	}
}

func TestUnitNames(t *testing.T) {
	user := Spec{Scope: ScopeUser, User: "alice"}
	sys := Spec{Scope: ScopeSystem, User: "alice"}
	tmpl := Spec{Scope: ScopeSystem, User: TemplateUser}
	for _, tc := range []struct{ got, want string }{
		{user.SystemdUnitName(), "agentctl.service"},
		{sys.SystemdUnitName(), "agentctl@alice.service"},
		{tmpl.SystemdUnitName(), "agentctl@.service"},
		{user.LaunchdLabel(), "com.agentctl.daemon"},
		{sys.LaunchdLabel(), "com.agentctl.daemon.alice"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
