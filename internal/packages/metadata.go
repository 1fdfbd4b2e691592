package packages

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// Bounds on what the host reads of a wheel from the index.
const (
	// maxMetadataHeaders bounds the header part of a wheel's METADATA
	// (its body, the long description, is not read).
	maxMetadataHeaders = 1 << 20
	// maxRequiresDist bounds the Requires-Dist lines of one METADATA.
	maxRequiresDist = 1024
	// maxDependencyLen bounds one Requires-Dist line.
	maxDependencyLen = 1024
	// maxZipDirectory bounds a wheel's zip central directory (the list of
	// its files, which the zip reader holds in memory).
	maxZipDirectory = 64 << 20
)

// wheelFile is a wheel's file name: name-version(-build)?-python-abi-platform.whl.
var wheelFile = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-([A-Za-z0-9_.!+]+)(?:-[0-9][A-Za-z0-9_.]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl$`)

// parseWheelFile reads a wheel's file name: its project's normalized
// name and its version.
func parseWheelFile(file string) (string, pepVersion, error) {
	m := wheelFile.FindStringSubmatch(file)
	if m == nil {
		return "", pepVersion{}, errors.New("not a wheel's file name")
	}
	v, err := parseVersion(m[2])
	if err != nil {
		return "", pepVersion{}, err
	}
	return normalize(m[1]), v, nil
}

// metadata is what the host reads of a wheel's METADATA.
type metadata struct {
	Name         string
	Version      string
	RequiresDist []string
}

// readWheelMetadata reads the METADATA of the wheel at path, whose
// project is name: a zip with exactly one .dist-info directory, of that
// project, at its top.
func readWheelMetadata(path, name string) (metadata, error) {
	f, err := os.Open(path)
	if err != nil {
		return metadata{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return metadata{}, err
	}
	if err = checkZipDirectory(f, st.Size()); err != nil {
		return metadata{}, err
	}
	z, err := zip.NewReader(f, st.Size())
	if err != nil {
		return metadata{}, fmt.Errorf("not a zip: %w", err)
	}
	var found *zip.File
	for _, e := range z.File {
		dir, ok := strings.CutSuffix(e.Name, ".dist-info/METADATA")
		if !ok || strings.Contains(dir, "/") {
			continue
		}
		if found != nil {
			return metadata{}, errors.New("it has more than one .dist-info directory")
		}
		project, _, _ := strings.Cut(dir, "-")
		if normalize(project) != name {
			return metadata{}, fmt.Errorf("its .dist-info directory is of another project, %q", clip(project, 60))
		}
		found = e
	}
	if found == nil {
		return metadata{}, errors.New("it has no .dist-info/METADATA")
	}
	r, err := found.Open()
	if err != nil {
		return metadata{}, err
	}
	defer r.Close()
	return parseMetadata(r)
}

// checkZipDirectory refuses a zip whose central directory is larger than
// maxZipDirectory, before the zip reader reads it into memory.
func checkZipDirectory(f io.ReaderAt, size int64) error {
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, size-tail); err != nil {
		return fmt.Errorf("not a zip: %w", err)
	}
	end := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if end < 0 || len(buf)-end < 22 {
		return errors.New("not a zip: no end of central directory")
	}
	dirSize := uint64(binary.LittleEndian.Uint32(buf[end+12:]))
	if dirSize == 0xFFFFFFFF && end >= 20 && bytes.Equal(buf[end-20:end-16], []byte("PK\x06\x07")) {
		var rec [56]byte
		at := binary.LittleEndian.Uint64(buf[end-20+8:])
		if at > uint64(size) {
			return errors.New("not a zip: a bad zip64 locator")
		}
		if _, err := f.ReadAt(rec[:], int64(at)); err != nil || !bytes.Equal(rec[:4], []byte("PK\x06\x06")) {
			return errors.New("not a zip: a bad zip64 end of central directory")
		}
		dirSize = binary.LittleEndian.Uint64(rec[40:])
	}
	if dirSize > maxZipDirectory {
		return fmt.Errorf("its list of files is %d bytes, more than the %d the host reads", dirSize, maxZipDirectory)
	}
	return nil
}

// parseMetadata reads the headers of a METADATA file (RFC 822 style, as
// Python's email parser reads them: "Name: value" lines, a line starting
// with white space continuing the one before, the headers ending at the
// first line that is empty or not a header). Only Name, Version and
// Requires-Dist are kept; headers beyond maxMetadataHeaders bytes or
// more than maxRequiresDist Requires-Dist lines are refused.
func parseMetadata(r io.Reader) (metadata, error) {
	br := bufio.NewReader(io.LimitReader(r, maxMetadataHeaders+1))
	var md metadata
	var key, value string
	total := 0
	flush := func() error {
		switch strings.ToLower(key) {
		case "name":
			md.Name = strings.TrimSpace(value)
		case "version":
			md.Version = strings.TrimSpace(value)
		case "requires-dist":
			if len(md.RequiresDist) >= maxRequiresDist {
				return fmt.Errorf("its METADATA has more than %d Requires-Dist lines", maxRequiresDist)
			}
			md.RequiresDist = append(md.RequiresDist, strings.TrimSpace(value))
		}
		key, value = "", ""
		return nil
	}
	for {
		line, err := br.ReadString('\n')
		total += len(line)
		if total > maxMetadataHeaders {
			return metadata{}, fmt.Errorf("its METADATA has more than %d bytes of headers", maxMetadataHeaders)
		}
		line = strings.TrimRight(line, "\r\n")
		if line != "" && (line[0] == ' ' || line[0] == '\t') && key != "" {
			value += " " + strings.TrimSpace(line)
		} else {
			if ferr := flush(); ferr != nil {
				return metadata{}, ferr
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				break // the end of the headers
			}
			key, value = k, v
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return metadata{}, err
		}
	}
	if err := flush(); err != nil {
		return metadata{}, err
	}
	if md.Name == "" || md.Version == "" {
		return metadata{}, errors.New("its METADATA has no Name or no Version")
	}
	return md, nil
}

// dependency is one Requires-Dist of a wheel, parsed.
type dependency struct {
	// req is the requirement, when it is one the host accepts.
	req requirement
	// name is the dependency's normalized name, or "" when it has none
	// the host can read.
	name string
	// marker says when the dependency applies; nil for always.
	marker marker
	// ref is a direct reference (a URL or a path after "@"), as the
	// sandbox may be shown it: the scheme and host of a URL, never a path.
	ref string
	// text is the line as the index wrote it (clipped), for the host's log.
	text string
	// bad says why the dependency is not a requirement the host accepts
	// ("" when it is one); markerErr why its marker cannot be read.
	bad, markerErr string
}

// parseDependency reads a Requires-Dist value such as
// "pandas[excel] (>=2.0) ; python_version >= '3.9'". A dependency by name
// is checked by [parseRequirement], as the sandbox's own requirements
// are (versions are first put in their normal form: "1.0-RC1" is
// "1.0rc1"); a direct reference ("name @ URL") is kept only as the
// redacted text of [dependency.ref]: it is never fetched.
func parseDependency(line string) dependency {
	d := dependency{text: clip(line, 200)}
	if len(line) > maxDependencyLen {
		d.bad = fmt.Sprintf("it is longer than %d characters", maxDependencyLen)
		return d
	}
	req, markerText, hasMarker := strings.Cut(line, ";")
	if at := strings.IndexByte(req, '@'); at >= 0 {
		// PEP 508: a URL ends at white space, a marker after it.
		rest := strings.TrimLeft(line[at+1:], " \t")
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		markerText = strings.TrimLeft(rest[end:], " \t")
		markerText, hasMarker = strings.CutPrefix(markerText, ";")
		d.name = dependencyName(line[:at])
		d.ref = redactReference(rest[:end])
		d.bad = "it is a direct reference"
	} else {
		d.name = dependencyName(req)
		r, err := parseRequirement(normalSpecs(req))
		if err != nil {
			d.bad = "its name or version is not one the host accepts"
		}
		d.req = r
	}
	if hasMarker {
		m, err := parseMarker(markerText)
		if err != nil {
			d.markerErr = err.Error()
		}
		d.marker = m
	}
	return d
}

// dependencyName is the normalized name at the start of a requirement,
// or "".
func dependencyName(s string) string {
	s = strings.TrimLeft(s, " \t")
	end := strings.IndexAny(s, "[ \t(~=!<>@;")
	if end < 0 {
		end = len(s)
	}
	if !projectName.MatchString(s[:end]) {
		return ""
	}
	return normalize(s[:end])
}

// normalSpecs rewrites a requirement's versions in their normal form and
// takes off the parentheses METADATA may put around them: "Foo (>=1.0-RC1)"
// is "Foo >=1.0rc1". A version that is not PEP 440 is left as it is, for
// [parseRequirement] to refuse.
func normalSpecs(req string) string {
	start := strings.IndexAny(req, "(~=!<>")
	if start < 0 {
		return req
	}
	head, specs := req[:start], strings.TrimSpace(req[start:])
	if inner, ok := strings.CutPrefix(specs, "("); ok {
		inner, ok = strings.CutSuffix(inner, ")")
		if !ok {
			return req
		}
		specs = inner
	}
	parts := strings.Split(specs, ",")
	for i, p := range parts {
		op, text := splitOperator(strings.TrimSpace(p))
		release, wild := strings.CutSuffix(text, ".*")
		if v, err := parseVersion(release); err == nil && op != "" && op != "===" && len(v.Local) == 0 {
			text = v.Public()
			if wild {
				text += ".*"
			}
			parts[i] = op + text
		}
	}
	return head + strings.Join(parts, ",")
}

// redactReference is a direct reference as the sandbox may see it: a
// URL's scheme and host ("http://127.0.0.1:8080/…"), a file URL's scheme
// only ("file://…", "git+file://…"), and a path not at all ("a path"):
// never a path on the host, nor a URL's credentials.
func redactReference(ref string) string {
	u, err := url.Parse(ref)
	switch {
	case err != nil || u.Scheme == "" || !printable(u.Scheme):
		return "<a path>"
	case strings.Contains(strings.ToLower(u.Scheme), "file") || u.Host == "" || !printable(u.Host):
		return strings.ToLower(u.Scheme) + "://…"
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host + "/…"
}

// printable says whether s is plain printable ASCII without spaces.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// applies says whether the dependency is one of the sandbox's for a
// requirement with the given extras: its marker holds with no extra, or
// with one of them.
func (d dependency) applies(env map[string]string, extras []string) (bool, error) {
	if d.markerErr != "" {
		return false, errors.New(d.markerErr)
	}
	if d.marker == nil {
		return true, nil
	}
	for _, extra := range append([]string{""}, extras...) {
		env["extra"] = extra
		ok, err := d.marker.eval(env)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}
