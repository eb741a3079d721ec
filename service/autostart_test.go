package service

import (
	"context"
	"testing"
)

func TestStartInstalledWithoutUnit(t *testing.T) {
	handled, err := StartInstalled(context.Background(), t.TempDir())
	if err != nil || handled {
		t.Fatalf("StartInstalled for a home no unit serves = %v, %v; want false, nil", handled, err)
	}
}
