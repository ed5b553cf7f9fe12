package integration

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLog passes a kgo client's records of info level and above to a slog logger.
type kgoLog struct{ l *slog.Logger }

func (k kgoLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (k kgoLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelInfo
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	case kgo.LogLevelDebug:
		lv = slog.LevelDebug
	}
	k.l.Log(context.Background(), lv, msg, keyvals...)
}

// logRing is a slog handler that keeps the last records at info level and above, as text, and
// passes every record on to testLogger: a failed test prints what its apps did last, which is what
// a CI log needs to tell why (testLogger itself is quiet unless STREAMSGROUP_TEST_LOG is set).
type logRing struct {
	shared *ringBuf
	text   slog.Handler // formats into shared.scratch, under shared.mu
	next   slog.Handler
}

type ringBuf struct {
	mu      sync.Mutex
	lines   []string
	at      int
	full    bool
	scratch bytes.Buffer
}

func newLogRing(n int) *logRing {
	b := &ringBuf{lines: make([]string, n)}
	return &logRing{shared: b, text: slog.NewTextHandler(&b.scratch, nil), next: testLogger.Handler()}
}

func (l *logRing) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRing) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		b := l.shared
		b.mu.Lock()
		b.scratch.Reset()
		_ = l.text.Handle(ctx, r)
		b.lines[b.at] = strings.TrimRight(b.scratch.String(), "\n")
		b.at = (b.at + 1) % len(b.lines)
		b.full = b.full || b.at == 0
		b.mu.Unlock()
	}
	if l.next.Enabled(ctx, r.Level) {
		return l.next.Handle(ctx, r)
	}
	return nil
}

func (l *logRing) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRing{shared: l.shared, text: l.text.WithAttrs(as), next: l.next.WithAttrs(as)}
}

func (l *logRing) WithGroup(name string) slog.Handler {
	return &logRing{shared: l.shared, text: l.text.WithGroup(name), next: l.next.WithGroup(name)}
}

// String returns the kept lines, oldest first.
func (l *logRing) String() string {
	b := l.shared
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	if b.full {
		out = append(out, b.lines[b.at:]...)
	}
	out = append(out, b.lines[:b.at]...)
	return strings.Join(out, "\n")
}

// TestLogRingKeepsTheLastLines pins the ring a failed test prints: the last n lines at info and
// above, oldest first.
func TestLogRingKeepsTheLastLines(t *testing.T) {
	r := newLogRing(3)
	l := slog.New(r).With("m", "a")
	for i := range 5 {
		l.Info("line", "i", i)
		l.Debug("dropped", "i", i)
	}
	got := r.String()
	var is []string
	for _, line := range strings.Split(got, "\n") {
		is = append(is, line[strings.LastIndex(line, " ")+1:])
	}
	if strings.Join(is, ",") != "i=2,i=3,i=4" || !strings.Contains(got, "msg=line m=a i=2") {
		t.Fatalf("ring holds %q; want the lines of i=2,3,4 with their attributes", got)
	}
}
