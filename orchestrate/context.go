package orchestrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/text"
)

// DefaultMaxFileSize is the per-file limit for context files: 50 KiB.
const DefaultMaxFileSize = 50 << 10

// ContextFiles are files whose contents go in front of the prompt.
type ContextFiles struct {
	// Dir is the folder relative paths are resolved against and shown
	// relative to: the session's working directory (or the repository
	// whose worktrees the members get).
	Dir string
	// Spec is a specification file, placed first.
	Spec string
	// Files are further context files, in order.
	Files []string
	// MaxFileSize is the limit per file in bytes; <= 0 means
	// DefaultMaxFileSize.
	MaxFileSize int64
}

// Prompt returns prompt with the files' contents in front of it, each in a
// block:
//
//	--- File: path/relative/to/dir ---
//	content
//	--- End File ---
//
// (the spec's block says "Spec"). A file that is missing, not a regular
// file, over the size limit, binary or not UTF-8 text is an error naming it.
func (c ContextFiles) Prompt(prompt string) (string, error) {
	if c.Spec == "" && len(c.Files) == 0 {
		return prompt, nil
	}
	limit := c.MaxFileSize
	if limit <= 0 {
		limit = DefaultMaxFileSize
	}
	var blocks []string
	add := func(kind, p string) error {
		shown, content, err := readContextFile(c.Dir, p, limit)
		if err != nil {
			return err
		}
		blocks = append(blocks, fmt.Sprintf("--- %s: %s ---\n%s\n--- End %s ---", kind, shown, strings.TrimSuffix(content, "\n"), kind))
		return nil
	}
	if c.Spec != "" {
		if err := add("Spec", c.Spec); err != nil {
			return "", fmt.Errorf("--spec: %w", err)
		}
	}
	for _, f := range c.Files {
		if err := add("File", f); err != nil {
			return "", fmt.Errorf("--file: %w", err)
		}
	}
	return strings.Join(blocks, "\n\n") + "\n\n" + prompt, nil
}

// readContextFile reads one file and returns how to show its path and its
// text.
func readContextFile(dir, p string, limit int64) (string, string, error) {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, p)
	}
	f, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if abs != p {
				return "", "", fmt.Errorf("file not found: %s (looked for %s; relative paths start from the session's directory)", p, abs)
			}
			return "", "", fmt.Errorf("file not found: %s", p)
		}
		return "", "", fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", p, err)
	}
	if !st.Mode().IsRegular() {
		what := "not a regular file"
		if st.IsDir() {
			what = "a directory"
		}
		return "", "", fmt.Errorf("%s is %s; only text files can be added to the prompt", p, what)
	}
	if st.Size() > limit {
		return "", "", fmt.Errorf("%s is %s, over the limit of %s per file (raise it with --max-file-size)", p, text.Bytes(st.Size()), text.Bytes(limit))
	}
	// The file may grow between the stat and the read: read one byte past
	// the limit to notice.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(b)) > limit {
		return "", "", fmt.Errorf("%s is over the limit of %s per file (raise it with --max-file-size)", p, text.Bytes(limit))
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return "", "", fmt.Errorf("%s looks binary (a NUL byte at offset %d); only text files can be added to the prompt", p, i)
	}
	if !utf8.Valid(b) {
		return "", "", fmt.Errorf("%s is not UTF-8 text; only text files can be added to the prompt", p)
	}
	shown := p
	if rel, err := filepath.Rel(dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		shown = rel
	}
	return shown, string(b), nil
}

// ParseSize reads a size: a number of bytes, or a number followed by k, K,
// KiB, m, M or MiB (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, optionally with k or M (e.g. 51200, 50k, 1M)", s)
	}
	return n * mult, nil
}
