package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codebridge/codebridge/internal/gate"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/spf13/cobra"
)

func (c *cli) auditCommand() *cobra.Command {
	var asJSON bool
	var since string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: every tool call and run_python, with its decision and outcome",
		Long: `Show the audit log: every tool call the sandbox made (who allowed it, how long
it took, how it ended, the size and SHA-256 of its arguments) and every
run_python. A call whose outcome is "unfinished" reached the upstream but
the bridge stopped before it ended.`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	cmd.Flags().StringVar(&since, "since", "", "only entries newer than this: a duration back from now (90m, 24h, 7d) or a date (2026-01-31, RFC 3339)")
	var s struct {
		Gate  gateFlags
		State stateFlags
		Log   logFlags
	}
	flags := slices.Concat([]string{"audit"}, flagsOf[stateFlags](), flagsOf[logFlags]())
	return c.settingsCommand(cmd, &s, flags, commandLogLevel, func([]string) error {
		from, err := parseSince(since, time.Now())
		if err != nil {
			return inputError{fmt.Errorf("--since: %w", err)}
		}
		return c.audit(s.Gate, s.State, from, asJSON)
	})
}

func (c *cli) audit(g gateFlags, st stateFlags, since time.Time, asJSON bool) error {
	path, err := auditPath(g, st)
	if err == nil && path == "" {
		err = errors.New("the audit log is off (--audit off); there is nothing to read")
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(c.stderr, "codebridge audit: no audit log at %s yet: it is written once codebridge serves a call\n", path)
		return nil
	}
	if err != nil {
		return failure{err: err}
	}
	defer f.Close()
	recs, bad, err := gate.ReadAudit(f, since)
	if err != nil {
		return failure{err: fmt.Errorf("reading %s: %w", path, err)}
	}
	if bad > 0 {
		fmt.Fprintf(c.stderr, "codebridge audit: %s: %d lines are not audit records and were skipped\n", path, bad)
	}
	entries := gate.Entries(recs)
	if asJSON {
		for _, e := range entries {
			if err := printJSON(c.stdout, e); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tSESSION\tWHAT\tDECISION\tOUTCOME\tMS\tARGS\tRESULT")
	for _, e := range entries {
		what := "run_python"
		if e.Event == "call" {
			what = e.Kind + " " + e.Server + "." + e.Name
		}
		decision := e.Decision
		if e.By != "" {
			decision += " (" + e.By + ")"
		}
		session := e.Session
		if e.Principal != "" && e.Principal != "local" {
			session += " " + e.Principal // an HTTP token's holder
		}
		outcome := e.Outcome
		if e.Error != "" {
			outcome += ": " + clip(e.Error, 60)
		}
		// Every field may hold what a sandbox or an upstream chose (a
		// tool's name, an error's text): each stays in its cell.
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%.1f\t%d B\t%d B\n", e.Time.Local().Format("2006-01-02 15:04:05"),
			termtext.Line(session), termtext.Line(what), termtext.Line(decision), termtext.Line(outcome), e.DurationMS, e.ArgBytes, e.ResultBytes)
	}
	return w.Flush()
}

// parseSince reads --since: empty (everything), a duration back from now
// (with d for days), or a date.
func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 24h, 7d) nor a date (2026-01-31)", v)
}
