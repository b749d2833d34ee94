import {
  isAllowedOrigin,
  isLocalhostOrigin,
  parseCallbackPatterns,
} from '../../src/modules/apps/callback-url.js';

/** Browser origins derived from callback URL patterns: scheme, host and port as for a callback URL. */
describe('isAllowedOrigin', () => {
  const patterns = parseCallbackPatterns(
    [
      'https://app.example.com/auth/callback',
      'https://*.tenant.example.org/*',
      'http://dev.example.com:8080/*',
    ].join('\n'),
  );

  it.each([
    'https://app.example.com',
    'https://eu.tenant.example.org',
    'https://a.b.tenant.example.org',
    'http://dev.example.com:8080',
  ])('grants %s', (origin) => {
    expect(isAllowedOrigin(origin, patterns)).toBe(true);
  });

  it.each([
    ['another scheme', 'http://app.example.com'],
    ['another port', 'https://app.example.com:8443'],
    ['another host', 'https://evil.example.com'],
    ['the bare wildcard domain', 'https://tenant.example.org'],
    ['a suffix trick', 'https://app.example.com.evil.net'],
    ['a path (not an origin)', 'https://app.example.com/auth'],
    ['user info', 'https://user@app.example.com'],
    ['the null origin', 'null'],
    ['the default port spelt out differently', 'http://dev.example.com:80'],
  ])('refuses %s', (_why, origin) => {
    expect(isAllowedOrigin(origin, patterns)).toBe(false);
  });

  it('knows a local development origin', () => {
    expect(isLocalhostOrigin('http://localhost')).toBe(true);
    expect(isLocalhostOrigin('http://localhost:5173')).toBe(true);
    expect(isLocalhostOrigin('https://localhost:5173')).toBe(false);
    expect(isLocalhostOrigin('http://localhost.evil.net')).toBe(false);
  });
});
