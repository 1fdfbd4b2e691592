package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/statedir"
	"github.com/codebridge/codebridge/internal/termtext"
)

// sandboxDir is where every new sandbox finds the skills (the runtime's
// skills package reads it; pyruntime/PROTOCOL.md).
const sandboxDir = "/tmp/codebridge/skills"

// Limits of a skill, stated once.
const (
	// maxSource is the largest source a skill may have, in bytes.
	maxSource = 64 << 10
	// maxDescription is the longest description, in bytes.
	maxDescription = 2 << 10
	// maxCount is how many skills the store keeps at most.
	maxCount = 500
)

// namePattern is a skill's name: a Python identifier that does not start
// with an underscore, so that it is importable as skills.<name>.
var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// keywords are Python's keywords, which cannot be module names.
var keywords = strings.Fields(`False None True and as assert async await break class continue def del
elif else except finally for from global if import in is lambda nonlocal not or pass raise return try
while with yield`)

// header is the first line of every skill file, before the name; the
// encoding declaration after the name keeps Python, should it read the
// file itself (python3 NAME.py), from taking the description's first
// line for one (utf-7 would make escaped text code again).
const (
	header = "# codebridge skill: "
	cookie = "  -*- coding: utf-8 -*-"
)

// Skill is one saved skill.
type Skill struct {
	Name        string
	Description string
	Source      string
	Saved       time.Time
	// Team is set on a skill the host published for every principal
	// ([Set]): sessions can use it, not change it.
	Team bool
}

// Info is what the runtime is told about s.
func (s Skill) Info() protocol.SkillInfo {
	return protocol.SkillInfo{Name: s.Name, Description: s.Description, Size: len(s.Source), Saved: s.Saved.UTC().Format(time.RFC3339), Team: s.Team}
}

// Store is the skills directory of one principal in a state directory.
type Store struct {
	root statedir.Dir // the state directory
	dir  statedir.Dir // the principal's own: root, or below principals/
}

// Open returns the local user's store in d; nothing is created until a
// skill is saved.
func Open(d statedir.Dir) *Store { return &Store{root: d, dir: d} }

// Of is the store of principal p in the same state directory: its own
// skills, which no other principal's session reads or changes.
func (s *Store) Of(p principal.Principal) *Store {
	return &Store{root: s.root, dir: s.root.Of(p.Key())}
}

// Team is the store of the skills the host publishes for every principal
// (codebridge skills publish); sessions see it through a [Set], read-only.
func (s *Store) Team() *Store {
	return &Store{root: s.root, dir: s.root.Team()}
}

// Dir is the directory that holds the skill files.
func (s *Store) Dir() string { return s.dir.Path(statedir.Skills) }

// checkName says why name cannot be a skill's name, or returns nil.
func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%q is not a skill name: use a Python identifier of at most 64 characters that starts with a letter (e.g. summarize_issues)", name)
	}
	for _, k := range keywords {
		if name == k {
			return fmt.Errorf("%q is a Python keyword: choose another skill name", name)
		}
	}
	return nil
}

// check says why a skill cannot be saved as given.
func check(name, source, description string) error {
	if err := checkName(name); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(source) == "":
		return fmt.Errorf("skill %q has no source", name)
	case len(source) > maxSource:
		return fmt.Errorf("skill %q is %d bytes of source; a skill may have at most %d: split it, or keep data in /workspace files instead of the source", name, len(source), maxSource)
	case len(description) > maxDescription:
		return fmt.Errorf("the description of skill %q is %d bytes; at most %d are kept: shorten it", name, len(description), maxDescription)
	case !utf8.ValidString(source) || !utf8.ValidString(description):
		return fmt.Errorf("skill %q is not valid UTF-8 text", name)
	case strings.ContainsRune(source, 0):
		return fmt.Errorf("skill %q contains a NUL byte", name)
	}
	return nil
}

// Save stores a skill, replacing one of the same name. The source must
// already have compiled (the sandbox checks it; the host never runs it).
func (s *Store) Save(name, source, description string) (Skill, error) {
	source, description = lineBreaks(source), describe(description)
	if err := check(name, source, description); err != nil {
		return Skill{}, err
	}
	dir, err := s.dir.Ensure(statedir.Skills)
	if err != nil {
		return Skill{}, err
	}
	file := filepath.Join(dir, name+".py")
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		if names, _ := s.names(); len(names) >= maxCount {
			return Skill{}, fmt.Errorf("there are %d skills already, the most codebridge keeps: delete some (runtime.delete_skill, or `codebridge skills rm`)", len(names))
		}
	}
	sk := Skill{Name: name, Description: description, Source: source, Saved: time.Now()}
	if err := statedir.WriteFile(file, sk.File()); err != nil {
		return Skill{}, fmt.Errorf("saving skill %q in %s: %w", name, dir, err)
	}
	return sk, nil
}

