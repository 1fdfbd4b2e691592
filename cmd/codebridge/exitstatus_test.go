package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// Each kind of error a command ends with maps to its exit code in one
// place, and is said once, with the part of the command that failed.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		err  error
		code int
		said string
	}{
		{nil, 0, ""},
		{errReported, 1, ""},
		{failed(errors.New("disk full")), 1, "codebridge skills: disk full\n"},
		{failed(failure{where: "rm", err: errors.New("no skill x")}), 1, "codebridge skills rm: no skill x\n"},
		{failed(inputError{errors.New("--mount /: refused")}), 2, "codebridge skills: --mount /: refused\n"},
		{failed(fmt.Errorf("wrapped: %w", errReported)), 1, ""},
		{failed(usageError{"give one FILE"}), 2, "codebridge skills: give one FILE\nRun 'codebridge skills --help' for usage.\n"},
		{errors.New(`unknown flag: --frob`), 2, "codebridge skills: unknown flag: --frob\nRun 'codebridge skills --help' for usage.\n"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		if got := exitStatus(&stderr, "codebridge skills", c.err); got != c.code || stderr.String() != c.said {
			t.Errorf("%v: exit %d, said %q; want %d, %q", c.err, got, stderr.String(), c.code, c.said)
		}
	}
}
