import fc from 'fast-check';
import { getDomain } from 'tldts';
import {
  InvalidPatternError,
  isAllowedCallbackUrl,
  parseCallbackPattern,
  parseCallbackPatterns,
  parseStoredCallbackPatterns,
} from '../../src/modules/apps/callback-url.js';

const allows = (patterns: string, url: string) => isAllowedCallbackUrl(url, parseCallbackPatterns(patterns));

describe('callback URL patterns: the interface example shapes', () => {
  it.each([
    // https://<host>/*
    ['https://app.example.com/*', 'https://app.example.com/', true],
    ['https://app.example.com/*', 'https://app.example.com/auth/callback?next=%2Fx', true],
    ['https://app.example.com/*', 'https://APP.Example.com/cb', true],
    ['https://app.example.com/*', 'https://app.example.com:443/cb', true],
    ['https://app.example.com/*', 'https://app.example.com:8443/cb', false],
    ['https://app.example.com/*', 'https://www.example.com/cb', false],
    ['https://app.example.com/*', 'https://example.com/cb', false],
    // https://*.<domain>/*
    ['https://*.example.com/*', 'https://app.example.com/cb', true],
    ['https://*.example.com/*', 'https://a.b.example.com/cb', true],
    ['https://*.example.com/*', 'https://example.com/cb', false],
    ['https://*.example.com/*', 'https://badexample.com/cb', false],
    // http://localhost:*/*
    ['http://localhost:*/*', 'http://localhost:5173/cb', true],
    ['http://localhost:*/*', 'http://localhost/cb', true],
    // paths and queries
    ['https://app.example.com/auth/*', 'https://app.example.com/auth/cb', true],
    ['https://app.example.com/auth/*', 'https://app.example.com/other', false],
    ['https://app.example.com/auth/*', 'https://app.example.com/x/../auth/cb', true],
    ['https://app.example.com/cb', 'https://app.example.com/cb', true],
    ['https://app.example.com/cb', 'https://app.example.com/cb?x=1', false],
    ['https://app.example.com', 'https://app.example.com/', true],
    ['https://app.example.com:8443/*', 'https://app.example.com:8443/cb', true],
    ['https://app.example.com:*/*', 'https://app.example.com:9000/cb', true],
    // one pattern per line
    ['https://a.example.com/*\nhttps://b.example.com/*', 'https://b.example.com/cb', true],
    ['https://a.example.com/*\r\n\r\nhttps://b.example.com/*', 'https://c.example.com/cb', false],
  ])('%s with %s → %s', (patterns, url, expected) => {
    expect(allows(patterns, url)).toBe(expected);
  });
});

describe('callback URL patterns: hostile redirect URLs', () => {
  const hostile = [
    'https://example.com.evil.net/',
    'https://evil.net/app.example.com/',
    'https://app.example.com@evil.net/',
    'https://evil.net\\@app.example.com/',
    'https://evil.net\\\\@app.example.com/',
    'javascript:alert(1)',
    '//evil.net/',
    'https://app.example.com.evil.net/',
    'http://app.example.com/',
    'https://user:pass@app.example.com/',
    'https://app.example.com%2eevil.net/',
    'https://app.example.com\t.evil.net/',
    'https://evil.net#@app.example.com/',
    'https://evil.net?@app.example.com/',
    ' https://app.example.com/',
    'data:text/html,<script>alert(1)</script>',
    'https:/app.example.com/',
    'https:app.example.com/',
    '',
  ];
  for (const pattern of ['https://*.example.com/*', 'https://app.example.com/*']) {
    it.each(hostile)(`${pattern} refuses %j`, (url) => {
      expect(allows(pattern, url)).toBe(false);
    });
  }
});

describe('localhost over http is always allowed', () => {
  it.each(['http://localhost:3000/cb', 'http://localhost/cb', 'http://LOCALHOST:8080/a?b=c'])('%s', (url) => {
    expect(isAllowedCallbackUrl(url, [])).toBe(true);
  });
  it.each([
    'https://localhost/cb',
    'http://localhost.evil.net/cb',
    'http://user@localhost/cb',
    'http://127.0.0.1/cb',
    'http://evil.net/localhost',
  ])('but not %s', (url) => {
    expect(isAllowedCallbackUrl(url, [])).toBe(false);
  });
});

