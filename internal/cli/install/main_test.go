package install_test

import (
	"os"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuild()
	os.Exit(code)
}
