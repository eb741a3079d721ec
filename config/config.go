// Package config reads agentctl's user configuration, ~/.agentctl/config.json.
// The keys of the tool agentctl replaces keep working; unknown keys are
// reported as warnings so a typo is seen rather than silently ignored.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// FileName is the configuration file's name inside the agentctl home.
const FileName = "config.json"

// Environment variables that override the file.
const (
	EnvWebhookURL    = "AGENTCTL_WEBHOOK_URL"
	EnvWebhookSecret = "AGENTCTL_WEBHOOK_SECRET"
	EnvMetricsPort   = "AGENTCTL_METRICS_PORT"
)

// Config is the content of config.json. The zero value is the default.
type Config struct {
	// Adapter, Model and Cwd are launch defaults; command-line flags win.
	Adapter string `json:"adapter,omitempty"`
	Model   string `json:"model,omitempty"`
	// Cwd may start with "~/", expanded against the home directory.
	Cwd string `json:"cwd,omitempty"`

	// WebhookURL receives a POST when a session ends and when a fuse
	// expires; empty disables it. WebhookSecret, when set, signs each body
	// with HMAC-SHA256.
	WebhookURL    string `json:"webhook_url,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`

	// MetricsPort is the 127.0.0.1 port of the Prometheus /metrics endpoint;
	// 0 (the default) serves no metrics. The tool agentctl replaces used 9200.
	MetricsPort int `json:"metrics_port,omitempty"`

	// Notify says how a person hears that a session waits for them.
	Notify Notify `json:"notify,omitzero"`

	// Limits bound the sessions of each adapter (by its name; "exec" for
	// a plain command) through a cgroup per session; a limit given to
	// run or launch wins.
	Limits map[string]Limits `json:"limits,omitempty"`

	// Admission caps how many sessions run at once and keeps a memory
	// floor; a launch beyond it is refused, or queued (run --queue).
	Admission Admission `json:"admission,omitzero"`

	// Hosts names other hosts the CLI reaches: name → URL
	// (ssh://[user@]host[:port], unix:///path). `agentctl host add|rm`
	// edit it.
	Hosts map[string]string `json:"hosts,omitempty"`

	// Web makes the service serve the web dashboard for as long as it
	// runs: {"listen": "127.0.0.1:7387"}, with the options of `agentctl
	// web`.
	Web Web `json:"web,omitzero"`

	// Integrate says how the hooks `agentctl integrate` installs behave.
	Integrate Integrate `json:"integrate,omitzero"`
	// OnLimit is what a launched session does when a usage limit holds
	// it, unless run/launch --on-limit says: api.OnLimitWait (the
	// default) or api.OnLimitResume.
	OnLimit string `json:"on_limit,omitempty"`
	// LimitResume says when and how held sessions are resumed.
	LimitResume LimitResume `json:"limit_resume,omitzero"`
}

// Web is config.json's "web": where the service serves the dashboard, with
// the options of `agentctl web` (the same rules: beyond loopback only with
// TLS and expose, which the dashboard checks when the service starts it).
type Web struct {
	// Listen is host:port; empty serves no dashboard.
	Listen string `json:"listen,omitempty"`
	// AllowHosts are further names the browser may reach it by.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// TLSCert and TLSKey serve HTTPS with a certificate of one's own;
	// TLSGenerate with one made once under the home.
	TLSCert     string `json:"tls_cert,omitempty"`
	TLSKey      string `json:"tls_key,omitempty"`
	TLSGenerate bool   `json:"tls_generate,omitempty"`
	// Expose allows a listen address beyond loopback (with TLS only).
	Expose bool `json:"expose,omitempty"`
	// Socket is a unix socket to serve it on as well, for an SSH tunnel.
	Socket string `json:"socket,omitempty"`
}

// On reports whether the service is to serve the dashboard.
func (w Web) On() bool { return w.Listen != "" }

// Limits are one adapter's session limits in config.json.
type Limits struct {
	// MemoryMax is a size: "4G", "512M".
	MemoryMax string  `json:"memory_max,omitempty"`
	CPUs      float64 `json:"cpus,omitempty"`
	PidsMax   int64   `json:"pids_max,omitempty"`
}

// Admission is config.json's "admission": caps on the sessions this
// service runs at once, and a memory floor. Zero is no cap. In each map,
// the key "*" caps every adapter, provider or group that has no key of
// its own.
type Admission struct {
	// MaxSessions caps every session, whatever it runs.
	MaxSessions int `json:"max_sessions,omitempty"`
	// PerAdapter caps by adapter name ("claude", "exec").
	PerAdapter map[string]int `json:"per_adapter,omitempty"`
	// PerProvider caps by model provider account ("anthropic", "openai").
	PerProvider map[string]int `json:"per_provider,omitempty"`
	// PerGroup caps by group.
	PerGroup map[string]int `json:"per_group,omitempty"`
	// MemoryFloor is a size ("4G"): nothing starts while the machine's
	// MemAvailable is below it.
	MemoryFloor string `json:"memory_floor,omitempty"`
}

