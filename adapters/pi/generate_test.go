package pi

import (
	"context"
	pisynth "github.com/agentctl/agentctl/internal/synth/pi"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

func TestGenerateStore(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := pisynth.GenerateStore(home, 300, 7); err != nil {
		t.Fatal(err)
	}
	a := New(adapters.Env{Home: home})
	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 {
		t.Fatalf("discovered %d sessions, want 300", len(got))
	}
	states := map[adapters.NativeState]int{}
	var biggest int64
	var biggestID string
	for _, s := range got {
		states[s.State]++
		if s.NativeID == "" || s.Cwd == "" || s.Model == "" || s.FirstPrompt == "" || s.TokensIn == nil || s.CostUSD == nil || len(s.Warnings) > 0 {
			t.Fatalf("incomplete generated session: %+v", s)
		}
		if fi, err := os.Stat(s.Path); err == nil {
			if fi.Size() > biggest {
				biggest, biggestID = fi.Size(), s.NativeID
			}
			if !fi.ModTime().Equal(s.UpdatedAt) {
				t.Errorf("file time %v, last record %v", fi.ModTime(), s.UpdatedAt)
			}
		}
	}
	if states[adapters.NativeDone] == 0 || states[adapters.NativeFailed]+states[adapters.NativeAborted]+states[adapters.NativeUnknown] == 0 {
		t.Errorf("states not mixed: %v", states)
	}
	if biggest < 1<<20 {
		t.Errorf("largest generated transcript is %d bytes; want some over 1 MB", biggest)
	}
	msgs, err := a.Transcript(context.Background(), got[0].NativeID, 5)
	if err != nil || len(msgs) == 0 {
		t.Errorf("Transcript of a generated session = %v, %v", msgs, err)
	}
	// The last n messages, read from the end of a file larger than the first
	// read window, are the end of the whole transcript.
	all, err := a.Transcript(context.Background(), biggestID, 0)
	if err != nil || len(all) < 50 {
		t.Fatalf("whole transcript of %s: %d messages, %v", biggestID, len(all), err)
	}
	for _, n := range []int{1, 7, 40, len(all) - 1, len(all) + 5} {
		last, err := a.Transcript(context.Background(), biggestID, n)
		want := all[max(len(all)-n, 0):]
		if err != nil || !slices.Equal(last, want) {
			t.Errorf("last %d of %s: %d messages (%v), want the %d at the end of the whole", n, biggestID, len(last), err, len(want))
		}
	}

	// The same seed gives the same sessions (their dates follow now, so
	// compare their shapes: the sizes of the files).
	sizes := func(home string) map[int64]int {
		out := map[int64]int{}
		filepath.WalkDir(filepath.Join(home, ".pi"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					out[fi.Size()]++
				}
			}
			return nil
		})
		return out
	}
	other := t.TempDir()
	if err := pisynth.GenerateStore(other, 300, 7); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(sizes(home), sizes(other)) {
		t.Error("two stores from the same seed differ")
	}
}

// TestTotalsLater: with Env.TotalsLater a first read answers the rows of
// the files larger than one read without their usage sums, saying they are
// pending (never a zero), counts them in the background, and the next
// query has them, equal to what a read that sums in line gives.
func TestTotalsLater(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := pisynth.GenerateStore(home, 120, 11); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := New(adapters.Env{Home: home, TotalsLater: true})
	first, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	for _, s := range first {
		fi, err := os.Stat(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if big := fi.Size() > sumLaterOver; s.TotalsPending != big {
			t.Errorf("%s (%d bytes): totals pending %v", s.NativeID, fi.Size(), s.TotalsPending)
		}
		if s.TotalsPending {
			pending++
			if s.TokensIn != nil || s.TokensOut != nil || s.CostUSD != nil {
				t.Errorf("%s: pending totals carry figures: %v %v %v", s.NativeID, s.TokensIn, s.TokensOut, s.CostUSD)
			}
		}
		if s.FirstPrompt == "" || s.Cwd == "" || s.UpdatedAt.IsZero() {
			t.Errorf("%s: the row is incomplete without its totals: %+v", s.NativeID, s)
		}
	}
	if pending == 0 {
		t.Fatal("no file of the store was large enough to be counted later")
	}
	a.Settled()
	if err := a.WaitTotals(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := New(adapters.Env{Home: home}).Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]adapters.NativeSession{}
	for _, s := range want {
		byID[s.NativeID] = s
	}
	if len(after) != len(want) {
		t.Fatalf("%d sessions after the sums, %d read in line", len(after), len(want))
	}
	for _, s := range after {
		w := byID[s.NativeID]
		if s.TotalsPending || !reflect.DeepEqual(s, w) {
			t.Errorf("%s after the background sums:\n%+v\nread in line:\n%+v", s.NativeID, s, w)
		}
	}
}
