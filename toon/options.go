package toon

import (
	"fmt"
	"math"
)

// Delimiters accepted by WithDelimiter.
const (
	Comma = ','
	Tab   = '\t'
	Pipe  = '|'
)

// Key folding modes accepted by WithKeyFolding.
const (
	KeyFoldingOff  = "off"
	KeyFoldingSafe = "safe"
)

// An Option configures Encode and EncodeJSON. Invalid option values are
// reported as an error by the encode call.
type Option func(*config)

type config struct {
	indent  int
	delim   byte
	fold    bool
	flatten int
	err     error
}

func newConfig(opts []Option) (config, error) {
	c := config{indent: 2, delim: ',', flatten: math.MaxInt}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c, c.err
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("toon: "+format, args...)
	}
}

// WithIndent sets the number of spaces per indentation level (default 2).
// n must be at least 1.
func WithIndent(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("invalid indent %d: must be >= 1", n)
			return
		}
		c.indent = n
	}
}

// WithDelimiter sets the document delimiter used for inline arrays and
// tabular rows: Comma (default), Tab or Pipe.
func WithDelimiter(d rune) Option {
	return func(c *config) {
		switch d {
		case ',', '\t', '|':
			c.delim = byte(d)
		default:
			c.fail("invalid delimiter %q: want ',', '\\t' or '|'", d)
		}
	}
}

// WithKeyFolding sets the key folding mode: "off" (default) or "safe".
// In safe mode chains of single-key objects whose keys are identifiers
// (^[A-Za-z_][A-Za-z0-9_]*$) are written as one dotted key, unless that
// dotted key would collide with an existing literal key.
func WithKeyFolding(mode string) Option {
	return func(c *config) {
		switch mode {
		case KeyFoldingOff:
			c.fold = false
		case KeyFoldingSafe:
			c.fold = true
		default:
			c.fail("invalid key folding mode %q: want %q or %q", mode, KeyFoldingOff, KeyFoldingSafe)
		}
	}
}

// WithFlattenDepth limits how many key segments safe key folding may join
// into one dotted key (default: unlimited). Values below 2 disable folding.
func WithFlattenDepth(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.fail("invalid flatten depth %d: must be >= 0", n)
			return
		}
		c.flatten = n
	}
}
