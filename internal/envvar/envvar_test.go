package envvar

import (
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	t.Parallel()
	got := Merge([]string{"A=1", "B=2", "A=3"}, "B=x", "C=y=z")
	want := []string{"A=3", "B=x", "C=y=z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Merge = %q, want %q", got, want)
	}
	if v := Value(got, "C"); v != "y=z" {
		t.Errorf("Value(C) = %q", v)
	}
	if k := Keys(got); !reflect.DeepEqual(k, []string{"A", "B", "C"}) {
		t.Errorf("Keys = %q", k)
	}
}

func TestIsSecret(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "db_password": true, "SSH_AUTH_SOCK": true,
		"PATH": false, "HOME": false, "LANG": false,
	} {
		if got := IsSecret(name); got != want {
			t.Errorf("IsSecret(%q) = %v, want %v", name, got, want)
		}
	}
	if got := WithoutSecrets([]string{"PATH=/bin", "API_KEY=x", "HOME=/h"}); !reflect.DeepEqual(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("WithoutSecrets = %q", got)
	}
}
