//go:build ignore

// Pool writes functions.json.gz: every function of the BFCL v4 data files
// of the bfcl-eval wheel, deduplicated by name and description, in the
// order first seen (the data files sorted by name, then
// multi_turn_func_doc/), dealt into 37 servers: each function goes to the
// server with the fewest so far among those that have no function of its
// name (an MCP server's tool names are unique; BFCL describes some APIs
// several ways, up to 30 of one name). It also copies BFCL_v4_live_multiple.json and its possible answer, gzipped.
// Rebuild with:
//
//	pip download bfcl-eval==2026.3.23 --no-deps && unzip bfcl_eval-2026.3.23-py3-none-any.whl -d wheel
//	go run testdata/search/bfcl/pool.go wheel/bfcl_eval/data testdata/search/bfcl
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// servers is how many servers the functions are dealt into (78 each).
const servers = 37

type function struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Source      string          `json:"source"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run pool.go WHEEL_DATA_DIR OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		os.Exit(1)
	}
}

func run(data, out string) error {
	files, err := filepath.Glob(filepath.Join(data, "BFCL_v4_*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	docs, err := filepath.Glob(filepath.Join(data, "multi_turn_func_doc", "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(docs)
	seen := map[[2]string]bool{}
	var pool []function
	names := make([]map[string]bool, servers)
	for i := range names {
		names[i] = map[string]bool{}
	}
	sizes := make([]int, servers)
	for _, f := range append(files, docs...) {
		fns, err := functionsOf(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, fn := range fns {
			key := [2]string{fn.Name, fn.Description}
			if seen[key] {
				continue
			}
			seen[key] = true
			fn.Source, _ = filepath.Rel(data, f)
			to := -1
			for i := range servers {
				if !names[i][fn.Name] && (to < 0 || sizes[i] < sizes[to]) {
					to = i
				}
			}
			if to < 0 {
				return fmt.Errorf("%d functions are named %s: more than servers", servers+1, fn.Name)
			}
			names[to][fn.Name] = true
			sizes[to]++
			fn.Server = fmt.Sprintf("bfcl%02d", to+1)
			pool = append(pool, fn)
		}
	}
	b, err := json.Marshal(pool)
	if err != nil {
		return err
	}
	if err := writeGzip(filepath.Join(out, "functions.json.gz"), b); err != nil {
		return err
	}
	for _, name := range []string{"BFCL_v4_live_multiple.json", "possible_answer/BFCL_v4_live_multiple.json"} {
		raw, err := os.ReadFile(filepath.Join(data, name))
		if err != nil {
			return err
		}
		if err := writeGzip(filepath.Join(out, name+".gz"), raw); err != nil {
			return err
		}
	}
	fmt.Printf("%d functions in %d servers of %d to %d\n", len(pool), servers, slices.Min(sizes), slices.Max(sizes))
	return nil
}

// functionsOf reads the functions of one data file: a JSON object per
// line, each either a test entry with a "function" list or (in
// multi_turn_func_doc/) a function itself. A file that is not JSON lines
// (format_sensitivity's) has none.
func functionsOf(path string) ([]function, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []function
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Function []function `json:"function"`
			function
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, nil
		}
		out = append(out, line.Function...)
		if line.Name != "" && line.Parameters != nil {
			out = append(out, line.function)
		}
	}
	return out, sc.Err()
}

func writeGzip(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
