package packages

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// maxRequirements bounds the requirements of one install.
const maxRequirements = 64

// maxRequirementLen bounds one requirement's text.
const maxRequirementLen = 200

// requirement is a request the host accepts, parsed: a project name,
// optional extras and optional version specifiers, all in their canonical
// forms. Its [requirement.String] is the only text of the sandbox's that
// reaches pip.
type requirement struct {
	// Name is the name normalized as PEP 503 compares them: lower case
	// letters, digits and single "-".
	Name string
	// Extras are the normalized extras, sorted.
	Extras []string
	// Specs are the version specifiers, such as ">=2.1" or "==1.4.*".
	Specs []string
}

var (
	// projectName is PEP 508's name grammar.
	projectName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// publicVersion is a PEP 440 public version in its normal form (no
	// local label: package indexes do not serve them), lower case.
	publicVersion = regexp.MustCompile(`^(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?$`)
	// operators are PEP 440's comparison operators, longest first, without
	// "===" (arbitrary equality takes any text).
	operators = []string{"~=", "==", "!=", "<=", ">=", "<", ">"}
)

// parseRequirement reads a requirement such as "Pandas[excel] >= 2, <3".
// It accepts a PEP 508 name, extras and PEP 440 version specifiers, and
// refuses everything else: paths, archives, URLs, markers and pip options.
// The canonical form it returns can never be read by pip as anything but
// a name on the index: it has no "/", does not start with "." or "-",
// and ends in a letter or digit of a name, a "]" or a version's digit or
// "*", never in an archive's suffix.
func parseRequirement(s string) (requirement, error) {
	refuse := func(why string) (requirement, error) {
		return requirement{}, fmt.Errorf("%q is not a package name: %s. Give a name from the package index with an optional version, such as \"pandas\" or \"matplotlib>=3.8\" (no paths, archives, URLs, markers or pip options)", clip(s, 80), why)
	}
	if len(s) > maxRequirementLen {
		return refuse(fmt.Sprintf("it is longer than %d characters", maxRequirementLen))
	}
	rest := strings.Trim(s, " \t")
	end := strings.IndexAny(rest, "[ \t~=!<>")
	if end < 0 {
		end = len(rest)
	}
	if !projectName.MatchString(rest[:end]) {
		return refuse("a name is letters, digits and \".\", \"-\" or \"_\" between them")
	}
	r := requirement{Name: normalize(rest[:end])}
	rest = strings.TrimLeft(rest[end:], " \t")
	if strings.HasPrefix(rest, "[") {
		closing := strings.IndexByte(rest, ']')
		if closing < 0 {
			return refuse("its extras have no closing \"]\"")
		}
		for _, e := range strings.Split(rest[1:closing], ",") {
			e = strings.Trim(e, " \t")
			if !projectName.MatchString(e) {
				return refuse("an extra is a name")
			}
			r.Extras = append(r.Extras, normalize(e))
		}
		slices.Sort(r.Extras)
		r.Extras = slices.Compact(r.Extras)
		rest = strings.TrimLeft(rest[closing+1:], " \t")
	}
	switch {
	case rest == "":
		return r, nil
	case strings.HasPrefix(rest, "@"):
		return refuse("a URL or path after \"@\" is not accepted")
	case strings.Contains(rest, ";"):
		return refuse("markers (\"; ...\") are not accepted")
	}
	for _, spec := range strings.Split(rest, ",") {
		canon, ok := versionSpec(strings.Trim(spec, " \t"))
		if !ok {
			return refuse("a version is an operator (==, !=, >=, <=, >, <, ~=) and a version such as 1.2, 2.0rc1 or 1.4.*")
		}
		r.Specs = append(r.Specs, canon)
	}
	return r, nil
}

// versionSpec is one version specifier in canonical form, or false.
func versionSpec(spec string) (string, bool) {
	for _, op := range operators {
		v, ok := strings.CutPrefix(spec, op)
		if !ok {
			continue
		}
		v = strings.ToLower(strings.Trim(v, " \t"))
		release, wild := strings.CutSuffix(v, ".*")
		if wild && op != "==" && op != "!=" {
			return "", false
		}
		return op + v, publicVersion.MatchString(release)
	}
	return "", false
}

// String is the requirement as pip reads it: "pandas[excel]>=2,<3".
func (r requirement) String() string {
	s := r.Name
	if len(r.Extras) > 0 {
		s += "[" + strings.Join(r.Extras, ",") + "]"
	}
	return s + strings.Join(r.Specs, ",")
}

// Name is the normalized name (PEP 503) of a requirement such as
// "Pandas[excel]>=2", or an error saying why the requirement is refused.
func Name(req string) (string, error) {
	r, err := parseRequirement(req)
	return r.Name, err
}

var separators = regexp.MustCompile(`[-_.]+`)

// normalize is a package name as PEP 503 compares them: lower case, runs
// of "-", "_" and "." as one "-".
func normalize(name string) string {
	return separators.ReplaceAllString(strings.ToLower(name), "-")
}

// allowed reports whether the normalized name matches one of the globs
// (path.Match syntax, compared with normalized names).
func allowed(name string, globs []string) bool {
	for _, g := range globs {
		if ok, err := path.Match(normalize(g), name); err == nil && ok {
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
