//go:build gendoc

package main

import (
	"fmt"
	"os"
)

// Built with the tag gendoc, as go generate ./cmd/codebridge builds it
// (settingsdoc.go), codebridge is the generator of its settings reference:
// it writes docs/settings.md and exits before main runs. The codebridge
// users run has none of it.
func init() {
	if err := os.WriteFile(settingsDocFile, settingsDoc(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "codebridge gendoc:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
