// Package principal names who a session acts for, and turns that name
// into a key that host state (skills, workspaces) is kept under.
//
// Over stdio (and codebridge exec) the principal is the one local user,
// whose state keeps the paths it always had. Over HTTP it is the owner of
// the bearer token the session was opened with: the name the token file
// gives it, or the subject (or configured claim) of an OAuth access token,
// qualified by its issuer: an OAuth principal's key and user id never
// equal a static token's, whatever the names. A token file is written by a person, so a name may hold any
// byte but white space; [Principal.Key] is a single path component made
// from it that no two names share, even on a file system that ignores
// case, and that never reads as "..", a separator or an option.
package principal
