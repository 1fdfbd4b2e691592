// Package packages fetches Python wheels on the host for the sandbox, so
// that code in a sandbox without a network can install packages on demand.
//
// The sandbox's runtime reports what it can run (a [Target]: Python
// version, implementation, ABI and platform tags). An [Installer] checks
// the requested names against the allow-list, then resolves their
// dependencies itself and downloads wheels with pip on the host, from the
// index the user configured (pip's own configuration, or the package_index
// setting). pip is never the resolver: it is asked for one project at a
// time by name (--no-deps, --only-binary=:all:, the target's tags), first
// which wheel it would fetch, then that pinned version; the host checks
// each file is that wheel, reads its METADATA, evaluates the markers of
// its dependencies for the target, and takes only dependencies that are
// names the same parser accepts (names.go), never a direct
// reference (a URL or a path) from a package's metadata (resolve.go).
// So no package code ever runs on the host, and nothing but the index's
// own wheels is fetched. Only a requirement's canonical form
// (names.go) reaches pip, which runs isolated in an empty directory
// of its own: pip can read no request as a file, and no configuration but
// the index's. Downloaded wheels go into a cache under the state
// directory's packages/ entry, each stored under its SHA-256, and each
// resolution is recorded under a key that hashes the request, the target,
// the index and the resolver's version, so that the same request again is
// answered from the cache without running pip or touching the network.
//
// The bridge sends the wheels into the sandbox through the frame channel;
// the runtime unpacks them (pyruntime/mcp/_packages.py).
package packages
