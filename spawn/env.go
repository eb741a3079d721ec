package spawn

import "strings"

// EnvValue returns the last value of key in env.
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// MergeEnv applies overrides ("K=V") on top of base, keeping base's order.
func MergeEnv(base []string, overrides ...string) []string {
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

// EnvKeys returns the names in env.
func EnvKeys(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}

// SecretName reports whether an environment variable's name says it holds a
// credential. Such values are never written to agentctl's records.
func SecretName(key string) bool {
	k := strings.ToUpper(key)
	for _, w := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "COOKIE"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// WithoutSecrets returns env less the variables SecretName flags.
func WithoutSecrets(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !SecretName(k) {
			out = append(out, kv)
		}
	}
	return out
}
