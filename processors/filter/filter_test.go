package filter

import (
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

func TestProcessorContract(t *testing.T) {
	progress := strings.Replace(coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000002", ""), `"type":"user"`, `"type":"progress"`, 1)
	coretest.RunProcessorContract(t, coretest.ProcessorHarness{
		New: func(t *testing.T) core.Processor { return New(Config{DropTypes: []string{"progress"}}) },
		Cases: []coretest.ProcessorCase{
			{Name: "user row kept", Line: coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000001", "")},
			{Name: "progress dropped", Line: progress, Drop: true},
		},
	})
}

func TestConfigRefusesConversationRows(t *testing.T) {
	if err := (&Config{DropTypes: []string{"assistant"}}).Validate(); err == nil {
		t.Fatal("dropping assistant rows was accepted")
	}
}
