package pi

import (
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/adapters/storeio"
)

// factsKind names the facts a cache file holds; change it when the fields
// written below, their order or their meaning change.
const factsKind = "pi-facts-4"

// MarshalBinary is the facts as the cache file keeps them (encoding.BinaryMarshaler,
// which the DiskCache's gob uses). Where the usage sums stopped is left out:
// after a restart a session that grew is read again whole, never continued
// from a position this process did not read to.
func (x *facts) MarshalBinary() ([]byte, error) {
	var w storeio.RecordWriter
	bad := ""
	if x.bad != nil {
		bad = x.bad.Error()
	}
	for _, s := range []string{x.id, x.cwd, x.headerModel, x.firstPrompt, x.headModel, bad, x.lastModel, x.lastRole, x.lastStop, x.lastError, x.lastProvider} {
		w.String(s)
	}
	w.Time(x.created)
	w.Time(x.mtime)
	w.Time(x.lastTime)
	w.Int(x.tokensIn)
	w.Int(x.tokensOut)
	w.Float(x.cost)
	w.Bool(x.hasUsage)
	w.Bool(x.hasCost)
	w.Bool(x.sumsKnown)
	w.Strings(x.warnings)
	w.Bool(x.sumsPending)
	return w.Bytes(), nil
}

// UnmarshalBinary reads what MarshalBinary wrote.
func (x *facts) UnmarshalBinary(b []byte) error {
	r := storeio.NewRecordReader(b)
	var y facts
	var bad string
	for _, p := range []*string{&y.id, &y.cwd, &y.headerModel, &y.firstPrompt, &y.headModel, &bad, &y.lastModel, &y.lastRole, &y.lastStop, &y.lastError, &y.lastProvider} {
		*p = r.String()
	}
	y.created = r.Time()
	y.mtime = r.Time()
	y.lastTime = r.Time()
	y.tokensIn = r.Int()
	y.tokensOut = r.Int()
	y.cost = r.Float()
	y.hasUsage = r.Bool()
	y.hasCost = r.Bool()
	y.sumsKnown = r.Bool()
	y.warnings = r.Strings()
	y.sumsPending = r.Bool()
	if err := r.Err(); err != nil {
		return fmt.Errorf("pi facts: %w", err)
	}
	switch bad {
	case "":
	case errNoHeader.Error():
		y.bad = errNoHeader
	default:
		y.bad = errors.New(bad)
	}
	*x = y
	return nil
}
