package api

import (
	"reflect"
	"testing"
	"time"
)

// TestListOptionsQuery: what Query encodes, ParseListOptions reads back,
// the table's view among it.
func TestListOptionsQuery(t *testing.T) {
	t.Parallel()
	for _, o := range []ListOptions{{}, {All: true, Table: true}, {Status: "running", Adapter: "claude", Group: "g", Labels: []string{"a=b"}, Since: time.Hour, Waiting: true, Resources: true}} {
		got, err := ParseListOptions(o.Query())
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Errorf("%+v read back as %+v (%v)", o, got, err)
		}
	}
}