// File is the text of the skill's file, exactly as every new sandbox gets
// and runs it: the header, the description as comments, a blank line,
// then the source. The description cannot end its comments (see
// [describe]), and the source's line breaks are line feeds, as Python
// reads them, so that the lines shown are the lines that run.
func (sk Skill) File() []byte {
	var b bytes.Buffer
	b.WriteString(header + sk.Name + cookie + "\n")
	if desc := describe(sk.Description); desc != "" {
		for _, line := range strings.Split(desc, "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	b.WriteString("\n")
	source := lineBreaks(sk.Source)
	b.WriteString(source)
	if !strings.HasSuffix(source, "\n") {
		b.WriteString("\n")
	}
	return b.Bytes()
}

// describe is a description as it is kept: trimmed, with its lines
// ended by line feeds, and in each line every character that is not
// printable escaped (termtext.Line), a carriage return or a form feed
// included. Python ends a comment at a line feed or a carriage return: a
// described line stays one comment line, and can never become code.
func describe(d string) string {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(d), "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(termtext.Line(l), unicode.IsSpace)
	}
	return strings.Join(lines, "\n")
}

// lineBreaks returns Python source with each of its line breaks (CR LF,
// a lone CR, LF) as a line feed: the source Python compiles, since it
// reads both CR LF and a lone CR as a line's end. A lone CR would
// otherwise start a line of code a terminal shows over the one before.
func lineBreaks(source string) string {
	return strings.ReplaceAll(strings.ReplaceAll(source, "\r\n", "\n"), "\r", "\n")
}

// parse reads a skill file back. A file without the header (written by
// hand) is all source, without a description.
func parse(name string, data []byte, saved time.Time) Skill {
	text := string(data)
	sk := Skill{Name: name, Source: text, Saved: saved}
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasPrefix(first, header) {
		return sk
	}
	var desc []string
	for {
		line, more, _ := strings.Cut(rest, "\n")
		if line == "" || !strings.HasPrefix(line, "#") {
			if line == "" {
				rest = more
			}
			break
		}
		desc = append(desc, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		rest = more
	}
	// describe: as File writes it, also for a file saved before
	// descriptions were escaped.
	sk.Description, sk.Source = describe(strings.Join(desc, "\n")), rest
	return sk
}

// names lists the stored skills' names, sorted.
func (s *Store) names() ([]string, error) {
	entries, err := os.ReadDir(s.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing skills in %s: %w", s.Dir(), err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".py")
		if ok && e.Type().IsRegular() && checkName(name) == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Get reads one skill.
func (s *Store) Get(name string) (Skill, error) {
	if err := checkName(name); err != nil {
		return Skill{}, err
	}
	file := filepath.Join(s.Dir(), name+".py")
	st, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Skill{}, fmt.Errorf("there is no skill %q (in %s): list them with runtime.list_skills() or `codebridge skills list`", name, s.Dir())
	}
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return Skill{}, fmt.Errorf("reading skill %q: %w", name, err)
	}
	return parse(name, data, st.ModTime()), nil
}

// List returns every skill, by name. A file that cannot be read is left
// out and named in the error, beside the skills that could be read.
func (s *Store) List() ([]Skill, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Skill
	var errs []error
	for _, n := range names {
		sk, err := s.Get(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, sk)
	}
	return out, errors.Join(errs...)
}

// Delete removes a skill and returns what it was.
func (s *Store) Delete(name string) (Skill, error) {
	sk, err := s.Get(name)
	if err != nil {
		return Skill{}, err
	}
	if err := os.Remove(filepath.Join(s.Dir(), name+".py")); err != nil {
		return Skill{}, fmt.Errorf("deleting skill %q: %w", name, err)
	}
	return sk, nil
}

// Files are the skills as files for a new sandbox, at sandboxDir. A
// skill that cannot be read is left out (the error names it).
func (s *Store) Files() ([]protocol.File, error) {
	list, err := s.List()
	return files(list), err
}

// files are skills as files for a new sandbox, at [sandboxDir].
func files(list []Skill) []protocol.File {
	out := make([]protocol.File, 0, len(list))
	for _, sk := range list {
		out = append(out, protocol.File{Path: path.Join(sandboxDir, sk.Name+".py"), Data: sk.File()})
	}
	return out
}
