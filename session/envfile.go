package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/envvar"
)

// keepEnv writes a session's --env values into its folder (0600: they may
// be secrets) for a restart, and returns their names for its record.
func keepEnv(dir string, overrides []string) ([]string, error) {
	if len(overrides) == 0 {
		return nil, nil
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.EnvFile), overrides, 0o600); err != nil {
		return nil, fmt.Errorf("keep the --env values: %w", err)
	}
	keys := envvar.Keys(overrides)
	sort.Strings(keys)
	return keys, nil
}

// keptEnv reads the --env values a session was started with (none for a
// session that had none, or was started before they were kept).
func keptEnv(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, home.EnvFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read its --env values: %w", err)
	}
	var overrides []string
	if err := json.Unmarshal(b, &overrides); err != nil {
		return nil, fmt.Errorf("read its --env values from %s: %w", filepath.Join(dir, home.EnvFile), err)
	}
	return overrides, nil
}
