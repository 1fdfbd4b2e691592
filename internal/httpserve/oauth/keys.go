package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// issuer is one trusted authorization server and the cache of its keys.
type issuer struct {
	url        string
	client     *http.Client
	minRefresh time.Duration
	now        func() time.Time

	mu      sync.Mutex // held during a fetch: who waits for keys waits for it
	jwksURL string     // from the issuer's metadata; "" until found
	keys    []jose.JSONWebKey
	fetched time.Time // the last fetch tried; zero before the first
}

// errNoKey is a token signed with a key the issuer does not publish.
var errNoKey = errors.New("no key of the issuer has this key id")

// errRetryLater is a fetch of the issuer's metadata that failed less than
// minRefresh ago: it is not tried again yet (the failure was logged).
var errRetryLater = errors.New("the issuer's metadata could not be read; codebridge tries again shortly")

// keysFor returns the issuer's keys that may have signed a token with
// this key id (every signing key when kid is empty). On a kid the cache
// lacks it fetches the issuer's keys again, unless it did less than
// minRefresh ago.
func (is *issuer) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if ks := match(is.keys, kid); len(ks) > 0 {
		return ks, nil
	}
	if !is.fetched.IsZero() && is.now().Sub(is.fetched) < is.minRefresh {
		if is.jwksURL == "" {
			return nil, errRetryLater
		}
		return nil, errNoKey
	}
	is.fetched = is.now()
	if err := is.refresh(ctx); err != nil {
		return nil, err
	}
	if ks := match(is.keys, kid); len(ks) > 0 {
		return ks, nil
	}
	return nil, errNoKey
}

// refresh discovers the issuer's key set URL, once, and fetches its keys.
func (is *issuer) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if is.jwksURL == "" {
		u, err := is.discover(ctx)
		if err != nil {
			return err
		}
		is.jwksURL = u
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, is.client, is.jwksURL, &set); err != nil {
		return fmt.Errorf("fetching the keys of %s: %w", is.url, err)
	}
	is.keys = set.Keys
	return nil
}

// discover reads the issuer's metadata, RFC 8414's well-known document
// first and OpenID Connect's after, and returns its jwks_uri. The go-sdk
// checks that the metadata names this issuer and that its URLs are
// https (or loopback).
func (is *issuer) discover(ctx context.Context) (string, error) {
	var tried []string
	for _, u := range metadataURLs(is.url) {
		asm, err := oauthex.GetAuthServerMeta(ctx, u, is.url, is.client)
		if err != nil {
			return "", fmt.Errorf("the metadata of %s at %s: %w", is.url, u, err)
		}
		if asm == nil { // not there: try the next
			tried = append(tried, u)
			continue
		}
		if asm.JWKSURI == "" {
			return "", fmt.Errorf("the metadata of %s names no jwks_uri: codebridge validates JWT access tokens with the issuer's keys", is.url)
		}
		if err := checkURL(asm.JWKSURI); err != nil {
			return "", fmt.Errorf("the jwks_uri of %s %w", is.url, err)
		}
		return asm.JWKSURI, nil
	}
	return "", fmt.Errorf("%s publishes no authorization server metadata (tried %s)", is.url, strings.Join(tried, ", "))
}

// metadataURLs are the places an issuer's metadata may be: RFC 8414's
// (the well-known path before the issuer's path) and OpenID Connect's
// (after it).
func metadataURLs(iss string) []string {
	i := strings.Index(iss, "://")
	hostEnd := strings.IndexByte(iss[i+3:], '/')
	if hostEnd < 0 {
		return []string{iss + "/.well-known/oauth-authorization-server", iss + "/.well-known/openid-configuration"}
	}
	origin, path := iss[:i+3+hostEnd], strings.TrimSuffix(iss[i+3+hostEnd:], "/")
	return []string{origin + "/.well-known/oauth-authorization-server" + path, origin + path + "/.well-known/openid-configuration"}
}

// match picks the public signing keys with this key id (all of them
// when kid is empty).
func match(keys []jose.JSONWebKey, kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if (kid == "" || k.KeyID == kid) && k.Use != "enc" && k.IsPublic() && k.Valid() {
			out = append(out, k)
		}
	}
	return out
}

// getJSON fetches a JSON document of at most 1 MiB.
func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s is not a JSON key set: %w", u, err)
	}
	return nil
}
