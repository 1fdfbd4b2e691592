package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/codebridge/codebridge/internal/protocol"
)

// FileTooLargeError says that a file is larger than a read allows.
type FileTooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s is %s; at most %s can be read at once: split it (or compress it) in the sandbox and read the parts",
		e.Path, sizeText(e.Size), sizeText(e.Max))
}

// Get reads a file of the sandbox's workspace through the frame channel
// (so it works on any engine, and while a cell runs), starting the
// container when there is none. The runtime checks the path (only under
// /workspace, no "..", no symlinks). A missing file is an error that
// matches fs.ErrNotExist; one over max bytes is a [FileTooLargeError].
func (s *Session) Get(ctx context.Context, path string, max int64) ([]byte, error) {
	c, err := s.container(ctx, false)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, path, max)
}

func (c *live) get(ctx context.Context, path string, max int64) ([]byte, error) {
	g, err := ask(ctx, c, &c.gets, func(id int64) protocol.Frame { return protocol.Get{ID: id, Path: path, Max: max} }, "the file was read")
	switch {
	case err != nil:
		return nil, err
	case g.Missing:
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	case g.Error != "" && g.Size > max:
		return nil, &FileTooLargeError{Path: path, Size: g.Size, Max: max}
	case g.Error != "":
		return nil, errors.New(g.Error)
	}
	return g.Data, nil
}
