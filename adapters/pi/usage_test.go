package pi

import (
	"encoding/json"
	"fmt"
	"testing"
)

var usageSeeds = []string{
	`{"input":639,"output":53,"cacheRead":0,"cacheWrite":0,"totalTokens":692,"cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}`,
	`{"input":1,"cost":2.5}`, `{"cost":null}`, `{"cost":{"total":null}}`, `{"cost":{"total":1},"cost":{}}`, `{"cost":{"total":1,"total":null}}`,
	`{"cost":{"TOTAL":4}}`, `{"INPUT":3,"input":4}`, `{"input":null,"output":"5"}`, `{"input":1e400}`, `{"cost":"x"}`, `{"cost":[1]}`,
	`{"cost":true}`, `{"cost":{"total":"1"}}`, `{"in\u0070ut":7}`, `{"inpu` + "\u017f" + `":7}`, `{"cost":{"tot\u0061l":2}}`, `{}`, ` {"output" : -0.5e2 } `,
	`[]`, `null`, `5`, `{"input":}`, `{"input":1,}`,
}

// decodeUsage decodes what json.Unmarshal decodes, and fails where it fails.
func TestDecodeUsage(t *testing.T) {
	t.Parallel()
	for _, s := range usageSeeds {
		checkUsage(t, []byte(s))
	}
}

func FuzzDecodeUsage(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkUsage(t, b) })
}

func checkUsage(t *testing.T, b []byte) {
	t.Helper()
	var want usage
	wantErr := json.Unmarshal(b, &want)
	got, err := decodeUsage(b)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", b, err, wantErr)
	}
	if err == nil && fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("%q: %+v, json.Unmarshal's %+v", b, got, want)
	}
}
