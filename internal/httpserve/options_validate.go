package httpserve

import (
	"errors"
	"fmt"
	"net"
)

// Validate says what is wrong with the options, or is nil: the address
// must be host:port; a non-loopback one needs tokens or OAuth (whoever
// reaches it could run code); OAuth's settings must hold, and on a
// wildcard address name the resource URL; TLS needs both files; the limits must not be negative
// (zero means the default).
func (o Options) Validate() error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("--http %q is not host:port (such as 127.0.0.1:8080): %w", o.Addr, err)
	}
	if !o.authenticates() && !isLoopback(host) {
		return fmt.Errorf("refusing to serve %s without authentication: whoever reaches it could run code here; "+
			"give bearer tokens (--token-file, or CODEBRIDGE_TOKEN) or an OAuth issuer (--oauth-issuer), or listen on 127.0.0.1", o.Addr)
	}
	if o.OAuth != nil {
		if err := o.OAuth.Validate(); err != nil {
			return err
		}
		if o.OAuth.Resource == "" && (host == "" || host == "0.0.0.0" || host == "::") {
			return fmt.Errorf("OAuth on the wildcard address %s needs the URL clients reach this server at, which tokens are issued for: "+
				"give --oauth-resource (such as https://codebridge.example.com/mcp)", o.Addr)
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("TLS needs both --tls-cert and --tls-key")
	}
	if o.IdleTimeout < 0 || o.BodyTimeout < 0 {
		return errors.New("the HTTP idle and body timeouts must not be negative: give positive seconds, or 0 for the default")
	}
	if o.MaxSessions < 0 || o.MaxSessionsPerUser < 0 {
		return errors.New("the HTTP session limits must not be negative: give a positive number, or 0 for the default")
	}
	return nil
}
