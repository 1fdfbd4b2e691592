package bridge

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/codebridge/codebridge/internal/packages"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/sandbox"
)

// Where wheels land in the sandbox; the runtime unpacks them from there
// (pyruntime/mcp/_packages.py) and removes them.
const (
	wheelDir      = "/tmp/.codebridge/wheels/"
	startManifest = "/tmp/.codebridge/start-packages.json"
)

// Packages are the bridge's on-demand installs: the installer, and the
// packages every new sandbox gets at its start.
type Packages struct {
	Installer *packages.Installer
	// Start are requirements installed into every new sandbox.
	Start []string
}

// Packages are the bridge's on-demand installs (for codebridge doctor).
func (b *Bridge) Packages() *Packages { return b.opts.Packages }

// install answers the runtime's install request: resolve on the host,
// write the wheels into the sandbox that asked, say where they are.
func install(ctx context.Context, h *call, p protocol.InstallParams) (json.RawMessage, error) {
	if h.packages == nil || h.packages.Installer == nil {
		return nil, &packages.Error{Kind: packages.Refused, Msg: "this bridge does not install packages (no state directory is set up); start codebridge serve with --state-dir"}
	}
	if h.sbx == nil {
		return nil, errors.New("install: no sandbox session to install into")
	}
	answer, err := sendWheels(ctx, h.sandboxHost, h.sbx, p)
	if err != nil {
		return nil, installError(h.sandboxHost, err)
	}
	return answer, nil
}

// installError is what the sandbox is told of a failed install: an
// [packages.Error]'s message, which the host writes from the request
// alone, or, for a fault of the host's (a file of its cache, a full
// disk), that the host's log says what; the fault itself, which may name
// host paths, goes only to the log.
func installError(h *sandboxHost, err error) error {
	var pe *packages.Error
	if errors.As(err, &pe) {
		return pe
	}
	h.log.Warn("packages: an install failed on the host", "err", err)
	return &packages.Error{Kind: packages.Failed, Msg: "the host could not install the packages, because of a fault on the host and not in the request (codebridge's log says what): try again; if it lasts, ask the user to look at the log"}
}

// sendWheels resolves the request on the host and writes the wheels into
// the sandbox that asked.
func sendWheels(ctx context.Context, h *sandboxHost, sess *sandbox.Session, p protocol.InstallParams) (json.RawMessage, error) {
	target := packages.Target{Python: p.Python, Implementation: p.Implementation, ABIs: p.ABIs, Platforms: p.Platforms}
	in := h.packages.Installer
	set, err := in.Resolve(ctx, p.Requirements, target, p.Upgrade)
	if err != nil {
		return nil, err
	}
	in.Remember(target)
	answer := protocol.InstallAnswer{Cached: set.Cached, Downloaded: set.Downloaded, Wheels: []protocol.InstalledWheel{}}
	have := map[string]bool{}
	for _, f := range p.Installed {
		have[f] = true
	}
	for _, w := range set.Wheels {
		if have[w.File] {
			continue // the sandbox has it installed
		}
		data, err := in.Open(w)
		if err != nil {
			return nil, err
		}
		path := wheelDir + w.File
		// One wheel a frame: the host holds one wheel (and its base64) at a time.
		if err := sess.Put(ctx, []protocol.File{{Path: path, Data: data}}); err != nil {
			return nil, err
		}
		answer.Sent += int64(len(data))
		answer.Wheels = append(answer.Wheels, protocol.InstalledWheel{File: w.File, Path: path, Size: w.Size})
	}
	answer.TookMS = set.Took.Milliseconds()
	h.log.Debug("packages sent into the sandbox", "wheels", len(answer.Wheels), "bytes", answer.Sent)
	return json.Marshal(answer)
}

// startPackages are the files that install the configured packages into a
// new sandbox: their wheels, from the cache (never the network: a
// container's start must not wait for a download), and a manifest naming
// the requirements. When the cache cannot serve them (the first start,
// or the sandbox's Python is not known yet), the manifest says so and the
// runtime asks for them with an install request in its first cell.
func (p *Packages) startFiles(log interface{ Warn(string, ...any) }) []protocol.File {
	if p == nil || p.Installer == nil || len(p.Start) == 0 {
		return nil
	}
	manifest := struct {
		Requirements []string `json:"requirements"`
		Wheels       []string `json:"wheels"`
	}{Requirements: p.Start, Wheels: []string{}}
	var files []protocol.File
	if t, ok := p.Installer.LastTarget(); ok {
		if set, ok := p.Installer.Lookup(p.Start, t); ok {
			files = make([]protocol.File, 0, len(set.Wheels)+1)
			for _, w := range set.Wheels {
				data, err := p.Installer.Open(w)
				if err != nil {
					log.Warn("packages: a cached wheel for the sandbox's start", "err", err)
					files, manifest.Wheels = nil, []string{}
					break
				}
				files = append(files, protocol.File{Path: wheelDir + w.File, Data: data})
				manifest.Wheels = append(manifest.Wheels, wheelDir+w.File)
			}
		}
	}
	data, _ := json.Marshal(manifest)
	return append(files, protocol.File{Path: startManifest, Data: data})
}
