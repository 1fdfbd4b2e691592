// Package engine is the border between a sandbox session and the
// container engines that run it: what a session asks of an engine
// ([Engine], [Container], [ContainerSpec] with its [Limits] and [Mount]s)
// and the optional powers an engine may have ([ChannelEngine],
// [OutsideEnder], [Checker]). It imports no engine; each engine is a
// package of its own (engine/moby for Docker and Podman, engine/kube for
// Kubernetes) and package sandbox picks one with [Options].
//
// It also holds what every engine does the same way, written once:
//
//   - the defaults of [Limits] and of the sandbox's user ([DefaultUser]);
//   - the labels that name the bridge owning a container ([Owner]), so
//     that a later bridge can remove what a killed one left behind, and the
//     bridge's private temporary directories ([MakeTempDir],
//     [SweepTempDirs]);
//   - the budgeted log of what a container says on stderr and in the
//     runtime's log frames ([LogWriter]): nothing in the container can
//     flood the host's memory or log;
//   - the one loop behind every [Container.Exited] ([WaitEnded]) and the
//     reasons the agent reads ([ExitReason]);
//   - codebridge's seccomp profile ([SeccompProfile]).
//
// Everything an engine reports about a container (its labels, its exit,
// its stderr) comes from a place code in the sandbox can influence: it is
// data, bounded and never a decision read from text, except the
// out-of-memory line of the sandbox's init, which [WaitEnded] trusts only
// from stderr (where only the init writes), never from a log frame.
package engine
