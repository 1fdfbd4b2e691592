// Package kube is the sandbox engine that runs each sandbox as a
// Kubernetes Pod of one container, whose main process is a minimal init,
// and starts the runtime in it through pods/exec, whose stream carries
// the frames. Nothing is mounted from the bridge.
//
// The engine is compiled in only with the build tag kubernetes: client-go
// costs every bridge about 6 MB of idle memory, which a bridge that does
// not use Kubernetes should not pay. Without the tag, [Connect] refuses
// with [ErrNotBuilt]; the names the command line uses (names.go) exist in
// both builds.
//
// When it connects, the engine checks with access reviews that its
// account may do what it needs in the namespace, and that a NetworkPolicy
// closes the sandbox Pods' network. Each new Pod checks from inside that
// its seccomp filter is as strict as codebridge's profile and that its
// pids limit counts; `codebridge doctor` shows the findings
// ([engine.Checker]).
package kube