// Policy is the admission as the service applies it.
func (a Admission) Policy() api.Admission {
	floor, _ := text.ParseBytes(a.MemoryFloor) // checked by validate
	if a.MemoryFloor == "" {
		floor = 0
	}
	return api.Admission{MaxSessions: a.MaxSessions, PerAdapter: a.PerAdapter, PerProvider: a.PerProvider,
		PerGroup: a.PerGroup, MemoryFloorBytes: floor}
}

func (a Admission) validate() error {
	if a.MaxSessions < 0 {
		return fmt.Errorf("admission: max_sessions %d cannot be negative", a.MaxSessions)
	}
	for key, m := range map[string]map[string]int{"per_adapter": a.PerAdapter, "per_provider": a.PerProvider, "per_group": a.PerGroup} {
		for name, n := range m {
			if n < 0 {
				return fmt.Errorf("admission: %s: %q: %d cannot be negative", key, name, n)
			}
		}
	}
	if a.MemoryFloor != "" {
		if _, err := text.ParseBytes(a.MemoryFloor); err != nil {
			return fmt.Errorf("admission: memory_floor: %w", err)
		}
	}
	return nil
}

// SessionLimits are the limits of each adapter's sessions, as the service
// applies them.
func (c Config) SessionLimits() map[string]api.Limits {
	if len(c.Limits) == 0 {
		return nil
	}
	out := make(map[string]api.Limits, len(c.Limits))
	for name, l := range c.Limits {
		mem, _ := text.ParseBytes(l.MemoryMax) // checked by validate
		if l.MemoryMax == "" {
			mem = 0
		}
		out[name] = api.Limits{MemoryMaxBytes: mem, CPUs: l.CPUs, PidsMax: l.PidsMax}
	}
	return out
}

// ignoredKeys were accepted by the tool agentctl replaces but never did
// anything there; they are accepted here with a warning saying so.
func ignoredKeys() map[string]string {
	return map[string]string{"timeout": "it was never used"}
}

// Path returns the configuration file's path inside home.
func Path(home string) string { return filepath.Join(home, FileName) }

// Load reads path. A missing file is the default configuration. Warnings
// name unknown or ignored keys; an error names the file and, for a syntax
// or type error, the line and column.
func Load(path string) (Config, []string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil, nil
	}
	if err != nil {
		return Config{}, nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes b, the content of the file named path (used in messages).
// Keys match exactly (JSON's usual case-insensitive match would apply a key
// the warning calls unknown).
func Parse(path string, b []byte) (Config, []string, error) {
	var c Config
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil, nil
	}
	var probe any
	if err := json.Unmarshal(b, &probe); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			// Offset counts the bytes read, the bad one included; at the
			// end of a truncated file it points just past the last byte.
			off := syn.Offset - 1
			if syn.Offset >= int64(len(b)) {
				off = int64(len(b))
			}
			line, col := lineCol(b, off)
			return c, nil, fmt.Errorf("%s:%d:%d: invalid JSON: %w", path, line, col, err)
		}
		return c, nil, fmt.Errorf("%s: invalid JSON: %w", path, err)
	}
	if _, ok := probe.(map[string]any); !ok {
		line, col := lineCol(b, int64(len(b)-len(bytes.TrimLeft(b, " \t\r\n"))))
		return c, nil, fmt.Errorf("%s:%d:%d: the configuration must be a JSON object, found %s", path, line, col, jsonKind(probe))
	}

	fields := fieldsByKey(&c)
	ignored := ignoredKeys()
	var warnings []string
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // the opening brace, already validated
		return Config{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Config{}, nil, fmt.Errorf("%s: %w", path, err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return Config{}, nil, fmt.Errorf("%s: key %q: %w", path, key, err)
		}
		start := dec.InputOffset() - int64(len(value))
		field, ok := fields[key]
		switch {
		case ok:
			if err := json.Unmarshal(value, field); err != nil {
				line, col := lineCol(b, start)
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" && reflect.TypeOf(field).Elem().Kind() == reflect.Struct {
					// Inside an object: name the key that is wrong.
					line, col = lineCol(b, start+te.Offset-1)
					return Config{}, warnings, fmt.Errorf("%s:%d:%d: key %q: expected %s, found %s", path, line, col, key+"."+te.Field, kindName(te.Type.Kind()), article(te.Value))
				}
				return Config{}, warnings, fmt.Errorf("%s:%d:%d: key %q: expected %s, found %s", path, line, col, key, goKind(field), jsonKindOf(value))
			}
			if key == "web" || key == "admission" || key == "limit_resume" {
				// A misspelt option would leave the dashboard open
				// otherwise than meant: said, not ignored silently.
				warnings = append(warnings, unknownSubkeys(path, key, value, field)...)
			}
		case ignored[key] != "":
			warnings = append(warnings, fmt.Sprintf("%s: key %q is ignored: %s", path, key, ignored[key]))
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown key %q ignored (known keys: %s)", path, key, strings.Join(sortedKeys(fields), ", ")))
		}
	}
	if err := c.validate(); err != nil {
		return Config{}, warnings, fmt.Errorf("%s: %w", path, err)
	}
	return c, warnings, nil
}

