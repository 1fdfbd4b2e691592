package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Bounds of introspection, stated once: an admitted token's answer is
// kept at most introspectionTTL (and never past the token's exp), at most
// introspectionCache of them; a refused token's answer is kept
// refusalTTL, at most refusalCache of them, apart, so that made-up
// tokens never push out admitted ones; either cache, when full, evicts
// its oldest answer. At most introspectionInFlight requests to the
// endpoint run at once, so a flood of made-up tokens cannot open more.
const (
	introspectionTTL      = time.Minute
	introspectionCache    = 10000
	refusalTTL            = 30 * time.Second
	refusalCache          = 10000
	introspectionInFlight = 8
)

// introspector validates opaque tokens at an introspection endpoint.
type introspector struct {
	cfg    Introspection
	client *http.Client
	slots  chan struct{}

	admitted *answerCache[*auth.TokenInfo]
	refused  *answerCache[*Refusal]
}

func newIntrospector(cfg Introspection, c *http.Client) *introspector {
	return &introspector{cfg: cfg, client: c, slots: make(chan struct{}, introspectionInFlight),
		admitted: newAnswerCache[*auth.TokenInfo](introspectionCache), refused: newAnswerCache[*Refusal](refusalCache)}
}

// verify asks the endpoint about raw (or finds its recent answer, an
// admission or a refusal) and checks the answer as a JWT's claims are
// checked: active, a trusted issuer (the first configured when the
// answer names none), not expired, this resource in aud, then the
// scopes, principal claim and allow-list. A failure to ask is no answer
// and is not kept.
func (in *introspector) verify(ctx context.Context, v *Verifier, raw string) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(raw))
	if info, ok, err := in.recall(key, v.now()); ok {
		return info, err
	}
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		return nil, refuse(kindUnavailable, "the token could not be introspected; try again later")
	}
	// A request for the same token may have been answered while this
	// one waited for a slot.
	now := v.now()
	if info, ok, err := in.recall(key, now); ok {
		return info, err
	}
	ans, err := in.ask(ctx, raw)
	if err != nil {
		v.log.Warn("could not introspect a token", "endpoint", in.cfg.URL, "err", err)
		return nil, refuse(kindUnavailable, "the token could not be introspected; try again later")
	}
	info, err := in.check(v, ans, now)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			in.refused.put(key, ref, now.Add(refusalTTL))
		}
		return nil, err
	}
	until := now.Add(introspectionTTL)
	if !info.Expiration.IsZero() && info.Expiration.Before(until) {
		until = info.Expiration
	}
	in.admitted.put(key, info, until)
	return info, nil
}

// recall finds a kept answer about the token of digest key: its holder,
// or its refusal.
func (in *introspector) recall(key digest, now time.Time) (*auth.TokenInfo, bool, error) {
	if info, ok := in.admitted.get(key, now); ok {
		return info, true, nil
	}
	if ref, ok := in.refused.get(key, now); ok {
		return nil, true, ref
	}
	return nil, false, nil
}

// check reads an introspection answer.
func (in *introspector) check(v *Verifier, ans map[string]any, now time.Time) (*auth.TokenInfo, error) {
	if active, _ := ans["active"].(bool); !active {
		return nil, refuse(kindInvalid, "the token is not active (its issuer's introspection says so: expired, revoked or unknown)")
	}
	iss, _ := ans["iss"].(string)
	if iss == "" {
		iss = v.cfg.Issuers[0]
	}
	if v.issuers[iss] == nil {
		return nil, refuse(kindIssuer, "the token's issuer is not one this server trusts")
	}
	if tt, _ := ans["token_type"].(string); strings.EqualFold(tt, "refresh_token") {
		return nil, refuse(kindInvalid, "the token is a refresh token, not an access token")
	}
	var exp time.Time
	if f, ok := ans["exp"].(float64); ok {
		exp = time.Unix(int64(f), 0)
		if exp.Add(DefaultSkew).Before(now) {
			return nil, refuse(kindExpired, "the token has expired")
		}
	}
	if f, ok := ans["nbf"].(float64); ok && time.Unix(int64(f), 0).After(now.Add(DefaultSkew)) {
		return nil, refuse(kindInvalid, "the token is not valid yet (nbf or iat is in the future)")
	}
	if !oauthex.MatchesResource(valuesOf(ans["aud"]), v.cfg.Resource) {
		return nil, refuse(kindAudience, "the token's audience is not this server ("+v.cfg.Resource+"): ask the authorization server for a token with resource="+v.cfg.Resource)
	}
	return v.admit(iss, ans, exp)
}

// ask posts raw to the endpoint, authenticated as the configured client
// (RFC 6749 section 2.3.1: id and secret form-encoded in Basic); the
// caller holds one of the slots.
func (in *introspector) ask(ctx context.Context, raw string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.cfg.URL, urlErrorWithoutQuery(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", in.cfg.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	var ans map[string]any
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("%s answered with something that is not a JSON object", in.cfg.URL)
	}
	return ans, nil
}

// urlErrorWithoutQuery is err without the request it failed (a
// *url.Error names the URL, which holds no secret here, but keep only
// the cause).
func urlErrorWithoutQuery(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
