package integrate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testEnv is an Env in scratch folders whose hook is bin.
func testEnv(t *testing.T, bin string) Env {
	t.Helper()
	dir := t.TempDir()
	return Env{UserHome: filepath.Join(dir, "home"), StateDir: filepath.Join(dir, "state"), Hook: []string{bin, "hook", "--home", "/some where"}}
}

// executable writes a shell script and returns its path.
func executable(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Codex's config.toml as users write it: agentctl's entry goes in as one
// line, the user's notify program is kept inside it, the rest of the file
// is left as it was, a second install changes nothing, and remove gives
// the file back byte for byte.
func TestCodexInstallRemove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config string
		user         []string
	}{
		{name: "no file"},
		{name: "empty", config: ""},
		{name: "keys only, no final newline", config: "model = \"o4\"  # mine\napproval_policy = 'never'"},
		{name: "keys and tables", config: "# top\nmodel = \"o4\"\n\n# providers\n[model_providers.x]\nname = \"X\" # [not a table]\nnotify = [\"not\", \"top-level\"]\n"},
		{name: "a one-line notify", config: "model = \"o4\"\nnotify = [\"notify-send\", \"Codex\"] # desktop\n[tui]\nnotifications = true\n",
			user: []string{"notify-send", "Codex"}},
		{name: "a notify over lines, with comments and literal strings", config: "# codex\nnotify = [\n  'python3', # interpreter\n  \"/home/u/bin/notify.py\",\n  \"tab\\there\\u00e9\",\n]\nmodel = \"o4\"\n\n[features]\nx = [ [1, 2], [3] ]\n",
			user: []string{"python3", "/home/u/bin/notify.py", "tab\there\u00e9"}},
		{name: "a multi-line string before notify", config: "instructions = \"\"\"\nnotify = [\"fake\"]\n[fake]\n\"\"\"\nnotify = [\"real\"]\n", user: []string{"real"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, "/usr/bin/agentctl")
			path := codexConfig(env)
			exists := tt.name != "no file"
			if exists {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.config), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			if _, err := codex().Install(ctx, env); err != nil {
				t.Fatal(err)
			}
			installed, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n, err := findNotify(installed)
			if err != nil || !n.found {
				t.Fatalf("no notify key after install (%v):\n%s", err, installed)
			}
			user, ours := userNotify(n.argv)
			if !ours || !slices.Equal(user, tt.user) || n.argv[3] != env.Hook[0] {
				t.Errorf("notify %q: ours %v, user's %q, want %q", n.argv, ours, user, tt.user)
			}
			// Every line but the notify key's is the user's.
			o, err := findNotify([]byte(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			// The trust entries of its hooks go at the end.
			rest := string(withoutTrusts(append(installed[:n.start:n.start], installed[n.end:]...), nil, ourCodexHashes(env)))
			if want := tt.config[:o.start] + tt.config[o.end:]; strings.TrimRight(rest, "\n") != strings.TrimRight(want, "\n") {
				t.Errorf("the rest of the file changed:\n%s\nwant\n%s", rest, want)
			}
			if ch, err := codex().Install(ctx, env); err != nil || len(ch.Files) != 0 {
				t.Errorf("a second install changed %v (%v)", ch.Files, err)
			}
			if st, err := codex().Status(ctx, env); err != nil || !st.Installed || st.Detail != "installed, but the hook names /usr/bin/agentctl, which does not exist" {
				t.Errorf("status %+v (%v)", st, err)
			}
			if _, err := codex().Remove(ctx, env); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			switch {
			case !exists:
				if err == nil {
					t.Errorf("remove left the file agentctl created:\n%s", after)
				}
			case err != nil:
				t.Fatal(err)
			case string(after) != tt.config:
				t.Errorf("remove did not restore the file byte for byte:\n%q\nwant\n%q", after, tt.config)
			}
			if st, err := codex().Status(ctx, env); err != nil || st.Installed {
				t.Errorf("status after remove %+v (%v)", st, err)
			}
		})
	}
}

// When something else changed config.toml since the install (Codex writes
// to it itself), remove takes out only agentctl's entry and puts back the
// user's notify program.
func TestCodexRemoveAfterAChange(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "/usr/bin/agentctl")
	path := codexConfig(env)
	os.MkdirAll(filepath.Dir(path), 0o755)
	orig := "model = \"o4\"\nnotify = [\"notify-send\", \"Codex\"]\n[tui]\nx = 1\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := codex().Install(ctx, env); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[tui.model_availability_nux]\n\"gpt\" = 1\n")
	f.Close()
	ch, err := codex().Remove(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "model = \"o4\"\nnotify = [\"notify-send\",\"Codex\"]\n[tui]\nx = 1\n[tui.model_availability_nux]\n\"gpt\" = 1\n"
	if string(got) != want {
		t.Errorf("after remove:\n%s\nwant\n%s", got, want)
	}
	if len(ch.Notes) == 0 || !strings.Contains(ch.Notes[0], "changed since") {
		t.Errorf("notes %q do not say the file changed since", ch.Notes)
	}
}

// A config.toml agentctl cannot read is refused, untouched.
func TestCodexInstallRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, config := range []string{
		"notify = \"\"\"\nx\n\"\"\"\n",
		"notify = [\"a\",\n",
		"notify = [1, 2]\n",
		"model = \"unterminated\n",
		"notify = [\"\"\"multi\"\"\"]\n",
	} {
		env := testEnv(t, "/usr/bin/agentctl")
		path := codexConfig(env)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := codex().Install(context.Background(), env); err == nil {
			t.Errorf("installed into %q", config)
		}
		if got, _ := os.ReadFile(path); string(got) != config {
			t.Errorf("%q changed to %q", config, got)
		}
	}
}

