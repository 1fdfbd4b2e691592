//go:build !unix

package main

// signalProfile does nothing where there is no SIGUSR1: -profile needs
// Linux (it also reads /proc).
func signalProfile(int) {}
