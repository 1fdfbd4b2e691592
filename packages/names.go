package packages

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// requirement is the form of a requirement the host accepts: a name, optional
// extras and optional version specifiers, as pip reads them. URLs, paths,
// markers and anything that starts with "-" (a pip option) are refused, so
// that the sandbox can only name packages on the configured index.
var requirement = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*` +
	`(\[\s*[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*\s*\])?\s*` +
	`((?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?\s*$`)

// MaxRequirements bounds the requirements of one install.
const MaxRequirements = 64

// Name is the normalized name (PEP 503) of a requirement such as
// "Pandas[excel]>=2", or an error saying why the requirement is refused.
func Name(req string) (string, error) {
	m := requirement.FindStringSubmatch(strings.TrimSpace(req))
	if m == nil || len(req) > 200 {
		return "", fmt.Errorf("%q is not a requirement the host accepts: give a package name with an optional version, such as \"pandas\" or \"matplotlib>=3.8\" (no URLs, paths, markers or pip options)", clip(req, 80))
	}
	return Normalize(m[1]), nil
}

var separators = regexp.MustCompile(`[-_.]+`)

// Normalize is a package name as PEP 503 compares them: lower case, runs
// of "-", "_" and "." as one "-".
func Normalize(name string) string {
	return separators.ReplaceAllString(strings.ToLower(name), "-")
}

// Allowed reports whether the normalized name matches one of the globs
// (path.Match syntax, compared with normalized names).
func Allowed(name string, globs []string) bool {
	for _, g := range globs {
		if ok, err := path.Match(Normalize(g), name); err == nil && ok {
			return true
		}
	}
	return false
}

// Target is what the sandbox's Python can run, as its runtime reports it.
type Target struct {
	// Python is the version, "3.11".
	Python string `json:"python"`
	// Implementation is "cp" for CPython, "pp" for PyPy.
	Implementation string `json:"implementation"`
	// ABIs are the interpreter's ABI tags, most specific first ("cp311").
	ABIs []string `json:"abis"`
	// Platforms are the platform tags, best first ("manylinux_2_36_x86_64",
	// ..., "manylinux2014_x86_64", ...).
	Platforms []string `json:"platforms"`
}

var (
	pythonVersion = regexp.MustCompile(`^[23]\.[0-9]{1,2}$`)
	tagPart       = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
)

// Check refuses a target whose fields are not tags (they become pip's
// arguments, and come from the sandbox).
func (t Target) Check() error {
	if !pythonVersion.MatchString(t.Python) {
		return fmt.Errorf("the sandbox reported Python version %q, which is not MAJOR.MINOR", clip(t.Python, 20))
	}
	if t.Implementation != "cp" && t.Implementation != "pp" {
		return fmt.Errorf("the sandbox reported Python implementation %q; only CPython (cp) and PyPy (pp) wheels can be fetched", clip(t.Implementation, 20))
	}
	if len(t.Platforms) == 0 || len(t.Platforms) > 128 || len(t.ABIs) > 16 {
		return fmt.Errorf("the sandbox reported %d platform tags and %d ABI tags: between 1 and 128 platforms and at most 16 ABIs are accepted", len(t.Platforms), len(t.ABIs))
	}
	for _, tag := range append(append([]string{}, t.ABIs...), t.Platforms...) {
		if !tagPart.MatchString(tag) {
			return fmt.Errorf("the sandbox reported the tag %q, which is not a wheel tag", clip(tag, 70))
		}
	}
	return nil
}

// String describes the target for messages: "CPython 3.11 on manylinux_2_36_x86_64".
func (t Target) String() string {
	impl := map[string]string{"cp": "CPython", "pp": "PyPy"}[t.Implementation]
	plat := "?"
	if len(t.Platforms) > 0 {
		plat = t.Platforms[0]
	}
	return fmt.Sprintf("%s %s on %s", impl, t.Python, plat)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