// WithEnv returns c with the environment's overrides applied: the webhook
// URL and secret, and the metrics port.
func (c Config) WithEnv(getenv func(string) string) (Config, error) {
	if v := getenv(EnvWebhookURL); v != "" {
		c.WebhookURL = v
	}
	if v := getenv(EnvWebhookSecret); v != "" {
		c.WebhookSecret = v
	}
	if v := getenv(EnvMetricsPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not a port number", EnvMetricsPort, v)
		}
		c.MetricsPort = p
	}
	if err := c.validate(); err != nil {
		return c, fmt.Errorf("environment: %w", err)
	}
	return c, nil
}

// ExpandCwd returns Cwd with a leading "~" replaced by home.
func (c Config) ExpandCwd(home string) string {
	switch {
	case c.Cwd == "~":
		return home
	case strings.HasPrefix(c.Cwd, "~/"):
		return filepath.Join(home, c.Cwd[2:])
	}
	return c.Cwd
}

func (c Config) validate() error {
	if c.MetricsPort < 0 || c.MetricsPort > 65535 {
		return fmt.Errorf("metrics_port %d: must be between 0 (off) and 65535", c.MetricsPort)
	}
	if _, err := c.Notify.Delay(); err != nil {
		return err
	}
	if err := ValidOnLimit(c.OnLimit); err != nil {
		return err
	}
	if _, err := c.LimitResume.Policy(); err != nil {
		return err
	}
	for name, l := range c.Limits {
		if l.MemoryMax != "" {
			if _, err := text.ParseBytes(l.MemoryMax); err != nil {
				return fmt.Errorf("limits: %q: memory_max: %w", name, err)
			}
		}
		if l.CPUs < 0 || l.PidsMax < 0 {
			return fmt.Errorf("limits: %q: cpus and pids_max cannot be negative", name)
		}
	}
	if err := c.Admission.validate(); err != nil {
		return err
	}
	for name, u := range c.Hosts {
		if !strings.Contains(u, "://") {
			return fmt.Errorf("hosts: %q: %q is not a URL (want ssh://[user@]host[:port] or unix:///path)", name, u)
		}
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL is not quoted: a receiver's URL often carries its
			// secret, and this message reaches the service's log.
			return fmt.Errorf("webhook_url (%d characters) must be an http or https URL with a host", len(c.WebhookURL))
		}
	}
	return nil
}

// unknownSubkeys warns of the keys of an object value that its struct
// (field, a pointer to it) does not have.
func unknownSubkeys(path, key string, value json.RawMessage, field any) []string {
	var got map[string]json.RawMessage
	if json.Unmarshal(value, &got) != nil {
		return nil
	}
	t := reflect.TypeOf(field).Elem()
	known := map[string]any{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := known[k]; !ok {
			out = append(out, fmt.Sprintf("%s: unknown key %q in %q ignored (known keys: %s)", path, k, key, strings.Join(sortedKeys(known), ", ")))
		}
	}
	return out
}

// fieldsByKey maps each JSON key of Config to a pointer to its field in c,
// read from the struct tags so the list cannot drift from the struct.
func fieldsByKey(c *Config) map[string]any {
	v := reflect.ValueOf(c).Elem()
	out := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		out[name] = v.Field(i).Addr().Interface()
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func goKind(field any) string {
	if k := kindName(reflect.TypeOf(field).Elem().Kind()); k != "" {
		return k
	}
	return reflect.TypeOf(field).Elem().String()
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return ""
}

func jsonKindOf(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON"
	}
	if f, ok := v.(float64); ok && f != float64(int64(f)) {
		return "a fractional number"
	}
	return jsonKind(v)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// lineCol converts a 0-based byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(b)))
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// SetHosts rewrites the hosts key of the configuration file at path,
// keeping every other key as it is (an empty map removes the key).
func SetHosts(path string, hosts map[string]string) error {
	keys := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read config: %w", err)
	case len(bytes.TrimSpace(b)) > 0:
		if err := json.Unmarshal(b, &keys); err != nil {
			return fmt.Errorf("%s: %w (fix it before editing hosts)", path, err)
		}
	}
	if len(hosts) == 0 {
		delete(keys, "hosts")
	} else {
		v, err := json.Marshal(hosts)
		if err != nil {
			return err
		}
		keys["hosts"] = v
	}
	out, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}
