package server

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/config"
)

// The server block of the built-in configuration (example.hcl) states the
// defaults of DefaultConfig.
func TestDefaultBlockIsDefaultConfig(t *testing.T) {
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server == nil {
		t.Fatal("the built-in configuration has no server block")
	}
	got := &Config{}
	if err := cfg.Server.Decode(got); err != nil {
		t.Fatal(err)
	}
	if want := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("server block decodes to\n%+v\nDefaultConfig is\n%+v", got, want)
	}
}

func TestDataDirInUse(t *testing.T) {
	cfg := testConfig(t)
	startServer(t, cfg)
	second, err := New(cfg, testLogger(t, "second"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = second.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("second server on the same data_dir: %v", err)
	}
	if err := second.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func TestHashToken(t *testing.T) {
	// sha256("abc")
	if got := HashToken("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashToken = %s", got)
	}
}
