// Package protocol is the typed form of the frame channel between the Go
// host and the Python runtime in the sandbox (pyruntime/PROTOCOL.md is the
// contract in prose).
//
// Every frame is one JSON object on one line, with its type in "t". Each
// type has its own Go struct here: [Hello], [Exec], [Interrupt] and [Result]
// go from the host to the runtime; [Ready], [Out], [Image], [RPC], [Done] and
// [Log] come back. [Encode] writes a frame with "t" first; [Decode] reads a
// line into the struct its "t" names, and returns [Unknown] for a type this
// host does not know, so that a newer runtime cannot break an older host.
//
// The runtime's requests of the host travel in [RPC] frames. Each method has
// its own parameter and answer types ([ListToolsParams], [CallToolParams],
// ...); new capabilities add methods, never fields to a shared union.
//
// Both sides announce [Version] ([Hello.V], [Ready.V]); a host and a runtime
// that disagree fail at start with a message that names both versions.
//
// The transcripts in testdata/protocol record real exchanges; the Go session
// tests and the Python runtime tests both replay them, so a field renamed on
// one side fails a unit test on that side.
//
//	line, _ := protocol.Encode(protocol.Exec{ID: 1, Code: "print(1)"})
//	// {"t":"exec","id":1,"code":"print(1)"}
//	f, _ := protocol.Decode([]byte(`{"t":"done","id":1,"status":"ok"}`))
//	done := f.(*protocol.Done)
package protocol
