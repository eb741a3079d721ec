// Package envvar handles environments as "KEY=VALUE" lists: lookups,
// overrides, and the rule for which values are credentials.
package envvar

import "strings"

// Value returns the last value of key in env.
func Value(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Merge applies overrides ("K=V") on top of base, keeping base's order.
func Merge(base []string, overrides ...string) []string {
	idx := make(map[string]int, len(base))
	out := make([]string, 0, len(base)+len(overrides))
	for _, kv := range append(append([]string(nil), base...), overrides...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Keys returns the names in env.
func Keys(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}

// IsSecret reports whether an environment variable's name says it holds a
// credential. Such values are never written to agentctl's records.
func IsSecret(key string) bool {
	k := strings.ToUpper(key)
	for _, w := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// WithoutSecrets returns env less the variables IsSecret flags.
func WithoutSecrets(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !IsSecret(k) {
			out = append(out, kv)
		}
	}
	return out
}
