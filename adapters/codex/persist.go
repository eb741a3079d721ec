package codex

import (
	"fmt"

	"github.com/agentctl/agentctl/adapters/storeio"
)

// factsKind names the facts a cache file holds; change it when the fields
// written below, their order or their meaning change.
const factsKind = "codex-facts-4"

// MarshalBinary is the facts as the cache file keeps them (encoding.BinaryMarshaler,
// which the DiskCache's gob uses). The offset and fingerprint are left out:
// after a restart a rollout that grew is read again whole, never continued
// from a position this process did not read to.
func (x *facts) MarshalBinary() ([]byte, error) {
	var w storeio.RecordWriter
	for _, s := range []string{x.id, x.cwd, x.model, x.cliVersion, x.originator, x.firstPrompt, x.weakPrompt, x.turnError} {
		w.String(s)
	}
	w.Time(x.created)
	w.Time(x.lastTime)
	w.Int(x.tokensIn)
	w.Int(x.tokensOut)
	w.Bool(x.hasTokens)
	w.Int(int64(x.turn))
	w.Int(int64(x.badLines))
	w.Int(int64(x.skipped))
	w.Bool(x.tailOnly)
	w.Bool(x.limited)
	w.Time(x.limitAt)
	w.Time(x.windowsAt)
	for _, u := range x.windows {
		w.Bool(u.known)
		w.Int(int64(u.used * 100))
		w.Int(u.minutes)
		w.Time(u.resetsAt)
	}
	return w.Bytes(), nil
}

// UnmarshalBinary reads what MarshalBinary wrote.
func (x *facts) UnmarshalBinary(b []byte) error {
	r := storeio.NewRecordReader(b)
	var y facts
	for _, p := range []*string{&y.id, &y.cwd, &y.model, &y.cliVersion, &y.originator, &y.firstPrompt, &y.weakPrompt, &y.turnError} {
		*p = r.String()
	}
	y.created = r.Time()
	y.lastTime = r.Time()
	y.tokensIn = r.Int()
	y.tokensOut = r.Int()
	y.hasTokens = r.Bool()
	turn := r.Int()
	y.badLines = int(r.Int())
	y.skipped = int(r.Int())
	y.tailOnly = r.Bool()
	y.limited = r.Bool()
	y.limitAt = r.Time()
	y.windowsAt = r.Time()
	for i := range y.windows {
		u := &y.windows[i]
		u.known = r.Bool()
		u.used = float64(r.Int()) / 100
		u.minutes = r.Int()
		u.resetsAt = r.Time()
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("codex facts: %w", err)
	}
	if turn < int64(turnNone) || turn > int64(turnAborted) {
		return fmt.Errorf("codex facts: turn state %d", turn)
	}
	y.turn = turnState(turn)
	*x = y
	return nil
}
