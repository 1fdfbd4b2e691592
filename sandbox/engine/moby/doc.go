// Package moby is the sandbox engine that speaks the Docker Engine API,
// which Docker and Podman's Docker-compatible service both answer, on a
// Unix socket of this machine or remotely (tcp:// with TLS, or ssh://
// through `docker|podman system dial-stdio`).
//
// [Connect] finds an engine: DOCKER_HOST, then CONTAINER_HOST, then the
// usual Podman and Docker sockets, and when none answers it starts a
// private `podman system service` that lives as long as the engine. Each
// sandbox is one container created with all of codebridge's hardening (no
// network, a read-only root, no capabilities, no-new-privileges, an
// unprivileged user, sized tmpfs mounts, resource limits and codebridge's
// seccomp profile), attached to before it starts so that no output is
// missed. A local engine on Linux can also carry the direct channel: it
// bind-mounts the bridge's socket directory ([engine.ChannelEngine]).
package moby
