// Package termtext makes text a sandbox or an upstream chose safe to
// print: every character a terminal or a line-oriented reader would act
// on (C0 and C1 controls, DEL, line and paragraph separators, bidi and
// other format characters, invalid UTF-8) is written as a visible Go
// escape (\n, \x1b, \u202e), so that such text can neither forge a line
// nor move the cursor, clear the screen or reorder what is shown.
//
// Line is for one-line fields (names, table cells, descriptions in a
// list); Text keeps line feeds and tabs, for multi-line text shown as it
// is (a skill's source, a run's output); JSON makes encoded JSON safe the
// same way, still valid JSON.
package termtext
