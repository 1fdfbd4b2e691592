package bridge

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications: a call that asked for them (a progress token)
// hears, from progressDelay on and every progressEvery after, how long the
// code has run and the latest line it printed.
const (
	progressDelay = 2 * time.Second
	progressEvery = time.Second
	maxLineChars  = 200 // of the latest line, in a message
)

// lastLine tracks the latest line of output, cheaply: it looks only at the
// end of each piece of output, and keeps at most maxLineChars characters.
type lastLine struct {
	mu      sync.Mutex
	line    string // the latest complete line that is not blank
	partial string // the start of the line being written
}

// add takes a piece of output (either stream). A carriage return starts
// the line afresh, as it does on a terminal (progress bars).
func (l *lastLine) add(_, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := strings.LastIndexByte(text, '\n')
	if end >= 0 {
		l.complete(text[:end])
		l.partial = ""
	}
	rest := text[end+1:]
	if cr := strings.LastIndexByte(rest, '\r'); cr >= 0 {
		if strings.TrimSpace(rest[cr+1:]) == "" {
			return // the line is being rewritten: keep what it said
		}
		l.partial, rest = "", rest[cr+1:]
	}
	if n := utf8.RuneCountInString(l.partial); n < maxLineChars {
		l.partial = clipChars(l.partial+head(rest), maxLineChars)
	}
}

// complete records the last line of lines that is not blank: lines are
// complete lines without their final newline, the first continuing the
// partial line. It walks back from the end only over blank lines.
func (l *lastLine) complete(lines string) {
	for {
		start := strings.LastIndexByte(lines, '\n') + 1
		line := head(strings.TrimRight(lines[start:], "\r"))
		if start == 0 {
			line = l.partial + line
		}
		if cr := strings.LastIndexByte(line, '\r'); cr >= 0 {
			line = line[cr+1:]
		}
		if strings.TrimSpace(line) != "" {
			l.line = clipChars(line, maxLineChars)
			return
		}
		if start == 0 {
			return
		}
		lines = lines[:start-1]
	}
}

// head is the first maxLineChars characters of s (sharing its memory).
func head(s string) string { return prefixChars(s, maxLineChars) }

// prefixChars is the first n characters of s, whole characters only.
func prefixChars(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// latest is the line being written, or else the last complete line.
func (l *lastLine) latest() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.TrimSpace(l.partial) != "" {
		return l.partial
	}
	return l.line
}

// clipChars cuts s to n characters, whole characters only, and copies it
// so that a large piece of output is not kept alive.
func clipChars(s string, n int) string {
	return strings.Clone(prefixChars(s, n))
}

// progressMessage is what one notification says: "12s: <latest line>".
func progressMessage(elapsed time.Duration, line string) string {
	if strings.TrimSpace(line) == "" {
		line = "running, no output yet"
	}
	return fmt.Sprintf("%ds: %s", int(elapsed/time.Second), strings.TrimSpace(line))
}

// startProgress sends progress notifications for req until the returned
// stop is called, when the client sent a progress token; it returns the
// output hook for the sandbox (nil when no token was sent). Each message
// passes redact (the gate's) on its way to the client.
func startProgress(ctx context.Context, req *mcp.CallToolRequest, redact func(string) string) (onOutput func(stream, text string), stop func()) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil, func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil, func() {}
	}
	return progressLoop(ctx, token, req.Session.NotifyProgress, redact)
}

// progressLoop sends notify a notification under token progressDelay
// after it starts and every progressEvery after, until stop is called or
// ctx ends, or notify fails; onOutput is the output it tells of.
func progressLoop(ctx context.Context, token any, notify func(context.Context, *mcp.ProgressNotificationParams) error,
	redact func(string) string) (onOutput func(stream, text string), stop func()) {
	var l lastLine
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		timer := time.NewTimer(progressDelay)
		defer timer.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			elapsed := time.Since(start)
			err := notify(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      math.Round(elapsed.Seconds()*10) / 10, // grows with every notification
				Message:       redact(progressMessage(elapsed, l.latest())),
			})
			if err != nil {
				return // the client is gone; the call ends soon
			}
			timer.Reset(progressEvery)
		}
	}()
	return l.add, func() {
		close(done)
		<-finished // no notification after the result
	}
}