describe('patterns refused when saved', () => {
  it.each([
    ['*', /must look like/],
    ['https://*', /registrable domain/],
    ['https://*/*', /registrable domain/],
    ['https://*.com/*', /registrable domain/],
    ['https://*.co.uk/*', /registrable domain/],
    ['https://*.github.io/*', /registrable domain/],
    ['https://*example.com/*', /registrable domain/],
    ['https://app.*/*', /registrable domain/],
    ['ftp://files.example.com/*', /must look like/],
    ['javascript:alert(1)', /must look like/],
    ['//app.example.com/*', /must look like/],
    ['https://user@app.example.com/*', /user info/],
    ['https://user:pw@app.example.com/*', /user info|invalid host/],
    ['https://app.example.com/a b', /whitespace/],
    ['https://app\\.example.com/*', /backslash/],
    ['https://app.example.com:99999/*', /invalid port/],
    ['https://app..example.com/*', /invalid host/],
    ['https://app.example.com/#frag', /must look like/],
  ])('%s', (pattern, message) => {
    expect(() => parseCallbackPattern(pattern)).toThrow(InvalidPatternError);
    expect(() => parseCallbackPattern(pattern)).toThrow(message);
  });

  it.each([
    'https://*.example.com/*',
    'https://*.example.co.uk/*',
    'https://*.user.github.io/*',
    'http://localhost:*/*',
  ])('accepts %s', (pattern) => {
    expect(() => parseCallbackPattern(pattern)).not.toThrow();
  });

  it('skips stored lines that no longer parse instead of allowing anything', () => {
    const patterns = parseStoredCallbackPatterns('https://*.com/*\nhttps://app.example.com/*');
    expect(patterns.map((p) => p.source)).toEqual(['https://app.example.com/*']);
    expect(isAllowedCallbackUrl('https://evil.com/', patterns)).toBe(false);
  });
});

// Property-based tests: generated hosts, paths and attacker URLs.
const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?$/);
const domain = fc
  .tuple(label, fc.constantFrom('com', 'net', 'org', 'io', 'co.uk', 'dev'))
  .map(([name, tld]) => `${name}.${tld}`)
  // Some generated names are themselves public suffixes (`br.com`): those are refused, as tested below.
  .filter((d) => getDomain(d, { allowPrivateDomains: true }) === d);
const subdomain = fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => labels.join('.'));
const path = fc.webPath().map((p) => (p.startsWith('/') ? p : `/${p}`));
const query = fc.option(
  fc.webQueryParameters().map((q) => `?${q}`),
  { nil: '' },
);

describe('callback URL properties', () => {
  it('a wildcard subdomain pattern allows every https subdomain of its domain, any path', () => {
    fc.assert(
      fc.property(domain, subdomain, path, query, (d, sub, p, q) => {
        expect(allows(`https://*.${d}/*`, `https://${sub}.${d}${p}${q}`)).toBe(true);
      }),
    );
  });

  it('a wildcard subdomain pattern never allows a host outside its domain', () => {
    fc.assert(
      fc.property(domain, subdomain, domain, path, (d, sub, other, p) => {
        fc.pre(other !== d && !other.endsWith(`.${d}`));
        // The allowed domain placed anywhere but at the end of the host (or in the path) must not help.
        for (const host of [`${d}.${other}`, `${sub}.${d}.${other}`, other, `${sub}${d}`]) {
          fc.pre(!host.endsWith(`.${d}`));
          expect(allows(`https://*.${d}/*`, `https://${host}${p}`)).toBe(false);
        }
        expect(allows(`https://*.${d}/*`, `https://${other}/${sub}.${d}${p}`)).toBe(false);
      }),
    );
  });

  it('user info never matches, whatever the host', () => {
    fc.assert(
      fc.property(domain, subdomain, label, path, (d, sub, user, p) => {
        expect(allows(`https://*.${d}/*`, `https://${user}@${sub}.${d}${p}`)).toBe(false);
        expect(allows(`https://${sub}.${d}/*`, `https://${sub}.${d}@evil.example${p}`)).toBe(false);
      }),
    );
  });

  it('the scheme must match exactly', () => {
    fc.assert(
      fc.property(subdomain, domain, path, (sub, d, p) => {
        expect(allows(`https://${sub}.${d}/*`, `http://${sub}.${d}${p}`)).toBe(false);
        expect(allows(`http://${sub}.${d}/*`, `https://${sub}.${d}${p}`)).toBe(false);
      }),
    );
  });

  it('anything that is not an absolute http(s) URL is refused, whatever the patterns', () => {
    fc.assert(
      fc.property(fc.string(), (candidate) => {
        fc.pre(!/^https?:\/\//i.test(candidate));
        expect(allows('https://*.example.com/*\nhttp://localhost:*/*', candidate)).toBe(false);
      }),
    );
  });

  it('http://localhost is allowed on any port and path, with no patterns', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
        path,
        query,
        (port, p, q) => {
          expect(
            isAllowedCallbackUrl(`http://localhost${port === undefined ? '' : `:${port}`}${p}${q}`, []),
          ).toBe(true);
        },
      ),
    );
  });

  it('random URLs accepted by a pattern always have its scheme and a host ending in its domain', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (url) => {
        if (!allows('https://*.example.com/*', url)) return;
        const parsed = new URL(url);
        expect(parsed.protocol).toBe('https:');
        expect(parsed.hostname.endsWith('.example.com')).toBe(true);
        expect(parsed.username).toBe('');
      }),
    );
  });

  it('a wildcard over a public suffix is refused for every suffix', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('com', 'net', 'org', 'co.uk', 'com.au', 'github.io', 'herokuapp.com'),
        (suffix) => {
          expect(() => parseCallbackPattern(`https://*.${suffix}/*`)).toThrow(InvalidPatternError);
        },
      ),
    );
  });
});
