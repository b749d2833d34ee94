import { mkdir, mkdtemp, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { STAMP, staleReason } from '../../bin/build.js';

/** `bin/tollgate.js` compiles only when this says so: a checkout of its own, with controlled mtimes. */
describe('build staleness', () => {
  let root: string;
  const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
  async function touch(file: string, seconds: number) {
    await utimes(path.join(root, file), at(seconds), at(seconds));
  }

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'tollgate-stale-'));
    await mkdir(path.join(root, 'src/modules'), { recursive: true });
    await mkdir(path.join(root, 'dist'), { recursive: true });
    await writeFile(path.join(root, 'src/main.ts'), '');
    await writeFile(path.join(root, 'src/modules/a.ts'), '');
    await writeFile(path.join(root, 'tsconfig.json'), '{}');
    for (const file of ['src/main.ts', 'src/modules/a.ts', 'src/modules', 'src', 'tsconfig.json'])
      await touch(file, 10);
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('is stale before the first build', () => {
    expect(staleReason(root)).toBe('dist/ has not been built here yet');
  });

  it('is fresh when nothing changed since the build started', async () => {
    await writeFile(path.join(root, STAMP), '');
    await touch(STAMP, 20);
    expect(staleReason(root)).toBeUndefined();
  });

  it('is stale when a nested source changed after the build started', async () => {
    await writeFile(path.join(root, STAMP), '');
    await touch(STAMP, 20);
    await touch('src/modules/a.ts', 21);
    expect(staleReason(root)).toBe('src changed since the last build');
  });

  it('is stale when a source was deleted (its directory changed)', async () => {
    await writeFile(path.join(root, STAMP), '');
    await unlink(path.join(root, 'src/modules/a.ts'));
    await touch(STAMP, 20);
    await touch('src/modules', 21);
    expect(staleReason(root)).toBe('src changed since the last build');
  });

  it('is stale when the compiler settings changed', async () => {
    await writeFile(path.join(root, STAMP), '');
    await touch(STAMP, 20);
    await touch('tsconfig.json', 30);
    expect(staleReason(root)).toBe('tsconfig.json changed since the last build');
  });

  it('is stale when the client package changed (the build makes it too)', async () => {
    await mkdir(path.join(root, 'packages/client/src'), { recursive: true });
    await writeFile(path.join(root, 'packages/client/src/index.ts'), '');
    await touch('packages/client/src/index.ts', 10);
    await touch('packages/client/src', 10);
    await writeFile(path.join(root, STAMP), '');
    await touch(STAMP, 20);
    expect(staleReason(root)).toBeUndefined();
    await touch('packages/client/src/index.ts', 25);
    expect(staleReason(root)).toBe('packages/client/src changed since the last build');
  });
});
