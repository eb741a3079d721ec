package metrics

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// contentType is the text exposition format's.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric family: a counter, gauge or histogram, with its
// series by label values.
type family struct {
	name, typ, help string
	labels          []string
	buckets         []float64 // histograms only: upper bounds, ascending

	mu     sync.Mutex
	series map[string]*series // by label values joined with \xff
}

type series struct {
	values []string
	value  float64  // counter, gauge; a histogram's sum
	count  uint64   // histogram: observations
	counts []uint64 // histogram: observations per bucket (not cumulative)
}

func newFamily(name, typ, help string, buckets []float64, labels ...string) *family {
	f := &family{name: name, typ: typ, help: help, labels: labels, buckets: buckets, series: map[string]*series{}}
	if len(labels) == 0 && buckets == nil {
		f.at(nil) // an unlabelled counter or gauge is shown from the start, at 0
	}
	return f
}

// gauge is a family of one unlabelled gauge.
func gauge(name, help string, v float64) *family {
	f := newFamily(name, "gauge", help, nil)
	f.set(v)
	return f
}

// at returns the series for values, made on first use; f.mu is held.
func (f *family) at(values []string) *series {
	key := strings.Join(values, "\xff")
	s, ok := f.series[key]
	if !ok {
		s = &series{values: slices.Clone(values)}
		if f.buckets != nil {
			s.counts = make([]uint64, len(f.buckets))
		}
		f.series[key] = s
	}
	return s
}

func (f *family) add(v float64, values ...string) {
	f.mu.Lock()
	f.at(values).value += v
	f.mu.Unlock()
}

func (f *family) set(v float64, values ...string) {
	f.mu.Lock()
	f.at(values).value = v
	f.mu.Unlock()
}

func (f *family) observe(v float64, values ...string) {
	f.mu.Lock()
	s := f.at(values)
	s.value += v
	s.count++
	if i, _ := slices.BinarySearch(f.buckets, v); i < len(f.buckets) {
		s.counts[i]++ // le is inclusive: v == bound lands in that bound's bucket
	}
	f.mu.Unlock()
}

// write renders the family: HELP and TYPE once, then its series sorted by
// label values. A labelled family nothing has fed yet writes nothing.
func (f *family) write(w *bytes.Buffer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.series) == 0 {
		return
	}
	w.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
	w.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
	keys := make([]string, 0, len(f.series))
	for k := range f.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := f.series[k]
		if f.typ != "histogram" {
			sample(w, f.name, f.labels, s.values, "", "", s.value)
			continue
		}
		var cum uint64
		for i, b := range f.buckets {
			cum += s.counts[i]
			sample(w, f.name+"_bucket", f.labels, s.values, "le", formatFloat(b), float64(cum))
		}
		sample(w, f.name+"_bucket", f.labels, s.values, "le", "+Inf", float64(s.count))
		sample(w, f.name+"_sum", f.labels, s.values, "", "", s.value)
		sample(w, f.name+"_count", f.labels, s.values, "", "", float64(s.count))
	}
}

// sample writes one line: name{labels} value, with an extra label (le) when
// extraName is set.
func sample(w *bytes.Buffer, name string, labels, values []string, extraName, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extraName != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l + `="` + escapeLabel(values[i]) + `"`)
		}
		if extraName != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extraName + `="` + extraValue + `"`)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}
