//go:build unix

package reader

import (
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/transcript"
)

// largeBenchFile writes bench's 50 MB session without a compact boundary
// (internal/gen.LargeSession seed 2, 17000 progress rows of ~2.9 KB), the
// one BenchmarkLargeSessionPageCold in ui reads, and returns its path.
func largeBenchFile(b *testing.B) string {
	b.Helper()
	res, err := gen.LargeSession(b.TempDir(), gen.LargeOptions{Seed: 2, NoBoundary: true, Progress: 17000})
	if err != nil {
		b.Fatal(err)
	}
	return res.Path
}

// cpuTime is the CPU time the process has used (user and system), which
// the benchmarks report per operation beside the wall time: on a machine
// shared with others, it moves less than the wall time does.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReadRebuildLarge is the read of a session's first visit: every
// line parsed into the rebuild's rows, on every core.
func BenchmarkReadRebuildLarge(b *testing.B) {
	path := largeBenchFile(b)
	b.ResetTimer()
	cpu := cpuTime(b)
	for range b.N {
		out, _, err := readFile(nil, path, ReadOptions{}, keepRebuild)
		if err != nil || len(out.rows) == 0 {
			b.Fatal(err, len(out.rows))
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkRowsMessagesLarge is the rebuild that follows the read (the
// rows are read again, untimed, before each).
func BenchmarkRowsMessagesLarge(b *testing.B) {
	path := largeBenchFile(b)
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		out, _, err := readFile(nil, path, ReadOptions{}, keepRebuild)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := cpuTime(b)
		msgs, _, _ := transcript.RowsMessages(out.rows, transcript.ChainOptions{}, transcript.MessageOptions{})
		cpu += cpuTime(b) - start
		if len(msgs) == 0 {
			b.Fatal("no messages")
		}
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
