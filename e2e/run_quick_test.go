package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// `run -it` of a command that ends before its terminal can be joined shows
// what it wrote and exits with its code, as `docker run -it` does; it does
// not fail with "nothing to attach to".
func TestRunAttachedQuickCommandShowsOutputAndCode(t *testing.T) {
	e := NewEnv(t)
	for range 4 {
		cmd := e.Command("run", "-it", "--", "sh", "-c", "echo bye; exit 5")
		// Input that stays open, as a person's would: its end would detach.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = r
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		r.Close()
		w.Close()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 5 || !strings.Contains(out.String(), "bye") {
			t.Errorf("run -it -- sh -c 'echo bye; exit 5': exit %d, stdout %q, stderr %q; want bye and 5", code, out.String(), errb.String())
		}
	}
}
