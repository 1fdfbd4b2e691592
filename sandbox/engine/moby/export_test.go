package moby

// SetSSHCommand makes the engine reach ssh:// addresses with path in
// place of ssh, for the external tests, and returns what restores it.
func SetSSHCommand(path string) (restore func()) {
	old := sshCommand
	sshCommand = path
	return func() { sshCommand = old }
}
