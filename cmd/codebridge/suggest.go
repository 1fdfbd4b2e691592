package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is the command line's flag mistake as the user reads it: for
// an unknown long flag, the nearest flag the command (or, when serve was
// only implied, the root) knows is suggested.
func flagError(cmd *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" {
		return usageError{err.Error()}
	}
	name := ne.GetSpecifiedName()
	known := []string{"help", "version"}
	cmd.Flags().VisitAll(func(f *pflag.Flag) { known = append(known, f.Name) })
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { known = append(known, f.Name) })
	msg := fmt.Sprintf("unknown flag --%s", name)
	if near := nearest(name, known); near != "" {
		msg += fmt.Sprintf("; did you mean --%s?", near)
	}
	return usageError{msg}
}

// nearest returns the word of words closest to w by edit distance, if it is
// close enough to be a plausible typo (at most a third of w's length, at
// least 1), else "".
func nearest(w string, words []string) string {
	best, bestD := "", max(1, len(w)/3)+1
	for _, c := range words {
		if d := editDistance(w, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