// agentctl's notify entry, run as Codex runs it (the JSON as its last
// argument): the hook gets the JSON on stdin with the agent and event, and
// the user's program then runs with its own arguments and the JSON; a
// missing hook binary, or one that never returns, changes nothing for the
// user's program.
func TestCodexEntryRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := executable(t, dir, "agentctl", "cat > \"$0.stdin\"; echo \"$@\" > \"$0.args\"; echo '{\"behavior\":\"allow\"}'\n")
	hung := executable(t, dir, "hung-agentctl", "exec sleep 3600\n")
	user := executable(t, dir, "user-notify", "printf '%s|' \"$@\" > \""+dir+"/user.args\"\n")
	const payload = `{"type":"agent-turn-complete","thread-id":"x y","cwd":"/p"}`
	for _, bin := range []string{hook, filepath.Join(dir, "gone"), hung} {
		env := testEnv(t, bin)
		argv, err := codexEntry(env, []string{user, "--flag", "a b"})
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "user.args"))
		// Bounded, so that a wedged entry fails the test rather than hangs it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], payload)...).CombinedOutput()
		cancel()
		if err != nil || len(out) != 0 {
			t.Fatalf("entry with %s: %v: %q", bin, err, out)
		}
		if bin == hook {
			if got, _ := os.ReadFile(hook + ".stdin"); string(got) != payload {
				t.Errorf("hook's stdin %q", got)
			}
			if got, _ := os.ReadFile(hook + ".args"); strings.TrimSpace(string(got)) != "hook --home /some where codex --integration --event agent-turn-complete" {
				t.Errorf("hook's args %q", got)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "user.args")); string(got) != "--flag|a b|"+payload+"|" {
			t.Errorf("hook %s: the user's program got %q", bin, got)
		}
	}
}

// The plugin files: install writes agentctl's script with the hook in it
// beside the user's other plugins, which stay; status says whether its
// binary exists; remove deletes only agentctl's file, and gives back a
// user's own file of that name byte for byte.
func TestPluginFileInstallRemove(t *testing.T) {
	t.Parallel()
	for _, in := range []Integration{opencode(), pi()} {
		t.Run(in.Agent(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := executable(t, dir, "agentctl", "exit 0\n")
			env := testEnv(t, bin)
			p := in.(pluginFile)
			path := p.path(env)
			other := filepath.Join(filepath.Dir(path), "mine.js")
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(other, []byte("export default 1\n"), 0o644)
			ctx := context.Background()
			for _, own := range []bool{false, true} {
				if own {
					os.WriteFile(path, []byte("// the user's own\n"), 0o600)
				}
				if _, err := in.Install(ctx, env); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if argv, err := installedHook(b); err != nil || !slices.Equal(argv, env.Hook) {
					t.Errorf("installed hook %q (%v), want %q", argv, err, env.Hook)
				}
				if st, err := in.Status(ctx, env); err != nil || !st.Installed || st.Detail != "" {
					t.Errorf("status %+v (%v)", st, err)
				}
				os.Rename(bin, bin+".moved")
				if st, _ := in.Status(ctx, env); !strings.Contains(st.Detail, "does not exist") {
					t.Errorf("status with the binary gone: %+v", st)
				}
				os.Rename(bin+".moved", bin)
				if _, err := in.Remove(ctx, env); err != nil {
					t.Fatal(err)
				}
				b, err = os.ReadFile(path)
				switch {
				case own && string(b) != "// the user's own\n":
					t.Errorf("the user's own %s not restored: %q (%v)", path, b, err)
				case !own && err == nil:
					t.Errorf("remove left %s", path)
				}
				if got, _ := os.ReadFile(other); string(got) != "export default 1\n" {
					t.Errorf("the user's other plugin changed: %q", got)
				}
				os.Remove(path)
			}
			// A changed copy of agentctl's file is still agentctl's.
			if _, err := in.Install(ctx, env); err != nil {
				t.Fatal(err)
			}
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("// edited\n")
			f.Close()
			if _, err := in.Remove(ctx, env); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("remove left an edited copy of agentctl's %s", path)
			}
		})
	}
}

// An entry that names no absolute binary is refused.
func TestInstallRefusesARelativeHook(t *testing.T) {
	t.Parallel()
	for _, in := range []Integration{opencode(), pi(), codex()} {
		env := testEnv(t, "agentctl")
		if _, err := in.Install(context.Background(), env); err == nil {
			t.Errorf("%s installed a hook on PATH", in.Agent())
		}
	}
}

// A status of an integration not installed names the file it would go in,
// as Claude's does: the user sees where to look.
func TestStatusNamesTheFileWhenNotInstalled(t *testing.T) {
	t.Parallel()
	env := testEnv(t, "/usr/bin/agentctl")
	for _, in := range All() {
		st, err := in.Status(context.Background(), env)
		if err != nil || st.Installed || len(st.Files) == 0 || !strings.HasPrefix(st.Files[0], env.UserHome) {
			t.Errorf("%s: %+v, %v; want not installed, naming its file under %s", in.Agent(), st, err, env.UserHome)
		}
	}
}
