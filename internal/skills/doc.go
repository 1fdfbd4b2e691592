// Package skills keeps the skills agents save: Python functions written in
// one sandbox session and offered to every later one. Each skill is one
// readable .py file in the state directory's skills/ entry (see package
// statedir): a comment header with its name and description, then its
// source. The host only stores, lists and hands the files to new
// sandboxes (at sandboxDir, store.go); it never runs them.
package skills
