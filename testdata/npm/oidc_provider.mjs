// A real OpenID provider (oidc-provider, certified) on loopback, for the
// OAuth tests of codebridge's HTTP server (e2e/oauth_test.go).
//
// Usage: node oidc_provider.mjs CONFIG_JSON
//   CONFIG_JSON: {"keys": [private JWK...], "clients": [{"client_id", "client_secret", "groups": [...]}],
//                 "port": N (optional: 0, a free port, by default),
//                 "defaultResourceFile": PATH (optional: the resource of a grant that names none, read at each grant,
//                 as a provider configured with the resource server's audience gives it),
//                 "format": "opaque" (optional: opaque access tokens, validated by introspection, instead of JWTs)}
// It listens on 127.0.0.1, prints "issuer=URL" on stdout
// and serves until stdin closes. Clients use the client credentials grant
// with a resource indicator (RFC 8707): the access token is a JWT
// (RFC 9068) whose aud is the resource asked for, sub the client's id,
// scope "mcp", and a "groups" claim from the client's entry. Opaque
// tokens are introspected at /token/introspection and revoked at
// /token/revocation.
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2]);
const groups = Object.fromEntries(config.clients.map((c) => [c.client_id, c.groups || []]));

const server = http.createServer();
server.listen(config.port || 0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: config.keys },
    clients: config.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: 'mcp',
    })),
    scopes: ['mcp'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => (config.defaultResourceFile
          ? fs.readFileSync(config.defaultResourceFile, 'utf8').trim() || undefined : undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: 'mcp',
          audience: resource,
          accessTokenFormat: config.format || 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: groups[token.clientId] || [] }),
  });
  provider.on('server_error', (ctx, err) => console.error('oidc-provider:', err));
  server.on('request', provider.callback());
  process.stdout.write(`issuer=${issuer}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
